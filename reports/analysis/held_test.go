package analysis

import (
	"encoding/json"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// foRun builds the journal of a gateway whose breaker fails over: while
// primary's breaker is open, the requests of its route are served by
// backup (the client gets its 200), not refused. Times in ms.
type foRun struct {
	ev  []journal.Event
	seq uint64
}

func newFoRun(faultFrom, faultTo, dur float64) *foRun {
	r := &foRun{}
	r.add(0, &journal.RunStart{RunID: "sim-failover", Scenario: "sim", Seed: 1, Rate: 10, Duration: simMS(dur),
		WallStart: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), Upstreams: []string{"primary", "backup"}, Config: json.RawMessage(`{"rate":10}`)})
	r.add(faultFrom, &journal.FaultStart{Name: "quota", Type: "retry_after", Upstream: "primary", For: simMS(faultTo - faultFrom)})
	r.add(faultTo, &journal.FaultEnd{Name: "quota", Upstream: "primary"})
	return r
}

func (r *foRun) add(at float64, p journal.Payload) {
	r.ev = append(r.ev, journal.Event{T: simMS(at), Payload: p})
}

func (r *foRun) call(up string, s uint64, at, took float64, status int) {
	p := &journal.UpstreamRequest{Upstream: up, Method: "POST", Path: "/v1/chat/completions", Seq: &s, InFlight: 1, Status: status,
		Done: simMS(at + took), Outcome: journal.OutcomeUpstreamComplete}
	if status >= 400 {
		p.Fault, p.FaultType = "quota", "retry_after"
	}
	r.add(at, p)
}

// turn is a client request sent at x: when prim ≥ 0 its call reached
// primary lag ms later and was answered status after took ms; when that
// failed, or prim < 0 (the breaker open: failed over), backup answered
// it 200. Every call carries the request's number (a body stamp).
func (r *foRun) turn(x, lag, took float64, status int) {
	s := r.seq
	r.seq++
	done := x + lag
	if status > 0 {
		r.call("primary", s, x+lag, took, status)
		done = x + lag + took
	}
	if status <= 0 || status >= 400 {
		r.call("backup", s, done+1, took, 200)
		done += 1 + took
	}
	r.add(x, &journal.ClientRequest{Seq: s, Method: "POST", Route: "/v1/chat/completions", Upstream: "primary", Scheduled: simMS(x), Sent: simMS(x),
		HeadersAt: simMS(done + 1), Done: simMS(done + 1), Status: 200, Outcome: journal.OutcomeOK, Latency: simMS(done + 1 - x), Service: simMS(done + 1 - x)})
}

// turns sends a turn every 100 ms in [from, to) on primary (status > 0)
// or failed over (status 0).
func (r *foRun) turns(from, to, lag, took float64, status int) {
	for x := from; x < to; x += 100 {
		r.turn(x, lag, took, status)
	}
}

func (r *foRun) episode(t *testing.T) *Episode {
	t.Helper()
	r.add(float64(r.ev[0].Payload.(*journal.RunStart).Duration)/1e6, &journal.RunEnd{Reason: journal.EndCompleted})
	sort.SliceStable(r.ev, func(i, j int) bool { return r.ev[i].T < r.ev[j].T })
	a, err := AnalyzeEvents(r.ev)
	if err != nil {
		t.Fatal(err)
	}
	return a.Upstreams["primary"].Episodes[0]
}

// cooldownRun: healthy traffic, the trip at 1000 ms (one 429), the first
// trial after cooldown1 (429 while the fault lasts), a second cooldown,
// then a 2xx trial and primary's traffic again. lag is how long after
// the client's send the gateway calls its provider, took how long the
// closing trial's answer takes.
func cooldownRun(lag, cooldown1, cooldown2, took float64) (*foRun, float64, float64) {
	r := newFoRun(960, 5000, 16000)
	r.turns(0, 800, lag, 5, 200)
	r.turn(1000-lag, lag, 2, 429) // the trip: its call at 1000 ms, answered 1002
	trip := 1002.0
	probe1 := trip + cooldown1
	r.turns(1000, probe1-lag, 0, 0, 0)
	r.turn(probe1-lag, lag, 2, 429)
	probe2 := probe1 + 2 + cooldown2
	r.turns(probe1-lag+100, probe2-lag, 0, 0, 0)
	r.turn(probe2-lag, lag, took, 200)
	r.turns(probe2-lag+100, 16000, lag, 5, 200)
	return r, probe1, probe2
}

