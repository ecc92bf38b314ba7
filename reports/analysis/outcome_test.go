package analysis

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// runJournal is a replay at 10 requests per second for 10 s into one
// upstream; shape decides each request's fate from its due time: its
// outcome ("" sends it and answers 200; journal.OutcomeDropped drops it
// late, as the replayer drops a missed slot), and when it went out and
// ended (zero: on time, 2 ms later).
type reqFate struct {
	outcome    journal.Outcome
	sent, done time.Duration
	// capped drops it on time, as the replayer drops a request at a full
	// in-flight cap.
	capped bool
}

func runJournal(end string, extra []journal.Event, shape func(due time.Duration) reqFate) []journal.Event {
	var ev []journal.Event
	add := func(t time.Duration, p journal.Payload) { ev = append(ev, journal.Event{T: t, Payload: p}) }
	add(0, &journal.RunStart{RunID: "sim-outcome", Scenario: "sim", Seed: 1, Rate: 10, Duration: 10 * time.Second,
		WallStart: time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC), Upstreams: []string{"app"}, Config: json.RawMessage(`{}`)})
	seq := uint64(0)
	for due := 10 * time.Millisecond; due < 10*time.Second; due += 100 * time.Millisecond {
		f := shape(due)
		cr := &journal.ClientRequest{Seq: seq, Method: "GET", Route: "/", Upstream: "app", Scheduled: due, Sent: due + time.Millisecond}
		seq++
		if f.sent > 0 {
			cr.Sent = f.sent
		}
		switch f.outcome {
		case journal.OutcomeDropped:
			cr.Sent, cr.Outcome, cr.Late = 0, journal.OutcomeDropped, !f.capped
			add(due, cr)
			continue
		case "", journal.OutcomeOK:
			cr.Status, cr.Outcome = 200, journal.OutcomeOK
			s := cr.Seq
			add(cr.Sent+time.Millisecond, &journal.UpstreamRequest{Upstream: "app", Method: "GET", Path: "/", Seq: &s, InFlight: 1,
				Status: 200, Done: cr.Sent + time.Millisecond, Outcome: journal.OutcomeUpstreamComplete})
		default:
			cr.Outcome, cr.Error = f.outcome, "test"
		}
		cr.Done = cr.Sent + 2*time.Millisecond
		if f.done > 0 {
			cr.Done = f.done
		}
		cr.Late = cr.Sent-due > 5*time.Millisecond
		cr.Latency, cr.Service = cr.Done-cr.Scheduled, cr.Done-cr.Sent
		add(cr.Sent, cr)
	}
	ev = append(ev, extra...)
	add(10*time.Second, &journal.RunEnd{Reason: end, Partial: end != journal.EndCompleted})
	return ev
}

