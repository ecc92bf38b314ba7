package reports

import (
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// halfOpenJournal is a 5 s run at 20 requests per second on app with a
// 503 storm from 1 s to 2 s: three failures trip the breaker at 1.101 s,
// requests are turned away until 2 s, when a half-open lets two calls
// through (A at 2000, B at 2050 ms, healthy answers taking 300 ms; B's
// ends at bEnd) and turns the next ones away until A has succeeded; from
// 2350 ms every request passes. Times in ms.
func halfOpenJournal(bEnd float64) []journal.Event {
	var ev []journal.Event
	add := func(at time.Duration, p journal.Payload) { ev = append(ev, journal.Event{T: at, Payload: p}) }
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	add(0, &journal.RunStart{RunID: "sim-pending", Scenario: "sim", Seed: 1, Rate: 20, Duration: 5 * time.Second,
		WallStart: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), Upstreams: []string{"app"}, Config: json.RawMessage(`{"rate":20}`)})
	add(ms(1000), &journal.FaultStart{Name: "storm", Type: "status", Upstream: "app", For: time.Second})
	add(ms(2000), &journal.FaultEnd{Name: "storm", Upstream: "app"})
	seq := uint64(0)
	pass := func(x, took float64, status int) {
		s := seq
		out := journal.OutcomeOK
		p := &journal.UpstreamRequest{Upstream: "app", Method: "POST", Path: "/", Seq: &s, InFlight: 1, Status: status,
			Done: ms(x + 0.5 + took), Outcome: journal.OutcomeUpstreamComplete}
		if status >= 500 {
			out, p.Fault, p.FaultType = journal.OutcomeHTTP5xx, "storm", "status"
		}
		add(ms(x), &journal.ClientRequest{Seq: s, Method: "POST", Route: "/", Upstream: "app", Scheduled: ms(x), Sent: ms(x),
			HeadersAt: ms(x + 1 + took), Done: ms(x + 1 + took), Status: status, Outcome: out, Latency: ms(1 + took), Service: ms(1 + took)})
		add(ms(x+0.5), p)
		seq++
	}
	block := func(x float64) {
		add(ms(x), &journal.ClientRequest{Seq: seq, Method: "POST", Route: "/", Upstream: "app", Scheduled: ms(x), Sent: ms(x),
			HeadersAt: ms(x + 1), Done: ms(x + 1), Status: 503, Outcome: journal.OutcomeFastFail, FastFail: true, Latency: ms(1), Service: ms(1)})
		seq++
	}
	for x := 0.0; x < 1000; x += 50 {
		pass(x, 300, 200)
	}
	for x := 1000.0; x <= 1100; x += 50 {
		pass(x, 0.5, 503)
	}
	for x := 1150.0; x < 2000; x += 50 {
		block(x)
	}
	pass(2000, 300, 200)         // A
	pass(2050, bEnd-2050.5, 200) // B
	for x := 2100.0; x < 2350; x += 50 {
		block(x)
	}
	for x := 2350.0; x < 5000; x += 50 {
		pass(x, 300, 200)
	}
	add(5*time.Second, &journal.RunEnd{Reason: journal.EndCompleted})
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].T < ev[j].T })
	return ev
}

// TestCloseWithAProbeStillInFlight: a half-open let two calls through at
// once and turned requests away; traffic resumed after one had succeeded
// while the other (a streamed answer) was still in flight. A half-open
// that needs one success closed at the first's end; one that needs two
// and lets the next call in as one ends (failsafe-go's permits) closed on
// a later answer, and the first resumed call was one more probe. From
// outside these look alike: the close is bounded by the success's end and
// the in-flight call's, successes_to_close is unknown, the first resumed
// call may have been a probe. With both answers back before traffic
// resumed, the close is the last one's end, exact, after two successes.
func TestCloseWithAProbeStillInFlight(t *testing.T) {
	a, err := AnalyzeEvents(halfOpenJournal(2900))
	if err != nil {
		t.Fatal(err)
	}
	ep := a.Upstreams["app"].Episodes[0]
	if len(ep.Cycles) != 1 {
		t.Fatalf("%d cycles, want 1: %s", len(ep.Cycles), ep.Statement)
	}
	cy := ep.Cycles[0]
	b := cy.CloseBoundsS
	switch {
	case cy.ClosedAtS == nil || b == nil || b.Min == nil || b.Max == nil:
		t.Errorf("closed at %v, bounds %s: want the close bounded, [A's end 2.3005, B's end 2.9]", fp3(cy.ClosedAtS), bounds(b))
	case *b.Min > 2.301 || *b.Min < 2.300 || *b.Max < 2.899 || *b.Max > 2.901:
		t.Errorf("close bounds %s, want [2.3005, 2.9]", bounds(b))
	}
	if cy.SuccessesToClose != nil || ep.SuccessesToClose != nil {
		t.Errorf("successes_to_close %v: one success or two closed it, unknown from outside; want null", fp2(cy.SuccessesToClose))
	}
	if !cy.MaybeProbe {
		t.Error("maybe_probe false: the first resumed call may have been one more probe (a permit given back)")
	}
	if cy.Shape != ShapeLiveProbes {
		t.Errorf("shape %s (%s), want %s", cy.Shape, cy.ShapeEvidence, ShapeLiveProbes)
	}

	a, err = AnalyzeEvents(halfOpenJournal(2340))
	if err != nil {
		t.Fatal(err)
	}
	cy = a.Upstreams["app"].Episodes[0].Cycles[0]
	if cy.ClosedAtS == nil || *cy.ClosedAtS < 2.3395 || *cy.ClosedAtS > 2.3405 || cy.CloseBoundsS != nil {
		t.Errorf("both answers back before traffic resumed: closed at %v, bounds %s, want 2.340 exact", fp3(cy.ClosedAtS), bounds(cy.CloseBoundsS))
	}
	if cy.SuccessesToClose == nil || *cy.SuccessesToClose != 2 {
		t.Errorf("both answers back before traffic resumed: successes_to_close %v, want 2", fp2(cy.SuccessesToClose))
	}
}

func fp3(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}
