package e2e

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/num"
)

// The OpenClaw drills' figures against OpenClaw's log: each row is a
// figure as the log gives it and as the harness measured it (the report,
// run.json, or where the report has no such figure the journal it is
// made from), within max(5 %, 20 ms) or a stated bound.

// bound records a figure the harness gives as bounds, and fails the test
// when the log's value is outside them.
func (c *comparer) bound(what string, log, lo, hi float64) {
	c.t.Helper()
	in := log >= lo-tolerance(lo) && log <= hi+tolerance(hi)
	c.rows = append(c.rows, [4]string{what, fmt.Sprintf("%.3f", log), fmt.Sprintf("%.3f – %.3f", lo, hi), "bound " + yes(in)})
	if !in {
		c.errorf("%s: the log's %.3f is outside the harness's %.3f – %.3f", what, log, lo, hi)
	}
}

// within records a harness figure that must lie within bounds the log
// gives (the log stamps a moment only up to an interval).
func (c *comparer) within(what string, measured, lo, hi float64) {
	c.t.Helper()
	in := measured >= lo-tolerance(lo) && measured <= hi+tolerance(hi)
	c.rows = append(c.rows, [4]string{what, fmt.Sprintf("%.3f – %.3f", lo, hi), fmt.Sprintf("%.3f", measured), "bound " + yes(in)})
	if !in {
		c.errorf("%s: measured %.3f, outside the log's %.3f – %.3f", what, measured, lo, hi)
	}
}

// spread is min / median / max of xs, in ms.
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "—"
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	return fmt.Sprintf("%.0f / %.0f / %.0f ms (n=%d)", s[0]*1000, num.Median(s)*1000, s[len(s)-1]*1000, len(s))
}

func (r *ocRun) primaryEpisode(t *testing.T) *analysis.Episode {
	t.Helper()
	ua := r.res.Analysis.Upstreams["primary"]
	if ua == nil || len(ua.Episodes) != 1 {
		t.Fatalf("want one fault episode on primary, the analysis has %+v", ua)
	}
	return ua.Episodes[0]
}

// compareCommon holds what every drill shows to the log: the provider
// calls, the turns, the attempts of each turn and the waits between
// them, the in-turn retries.
func (r *ocRun) compareCommon(t *testing.T) (*comparer, *ocTruth, *hRun) {
	t.Helper()
	tr := openclawTruth(t, r.lines)
	h := readHarnessRun(t, r.res.Dir)
	c := &comparer{t: t, soft: true}
	a := r.res.Analysis
	c.note("load", "—", loadText(a))
	for _, up := range []string{"primary", "backup"} {
		c.exact("provider calls to "+up, len(tr.calls(up)), len(h.upstreamCalls(up)))
	}
	pairs, unmatched := matchTurns(tr, h)
	r.checkLogLag(t, a, tr, h, pairs)
	c.exact("turns that reached a provider, unmatched to a client request", 0, len(unmatched))
	turns, seqs := tr.turns(), h.bySeq()
	logUnmatched(t, unmatched, turns, seqs)
	same, per := 0, 0
	var w ocWaits
	if l := loadOf(a); l != nil && l.Max >= float64(runtime.NumCPU()) {
		w.overloaded = true
	}
	delays, delaysIn := 0, 0
	retriesBy := map[string][]ocRetry{}
	for _, rt := range tr.retries {
		retriesBy[rt.trace] = append(retriesBy[rt.trace], rt)
	}
	for trace, seq := range pairs {
		fs, cs := turns[trace], seqs[seq]
		per++
		if len(fs) != len(cs) {
			c.errorf("turn %s (seq %d): %d provider calls in OpenClaw's log, %d at the fakes", trace, seq, len(fs), len(cs))
			continue
		}
		same++
		for i := 1; i < len(fs); i++ {
			if fs[i].provider == fs[i-1].provider { // else a failover, not a retry
				w.add(c, seq, i, fs[i-1], fs[i], cs[i].at-cs[i-1].done, cs[i].at-fs[i].start)
			}
		}
		// OpenClaw's delayMs is the sleep it chose; the wait the fakes
		// see contains it (and OpenClaw's own work before the next call).
		for i, rt := range retriesBy[trace] {
			if i+1 < len(cs) {
				delays++
				if w := cs[i+1].at - cs[i].done; w >= rt.delayMs/1000-0.020 {
					delaysIn++
				} else {
					c.errorf("turn seq %d, retry %d: delayMs=%g, but the fakes saw the next call %.3f s after", seq, rt.n, rt.delayMs, w)
				}
			}
		}
	}
	c.rows = append(c.rows, [4]string{"turns whose calls match one by one (count)", fmt.Sprint(per), fmt.Sprint(same), yes(same == per)})
	w.rows(c)
	c.rows = append(c.rows, [4]string{"OpenClaw's delayMs contained in the wait", fmt.Sprintf("%d retries", delays), fmt.Sprintf("%d contain it", delaysIn), "bound " + yes(delaysIn == delays)})
	r.compareRetryFigures(c, tr, &w)
	return c, tr, h
}