// TestGrowingCooldownBehindAFailover: a breaker that trips on one
// failure, routes the upstream's requests to a fallback while open,
// doubles its cooldown on a failed trial and closes on a quick trial's
// success. Read before: one probe, one cooldown, shape ambiguous (the
// closing trial taken for a timer's close). The growth shows the breaker
// judged the failed trial: two probes, one ok, cooldowns 3 s and 6 s.
func TestGrowingCooldownBehindAFailover(t *testing.T) {
	r, p1, p2 := cooldownRun(30, 3000, 6000, 3)
	ep := r.episode(t)
	if len(ep.Cycles) != 1 {
		t.Fatalf("%d cycles, want 1: %s", len(ep.Cycles), ep.Statement)
	}
	cy := ep.Cycles[0]
	if math.Abs(cy.OpenedAtS-1.002) > 0.002 {
		t.Errorf("opened at %.3f s, the trip ended at 1.002 s", cy.OpenedAtS)
	}
	if ep.Probes != 2 || ep.ProbeOutcomes.OK != 1 {
		t.Fatalf("probes %d (%d ok), want 2 (1 ok): %s", ep.Probes, ep.ProbeOutcomes.OK, ep.Statement)
	}
	if got := []float64{cy.Probes[0].AtS, cy.Probes[1].AtS}; math.Abs(got[0]-p1/1000) > 0.001 || math.Abs(got[1]-p2/1000) > 0.001 {
		t.Errorf("probes at %v s, want %.3f and %.3f", got, p1/1000, p2/1000)
	}
	// Each cooldown to the moment the gateway let the trial through (its
	// decision, 30 ms before the call), from the failure before it.
	want := []float64{3.0 - 0.03, 6.0 - 0.03}
	if len(cy.CooldownsS) != 2 || math.Abs(cy.CooldownsS[0]-want[0]) > 0.01 || math.Abs(cy.CooldownsS[1]-want[1]) > 0.01 {
		t.Errorf("cooldowns %v s, want %v", cy.CooldownsS, want)
	}
	if ep.ClosedAtS == nil || math.Abs(*ep.ClosedAtS-(p2+3)/1000) > 0.001 {
		t.Errorf("closed at %v s, want the closing trial's answer at %.3f s", fp(ep.ClosedAtS), (p2+3)/1000)
	}
	// A breaker may judge the answer's head: the close is bounded from
	// the trial's arrival, not its end.
	if b := cy.CloseBoundsS; b == nil || b.Min == nil || math.Abs(*b.Min-p2/1000) > 0.001 || b.Max != nil {
		t.Errorf("close bounds %s, want from the trial's arrival %.3f s, the latest unseen", bounds(b), p2/1000)
	}
}

// TestSteadyCooldownStaysAmbiguous: the same failover, but the breaker
// holds the upstream out as long after the failed trial as after the
// trip: a breaker that forgets each failure after a fixed window does
// the same, so the call after the second gap may be ordinary traffic
// after a timer's close. It must not be read as a judged trial.
func TestSteadyCooldownStaysAmbiguous(t *testing.T) {
	r, _, _ := cooldownRun(30, 3000, 3000, 3)
	ep := r.episode(t)
	if len(ep.Cycles) != 1 {
		t.Fatalf("%d cycles, want 1: %s", len(ep.Cycles), ep.Statement)
	}
	if ep.Probes != 1 || ep.ProbeOutcomes.OK != 0 {
		t.Errorf("probes %d (%d ok), want the failed trial alone: %s", ep.Probes, ep.ProbeOutcomes.OK, ep.Statement)
	}
	if cy := ep.Cycles[0]; cy.Shape != ShapeUnknown || !cy.MaybeProbe {
		t.Errorf("shape %s, maybe_probe %v, want ambiguous", cy.Shape, cy.MaybeProbe)
	}
}

