package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/seqstamp"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/scenarios"
)

// failoverGateway is an AI gateway in front of a primary and a fallback
// provider, built the way agent runtimes fail over: it forwards the
// client's body (so the sequence stamp survives) and no client header;
// each provider call has a timeout, after which it abandons the call;
// when the primary fails (5xx, 429 or the timeout) it cools the primary
// down and serves the turn from the fallback; while the primary cools
// down it goes to the fallback straight away; after the cooldown the next
// turn tries the primary again. It names the provider that answered in
// X-Chosen-Target and writes its own log: the truth the failover and
// give-up figures are held to.
type failoverGateway struct {
	primary, fallback string // base URLs, ".../v1"
	timeout, cooldown time.Duration
	// unstamped: the gateway rewrites the client's text so that the
	// sequence stamp does not reach the providers (as a gateway that
	// builds its own prompt may); only X-Chosen-Target names who answered.
	unstamped bool

	mu        sync.Mutex
	coolUntil time.Time
	log       []fgEvent
}

// fgEvent is one line of the gateway's log.
type fgEvent struct {
	at     time.Time
	kind   string // "call" (a provider call began), "give_up", "served"
	target string // "primary" or "fallback"
	seq    uint64
	ok     bool          // served: the turn was answered 200
	ran    time.Duration // give_up: how long the call had run
}

func (g *failoverGateway) note(e fgEvent) {
	g.mu.Lock()
	g.log = append(g.log, e)
	g.mu.Unlock()
}

func (g *failoverGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	seq, _ := seqstamp.Find(body)
	if g.unstamped {
		body = bytes.ReplaceAll(body, []byte(seqstamp.Prefix), []byte("[turn="))
	}
	g.mu.Lock()
	cooling := time.Now().Before(g.coolUntil)
	g.mu.Unlock()
	if !cooling {
		if g.try(w, r, "primary", g.primary, body, seq) {
			return
		}
		g.mu.Lock()
		g.coolUntil = time.Now().Add(g.cooldown)
		g.mu.Unlock()
	}
	if !g.try(w, r, "fallback", g.fallback, body, seq) {
		http.Error(w, "no provider answered", http.StatusBadGateway)
		g.note(fgEvent{at: time.Now(), kind: "served", target: "fallback", seq: seq})
	}
}

// try makes one provider call and, when it answers 200, streams the
// answer to the client as it comes; it reports whether it did.
func (g *failoverGateway) try(w http.ResponseWriter, r *http.Request, name, base string, body []byte, seq uint64) bool {
	ctx, cancel := context.WithTimeout(r.Context(), g.timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	req.Header = http.Header{"Content-Type": {"application/json"}, "User-Agent": {"failover-gateway/1"}}
	start := time.Now()
	g.note(fgEvent{at: start, kind: "call", target: name, seq: seq})
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			now := time.Now()
			g.note(fgEvent{at: now, kind: "give_up", target: name, seq: seq, ran: now.Sub(start)})
		}
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return false
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.Header().Set("X-Chosen-Target", name)
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(flushWriter{w}, resp.Body)
	g.note(fgEvent{at: time.Now(), kind: "served", target: name, seq: seq, ok: true})
	return true
}

func (g *failoverGateway) start(t *testing.T) string {
	t.Helper()
	return "http://" + testutil.Serve(t, &http.Server{Handler: g})
}

// truth is what the gateway's log says, in run seconds from wallStart.
type fgTruth struct {
	firstFallback, failBack float64 // -1: none
	served, servedOK        int64   // turns answered from the fallback
	fallbackCalls           int64
	giveUps                 []float64 // seconds each abandoned call ran
	giveUpsThenFallback     int64     // turns with a give-up that the fallback then answered
}

func (g *failoverGateway) truth(wallStart time.Time, faultEnd float64) fgTruth {
	g.mu.Lock()
	defer g.mu.Unlock()
	tr := fgTruth{firstFallback: -1, failBack: -1}
	rt := func(at time.Time) float64 { return at.Sub(wallStart).Seconds() }
	gaveUp := map[uint64]bool{}
	okCalls := map[uint64]float64{} // primary calls by turn, for the fail-back
	for _, e := range g.log {
		switch {
		case e.kind == "call" && e.target == "fallback":
			tr.fallbackCalls++
			if t := rt(e.at); tr.firstFallback < 0 || t < tr.firstFallback {
				tr.firstFallback = t
			}
		case e.kind == "call" && e.target == "primary":
			okCalls[e.seq] = rt(e.at)
		case e.kind == "give_up":
			tr.giveUps = append(tr.giveUps, e.ran.Seconds())
			gaveUp[e.seq] = true
		}
	}
	for _, e := range g.log {
		switch {
		case e.kind == "served" && e.target == "fallback":
			tr.served++
			if e.ok {
				tr.servedOK++
				if gaveUp[e.seq] {
					tr.giveUpsThenFallback++
				}
			}
		case e.kind == "served" && e.target == "primary" && e.ok:
			if t := okCalls[e.seq]; t >= faultEnd && (tr.failBack < 0 || t < tr.failBack) {
				tr.failBack = t
			}
		}
	}
	return tr
}