// logUnmatched says, for each turn of the log paired with no request,
// its calls and the nearest request: what a reader needs to see why.
func logUnmatched(t *testing.T, unmatched []string, turns map[string][]*ocFetch, seqs map[int64][]*hCall) {
	t.Helper()
	for _, trace := range unmatched {
		fs := turns[trace]
		near, nd := int64(-1), math.Inf(1)
		for seq, cs := range seqs {
			if d := math.Abs(cs[0].at - fs[0].start); d < nd {
				near, nd = seq, d
			}
		}
		var starts []string
		for _, f := range fs {
			starts = append(starts, fmt.Sprintf("%s %.3f→%d", f.provider, f.start, f.status))
		}
		t.Logf("unmatched turn %s: calls %v; nearest request seq %d, %d calls, first %.3f s away", trace, starts, near, len(seqs[near]), nd)
	}
}

// ocWaits are the waits between consecutive calls of a turn to the same
// provider, from the fakes and from OpenClaw's log. After an error status
// (429, 503) the log stamps the call's end (its response line): the wait
// is exact. After a call that failed inside its 200 (a stream cut, a
// timeout) the log stamps only when the turn's run noticed ("agent end",
// "prompt end"), after the call ended: the wait is bounded, between the
// next start less that line and the next start less the call's start.
// (Not its response line: on a loaded machine Node logs a response line
// after the event loop gets to it, 370 ms after the fake had already
// reset the stream in one run at load 15.)
type ocWaits struct {
	exactLog, exactH   []float64
	lo, hi, boundH     []float64
	exactOK, boundedOK int
	// overloaded: the load average reached the CPU count during the run;
	// sendLate counts the waits excused by OpenClaw's send lag then.
	overloaded bool
	sendLate   int
}

// sendLag is how long after its start line the next call reached the
// fake. On an overloaded machine (w.overloaded) a wait the fakes saw
// longer than the log's by no more than that lag is OpenClaw's event
// loop sending the call late, not a wrong figure: it is counted apart
// (the row says how many), and the end of the call before it is still
// held to its response line.
func (w *ocWaits) add(c *comparer, seq int64, i int, prev, next *ocFetch, hw, sendLag float64) {
	if prev.failed < 0 {
		lw := next.start - prev.end
		w.exactLog, w.exactH = append(w.exactLog, lw), append(w.exactH, hw)
		switch d := hw - lw; {
		case math.Abs(d) <= tolerance(lw):
			w.exactOK++
		case w.overloaded && d > 0 && d <= tolerance(lw)+sendLag:
			w.sendLate++
		default:
			c.errorf("turn seq %d, wait before call %d: the fakes saw %.3f s, OpenClaw's log %.3f s", seq, i+1, hw, lw)
		}
		return
	}
	lo, hi := next.start-prev.failed, next.start-prev.start
	w.lo, w.hi, w.boundH = append(w.lo, lo), append(w.hi, hi), append(w.boundH, hw)
	if hw >= lo-tolerance(lo) && hw <= hi+tolerance(hi) {
		w.boundedOK++
	} else {
		c.errorf("turn seq %d, wait before call %d (after a call failed inside its 200): the fakes saw %.3f s, OpenClaw's log allows %.3f – %.3f s", seq, i+1, hw, lo, hi)
	}
}

