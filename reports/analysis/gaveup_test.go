package analysis

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// gatewayRun builds a journal of one upstream, search, at 10 req/s for
// 10 s with a fault in [2 s, 6 s). serve decides each request's fate.
type gatewayRun struct {
	evs []journal.Event
}

func (g *gatewayRun) add(t time.Duration, p journal.Payload) {
	g.evs = append(g.evs, journal.Event{T: t, Payload: p})
}

func newGatewayRun() *gatewayRun {
	g := &gatewayRun{}
	g.add(0, &journal.RunStart{RunID: "gw-1", Scenario: "gw", Seed: 1, Rate: 10, Duration: 10 * time.Second,
		WallStart: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), Upstreams: []string{"search"},
		Config: json.RawMessage(`{"rate":10}`)})
	g.add(2*time.Second, &journal.FaultStart{Name: "slow", Type: "latency", Upstream: "search", For: 4 * time.Second})
	return g
}

func (g *gatewayRun) finish() []journal.Event {
	g.add(6*time.Second, &journal.FaultEnd{Name: "slow", Upstream: "search"})
	g.add(10*time.Second, &journal.RunEnd{Reason: journal.EndCompleted})
	return g.evs
}

// TestGatewayGaveUpCountsAsFailure: a gateway with a 1 s timeout answers
// 504 while the slow upstream is still working on the call, and the
// upstream records its answer as complete (it never noticed the hang-up).
// The client's 504, before the upstream's end, makes the call failed, so
// failures_before_open counts the timeouts that opened the breaker.
func TestGatewayGaveUpCountsAsFailure(t *testing.T) {
	g := newGatewayRun()
	openAt := 3500 * time.Millisecond
	for i := 0; i < 100; i++ {
		at := time.Duration(i) * 100 * time.Millisecond
		seq := uint64(i)
		c := &journal.ClientRequest{Seq: seq, Route: "/tools/search", Upstream: "search", Scheduled: at, Sent: at}
		switch {
		case at >= 2*time.Second && at < openAt: // forwarded, timed out by the gateway
			c.Status, c.Outcome, c.Done = 504, journal.OutcomeHTTP5xx, at+time.Second
			g.add(at, &journal.UpstreamRequest{Upstream: "search", Path: "/tools/search", Seq: &seq,
				Status: 200, Outcome: journal.OutcomeUpstreamComplete, Done: at + 2*time.Second})
		case at >= openAt && at < 6*time.Second: // fast-failed
			c.Status, c.Outcome, c.FastFail, c.Done = 503, journal.OutcomeFastFail, true, at+time.Millisecond
		default:
			c.Status, c.Outcome, c.Done = 200, journal.OutcomeOK, at+5*time.Millisecond
			g.add(at, &journal.UpstreamRequest{Upstream: "search", Path: "/tools/search", Seq: &seq,
				Status: 200, Outcome: journal.OutcomeUpstreamComplete, Done: at + 5*time.Millisecond})
		}
		g.add(c.Done, c)
	}
	a, err := AnalyzeEvents(g.finish())
	if err != nil {
		t.Fatal(err)
	}
	ep := a.Upstreams["search"].Episodes[0]
	if !ep.Opened || ep.FailuresBeforeOpen == nil || *ep.FailuresBeforeOpen != 15 {
		t.Fatalf("opened %v, failures_before_open %v, want 15 (the calls the gateway gave up on): %s", ep.Opened, ep.FailuresBeforeOpen, ep.Statement)
	}
	if a.Upstreams["search"].Failed != 15 {
		t.Errorf("failed calls = %d, want 15", a.Upstreams["search"].Failed)
	}
}

// TestFlappingMetricsCloseLag: with several open/close cycles in one
// episode, the metrics close lag is measured against the last close, not
// the first one the metrics showed.
func TestFlappingMetricsCloseLag(t *testing.T) {
	g := newGatewayRun()
	open := func(at time.Duration) bool {
		return (at >= 2*time.Second && at < 3*time.Second) || (at >= 4*time.Second && at < 5*time.Second)
	}
	for i := 0; i < 100; i++ {
		at := time.Duration(i) * 100 * time.Millisecond
		seq := uint64(i)
		c := &journal.ClientRequest{Seq: seq, Route: "/tools/search", Upstream: "search", Scheduled: at, Sent: at, Done: at + 5*time.Millisecond}
		if open(at) {
			c.Status, c.Outcome, c.FastFail = 503, journal.OutcomeFastFail, true
		} else {
			c.Status, c.Outcome = 200, journal.OutcomeOK
			g.add(at, &journal.UpstreamRequest{Upstream: "search", Path: "/tools/search", Seq: &seq,
				Status: 200, Outcome: journal.OutcomeUpstreamComplete, Done: at + 5*time.Millisecond})
		}
		g.add(c.Done, c)
		// Metrics every 100 ms, 50 ms behind the truth.
		st := journal.StateClosed
		if open(at - 50*time.Millisecond) {
			st = journal.StateOpen
		}
		g.add(at+time.Millisecond, &journal.MetricsSample{Source: "m", States: []journal.BreakerState{{Dependency: "search", Upstream: "search", State: st}}})
	}
	a, err := AnalyzeEvents(g.finish())
	if err != nil {
		t.Fatal(err)
	}
	ep := a.Upstreams["search"].Episodes[0]
	if len(ep.Cycles) != 2 {
		t.Fatalf("%d cycles, want 2: %s", len(ep.Cycles), ep.Statement)
	}
	if ep.MetricsCloseLagS == nil || *ep.MetricsCloseLagS < 0 || *ep.MetricsCloseLagS > 0.2 {
		t.Errorf("metrics close lag %v, want the last close's (0–0.2 s), not the first cycle's (≈ −2 s)", fp(ep.MetricsCloseLagS))
	}
}
