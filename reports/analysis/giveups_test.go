package analysis

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// TestGiveUpsHeldToTheGatewaysLog: the fallback gateway times out slow
// calls to the primary after 2 s and serves the turn from the backup; the
// give-ups, their timeout and the turns that still succeeded are the
// gateway's own.
func TestGiveUpsHeldToTheGatewaysLog(t *testing.T) {
	g := fallbackGW{stamp: true, slow: true, timeout: 2 * time.Second, rate: 4, dur: 40 * time.Second,
		faultAt: 10 * time.Second, faultFor: 12 * time.Second, cooldown: 5 * time.Second, lag: 150 * time.Millisecond, tokens: 250}
	a, err := AnalyzeEvents(g.build())
	if err != nil {
		t.Fatal(err)
	}
	truth := g.log
	gu := a.GiveUps
	if gu == nil || gu.Upstreams["primary"] == nil {
		t.Fatalf("no give-ups for primary: %+v; gateway log %v", gu, truth)
	}
	t.Logf("statements: %q", gu.Statements)
	u := gu.Upstreams["primary"]
	n := int64(len(truth.giveUps))
	if gu.Count != n || u.Seen != n || u.Unseen != 0 {
		t.Errorf("%d give-ups (%d seen, %d unseen), truth %d", gu.Count, u.Seen, u.Unseen, n)
	}
	s := slices.Clone(truth.giveUps)
	slices.Sort(s)
	if !within(u.AfterS.Min, s[0]) || !within(u.AfterS.Max, s[len(s)-1]) || !within(u.TimeoutS, s[len(s)/2]) && len(s)%2 == 1 {
		t.Errorf("after min %v max %v timeout %v; truth %v", fp(u.AfterS.Min), fp(u.AfterS.Max), fp(u.TimeoutS), s)
	}
	if u.ThenSucceeded != truth.giveUpsThenOK || u.OnFallback != truth.giveUpsThenOK || u.OnRetry != 0 || u.ThenFailed != 0 {
		t.Errorf("then succeeded %d (retry %d, fallback %d), failed %d; truth %d on the fallback", u.ThenSucceeded, u.OnRetry, u.OnFallback, u.ThenFailed, truth.giveUpsThenOK)
	}
	if slices.Contains(gu.Statements, "The gateway gave up on no upstream call.") {
		t.Errorf("statements say nobody gave up: %q", gu.Statements)
	}
}