func (w *ocWaits) rows(c *comparer) {
	if len(w.exactLog) > 0 {
		late := ""
		if w.sendLate > 0 {
			late = fmt.Sprintf(" (+%d longer by at most OpenClaw's send lag, overloaded machine)", w.sendLate)
		}
		c.rows = append(c.rows, [4]string{"waits after an error status (each within tolerance)", spread(w.exactLog), spread(w.exactH),
			fmt.Sprintf("%d/%d%s %s", w.exactOK, len(w.exactLog), late, yes(w.exactOK+w.sendLate == len(w.exactLog)))})
	}
	if len(w.lo) > 0 {
		c.rows = append(c.rows, [4]string{"waits after a call failed inside its 200 (each within the log's bounds)", spread(w.lo) + " – " + spread(w.hi), spread(w.boundH),
			fmt.Sprintf("bound %d/%d %s", w.boundedOK, len(w.lo), yes(w.boundedOK == len(w.lo)))})
	}
}

// ocLagMax is how late after its [model-fetch] start line a call may
// reach the fake (p90) for OpenClaw's log to be held to 20 ms: Node
// writes the line, then sends the request when its event loop gets to
// it. On a machine so loaded that this lag is longer, the log's times
// are OpenClaw's event loop's, not the calls': nothing can be held to
// them, and the drill is skipped — but only when the machine was
// overloaded (load average at least its CPU count), as skipIfStalled.
const ocLagMax = 0.100

func (r *ocRun) checkLogLag(t *testing.T, a *analysis.Analysis, tr *ocTruth, h *hRun, pairs map[string]int64) {
	t.Helper()
	turns, seqs := tr.turns(), h.bySeq()
	var lags []float64
	for trace, seq := range pairs {
		fs, cs := turns[trace], seqs[seq]
		for i := range min(len(fs), len(cs)) {
			lags = append(lags, cs[i].at-fs[i].start)
		}
	}
	if len(lags) == 0 {
		return
	}
	sort.Float64s(lags)
	r.lagP90 = lags[len(lags)*9/10]
	t.Logf("OpenClaw's [model-fetch] start line to the call's arrival: %s, p90 %.0f ms (load %s)", spread(lags), r.lagP90*1000, loadText(a))
}

// finish prints the table and judges the drill: every failure fails it,
// unless OpenClaw's event loop lagged past ocLagMax on an overloaded
// machine, which skips it (the table printed, the failures listed).
func (r *ocRun) finish(c *comparer, name string) {
	t := c.t
	t.Helper()
	c.log(name)
	if len(c.failures) == 0 {
		return
	}
	a := r.res.Analysis
	if r.lagP90 > ocLagMax {
		if l := loadOf(a); l == nil || l.Max >= float64(runtime.NumCPU()) {
			t.Skipf("OpenClaw's event loop lagged: its calls left %.0f ms (p90) after their log lines (load average during the run: %s, %d CPUs), so its log cannot be held to 20 ms; off:\n%s",
				r.lagP90*1000, loadText(a), runtime.NumCPU(), strings.Join(c.failures, "\n"))
		}
	}
	for _, f := range c.failures {
		t.Error(f)
	}
}

// compareRetryFigures holds the report's retry figures for primary to the
// log's: attempts per turn, the retries, the waits.
func (r *ocRun) compareRetryFigures(c *comparer, tr *ocTruth, w *ocWaits) {
	dist := map[string]int64{}
	for _, fs := range tr.turns() {
		n := 0
		for _, f := range fs {
			if f.provider == "primary" {
				n++
			}
		}
		if n > 0 {
			dist[fmt.Sprint(n)]++
		}
	}
	retries := len(tr.retries) // every retry line here is for primary/fake-model
	res := r.res.Analysis.Resilience
	if res == nil || res.Upstreams["primary"] == nil {
		c.rows = append(c.rows, [4]string{"attempts per turn on primary", fmt.Sprint(dist), "absent", "OFF"})
		c.errorf("the report has no retry figures for primary")
		return
	}
	rf := res.Upstreams["primary"]
	got := map[string]int64{}
	for k, v := range rf.Distribution {
		if k != "0" {
			got[k] = v
		}
	}
	c.exact("attempts per turn on primary (turns by attempts)", sortedMap(dist), sortedMap(got))
	c.exact("in-turn retries (transient same-model retry lines)", retries, rf.Backoff.Retries)
	if rf.Backoff.MinMs == nil {
		return
	}
	figs := []float64{*rf.Backoff.MinMs / 1000, *rf.Backoff.P50Ms / 1000, *rf.Backoff.MaxMs / 1000}
	names := []string{"min", "median", "max"}
	if len(w.lo) == 0 && len(w.exactLog) > 0 {
		s := slices.Clone(w.exactLog)
		sort.Float64s(s)
		for i, want := range []float64{s[0], num.Median(s), s[len(s)-1]} {
			c.num("report's wait before a retry, "+names[i]+" (s)", want, figs[i], true)
		}
		return
	}
	// Some waits are bounded: the report's figure must lie between the
	// same statistic of the waits' lower and upper bounds.
	lo, hi := append(slices.Clone(w.exactLog), w.lo...), append(slices.Clone(w.exactLog), w.hi...)
	sort.Float64s(lo)
	sort.Float64s(hi)
	if len(lo) == 0 {
		return
	}
	// The report's median (reports/num.Median: the mean of the middle
	// two of an even count), of the bounds as of the waits.
	los := []float64{lo[0], num.Median(lo), lo[len(lo)-1]}
	his := []float64{hi[0], num.Median(hi), hi[len(hi)-1]}
	for i := range figs {
		c.within("report's wait before a retry, "+names[i]+" (s)", figs[i], los[i], his[i])
	}
}

