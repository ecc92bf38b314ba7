package analysis

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// stallJournal is a replay at rate per second for 10 s whose sends stop
// for stall from 4 s (the requests due then dropped, the one due at the
// stall's end sent late), or, with gap, whose schedule itself has nothing
// due for gap from 4 s (a capture's own timing: no stall).
func stallJournal(rate float64, stall, gap time.Duration) []journal.Event {
	var ev []journal.Event
	add := func(t time.Duration, p journal.Payload) { ev = append(ev, journal.Event{T: t, Payload: p}) }
	add(0, &journal.RunStart{RunID: "sim-stall", Scenario: "sim", Seed: 1, Rate: rate, Duration: 10 * time.Second,
		WallStart: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), Upstreams: []string{"app"}, Config: json.RawMessage(`{}`)})
	iv := 50 * time.Millisecond
	seq := uint64(0)
	for due := 10 * time.Millisecond; due < 10*time.Second; due += iv {
		if gap > 0 && due >= 4*time.Second && due < 4*time.Second+gap {
			continue
		}
		cr := &journal.ClientRequest{Seq: seq, Method: "GET", Route: "/", Upstream: "app", Scheduled: due, Sent: due + time.Millisecond}
		seq++
		if stall > 0 && due >= 4*time.Second && due < 4*time.Second+stall {
			if due+iv < 4*time.Second+stall {
				cr.Sent, cr.Outcome = 0, journal.OutcomeDropped
				add(due, cr)
				continue
			}
			cr.Sent = 4*time.Second + stall // the last one due, sent when the stall ends
		}
		cr.Status, cr.Outcome = 200, journal.OutcomeOK
		cr.Done, cr.HeadersAt = cr.Sent+2*time.Millisecond, cr.Sent+2*time.Millisecond
		cr.Latency, cr.Service = cr.Done-cr.Scheduled, cr.Done-cr.Sent
		s := cr.Seq
		add(cr.Sent+time.Millisecond, &journal.UpstreamRequest{Upstream: "app", Method: "GET", Path: "/", Seq: &s, InFlight: 1, Status: 200, Done: cr.Done - time.Millisecond, Outcome: journal.OutcomeUpstreamComplete})
		add(cr.Sent, cr)
	}
	add(10*time.Second, &journal.RunEnd{Reason: journal.EndCompleted})
	return ev
}

// TestReplayStallNote: a run whose replay sent nothing for longer than the
// analysis can see through (max(GapFactor × the interval, MinGap)) while
// requests were due says so in its notes, with how long and where; a
// shorter stall, or a gap in the schedule itself, is no stall.
func TestReplayStallNote(t *testing.T) {
	stalled := func(ev []journal.Event) string {
		t.Helper()
		a, err := AnalyzeEvents(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range a.Notes {
			if strings.HasPrefix(n, NoteReplayStalled) {
				return n
			}
		}
		return ""
	}
	n := stalled(stallJournal(20, 1500*time.Millisecond, 0))
	for _, want := range []string{"longer than 1 s", "once for 1.49 s from 4.01 s", "29 of 200 requests dropped"} {
		if !strings.Contains(n, want) {
			t.Errorf("1.5 s stall at 20/s: note %q, want it to say %q", n, want)
		}
	}
	if n := stalled(stallJournal(20, 800*time.Millisecond, 0)); n != "" {
		t.Errorf("0.8 s stall at 20/s (under the 1 s the analysis sees through): %q", n)
	}
	if n := stalled(stallJournal(0, 0, 3*time.Second)); n != "" {
		t.Errorf("a 3 s gap in a capture's own timing, every request sent on time: %q", n)
	}
	if n := stalled(stallJournal(0, 1500*time.Millisecond, 0)); !strings.Contains(n, "the 50 ms between requests") {
		t.Errorf("1.5 s stall, capture timing (interval from the schedule): %q", n)
	}
}