// within reports whether bounds (nil: none) hold v, to 20 ms (the log
// stamps a call before sending it, the upstream on arrival).
func within(b *analysis.Bounds, v float64) bool {
	return b == nil || (b.Min != nil && b.Max != nil && *b.Min-0.020 <= v && v <= *b.Max+0.020)
}

// near reports whether a harness figure is the log's within max(5 %,
// 20 ms).
func near(got *float64, want float64) bool {
	return got != nil && math.Abs(*got-want) <= max(0.05*math.Abs(want), 0.020)
}

// TestFailoverHeldToTheGatewaysLog: a real gateway on loopback fails over
// from primary to the fallback when primary answers 503 (one drill) or
// is slower than its 1 s per-call timeout (the other), and back after the
// fault. The failover figure (time to fail over and back, requests served
// by the fallback, their calls) and the give-ups (count, the timeout they
// show, the turns that still succeeded on the fallback) are the gateway's
// own log's.
func TestFailoverHeldToTheGatewaysLog(t *testing.T) {
	if testing.Short() {
		t.Skip("two 14 s rehearsals; skipped with -short")
	}
	for _, tc := range []struct {
		name, fault string
		unstamped   bool
	}{
		{"storm", "type: status\n    params: {code: 503}", false},
		{"slow", "type: latency\n    params: {fixed: 3s}", false},
		{"storm-unstamped", "type: status\n    params: {code: 503}", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runFailoverDrill(t, tc.name, tc.fault, tc.unstamped)
		})
	}
}