func analyse(t *testing.T, ev []journal.Event) *Analysis {
	t.Helper()
	a, err := AnalyzeEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestFrozenHarnessIsLateAndStalled: a harness frozen for 3 s (SIGSTOP)
// drops the slots it missed and sends the last one when it wakes. Its
// lateness counted the sent requests only (0.2 ms p99 here: "met"); now
// the missed ones count, each as late as the wait to the next send, so
// the p99 is seconds, and the stall is the run's outcome: a harness
// failure naming when and how many sends were missed.
func TestFrozenHarnessIsLateAndStalled(t *testing.T) {
	from, to := 3*time.Second, 6*time.Second
	a := analyse(t, runJournal(journal.EndCompleted, nil, func(due time.Duration) reqFate {
		switch {
		case due >= from && due+100*time.Millisecond < to:
			return reqFate{outcome: journal.OutcomeDropped}
		case due >= from && due < to:
			return reqFate{sent: to}
		}
		return reqFate{}
	}))
	if p := a.Replay.LatenessMs.P99; p == nil || *p < 1000 {
		t.Errorf("lateness p99 %v ms, want the missed sends' seconds in it", p)
	}
	st := a.Replay.Stall
	if st == nil {
		t.Fatalf("no stall in %+v", a.Replay)
	}
	if st.FromS != 3.01 || st.ToS != 6 || st.Missed != 29 || st.Stalls != 1 {
		t.Errorf("stall %+v, want from 3.01 s to 6 s, 29 missed (the last one due went out before the next was due), once", *st)
	}
	if a.Replay.Missed != 29 {
		t.Errorf("replay.missed %d, want 29", a.Replay.Missed)
	}
	want := "the harness stalled from T+3.01 s to T+6 s: 29 sends missed"
	if h := a.HarnessFailure(); !strings.HasPrefix(h, want) {
		t.Errorf("HarnessFailure %q, want it to begin %q", h, want)
	}
	if a.Judged() {
		t.Error("a stalled run is judged")
	}

	// A full in-flight cap for 3 s (every request dropped on time: the
	// gateway held every connection) is noted, but it is not the
	// harness's stall, nor lateness.
	a = analyse(t, runJournal(journal.EndCompleted, nil, func(due time.Duration) reqFate {
		if due >= from && due < to {
			return reqFate{outcome: journal.OutcomeDropped, capped: true}
		}
		return reqFate{}
	}))
	noted := false
	for _, n := range a.Notes {
		noted = noted || strings.HasPrefix(n, NoteReplayStalled)
	}
	if !noted || a.Replay.Stall != nil || a.HarnessFailure() != "" || *a.Replay.LatenessMs.P99 > 100 {
		t.Errorf("a full in-flight cap: noted %v, stall %+v, harness %q, lateness p99 %v ms", noted, a.Replay.Stall, a.HarnessFailure(), *a.Replay.LatenessMs.P99)
	}

	// A harness that kept up: no stall, lateness of the sends alone.
	a = analyse(t, runJournal(journal.EndCompleted, nil, func(time.Duration) reqFate { return reqFate{} }))
	if a.Replay.Stall != nil || a.HarnessFailure() != "" || !a.Judged() || a.Replay.Missed != 0 {
		t.Errorf("a run that kept up: stall %+v, harness %q, missed %d", a.Replay.Stall, a.HarnessFailure(), a.Replay.Missed)
	}
}

// TestInterruptionCutsCalls: the requests in flight when the run was
// interrupted that ended without an answer after it are cut by the
// interruption (their own class), not transport errors of the gateway;
// a request that failed before it stays what it was. The run is not
// judged and says when it was interrupted.
func TestInterruptionCutsCalls(t *testing.T) {
	at := 5 * time.Second
	extra := []journal.Event{{T: at, Payload: &journal.Phase{Name: PhaseInterrupted}}, {T: at + 200*time.Millisecond, Payload: &journal.Phase{Name: "stop"}}}
	a := analyse(t, runJournal(journal.EndInterrupted, extra, func(due time.Duration) reqFate {
		switch {
		case due > at:
			return reqFate{outcome: journal.OutcomeDropped} // never due: the scheduler stopped
		case due > at-300*time.Millisecond:
			return reqFate{outcome: journal.OutcomeResetBeforeHdrs, done: at + 100*time.Millisecond}
		case due > 2*time.Second && due < 2200*time.Millisecond:
			return reqFate{outcome: journal.OutcomeResetBeforeHdrs}
		}
		return reqFate{}
	}))
	if a.Interrupted() != "interrupted at T+5 s" || a.HarnessFailure() != "" || a.Judged() {
		t.Errorf("Interrupted %q, HarnessFailure %q, Judged %v", a.Interrupted(), a.HarnessFailure(), a.Judged())
	}
	if a.Run.CutByInterruption != 3 {
		t.Errorf("cut_by_interruption %d, want 3", a.Run.CutByInterruption)
	}
	cut, transport := 0, 0
	for s := range a.Timeline.Seconds {
		cut += int(a.Timeline.Client["interrupted"][s])
		transport += int(a.Timeline.Client["transport"][s])
	}
	if cut != 3 || transport != 2 {
		t.Errorf("timeline: %d cut, %d transport errors, want 3 and 2", cut, transport)
	}
	var outcomes int64
	for _, p := range a.Phases {
		outcomes += p.Outcomes[OutcomeCut]
	}
	if outcomes != 3 {
		t.Errorf("phases count %d cut, want 3", outcomes)
	}

	// An older journal has no phase "interrupted": the stop phase says when.
	a = analyse(t, runJournal(journal.EndInterrupted, extra[1:], func(time.Duration) reqFate { return reqFate{} }))
	if a.Interrupted() != "interrupted at T+5.2 s" {
		t.Errorf("without the phase: %q", a.Interrupted())
	}
}

// TestGatewayGone: a gateway that stops answering mid-run (every request
// refused by the OS from 6 s to the end) is named, with when and how many;
// one that refuses for a moment and answers again, or only the last
// requests (within what the analysis cannot see through), is not gone.
func TestGatewayGone(t *testing.T) {
	refusedFrom := func(from, until time.Duration) func(time.Duration) reqFate {
		return func(due time.Duration) reqFate {
			if due >= from && due < until {
				return reqFate{outcome: journal.OutcomeConnectRefused}
			}
			return reqFate{}
		}
	}
	a := analyse(t, runJournal(journal.EndCompleted, nil, refusedFrom(6*time.Second, time.Hour)))
	g := a.Run.GatewayGone
	if g == nil {
		t.Fatal("gateway gone not found")
	}
	if g.AtS != 6.011 || g.Refused != 40 || g.Due != 100 || g.LastAnswerS == nil || *g.LastAnswerS != 5.913 {
		t.Errorf("gone %+v (last answer %v)", *g, g.LastAnswerS)
	}
	want := "the gateway stopped answering at T+6.01 s: 40 of 100 requests refused by the OS"
	if h := a.HarnessFailure(); !strings.HasPrefix(h, want) {
		t.Errorf("HarnessFailure %q, want it to begin %q", h, want)
	}
	for name, shape := range map[string]func(time.Duration) reqFate{
		"a restart":      refusedFrom(6*time.Second, 8*time.Second),
		"the last 0.5 s": refusedFrom(9500*time.Millisecond, time.Hour),
		"from the start": refusedFrom(0, time.Hour),
	} {
		if a := analyse(t, runJournal(journal.EndCompleted, nil, shape)); a.Run.GatewayGone != nil {
			t.Errorf("%s: gone %+v", name, *a.Run.GatewayGone)
		}
	}
}