func sortedMap(m map[string]int64) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if len(ks[i]) != len(ks[j]) {
			return len(ks[i]) < len(ks[j])
		}
		return ks[i] < ks[j]
	})
	var b strings.Builder
	for i, k := range ks {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%d", k, m[k])
	}
	return "{" + b.String() + "}"
}

// primaryCooldowns are the log's cooldowns of primary's auth profile.
func (tr *ocTruth) primaryCooldowns() []ocCooldown {
	var out []ocCooldown
	for _, cd := range tr.cooldowns {
		if cd.provider == "primary" {
			out = append(out, cd)
		}
	}
	return out
}

// compareNoCooldown: a drill in which OpenClaw keeps no cooldown (503,
// stalls, resets: it retries in place) must not read as an open breaker.
func compareNoCooldown(c *comparer, tr *ocTruth, ep *analysis.Episode, a *analysis.Analysis) {
	c.exact("cooldowns of primary (auth profile failure state updated)", len(tr.primaryCooldowns()), len(ep.Cycles))
	c.exact("opened", len(tr.primaryCooldowns()) > 0, ep.Opened)
	opens := 0
	for _, mt := range a.Upstreams["primary"].MetricsTransitions {
		if mt.To == journal.StateOpen {
			opens++
		}
	}
	c.exact("open states read from the log (observer)", len(tr.primaryCooldowns()), opens)
}

