package analysis

import (
	"slices"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// TestDeliveredHangUpIsNoGiveUp: a gateway that closes its connection
// after the stream's last content event and usage, before the end
// marker, had its answer (the upstream journals client_gone with
// Delivered): not a give-up, not a failed call, and its request's retry
// is not a retry after a failure. The same hang-up without Delivered is
// a give-up, and journals from before the field read as before.
func TestDeliveredHangUpIsNoGiveUp(t *testing.T) {
	build := func(delivered bool) []journal.Event {
		g := newGatewayRun()
		for i := range 4 {
			seq := uint64(i)
			at := time.Duration(i) * time.Second
			g.add(at, &journal.UpstreamRequest{Upstream: "search", Method: "POST", Path: "/v1/chat/completions", Seq: &seq, Status: 200,
				Bytes: 2256, Done: at + 610*time.Millisecond, Outcome: journal.OutcomeUpstreamGone, Delivered: delivered})
			g.add(at+650*time.Millisecond, &journal.ClientRequest{Seq: seq, Method: "POST", Route: "/v1/chat/completions", Upstream: "search",
				Scheduled: at, Sent: at, Done: at + 650*time.Millisecond, Status: 200, Outcome: journal.OutcomeOK})
		}
		return g.finish()
	}
	a, err := AnalyzeEvents(build(true))
	if err != nil {
		t.Fatal(err)
	}
	if g := a.GiveUps; g == nil || g.Count != 0 || len(g.Upstreams) != 0 || !slices.Contains(g.Statements, "The gateway gave up on no upstream call.") {
		t.Errorf("delivered hang-ups read as give-ups: %+v", a.GiveUps)
	}
	if a.Resilience == nil || a.Resilience.Upstreams["search"] == nil {
		t.Fatalf("no resilience figures: %+v", a.Resilience)
	}
	// Without Delivered (the gateway left before the content was all
	// written) every one is a give-up.
	b, err := AnalyzeEvents(build(false))
	if err != nil {
		t.Fatal(err)
	}
	if g := b.GiveUps; g == nil || g.Count != 4 || g.Upstreams["search"] == nil || g.Upstreams["search"].Seen != 4 {
		t.Errorf("hang-ups before the content was delivered: give-ups %+v, want 4 seen", b.GiveUps)
	}
}

// TestGaveUpFirst: who ended a failed request. The gateway, when it hung
// up on any of the request's calls (its per-call timeout), even though a
// later call answered and the request failed after (a stream it could
// not resume), or when every call answered and it failed the request
// itself; the upstream when its calls ended on their own and one failed
// (an error status, a reset); the client when its deadline fired.
func TestGaveUpFirst(t *testing.T) {
	g := newGatewayRun()
	s := time.Second
	ms := time.Millisecond
	call := func(seq uint64, at, done time.Duration, status int, out journal.Outcome) {
		g.add(at, &journal.UpstreamRequest{Upstream: "search", Method: "POST", Path: "/v1/chat/completions", Seq: &seq, Status: status, Outcome: out, Done: done})
	}
	req := func(seq uint64, at, done time.Duration, status int, out journal.Outcome) {
		g.add(done, &journal.ClientRequest{Seq: seq, Method: "POST", Route: "/v1/chat/completions", Upstream: "search", Scheduled: at, Sent: at,
			Done: done, Status: status, Outcome: out})
	}
	// 0: a stalled stream timed out at 3 s, the retry answered whole, the
	// client's stream failed (the gateway could not append the retry).
	call(0, 100*ms, 3100*ms, 200, journal.OutcomeUpstreamStalled)
	call(0, 4*s, 4600*ms, 200, journal.OutcomeUpstreamComplete)
	req(0, 50*ms, 4700*ms, 200, journal.OutcomeStreamError)
	// 1: the stream was reset by the upstream, the retry answered, the
	// client's stream failed.
	call(1, 1100*ms, 1300*ms, 200, journal.OutcomeUpstreamReset)
	call(1, 2*s, 2600*ms, 200, journal.OutcomeUpstreamComplete)
	req(1, 1*s, 2700*ms, 200, journal.OutcomeStreamError)
	// 2: 503, 503: the gateway passed the last one on.
	call(2, 2100*ms, 2110*ms, 503, journal.OutcomeUpstreamComplete)
	call(2, 2500*ms, 2510*ms, 503, journal.OutcomeUpstreamComplete)
	req(2, 2*s, 2520*ms, 503, journal.OutcomeHTTP5xx)
	// 3: one call answered whole, the gateway still failed the stream.
	call(3, 3100*ms, 3700*ms, 200, journal.OutcomeUpstreamComplete)
	req(3, 3*s, 3800*ms, 200, journal.OutcomeStreamError)
	// 4: the client's deadline fired; the gateway hung up after.
	call(4, 4100*ms, 5010*ms, 0, journal.OutcomeUpstreamGone)
	req(4, 4*s, 5*s, 0, journal.OutcomeHeadersTimeout)
	// 5: a call whose content was delivered before the hang-up, then the
	// gateway answered 502: not a give-up, the gateway's own failure.
	g.add(5100*ms, &journal.UpstreamRequest{Upstream: "search", Method: "POST", Path: "/v1/chat/completions", Seq: func() *uint64 { v := uint64(5); return &v }(),
		Status: 200, Outcome: journal.OutcomeUpstreamGone, Delivered: true, Done: 5700 * ms})
	req(5, 5*s, 5750*ms, 502, journal.OutcomeHTTP5xx)
	a, err := AnalyzeEvents(g.finish())
	if err != nil {
		t.Fatal(err)
	}
	if a.Resilience == nil || a.Resilience.Upstreams["search"] == nil {
		t.Fatalf("no resilience figures: %+v", a.Resilience)
	}
	got := a.Resilience.Upstreams["search"].Deadlines.GaveUpFirst
	want := map[string]int64{"gateway": 3, "upstream": 2, "client": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("gave_up_first %v, want %v", got, want)
			break
		}
	}
}
