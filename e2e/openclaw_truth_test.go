package e2e

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/journal"
)

// OpenClaw's own record of a drill, read from its debug log: every
// provider call ([model-fetch] start, then response or error), every
// cooldown of an auth profile, every in-turn retry with its delay, every
// fallback decision, each grouped by the turn it belongs to. OpenClaw
// gives each turn (one chat completion request) a traceId that every
// line of the turn carries, its provider calls included; that is how
// the log's calls are grouped into turns. The harness's calls are
// grouped by the sequence number the fake providers read from the body
// stamp. A turn of the log is the harness's request whose first provider
// call arrived when the log's first [model-fetch] start says (the two
// clocks are the machine's; the log has milliseconds).

// ocFetch is one provider call as OpenClaw logged it, in run seconds.
type ocFetch struct {
	trace, provider string
	start, end      float64 // end: the response line (headers) or the error line
	status          int     // 0 for an error
	elapsedMs       float64 // OpenClaw's own measure, start to end
	errText         string
	// failed is when OpenClaw gave the call up after its 200 (the
	// turn's run ended in error: a stream cut, or its timeout), -1 when
	// it did not; timedOut says it was the timeout.
	failed        float64
	timedOut, cut bool
	ok            bool // its run ended well
}

// over is when the call was over for OpenClaw: its give-up after a 200,
// else its response or error line.
func (f *ocFetch) over() float64 {
	if f.failed >= 0 {
		return f.failed
	}
	return f.end
}

// ocCooldown is one "auth profile failure state updated" line: a profile
// of provider put in cooldown until until.
type ocCooldown struct {
	provider   string
	at, until  float64
	reason     string
	errorCount float64
}

// ocRetry is one "transient same-model retry n/N ... delayMs=D" line.
type ocRetry struct {
	trace   string
	at      float64
	n, of   int
	delayMs float64
}

// ocTruth is a drill's record from OpenClaw's log.
type ocTruth struct {
	fetches   []*ocFetch
	cooldowns []ocCooldown
	retries   []ocRetry
	// decisions are the model fallback decisions (their "decision"
	// field, e.g. candidate_failed) with the provider they concern;
	// stopped the "model fallback chain stopped" lines (a turn given up).
	decisions []ocDecision
	stopped   []ocLine
}

type ocDecision struct {
	trace, decision, provider string
	at                        float64
}

var (
	ocFetchRe = regexp.MustCompile(`^\[model-fetch\] (start|response|error) provider=(\S+)`)
	ocRetryRe = regexp.MustCompile(`^transient same-model retry (\d+)/(\d+) .*delayMs=(\d+)`)
	ocKVRe    = regexp.MustCompile(`(\w+)=("[^"]*"|\S+)`)
)

func ocKV(msg string) map[string]string {
	kv := map[string]string{}
	for _, m := range ocKVRe.FindAllStringSubmatch(msg, -1) {
		kv[m[1]] = strings.Trim(m[2], `"`)
	}
	return kv
}

func (l ocLine) trace() string {
	s, _ := l.obj["traceId"].(string)
	return s
}