// rehearseFailover runs the drill against the gateway at front through
// the real rehearsal path, with api: openai fakes primary and fallback at
// pAddr and fAddr: 5 req/s for 14 s, the fault on primary from 3 s to
// 7 s. It returns the result and the run directory.
func rehearseFailover(t *testing.T, name, fault, front, pAddr, fAddr string) (*rehearsal.Result, string) {
	t.Helper()
	yaml := fmt.Sprintf(`version: 1
name: failover-%s
gateway:
  url: %s
replay:
  rate: 5
  duration: 14s
  deadline: 8s
  filter: {path: "^/v1/chat/completions"}
  keep_headers: [X-Chosen-Target]
upstreams:
  - {name: primary, listen: "%s", api: openai, healthy: {sse: {events: 4}}}
  - {name: fallback, listen: "%s", api: openai, healthy: {sse: {events: 4}}}
faults:
  - name: %s
    upstream: primary
    at: 3s
    for: 4s
    %s
expectations:
  upstreams: [primary]
  fails_over_within: 2s
  fails_back_within: 5s
`, name, front, pAddr, fAddr, name, fault)
	sc, err := scenarios.Parse(filepath.Join(t.TempDir(), "failover.yaml"), []byte(yaml))
	if err != nil {
		t.Fatalf("scenario:\n%s\n%v", yaml, err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if keep := os.Getenv("REHEARSE_E2E_OUT"); keep != "" {
		dir = filepath.Join(keep, fmt.Sprintf("failover-%s-%d", name, time.Now().UnixNano()))
	}
	res, err := rehearsal.Run(context.Background(), sc, rehearsal.Options{OutDir: dir})
	if err != nil && !errors.Is(err, rehearse.ErrExpectations) {
		t.Fatal(err)
	}
	return res, dir
}

func runFailoverDrill(t *testing.T, name, fault string, unstamped bool) {
	pAddr, fAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	g := &failoverGateway{primary: "http://" + pAddr + "/v1", fallback: "http://" + fAddr + "/v1", timeout: time.Second, cooldown: 2 * time.Second,
		unstamped: unstamped}
	res, dir := rehearseFailover(t, name, fault, g.start(t), pAddr, fAddr)
	a := res.Analysis
	ep := a.Upstreams["primary"].Episodes[0]
	f := ep.Failover
	truth := g.truth(a.Run.WallStart, ep.EndS)
	if f == nil {
		t.Fatalf("no failover figure; gateway log %+v", truth)
	}
	t.Logf("figure: %s", f.Statement)
	t.Logf("gateway log: first fallback call %.3f s, fail-back %.3f s, %d turns served by the fallback (%d ok), %d fallback calls, %d give-ups",
		truth.firstFallback, truth.failBack, truth.served, truth.servedOK, truth.fallbackCalls, len(truth.giveUps))
	for _, r := range a.Expectations {
		t.Logf("expectation %s: %s (%s)", r.Name, r.Outcome, r.Message)
	}
	want := "same_requests"
	if unstamped {
		want = "target_header"
	}
	if f.Fallback != "fallback" || f.Evidence != want {
		t.Fatalf("fallback %q by %q, want fallback by %s", f.Fallback, f.Evidence, want)
	}
	// By the target header alone the call is not known: the moment is the
	// first fallback call inside the request's exchange, bounded by it.
	if !near(f.FailedOverAtS, truth.firstFallback) || (f.FailedOverAfterBoundsS != nil) != unstamped ||
		!within(f.FailedOverAfterBoundsS, truth.firstFallback-ep.StartS) {
		t.Errorf("failed over at %v %+v, the gateway's first fallback call at %.3f", fp(f.FailedOverAtS), f.FailedOverAfterBoundsS, truth.firstFallback)
	}
	if !f.FailedBack || !near(f.FailedBackAtS, truth.failBack) || !within(f.FailedBackAfterBoundsS, truth.failBack-ep.EndS) {
		t.Errorf("failed back %v at %v %+v, the gateway's first primary call after the fault answered at %.3f", f.FailedBack, fp(f.FailedBackAtS),
			f.FailedBackAfterBoundsS, truth.failBack)
	}
	if f.Served != truth.served || f.ServedOK != truth.servedOK || f.FallbackCalls != truth.fallbackCalls {
		t.Errorf("served %d (%d ok), %d fallback calls; the gateway: %d (%d ok), %d calls", f.Served, f.ServedOK, f.FallbackCalls,
			truth.served, truth.servedOK, truth.fallbackCalls)
	}
	if f.FallbackTokens == nil || *f.FallbackTokens == 0 {
		t.Errorf("fallback tokens %v: the fake provider charges usage", f.FallbackTokens)
	}
	if fb := a.Upstreams["fallback"]; fb == nil || !slices.Contains(fb.FallbackFor, "primary") {
		t.Errorf("the fallback upstream does not say whose fallback it is: %+v", fb)
	}
	for _, r := range a.Expectations {
		if (r.Name == "fails_over_within" || r.Name == "fails_back_within") && !r.Passed {
			t.Errorf("%s %s: %s", r.Name, r.Outcome, r.Message)
		}
	}
	checkGiveUps(t, a.GiveUps, truth, name == "slow")
	if unstamped {
		checkByTime(t, dir, truth)
	}
}

// checkByTime analyses the unstamped drill's journal again without the
// kept header: nothing then says which request went where, and the
// failover is read by time (the fallback received no call before the
// fault: a standby), its calls counted. Held to the same log.
func checkByTime(t *testing.T, dir string, truth fgTruth) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []journal.Event
	if _, err := journal.Decode(f, func(ev journal.Event) {
		if c, ok := ev.Payload.(*journal.ClientRequest); ok {
			c.Headers = nil
		}
		evs = append(evs, ev)
	}); err != nil {
		t.Fatal(err)
	}
	a, err := analysis.AnalyzeEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	fo := a.Upstreams["primary"].Episodes[0].Failover
	t.Logf("by time: %s", fo.Statement)
	if fo.Fallback != "fallback" || fo.Evidence != "time" {
		t.Fatalf("without the header: fallback %q by %q, want fallback by time (%s)", fo.Fallback, fo.Evidence, fo.Unseen)
	}
	if !near(fo.FailedOverAtS, truth.firstFallback) || !near(fo.FailedBackAtS, truth.failBack) || fo.Served != truth.fallbackCalls {
		t.Errorf("by time: over at %v, back at %v, %d calls; the gateway: %.3f, %.3f, %d calls", fp(fo.FailedOverAtS), fp(fo.FailedBackAtS), fo.Served,
			truth.firstFallback, truth.failBack, truth.fallbackCalls)
	}
}

// checkGiveUps holds the give-ups to the gateway's log: none in the 503
// storm, one per timed-out call in the slow drill, each then answered by
// the fallback.
func checkGiveUps(t *testing.T, g *analysis.GiveUps, truth fgTruth, slow bool) {
	t.Helper()
	if g == nil {
		t.Fatal("no give-up figure")
	}
	t.Logf("give-ups: %q", g.Statements)
	n := int64(len(truth.giveUps))
	if !slow {
		if n != 0 || g.Count != 0 {
			t.Errorf("503 storm: %d give-ups, the gateway logged %d", g.Count, n)
		}
		return
	}
	u := g.Upstreams["primary"]
	if n == 0 || u == nil || g.Count != n || u.Seen != n {
		t.Fatalf("%d give-ups (%+v), the gateway logged %d", g.Count, u, n)
	}
	s := slices.Clone(truth.giveUps)
	slices.Sort(s)
	median := s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	if !near(u.TimeoutS, median) || !near(u.AfterS.Min, s[0]) || !near(u.AfterS.Max, s[len(s)-1]) {
		t.Errorf("gave up after %v (min %v, max %v); the gateway: %.3f (min %.3f, max %.3f)", fp(u.TimeoutS), fp(u.AfterS.Min), fp(u.AfterS.Max),
			median, s[0], s[len(s)-1])
	}
	if u.OnFallback != truth.giveUpsThenFallback || u.ThenSucceeded != truth.giveUpsThenFallback {
		t.Errorf("then succeeded %d (%d on the fallback); the gateway served %d of those turns from the fallback", u.ThenSucceeded, u.OnFallback, truth.giveUpsThenFallback)
	}
}
