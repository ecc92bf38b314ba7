package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// satJournal is 20 s at 10 req/s before a fault at 20 s: the client's
// latency is gw(i) + up(i), the upstream call taking up(i), the gateway
// adding gw(i), for request i.
func satJournal(gw, up func(i int) time.Duration) []journal.Event {
	evs := []journal.Event{{Payload: &journal.RunStart{RunID: "r", Upstreams: []string{"search"}}}}
	add := func(t time.Duration, p journal.Payload) { evs = append(evs, journal.Event{T: t, Payload: p}) }
	for i := range 200 {
		sched := time.Duration(i)*100*time.Millisecond + time.Millisecond
		seq := uint64(i)
		at := sched + gw(i)
		add(at, &journal.UpstreamRequest{Upstream: "search", Method: "GET", Path: "/x", Seq: &seq, Status: 200, Done: at + up(i), Outcome: journal.OutcomeUpstreamComplete})
		done := at + up(i)
		add(sched, &journal.ClientRequest{Seq: seq, Method: "GET", Route: "/x", Upstream: "search", Scheduled: sched, Sent: sched, Done: done, Status: 200, Outcome: journal.OutcomeOK})
	}
	add(20*time.Second, &journal.FaultStart{Name: "f", Type: "status", Upstream: "search"})
	add(25*time.Second, &journal.FaultEnd{Name: "f", Upstream: "search"})
	add(30*time.Second, &journal.RunEnd{Reason: journal.EndCompleted})
	return evs
}

// TestSaturationWhose: a gateway whose own delay grows by 40 ms a request
// (a queue: 10 offered, fewer served) reads saturated, both ways; the
// same client latency when it is the upstream that slows down is the
// dependency's, not the gateway's saturation; a flat gateway with noise
// reads neither.
func TestSaturationWhose(t *testing.T) {
	ms := time.Millisecond
	noise := func(i int) time.Duration { return time.Duration((i*7919)%11) * ms }
	for _, tc := range []struct {
		name      string
		gw, up    func(int) time.Duration
		saturated bool
	}{
		{"gateway queue", func(i int) time.Duration { return 5*ms + time.Duration(i)*40*ms }, func(int) time.Duration { return 20 * ms }, true},
		{"upstream slowing", func(int) time.Duration { return 5 * ms }, func(i int) time.Duration { return 20*ms + time.Duration(i)*40*ms }, false},
		{"flat", func(i int) time.Duration { return 5*ms + noise(i) }, func(int) time.Duration { return 20 * ms }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := AnalyzeEvents(satJournal(tc.gw, tc.up))
			if err != nil {
				t.Fatal(err)
			}
			s := a.Saturation
			if s == nil || s.Requests != 200 || s.EndS > 20 {
				t.Fatalf("saturation %+v", s)
			}
			if s.Saturated != tc.saturated || s.Queueing != tc.saturated || s.SendsOutpacingAnswers != tc.saturated {
				t.Errorf("saturated %v queueing %v outpacing %v, want %v: %+v", s.Saturated, s.Queueing, s.SendsOutpacingAnswers, tc.saturated, *s)
			}
			said := strings.Contains(strings.Join(a.Notes, " "), "the gateway was saturated before the first fault")
			if said != tc.saturated {
				t.Errorf("note %v: %q", said, a.Notes)
			}
		})
	}
}