// compareGiveUps: the calls OpenClaw abandoned at its timeout, against
// the calls the fakes saw the gateway hang up on. Each give-up, paired by
// turn, must have lasted at least timeoutSeconds and no longer than
// OpenClaw's own record of it (its start line to the line saying the run
// timed out, which it writes after hanging up: on a loaded machine,
// hundreds of ms after).
func compareGiveUps(c *comparer, tr *ocTruth, h *hRun, a *analysis.Analysis, timeout float64) {
	gaveUp := func(x *hCall) bool {
		// The gateway hung up: during the answer (client_gone, unless
		// only the stream's end marker was left: OpenClaw closes after
		// the usage chunk), or on a stream the fault held until it did
		// (stalled).
		return x.outcome == journal.OutcomeUpstreamGone && !x.delivered || x.outcome == journal.OutcomeUpstreamStalled
	}
	var logs, hs []float64
	for _, f := range tr.fetches {
		if f.timedOut {
			logs = append(logs, f.failed-f.start)
		}
	}
	for _, x := range h.calls {
		if gaveUp(x) {
			hs = append(hs, x.done-x.at)
		}
	}
	c.exact("give-ups at the timeout (count)", len(logs), len(hs))
	pairs, _ := matchTurns(tr, h)
	turns, seqs := tr.turns(), h.bySeq()
	n, in := 0, 0
	for trace, seq := range pairs {
		fs, cs := turns[trace], seqs[seq]
		for i := range min(len(fs), len(cs)) {
			if !fs[i].timedOut {
				continue
			}
			n++
			d, hi := cs[i].done-cs[i].at, fs[i].failed-fs[i].start
			if gaveUp(cs[i]) && d >= timeout-0.020 && d <= hi+tolerance(hi) {
				in++
			} else {
				c.errorf("turn seq %d, call %d: OpenClaw timed out %.3f s after its start line, the fake saw %s after %.3f s (timeoutSeconds %g)", seq, i+1, hi, cs[i].outcome, d, timeout)
			}
		}
	}
	c.rows = append(c.rows, [4]string{fmt.Sprintf("give-up after (timeoutSeconds %g ≤ fake ≤ OpenClaw's line)", timeout), spread(logs), spread(hs), fmt.Sprintf("bound %d/%d %s", in, n, yes(in == n))})
	// The report's give-ups (run.json "give_ups"): the calls, the
	// per-call timeout they show, and what became of their requests.
	var g *analysis.UpstreamGiveUps
	if a.GiveUps != nil {
		g = a.GiveUps.Upstreams["primary"]
	}
	if g == nil {
		c.exact("report: give-ups on primary", len(logs), 0)
		return
	}
	c.exact("report: give-ups on primary (seen)", len(logs), g.Seen)
	if len(logs) > 0 {
		sort.Float64s(logs)
		c.within("report: the per-call timeout they show (timeout_s)", val(g.TimeoutS), timeout, num.Median(logs))
	}
	// A give-up's turn still succeeded unless it was a stream that had
	// passed text on (compareFailedStreams): then the client's 200 failed.
	failedTurns := failedStreamTurns(tr, h)
	onRetry, failed := 0, 0
	for _, f := range tr.fetches {
		if f.timedOut {
			if failedTurns[f.trace] {
				failed++
			} else {
				onRetry++
			}
		}
	}
	c.exact("report: give-ups whose turn then succeeded on a retry", onRetry, g.OnRetry)
	c.exact("report: give-ups whose turn failed", failed, g.ThenFailed)
	// Who gave up first on the turns that failed: OpenClaw, when it
	// timed out a call of the turn (its log's "timed out" line) — the
	// stream failed after, on a retry it could not append; else the
	// provider's failure it passed on.
	if r := a.Resilience; r != nil && r.Upstreams["primary"] != nil {
		timedOut := map[string]bool{}
		for _, f := range tr.fetches {
			timedOut[f.trace] = timedOut[f.trace] || f.timedOut
		}
		gw := 0
		for trace := range failedTurns {
			if timedOut[trace] {
				gw++
			}
		}
		gf := r.Upstreams["primary"].Deadlines.GaveUpFirst
		c.exact("report: failed turns the gateway gave up on first (deadlines.gave_up_first)", gw, int(gf["gateway"]))
		c.exact("report: failed turns the provider ended first (deadlines.gave_up_first)", len(failedTurns)-gw, int(gf["upstream"]))
	}
}

// compareFailedStreams: a streaming turn whose provider stream failed
// after OpenClaw had passed text on cannot be retried invisibly: OpenClaw
// answers the rest of its 200 with an error event ("cannot be represented
// as an append-only response stream"), which it does not log. The log's
// count is the streaming turns (those the client asked to stream: its
// answer was an event stream) in which OpenClaw gave a call up after its
// 200; the harness must count each as failed.
func compareFailedStreams(c *comparer, tr *ocTruth, h *hRun) {
	hN := 0
	for _, cr := range h.clients {
		switch cr.Outcome {
		case journal.OutcomeStreamError, journal.OutcomeStreamCut, journal.OutcomeCutMidBody:
			hN++
		}
	}
	c.exact("failed streams (streaming turns with a call given up after its 200) vs client stream failures", len(failedStreamTurns(tr, h)), hN)
}

// failedStreamTurns are the log's turns that must have failed their
// client: streaming turns (their answer was an event stream) in which
// OpenClaw gave a call up after its 200.
func failedStreamTurns(tr *ocTruth, h *hRun) map[string]bool {
	pairs, _ := matchTurns(tr, h)
	failedAfter200 := map[string]bool{}
	for _, f := range tr.fetches {
		if f.failed >= 0 {
			failedAfter200[f.trace] = true
		}
	}
	out := map[string]bool{}
	for trace, seq := range pairs {
		if cr := h.clients[seq]; cr != nil && cr.SSEEvents > 0 && failedAfter200[trace] {
			out[trace] = true
		}
	}
	return out
}