// openclawTruth reads the drill's record from OpenClaw's log lines.
func openclawTruth(t *testing.T, lines []ocLine) *ocTruth {
	t.Helper()
	tr := &ocTruth{}
	open := map[string]*ocFetch{} // trace+provider -> call in flight
	last := map[string]*ocFetch{} // trace -> its latest call
	for _, l := range lines {
		at := l.t.Seconds()
		switch m := ocFetchRe.FindStringSubmatch(l.msg); {
		case m != nil:
			key := l.trace() + "/" + m[2]
			kv := ocKV(l.msg)
			if m[1] == "start" {
				f := &ocFetch{trace: l.trace(), provider: m[2], start: at, end: -1, failed: -1}
				tr.fetches = append(tr.fetches, f)
				open[key] = f
				last[l.trace()] = f
				continue
			}
			f := open[key]
			if f == nil {
				t.Logf("OpenClaw log: a %s line without its start: %s", m[1], l.msg)
				continue
			}
			delete(open, key)
			f.end = at
			f.status, _ = strconv.Atoi(kv["status"])
			f.elapsedMs, _ = strconv.ParseFloat(kv["elapsedMs"], 64)
			f.errText = kv["error"]
		case strings.HasPrefix(l.msg, "transient same-model retry "):
			if m := ocRetryRe.FindStringSubmatch(l.msg); m != nil {
				n, _ := strconv.Atoi(m[1])
				of, _ := strconv.Atoi(m[2])
				d, _ := strconv.ParseFloat(m[3], 64)
				tr.retries = append(tr.retries, ocRetry{trace: l.trace(), at: at, n: n, of: of, delayMs: d})
			}
		case l.msg == "auth profile failure state updated" && l.field("windowType") == "cooldown":
			until, _ := l.field("cooldownUntil").(float64)
			ec, _ := l.field("errorCount").(float64)
			reason, _ := l.field("reason").(string)
			p, _ := l.field("provider").(string)
			tr.cooldowns = append(tr.cooldowns, ocCooldown{provider: p, at: at, until: at + (until-float64(l.at.UnixMilli()))/1000, reason: reason, errorCount: ec})
		case l.msg == "model fallback decision":
			d, _ := l.field("decision").(string)
			p, _ := l.field("candidateProvider").(string)
			tr.decisions = append(tr.decisions, ocDecision{trace: l.trace(), decision: d, provider: p, at: at})
		case strings.HasPrefix(l.msg, "model fallback chain stopped"):
			tr.stopped = append(tr.stopped, l)
		case strings.HasPrefix(l.msg, "embedded run agent end"):
			// The run of a call that answered 200 ends here: in error
			// after a stream cut ("network connection was interrupted"),
			// or well.
			if f := last[l.trace()]; f != nil && f.status == 200 && f.failed < 0 && !f.ok {
				if l.field("isError") == true || strings.Contains(l.msg, "isError=true") {
					// "LLM request timed out." (failoverReason timeout):
					// its timeoutSeconds; else the stream broke.
					f.failed = at
					if e, _ := l.field("error").(string); strings.Contains(e, "timed out") {
						f.timedOut = true
					} else {
						f.cut = true
					}
				} else {
					f.ok = true
				}
			}
		case strings.HasPrefix(l.msg, "embedded run prompt end"):
			// A run OpenClaw's timeout aborted has no "agent end": its
			// prompt ends, then "run cleanup ... timedOut=true".
			if f := last[l.trace()]; f != nil && f.status == 200 && f.failed < 0 && !f.ok {
				f.failed = at
			}
		case strings.HasPrefix(l.msg, "run cleanup:"):
			if f := last[l.trace()]; f != nil && f.failed >= 0 && !f.cut && !f.timedOut {
				f.timedOut = strings.Contains(l.msg, "timedOut=true")
				if !f.timedOut {
					f.failed = -1
				}
			}
		}
	}
	return tr
}

// calls returns the log's provider calls to provider in start order.
func (tr *ocTruth) calls(provider string) []*ocFetch {
	var out []*ocFetch
	for _, f := range tr.fetches {
		if f.provider == provider {
			out = append(out, f)
		}
	}
	return out
}

// turns groups the log's calls by turn (trace), each in start order.
func (tr *ocTruth) turns() map[string][]*ocFetch {
	out := map[string][]*ocFetch{}
	for _, f := range tr.fetches {
		out[f.trace] = append(out[f.trace], f)
	}
	return out
}

// hCall is one provider call as the harness journalled it, in run
// seconds: arrival and the end of the exchange at the fake provider.
type hCall struct {
	upstream string
	seq      int64 // -1 without a stamp
	at, done float64
	status   int
	outcome  journal.Outcome
	// delivered: the gateway hung up after the answer's content was all
	// written (journal.UpstreamRequest.Delivered), not a give-up.
	delivered bool
}