// TestGiveUpsKeptApart: a hang-up after the client's own deadline fired,
// and one after another call for the request answered (a hedge), are not
// the gateway's timeout; a call the gateway moved on from without the
// upstream seeing it (a 504 to the client while the call ran) is a
// give-up, bounded by that answer; a run without any is "nobody gave up".
func TestGiveUpsKeptApart(t *testing.T) {
	g := newGatewayRun()
	seqs := []uint64{0, 1, 2, 3}
	call := func(seq uint64, at, done time.Duration, status int, out journal.Outcome) {
		s := seq
		g.add(at, &journal.UpstreamRequest{Upstream: "search", Path: "/x", Seq: &s, Status: status, Outcome: out, Done: done})
	}
	req := func(seq uint64, at, done time.Duration, status int, out journal.Outcome) {
		g.add(done, &journal.ClientRequest{Seq: seq, Route: "/x", Upstream: "search", Scheduled: at, Sent: at, Done: done, Status: status, Outcome: out})
	}
	s := time.Second
	// 0: the client's deadline (1 s) fired; the gateway hung up after.
	req(seqs[0], 3*s, 4*s, 0, journal.OutcomeHeadersTimeout)
	call(seqs[0], 3*s+time.Millisecond, 4*s+2*time.Millisecond, 0, journal.OutcomeUpstreamGone)
	// 1: a hedge 50 ms after the first call: the second call answered,
	// the first was cancelled.
	req(seqs[1], 4*s, 4*s+150*time.Millisecond, 200, journal.OutcomeOK)
	call(seqs[1], 4*s+time.Millisecond, 4*s+145*time.Millisecond, 0, journal.OutcomeUpstreamGone)
	call(seqs[1], 4*s+50*time.Millisecond, 4*s+140*time.Millisecond, 200, journal.OutcomeUpstreamComplete)
	// 2: the gateway answered 504 at 1.5 s; the upstream finished at 3 s.
	req(seqs[2], 5*s, 6*s+500*time.Millisecond, 504, journal.OutcomeHTTP5xx)
	call(seqs[2], 5*s+time.Millisecond, 8*s, 200, journal.OutcomeUpstreamComplete)
	// 3: seen: hung up at 1.5 s, then a retry answered.
	req(seqs[3], 7*s, 8*s+600*time.Millisecond, 200, journal.OutcomeOK)
	call(seqs[3], 7*s+time.Millisecond, 8*s+501*time.Millisecond, 0, journal.OutcomeUpstreamGone)
	call(seqs[3], 8*s+550*time.Millisecond, 8*s+590*time.Millisecond, 200, journal.OutcomeUpstreamComplete)
	a, err := AnalyzeEvents(g.finish())
	if err != nil {
		t.Fatal(err)
	}
	gu := a.GiveUps
	t.Logf("statements: %q", gu.Statements)
	u := gu.Upstreams["search"]
	if gu.ClientLeft != 1 || gu.Cancelled != 1 || gu.Count != 2 || u == nil {
		t.Fatalf("client left %d, cancelled %d, give-ups %d (%+v): want 1, 1, 2", gu.ClientLeft, gu.Cancelled, gu.Count, u)
	}
	if u.Seen != 1 || !within(u.TimeoutS, 1500*time.Millisecond) || u.OnRetry != 1 {
		t.Errorf("seen %d after %v, on retry %d: want 1 after 1.5 s, then a retry", u.Seen, fp(u.TimeoutS), u.OnRetry)
	}
	if u.Unseen != 1 || !within(u.UnseenWithinS, 1499*time.Millisecond) || u.ThenFailed != 1 {
		t.Errorf("unseen %d within %v, failed %d: want 1 within 1.499 s that failed", u.Unseen, fp(u.UnseenWithinS), u.ThenFailed)
	}

	quiet := newGatewayRun()
	for i := range 20 {
		at := time.Duration(i) * 100 * time.Millisecond
		seq := uint64(i)
		quiet.add(at, &journal.UpstreamRequest{Upstream: "search", Path: "/x", Seq: &seq, Status: 200, Outcome: journal.OutcomeUpstreamComplete, Done: at + 5*time.Millisecond})
		quiet.add(at+6*time.Millisecond, &journal.ClientRequest{Seq: seq, Route: "/x", Upstream: "search", Scheduled: at, Sent: at, Done: at + 6*time.Millisecond, Status: 200, Outcome: journal.OutcomeOK})
	}
	a, err = AnalyzeEvents(quiet.finish())
	if err != nil {
		t.Fatal(err)
	}
	if a.GiveUps.Count != 0 || len(a.GiveUps.Statements) != 1 || !strings.Contains(a.GiveUps.Statements[0], "no upstream call") {
		t.Errorf("quiet run: %+v", a.GiveUps)
	}
}