// TestQuickTrialStreamedAcrossTheSpacing: the closing trial's answer is
// a stream that lasts until a moment (1 ms) after the next request was
// sent (100 ms after the trial's, which reached primary 30 ms later): the upstream
// stamps the end once its handler returns, after the gateway had the
// answer. Still the quick trial that closed the breaker.
func TestQuickTrialStreamedAcrossTheSpacing(t *testing.T) {
	r, _, p2 := cooldownRun(30, 3000, 6000, 71)
	ep := r.episode(t)
	if ep.Probes != 2 || ep.ProbeOutcomes.OK != 1 {
		t.Fatalf("probes %d (%d ok), want 2 (1 ok): %s", ep.Probes, ep.ProbeOutcomes.OK, ep.Statement)
	}
	if ep.ClosedAtS == nil || math.Abs(*ep.ClosedAtS-(p2+71)/1000) > 0.001 {
		t.Errorf("closed at %v s, want the trial's answer at %.3f s", fp(ep.ClosedAtS), (p2+71)/1000)
	}
}

// TestAdmittedBeforeFailuresAfterAFailedTrial: three turns the gateway
// decided before the trip (sent before it) reach primary 1–2 s after
// the failed trial, late (a gateway queueing its turns), and fail. A
// breaker of expiring failures would remember them a window longer;
// the growing cooldown holds past that too. They are neither probes nor
// a cycle of their own, and the open stays at the trip.
func TestAdmittedBeforeFailuresAfterAFailedTrial(t *testing.T) {
	r, p1, p2 := cooldownRun(30, 3000, 8000, 3)
	for i, at := range []float64{p1 + 1000, p1 + 1500, p1 + 2000} {
		x := 810 + 10*float64(i)
		s := r.seq
		r.seq++
		r.call("primary", s, at, 2, 429)
		r.call("backup", s, at+3, 3, 200)
		r.add(x, &journal.ClientRequest{Seq: s, Method: "POST", Route: "/v1/chat/completions", Upstream: "primary", Scheduled: simMS(x), Sent: simMS(x),
			HeadersAt: simMS(at + 7), Done: simMS(at + 7), Status: 200, Outcome: journal.OutcomeOK, Latency: simMS(at + 7 - x), Service: simMS(at + 7 - x)})
	}
	ep := r.episode(t)
	if len(ep.Cycles) != 1 {
		t.Fatalf("%d cycles, want 1: %s", len(ep.Cycles), ep.Statement)
	}
	cy := ep.Cycles[0]
	if math.Abs(cy.OpenedAtS-1.002) > 0.002 {
		t.Errorf("opened at %.3f s, the trip ended at 1.002 s", cy.OpenedAtS)
	}
	if ep.Probes != 2 || ep.ProbeOutcomes.OK != 1 {
		t.Fatalf("probes %d (%d ok), want 2 (1 ok): %s", ep.Probes, ep.ProbeOutcomes.OK, ep.Statement)
	}
	if math.Abs(cy.Probes[1].AtS-p2/1000) > 0.001 {
		t.Errorf("closing probe at %.3f s, want %.3f", cy.Probes[1].AtS, p2/1000)
	}
}