// hRun is the harness's journal of a drill: provider calls, and each
// client request's outcome by sequence number.
type hRun struct {
	calls   []*hCall
	clients map[int64]*journal.ClientRequest
}

func readHarnessRun(t *testing.T, dir string) *hRun {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := &hRun{clients: map[int64]*journal.ClientRequest{}}
	_, err = journal.DecodeTransient(f, func(ev journal.Event) {
		switch p := ev.Payload.(type) {
		case *journal.UpstreamRequest:
			if p.HealthCheck {
				return
			}
			c := &hCall{upstream: p.Upstream, seq: -1, at: ev.T.Seconds(), done: p.Done.Seconds(), status: p.Status, outcome: p.Outcome, delivered: p.Delivered}
			if p.Seq != nil {
				c.seq = int64(*p.Seq)
			}
			h.calls = append(h.calls, c)
		case *journal.ClientRequest:
			cp := *p
			h.clients[int64(p.Seq)] = &cp
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(h.calls, func(i, j int) bool { return h.calls[i].at < h.calls[j].at })
	return h
}

func (h *hRun) upstreamCalls(up string) []*hCall {
	var out []*hCall
	for _, c := range h.calls {
		if c.upstream == up {
			out = append(out, c)
		}
	}
	return out
}

// bySeq groups the harness's calls by request, each in arrival order.
func (h *hRun) bySeq() map[int64][]*hCall {
	out := map[int64][]*hCall{}
	for _, c := range h.calls {
		if c.seq >= 0 {
			out[c.seq] = append(out[c.seq], c)
		}
	}
	return out
}

// ocMatchWindow is how long after the log's [model-fetch] start the fake
// provider may see the same call arrive: the line is written just before
// the request goes out (the log has milliseconds, so up to a few ms
// before it too), but on a loaded machine the request leaves Node's event
// loop later: ~100 ms at load 15 on 2 cores, 550 ms at load 25.
const (
	ocMatchBefore = 0.030
	ocMatchWindow = 1.0
)

// matchTurns pairs each turn of the log with the harness's request whose
// calls arrived when the log's [model-fetch] starts say: candidates are
// the requests whose first call arrived within ocMatchWindow of the
// turn's first start, scored by the mean distance over all their calls
// (OpenClaw may start two queued turns in the same millisecond; their
// later calls tell them apart), nearest first, each used once. Turns left
// unmatched are returned apart.
func matchTurns(tr *ocTruth, h *hRun) (pairs map[string]int64, unmatched []string) {
	type cand struct {
		trace string
		seq   int64
		d     float64
	}
	var cands []cand
	seqs := h.bySeq()
	for trace, fs := range tr.turns() {
		for seq, cs := range seqs {
			d0 := cs[0].at - fs[0].start
			if d0 < -ocMatchBefore || d0 >= ocMatchWindow {
				continue
			}
			d0 = math.Abs(d0)
			d := d0 + 10 // a different number of calls: a last resort
			if len(cs) == len(fs) {
				d = 0
				for i := range fs {
					d += math.Abs(cs[i].at - fs[i].start)
				}
				d /= float64(len(fs))
			}
			cands = append(cands, cand{trace, seq, d})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].d < cands[j].d })
	pairs = map[string]int64{}
	usedSeq := map[int64]bool{}
	for _, c := range cands {
		if _, ok := pairs[c.trace]; ok || usedSeq[c.seq] {
			continue
		}
		pairs[c.trace] = c.seq
		usedSeq[c.seq] = true
	}
	for trace := range tr.turns() {
		if _, ok := pairs[trace]; !ok {
			unmatched = append(unmatched, trace)
		}
	}
	slices.Sort(unmatched)
	return pairs, unmatched
}