// TestGiveUpThenQuickFallbackIsNoHedge: the gateway times a call out at
// 1 s and calls the fallback, which answers at once; the upstream stamps
// the hang-up 80 µs late, after the fallback's answer (seen on a loaded
// machine). That is a give-up, not a cancelled hedge.
func TestGiveUpThenQuickFallbackIsNoHedge(t *testing.T) {
	g := newGatewayRun()
	seq := uint64(0)
	at := 3 * time.Second
	g.add(at, &journal.UpstreamRequest{Upstream: "search", Path: "/x", Seq: &seq, Outcome: journal.OutcomeUpstreamGone, Done: at + time.Second + 80*time.Microsecond})
	g.add(at+time.Second+30*time.Microsecond, &journal.UpstreamRequest{Upstream: "backup", Path: "/x", Seq: &seq, Status: 200,
		Outcome: journal.OutcomeUpstreamComplete, Done: at + time.Second + 65*time.Microsecond})
	g.add(at+time.Second+time.Millisecond, &journal.ClientRequest{Seq: seq, Route: "/x", Scheduled: at, Sent: at, Done: at + time.Second + time.Millisecond, Status: 200, Outcome: journal.OutcomeOK})
	a, err := AnalyzeEvents(g.finish())
	if err != nil {
		t.Fatal(err)
	}
	if gu := a.GiveUps; gu.Count != 1 || gu.Cancelled != 0 || gu.Upstreams["search"].OnFallback != 1 {
		t.Errorf("give-ups %d, cancelled %d (%q): want one give-up, then the fallback", gu.Count, gu.Cancelled, gu.Statements)
	}
}

// TestGiveUpsNotTheHarnessStopping: a call still held when the harness
// stops is cut by the upstream closing (after the "stop" phase), not
// abandoned by the gateway.
func TestGiveUpsNotTheHarnessStopping(t *testing.T) {
	g := newGatewayRun()
	seq := uint64(0)
	g.add(9*time.Second, &journal.ClientRequest{Seq: seq, Route: "/x", Upstream: "search", Scheduled: 8 * time.Second, Sent: 8 * time.Second,
		Done: 9*time.Second + 500*time.Millisecond, Outcome: journal.OutcomeHeadersTimeout})
	g.add(8*time.Second, &journal.UpstreamRequest{Upstream: "search", Path: "/x", Seq: &seq, Outcome: journal.OutcomeUpstreamStalled, Done: 9*time.Second + 900*time.Millisecond})
	g.add(9*time.Second+800*time.Millisecond, &journal.Phase{Name: "stop"})
	a, err := AnalyzeEvents(g.finish())
	if err != nil {
		t.Fatal(err)
	}
	if gu := a.GiveUps; gu.Count != 0 || gu.AtStop != 1 || gu.ClientLeft != 0 {
		t.Errorf("give-ups %d, cut at stop %d, client left %d (%q): want the one call cut at stop", gu.Count, gu.AtStop, gu.ClientLeft, gu.Statements)
	}
}

// TestGiveUpsOfAResentRequest: the replayer's transport sent a request
// again (the first connection broke); the gateway's two calls for it,
// the first hung up and the second overlapping it, are the client's
// doing, not the gateway's give-ups.
func TestGiveUpsOfAResentRequest(t *testing.T) {
	g := newGatewayRun()
	seq := uint64(0)
	at := 3 * time.Second
	g.add(at+600*time.Millisecond, &journal.ClientRequest{Seq: seq, Route: "/x", Upstream: "search", Scheduled: at, Sent: at,
		Resent: []time.Duration{at + 100*time.Millisecond}, Done: at + 600*time.Millisecond, Status: 200, Outcome: journal.OutcomeOK})
	g.add(at, &journal.UpstreamRequest{Upstream: "search", Path: "/x", Seq: &seq, Outcome: journal.OutcomeUpstreamGone, Done: at + 100*time.Millisecond})
	g.add(at+50*time.Millisecond, &journal.UpstreamRequest{Upstream: "search", Path: "/x", Seq: &seq, Status: 200, Outcome: journal.OutcomeUpstreamComplete, Done: at + 300*time.Millisecond})
	g.add(at+120*time.Millisecond, &journal.UpstreamRequest{Upstream: "search", Path: "/x", Seq: &seq, Status: 200, Outcome: journal.OutcomeUpstreamComplete, Done: at + 590*time.Millisecond})
	a, err := AnalyzeEvents(g.finish())
	if err != nil {
		t.Fatal(err)
	}
	if gu := a.GiveUps; gu.Count != 0 || gu.ClientLeft != 1 {
		t.Errorf("give-ups %d, client left %d (%q): want none of the gateway's, one passed on", gu.Count, gu.ClientLeft, gu.Statements)
	}
}
