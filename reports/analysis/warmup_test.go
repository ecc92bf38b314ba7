package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// warmJournal is a run with a 10 s warm-up at 2/s whose answers take 3 s
// and fail at first (a cold gateway: 4 failed, the first answer after
// 9 s), time zero at 12 s, then 20 scored requests at 2/s answered in
// 50 ms. The gateway forwards the sequence number on most calls; two
// warm-up calls carry none (one arriving before time zero, written
// after it), and one warm-up request's retry reaches the upstream after
// time zero, numbered. A metrics sample during the warm-up says open.
func warmJournal() []journal.Event {
	ms := time.Millisecond
	evs := []journal.Event{{Payload: &journal.RunStart{RunID: "r", Upstreams: []string{"search"}}}}
	add := func(t time.Duration, p journal.Payload) { evs = append(evs, journal.Event{T: t, Payload: p}) }
	add(time.Second, &journal.Phase{Name: "warmup"})
	add(1500*ms, &journal.MetricsSample{States: []journal.BreakerState{{Upstream: "search", State: journal.StateOpen}}})
	var late time.Duration
	for i := range 20 {
		sched := time.Second + time.Duration(i)*500*ms
		seq := journal.WarmupSeqBase + uint64(i)
		done := sched + 3*time.Second
		if i == 0 {
			done = sched + 9*time.Second
		}
		out, status := journal.OutcomeOK, 200
		if i >= 1 && i <= 4 {
			out, status = journal.OutcomeHTTP5xx, 503
		}
		call := &journal.UpstreamRequest{Upstream: "search", Method: "GET", Path: "/x", Seq: &seq, Status: 200, Done: done - ms, Outcome: journal.OutcomeUpstreamComplete}
		if i == 7 || i == 8 {
			call.Seq = nil
		}
		add(sched+ms, call)
		add(sched, &journal.ClientRequest{Seq: seq, Method: "GET", Route: "/x", Upstream: "search", Scheduled: sched, Sent: sched, Done: done, Status: status, Outcome: out, Warmup: true})
		late = max(late, done)
	}
	zero := 12 * time.Second
	add(zero, &journal.Phase{Name: "replay"})
	// A state from the gateway's log, stamped with its line's time
	// (before time zero), read after it: the warm-up's.
	add(11*time.Second, &journal.MetricsSample{Origin: journal.OriginLog, States: []journal.BreakerState{{Upstream: "search", State: journal.StateOpen}}})
	// Written after time zero, arrived before it, no number: the warm-up's.
	add(11*time.Second, &journal.UpstreamRequest{Upstream: "search", Method: "GET", Path: "/x", Status: 200, Done: 11*time.Second + ms, Outcome: journal.OutcomeUpstreamComplete})
	// A warm-up request's retry after time zero, numbered: the warm-up's.
	wseq := journal.WarmupSeqBase + 19
	add(zero+300*ms, &journal.UpstreamRequest{Upstream: "search", Method: "GET", Path: "/x", Seq: &wseq, Status: 200, Done: zero + 301*ms, Outcome: journal.OutcomeUpstreamComplete})
	for i := range 20 {
		sched := zero + time.Duration(i)*500*ms
		seq := uint64(i)
		add(sched+ms, &journal.UpstreamRequest{Upstream: "search", Method: "GET", Path: "/x", Seq: &seq, Status: 200, Done: sched + 40*ms, Outcome: journal.OutcomeUpstreamComplete})
		add(sched, &journal.ClientRequest{Seq: seq, Method: "GET", Route: "/x", Upstream: "search", Scheduled: sched, Sent: sched, Done: sched + 50*ms, Status: 200, Outcome: journal.OutcomeOK})
	}
	add(zero+11*time.Second, &journal.MetricsSample{States: []journal.BreakerState{{Upstream: "search", State: journal.StateClosed}}})
	add(zero+11*time.Second, &journal.RunEnd{Reason: journal.EndCompleted})
	return evs
}

// TestWarmupNotScored: nothing of the warm-up reaches a figure — the
// replay's counts, the phases, the upstream's calls and its metrics
// states are the scored part's alone — and the warm-up is summed up
// apart, in run.json, one note and the timeline's band.
func TestWarmupNotScored(t *testing.T) {
	a, err := AnalyzeEvents(warmJournal())
	if err != nil {
		t.Fatal(err)
	}
	if a.Replay.Due != 20 || a.Replay.Sent != 20 {
		t.Errorf("replay due %d sent %d, want the 20 scored requests", a.Replay.Due, a.Replay.Sent)
	}
	if b := a.Phases["before"]; b == nil || b.StartS != 12 || b.Requests != 20 || b.Outcomes["ok"] != 20 || b.Outcomes["http_5xx"] != 0 {
		t.Errorf("phase before %+v", b)
	}
	u := a.Upstreams["search"]
	if u == nil || u.Calls != 20 {
		t.Fatalf("search %+v: want its 20 scored calls", u)
	}
	for _, m := range a.Timeline.Upstreams["search"].Metrics {
		if m.State == journal.StateOpen {
			t.Errorf("the warm-up's metrics state reached the timeline: %+v", a.Timeline.Upstreams["search"].Metrics)
		}
	}
	w := a.Warmup
	if w == nil {
		t.Fatal("no warm-up summary")
	}
	if w.Requests != 20 || w.Sent != 20 || w.Outcomes["ok"] != 16 || w.Outcomes["http_5xx"] != 4 || w.UpstreamCalls != 22 {
		t.Errorf("warm-up %+v", w)
	}
	if w.StartS != 1 || w.EndS != 12 || w.FirstMs == nil || *w.FirstMs != 9000 || *w.LatencyMs.P50 != 3000 || *w.LatencyMs.Max != 9000 {
		t.Errorf("warm-up span %v–%v, first %v, latency %+v", w.StartS, w.EndS, fp(w.FirstMs), w.LatencyMs)
	}
	if tw := a.Timeline.Warmup; tw == nil || tw.StartS != 1 || tw.EndS != 12 {
		t.Errorf("timeline warm-up %+v", tw)
	}
	var n int32
	for _, g := range a.Timeline.Client {
		for s := 0; s < 12 && s < len(g); s++ {
			n += g[s]
		}
	}
	if n != 0 {
		t.Errorf("%d warm-up requests on the timeline's client lane", n)
	}
	if !strings.Contains(strings.Join(a.Notes, "\n"), "warm-up before time zero, not scored (excluded from every figure and expectation): 20 requests over 11 s (1 s–12 s), 16 ok, 4 not; latency p50 3 s") {
		t.Errorf("notes %q", a.Notes)
	}
}

// A run without a warm-up has no summary, no band and no note.
func TestNoWarmup(t *testing.T) {
	var evs []journal.Event
	for _, ev := range warmJournal() {
		switch p := ev.Payload.(type) {
		case *journal.Phase:
			continue
		case *journal.ClientRequest:
			if p.Warmup {
				continue
			}
		}
		evs = append(evs, ev)
	}
	a, err := AnalyzeEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	if a.Warmup != nil || a.Timeline.Warmup != nil || strings.Contains(strings.Join(a.Notes, " "), "warm-up") {
		t.Errorf("warm-up %+v, band %+v, notes %q", a.Warmup, a.Timeline.Warmup, a.Notes)
	}
}