// TestSlowTrialStillAProbe: the closing trial's answer streams on past
// the next request's send (90 ms, the next sent 30 ms after the trial
// arrived and reaching primary 70 ms later): the gateway may have let
// the next call through while the trial was answering. The trial is a
// probe all the same (the breaker judges its trials); the close is
// estimated at its end, as a quick trial's, no earlier than its arrival,
// its latest unseen.
func TestSlowTrialStillAProbe(t *testing.T) {
	r, _, p2 := cooldownRun(70, 3000, 6000, 90)
	ep := r.episode(t)
	if len(ep.Cycles) != 1 {
		t.Fatalf("%d cycles, want 1: %s", len(ep.Cycles), ep.Statement)
	}
	cy := ep.Cycles[0]
	if ep.Probes != 2 || ep.ProbeOutcomes.OK != 1 {
		t.Fatalf("probes %d (%d ok), want 2 (1 ok): %s", ep.Probes, ep.ProbeOutcomes.OK, ep.Statement)
	}
	b := cy.CloseBoundsS
	if ep.ClosedAtS == nil || math.Abs(*ep.ClosedAtS-(p2+90)/1000) > 0.001 || b == nil || b.Min == nil || math.Abs(*b.Min-p2/1000) > 0.001 || b.Max != nil || !cy.MaybeProbe {
		t.Errorf("closed at %v s %s, maybe_probe %v; want at its end %.3f s, from its arrival %.3f s on, its latest unseen", fp(ep.ClosedAtS), bounds(b), cy.MaybeProbe, (p2+90)/1000, p2/1000)
	}
}

// TestTrialWithTurnsAdmittedBeforeItFailed: the gateway queues its turns
// and decides each before its call: the first trial after the cooldown
// (sent 300 ms before it reached primary) and the three turns sent after
// it but before its 429 came back all chose primary; they reach it 1–2 s
// later and fail too. Three requests in a row reached primary, so the
// state machine read a close, and the refusals after as a second cycle
// with no probe. The breaker then held primary out for twice the first
// cooldown: one cycle, the trial a failed probe, the three turns neither
// probes nor leaks, and the quick 2xx trial that closed it.
func TestTrialWithTurnsAdmittedBeforeItFailed(t *testing.T) {
	const lag = 30
	r := newFoRun(960, 5000, 16000)
	r.turns(0, 800, lag, 5, 200)
	r.turn(1000-lag, lag, 2, 429) // the trip
	p1 := 4002.0
	r.turns(1000, p1-300, 0, 0, 0)
	r.turn(p1-300, 300, 2, 429) // the trial, queued 300 ms
	for i := 1; i <= 3; i++ {
		x := p1 - 300 + 100*float64(i)
		r.turn(x, p1+500*float64(i)+500-x, 2, 429) // admitted before the trial failed, reaching primary 1-2 s later
	}
	p2 := p1 + 2 + 6000
	r.turns(p1+100, p2-lag, 0, 0, 0)
	r.turn(p2-lag, lag, 3, 200)
	r.turns(p2-lag+100, 16000, lag, 5, 200)
	ep := r.episode(t)
	if len(ep.Cycles) != 1 {
		t.Fatalf("%d cycles, want 1: %s", len(ep.Cycles), ep.Statement)
	}
	cy := ep.Cycles[0]
	if math.Abs(cy.OpenedAtS-1.002) > 0.002 {
		t.Errorf("opened at %.3f s, the trip ended at 1.002 s", cy.OpenedAtS)
	}
	if ep.Probes != 2 || ep.ProbeOutcomes.OK != 1 || len(cy.Probes) != 2 {
		t.Fatalf("probes %d (%d ok), want 2 (1 ok): %s", ep.Probes, ep.ProbeOutcomes.OK, ep.Statement)
	}
	if math.Abs(cy.Probes[0].AtS-p1/1000) > 0.001 || math.Abs(cy.Probes[1].AtS-p2/1000) > 0.001 {
		t.Errorf("probes at %.3f and %.3f s, want %.3f and %.3f", cy.Probes[0].AtS, cy.Probes[1].AtS, p1/1000, p2/1000)
	}
	if ep.Leaked != 0 {
		t.Errorf("%d leaks: the turns admitted before the trial failed are not leaks", ep.Leaked)
	}
	if len(cy.CooldownsS) != 2 || cy.CooldownsS[1] < 5.5 {
		t.Errorf("cooldowns %v s, want the second ~6 s", cy.CooldownsS)
	}
}
