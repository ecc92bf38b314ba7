package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/reports/analysis"
)

// Breaker shapes no Debian package has, in a small gateway of the test's
// own: a real HTTP reverse proxy on loopback in front of the harness's
// upstream, whose breaker logs its own state changes (the truth).
//   - half-open admitting several calls (gobreaker's MaxRequests: it lets
//     MaxRequests calls through and closes after as many successes in a
//     row; any failure reopens it), untagged;
//   - ramp recovery (Traefik's CircuitBreaker: after the fallback period a
//     growing share of the traffic, linear over the recovery period, is
//     let through; a failure reopens it; at the period's end it is
//     closed).
//   - passive expiry (Caddy's max_fails/fail_duration, generalised): each
//     failure is remembered for a period; while enough are remembered,
//     requests are turned away; no probes, no success counts;
//   - one live probe per half-open (nginx's, Hystrix's) with slow answers,
//     and a gateway timeout on requests with a body (the capture is 90 %
//     POST).
// Probes are live traffic; with slow healthy answers they are slow. The
// timing of each is drawn at random per run (logged, and repeated with
// REHEARSE_SHAPE_SEED): the model must hold for breakers it was not
// tuned to, not for one configuration.

// shapeGW is the test gateway.
type shapeGW struct {
	URL string
	br  breaker

	mu     sync.Mutex
	trans  []shapeTrans
	probes []shapeProbe // calls let through while not closed
	calls  []shapeProbe // every call let through
	srv    *http.Server
}

type shapeProbe struct {
	At, End time.Time
	OK      bool
	// Seq is the client's sequence number (the replayer's header).
	Seq string
}

// statusWriter keeps the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

type shapeTrans struct {
	At time.Time
	To string // closed, open, half_open
}

// breaker is the test gateway's breaker: allow says whether a request may
// go through now, and the generation it went through in; done reports how
// it ended. A breaker that keeps generations (gobreaker) ignores a call
// that ended in another one: a call let through while closed that times
// out after the breaker opened is not a half-open probe's failure.
type breaker interface {
	allow(now time.Time) (bool, int)
	done(now time.Time, ok bool, gen int)
	// state reports the state now (for the log).
	state() string
}

// streak is the closed state of the counting shapes (halfOpenN, ramp):
// threshold failures in a row open the breaker, a success starts the
// count again.
type streak struct{ fails int }

// trips counts one call of a closed breaker and says whether it makes
// threshold failures in a row.
func (s *streak) trips(ok bool, threshold int) bool {
	if ok {
		s.fails = 0
		return false
	}
	s.fails++
	return s.fails >= threshold
}

// halfOpenN is gobreaker's shape: Threshold consecutive failures open it;
// after Cooldown the next call finds it half-open, which lets MaxRequests
// calls through and closes after MaxRequests successes in a row.
type halfOpenN struct {
	Threshold, MaxRequests int
	Cooldown               time.Duration

	st        string
	gen       int // bumped at every change of state
	closed    streak
	openedAt  time.Time
	admitted  int
	successes int
}

func (b *halfOpenN) state() string { return b.st }

func (b *halfOpenN) set(st string) { b.st, b.gen = st, b.gen+1 }

func (b *halfOpenN) allow(now time.Time) (bool, int) {
	switch b.st {
	case "open":
		if now.Sub(b.openedAt) < b.Cooldown {
			return false, b.gen
		}
		b.set("half_open")
		b.admitted, b.successes = 0, 0
		fallthrough
	case "half_open":
		if b.admitted >= b.MaxRequests {
			return false, b.gen
		}
		b.admitted++
	}
	return true, b.gen
}

func (b *halfOpenN) done(now time.Time, ok bool, gen int) {
	if gen != b.gen {
		return
	}
	switch b.st {
	case "closed", "":
		if b.closed.trips(ok, b.Threshold) {
			b.set("open")
			b.openedAt = now
		}
	case "half_open":
		if !ok {
			b.set("open")
			b.openedAt = now
			return
		}
		if b.successes++; b.successes >= b.MaxRequests {
			b.set("closed")
			b.closed = streak{}
		}
	}
}

// ramp is Traefik's shape: Threshold consecutive failures open it; after
// Fallback it recovers for Recovery, letting through a share of the
// requests that grows linearly from 0 to 1; a failure then reopens it;
// at the end of Recovery it is closed.
type ramp struct {
	Threshold          int
	Fallback, Recovery time.Duration

	st        string
	closed    streak
	openedAt  time.Time
	recovery  time.Time
	allowance float64
}

func (b *ramp) state() string { return b.st }

func (b *ramp) allow(now time.Time) (bool, int) {
	return b.admit(now), 0
}

func (b *ramp) admit(now time.Time) bool {
	switch b.st {
	case "open":
		if now.Sub(b.openedAt) < b.Fallback {
			return false
		}
		b.st, b.recovery, b.allowance = "half_open", now, 0
		fallthrough
	case "half_open":
		share := float64(now.Sub(b.recovery)) / float64(b.Recovery)
		if share >= 1 {
			b.st, b.closed = "closed", streak{}
			return true
		}
		// Deterministic share: let a request through each time the
		// accumulated share reaches a whole request.
		if b.allowance += share; b.allowance >= 1 {
			b.allowance--
			return true
		}
		return false
	}
	return true
}

func (b *ramp) done(now time.Time, ok bool, _ int) {
	switch b.st {
	case "closed", "":
		if b.closed.trips(ok, b.Threshold) {
			b.st, b.openedAt = "open", now
		}
	case "half_open":
		if !ok {
			b.st, b.openedAt = "open", now
		}
	}
}

// expiring is the passive shape: each failure is remembered for Forget;
// while MaxFails or more are remembered, requests are turned away. It has
// no half-open and counts no successes.
type expiring struct {
	MaxFails int
	Forget   time.Duration

	fails     []time.Time // in order
	unhealthy bool
	// openAt is when the failures reached MaxFails, closedAt when the
	// last spell a request saw ended (the expiry that ended it).
	openAt, closedAt time.Time
	// seen: a request was turned away in the current unhealthy spell (a
	// spell nobody was turned away in changed nothing a client saw).
	seen bool
}

func (b *expiring) state() string {
	if b.unhealthy && b.seen {
		return "open"
	}
	return "closed"
}

func (b *expiring) since() time.Time {
	if b.state() == "open" {
		return b.openAt
	}
	return b.closedAt
}

// forget drops the failures remembered for Forget by now; the state turns
// healthy when the count falls below MaxFails, at that failure's expiry.
func (b *expiring) forget(now time.Time) {
	for len(b.fails) > 0 && !now.Before(b.fails[0].Add(b.Forget)) {
		exp := b.fails[0].Add(b.Forget)
		b.fails = b.fails[1:]
		if b.unhealthy && len(b.fails) < b.MaxFails {
			if !b.seen {
				// Nobody saw that spell: the healthy state goes on from
				// before it.
				b.unhealthy = false
				continue
			}
			b.unhealthy, b.seen, b.closedAt = false, false, exp
		}
	}
}

func (b *expiring) allow(now time.Time) (bool, int) {
	b.forget(now)
	if b.unhealthy {
		b.seen = true
		return false, 0
	}
	return true, 0
}

func (b *expiring) done(now time.Time, ok bool, _ int) {
	b.forget(now)
	if ok {
		return
	}
	b.fails = append(b.fails, now)
	if !b.unhealthy && len(b.fails) >= b.MaxFails {
		b.unhealthy, b.seen = true, false
		// The open is noted when a request is first turned away, at the
		// moment the failure made it unhealthy.
		b.openAt = now
	}
}

// startShapeGW starts the test gateway in front of upstream (host:port).
func startShapeGW(t *testing.T, br breaker, upstream string, timeout time.Duration) *shapeGW {
	t.Helper()
	g := &shapeGW{br: br}
	target := &url.URL{Scheme: "http", Host: upstream}
	rp := httputil.NewSingleHostReverseProxy(target)
	// A new connection per call: no transport re-sends to muddy the
	// counts; the harness's own re-send handling is tested elsewhere.
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	rp.Transport = &http.Transport{DisableKeepAlives: true, ResponseHeaderTimeout: timeout}
	fail := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Breaker-State", "open")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"code":"dependency_unavailable","dependency":"app"}}`)
	}
	gen := func(r *http.Request) int { n, _ := r.Context().Value(genKey{}).(int); return n }
	rp.ModifyResponse = func(resp *http.Response) error {
		g.finish(!failedStatus(resp.StatusCode), gen(resp.Request))
		return nil
	}
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		g.finish(false, gen(r))
		w.WriteHeader(http.StatusBadGateway)
	}
	g.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gw-ready" {
			w.WriteHeader(http.StatusOK)
			return
		}
		g.mu.Lock()
		now := time.Now()
		ok, gn := g.br.allow(now)
		g.note()
		probe, call := -1, -1
		if st := g.br.state(); ok && st != "closed" && st != "" {
			g.probes = append(g.probes, shapeProbe{At: now})
			probe = len(g.probes) - 1
		}
		if ok {
			g.calls = append(g.calls, shapeProbe{At: now, Seq: r.Header.Get(replay.DefaultSeqHeader)})
			call = len(g.calls) - 1
		}
		g.mu.Unlock()
		if !ok {
			fail(w)
			return
		}
		// The upstream may answer before it has read a POST's body: without
		// full duplex, net/http closes the body the proxy is still sending.
		_ = http.NewResponseController(w).EnableFullDuplex()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		rp.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), genKey{}, gn)))
		g.mu.Lock()
		end := time.Now()
		if probe >= 0 {
			g.probes[probe].End, g.probes[probe].OK = end, !failedStatus(sw.status)
		}
		g.calls[call].End, g.calls[call].OK = end, !failedStatus(sw.status)
		g.mu.Unlock()
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.URL = "http://" + ln.Addr().String()
	go g.srv.Serve(ln)
	t.Cleanup(func() { g.srv.Close() })
	g.mu.Lock()
	g.note()
	g.mu.Unlock()
	return g
}

// genKey carries a request's breaker generation through the proxy.
type genKey struct{}

// failedStatus is the test gateway's failure: a 5xx or a 429 (the
// analysis's failed call; a transport error or a timeout is one too, the
// proxy's 502).
func failedStatus(code int) bool { return code >= 500 || code == http.StatusTooManyRequests }

// selfLogged is a breaker that keeps its own log of state changes (a
// library's state-change callback): that log is the truth, not the
// gateway's reading of state() after each decision.
type selfLogged interface{ transitions() []shapeTrans }

// log is the breaker's log of state changes; g.mu is held.
func (g *shapeGW) log() []shapeTrans {
	if sl, ok := g.br.(selfLogged); ok {
		return sl.transitions()
	}
	return g.trans
}

func (g *shapeGW) finish(ok bool, gen int) {
	g.mu.Lock()
	g.br.done(time.Now(), ok, gen)
	g.note()
	g.mu.Unlock()
}

// timed is a breaker whose state changes on a timer of its own (a
// failure forgotten): it says when the state it is in began.
type timed interface{ since() time.Time }

// note logs a state change; g.mu is held. The log is of changes a request
// could see: they are noted as the breaker decides on a request or hears
// how one ended, at the moment the state began.
func (g *shapeGW) note() {
	if _, ok := g.br.(selfLogged); ok {
		return
	}
	st := g.br.state()
	if st == "" {
		st = "closed"
	}
	if n := len(g.trans); n == 0 || g.trans[n-1].To != st {
		at := time.Now()
		if tb, ok := g.br.(timed); ok {
			at = tb.since()
		}
		g.trans = append(g.trans, shapeTrans{At: at, To: st})
	}
}

// truth turns the breaker's log into cycles: open at the first change
// away from closed, closed at the next change to closed.
func (g *shapeGW) truth(wallStart time.Time, from float64) []truthCycle {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []truthCycle
	open := false
	for _, tr := range g.log() {
		at := tr.At.Sub(wallStart).Seconds()
		if at < from {
			continue
		}
		switch {
		case !open && tr.To != "closed":
			out = append(out, truthCycle{OpenAt: at})
			open = true
		case open && tr.To == "closed":
			cl := at
			out[len(out)-1].CloseAt = &cl
			open = false
		}
	}
	for _, p := range g.probes {
		at := p.At.Sub(wallStart).Seconds()
		for i := range out {
			if at >= out[i].OpenAt && (out[i].CloseAt == nil || at < *out[i].CloseAt) {
				out[i].Probes = append(out[i].Probes, truthProbe{At: at, End: p.End.Sub(wallStart).Seconds(), OK: p.OK})
			}
		}
	}
	return out
}

// probeReading merges, as the analysis does when it reads the calls let
// through while open as probes, every closed spell that let fewer calls
// through than it takes to call forwarding resumed
// (analysis.CloseRunMin), all failing, into the cycle before it.
func (g *shapeGW) probeReading(cycles []truthCycle, wallStart time.Time) []truthCycle {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []truthCycle
	for _, c := range cycles {
		if n := len(out); n > 0 && out[n-1].CloseAt != nil {
			prev := &out[n-1]
			var in []shapeProbe
			for _, k := range g.calls {
				if at := k.At.Sub(wallStart).Seconds(); at >= *prev.CloseAt-0.001 && at < c.OpenAt {
					in = append(in, k)
				}
			}
			failed := len(in) > 0
			for _, k := range in {
				failed = failed && !k.OK
			}
			if failed && len(in) < analysis.CloseRunMin {
				for _, k := range in {
					prev.Probes = append(prev.Probes, truthProbe{At: k.At.Sub(wallStart).Seconds(), End: k.End.Sub(wallStart).Seconds()})
				}
				prev.Probes = append(prev.Probes, c.Probes...)
				prev.CloseAt = c.CloseAt
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// shapeRand draws a test's timing at random (the seed logged, and taken
// from REHEARSE_SHAPE_SEED when set).
func shapeRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv("REHEARSE_SHAPE_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("timing seed %d (REHEARSE_SHAPE_SEED=%d repeats it)", seed, seed)
	return rand.New(rand.NewPCG(uint64(seed), 24))
}

// between draws a duration in [lo, hi), to the millisecond.
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64((hi-lo)/time.Millisecond)))*time.Millisecond
}

const shapeStorm = "  - {name: app-503, type: status, upstream: app, at: 3s, for: 2s, params: {code: 503}}\n"

// shapeDrill rehearses a 503 storm through the test gateway.
func shapeDrill(t *testing.T, br breaker, name, healthy string) (*shapeGW, *rehearsal.Result) {
	t.Helper()
	return shapeDrillFaults(t, br, name, healthy, shapeStorm, 0)
}

// shapeDrillFaults rehearses the given faults through the test gateway,
// whose transport gives up on an answer after timeout (0: 2 s).
func shapeDrillFaults(t *testing.T, br breaker, name, healthy, faults string, timeout time.Duration) (*shapeGW, *rehearsal.Result) {
	t.Helper()
	if testing.Short() {
		t.Skip("timed rehearsal; skipped with -short")
	}
	app := testutil.FreeAddr(t)
	g := startShapeGW(t, br, app, timeout)
	src := singleScenario("shape", g.URL, g.URL+"/gw-ready", app, singleDrill{
		Name: name, Rate: 20, Duration: 10 * time.Second, Healthy: healthy, Faults: faults,
	})
	res, _ := runScenario(t, "shape-"+name, src, 10*time.Second, &proc{name: "test gateway"})
	return g, res
}

// checkShape compares the episode with the test gateway's log: cycles,
// open, close (or its stated bounds), and the shape's own figures.
func checkShape(t *testing.T, g *shapeGW, res *rehearsal.Result, desc, wantShape string, wantSuccesses *int) {
	t.Helper()
	ua := res.Analysis.Upstreams["app"]
	if ua == nil || len(ua.Episodes) != 1 {
		t.Fatalf("want one episode on app, analysis has %+v", ua)
	}
	ep := ua.Episodes[0]
	skipIfStalled(t, res.Analysis)
	truth := g.truth(res.Analysis.Run.WallStart, ep.StartS)
	if _, ok := g.br.(*expiring); ok && !strings.Contains(ep.Shape, analysis.ShapeExpiry) {
		truth = g.probeReading(truth, res.Analysis.Run.WallStart)
	}
	c := &comparer{t: t}
	c.note("breaker", desc, "—")
	c.note("shape", wantShape, ep.Shape+": "+ep.ShapeEvidence)
	c.note("statement", "—", ep.Statement)
	if shapes := strings.Split(ep.Shape, "+"); !slices.Contains(strings.Split(wantShape, "|"), shapes[len(shapes)-1]) {
		t.Errorf("shape %q, want %q: %s", ep.Shape, wantShape, ep.ShapeEvidence)
	}
	// The failed calls before the first open, as the analysis defines
	// them: calls the gateway let through from the fault's start that
	// began before the open and failed, by the gateway's own record.
	// A call let through just before the fault started reaches the
	// upstream after it when the gateway is slow to forward it (a loaded
	// machine): the log cannot tell, so such a failed call counts toward
	// the most there may have been (FailedMax).
	if len(truth) > 0 {
		g.mu.Lock()
		maybe := 0
		for _, k := range g.calls {
			at := k.At.Sub(res.Analysis.Run.WallStart).Seconds()
			switch {
			case k.End.IsZero() || k.OK || at >= truth[0].OpenAt:
			case at >= ep.StartS-0.003:
				truth[0].Failed++
			case k.End.Sub(res.Analysis.Run.WallStart).Seconds() > ep.StartS:
				maybe++
			}
		}
		truth[0].FailedMax = truth[0].Failed + maybe
		g.mu.Unlock()
	}
	compareCycles(c, ep, truth, wantSuccesses)
	c.log(t.Name())
	if t.Failed() {
		g.mu.Lock()
		for _, tr := range g.log() {
			t.Logf("gateway: %.4f %s", tr.At.Sub(res.Analysis.Run.WallStart).Seconds(), tr.To)
		}
		for _, k := range g.calls {
			if at := k.At.Sub(res.Analysis.Run.WallStart).Seconds(); at >= ep.StartS-0.5 && at < ep.EndS+1 {
				t.Logf("gateway call: %.4f – %.4f ok %v", at, k.End.Sub(res.Analysis.Run.WallStart).Seconds(), k.OK)
			}
		}
		g.mu.Unlock()
	}
}

// severalProbes draws the breaker of the TestShapeHalfOpenSeveral tests:
// 2–4 failures in a row open it, it lets 2–4 calls through per half-open
// and closes after as many successes, its cooldown 0.7–1.5 s. desc says
// which, and is logged.
func severalProbes(t *testing.T) (br *halfOpenN, desc string) {
	t.Helper()
	r := shapeRand(t)
	br = &halfOpenN{Threshold: 2 + r.IntN(3), MaxRequests: 2 + r.IntN(3), Cooldown: between(r, 700*time.Millisecond, 1500*time.Millisecond)}
	desc = fmt.Sprintf("%d failures open it, %d probes per half-open, cooldown %s", br.Threshold, br.MaxRequests, br.Cooldown)
	t.Log("breaker: " + desc)
	return br, desc
}

// TestShapeHalfOpenSeveralSlow: a half-open that lets 2–4 untagged calls
// through and closes after as many successes, with 300 ms healthy
// answers: the probes are in flight together while requests are turned
// away, and the close is the last success's end.
func TestShapeHalfOpenSeveralSlow(t *testing.T) {
	t.Parallel()
	br, desc := severalProbes(t)
	g, res := shapeDrill(t, br, "half-open-n-slow", "{latency: {fixed: 300ms}}")
	checkShape(t, g, res, desc, analysis.ShapeLiveProbes, ptrInt(br.MaxRequests))
}

// TestShapeHalfOpenSeveralQuick: the same breaker with quick answers. The
// probes come one after the other with nothing turned away between them
// and then traffic flows: from outside that is a single probe's success,
// or several, or a timer. The analysis must say so and give bounds, not a
// wrong exact count.
func TestShapeHalfOpenSeveralQuick(t *testing.T) {
	t.Parallel()
	br, desc := severalProbes(t)
	g, res := shapeDrill(t, br, "half-open-n-quick", "")
	ep := res.Analysis.Upstreams["app"].Episodes[0]
	if ep.SuccessesToClose != nil {
		t.Errorf("successes_to_close = %d: the evidence cannot fix it (quick untagged probes), want null", *ep.SuccessesToClose)
	}
	checkShape(t, g, res, desc, analysis.ShapeUnknown, nil)
}

// TestShapeLiveProbeSlow: one live probe per half-open (nginx's,
// Hystrix's), healthy answers taking 300 ms: requests turned away while
// the successful probe is in flight must not make the first resumed call
// a second probe. One success closes it, at its end.
func TestShapeLiveProbeSlow(t *testing.T) {
	t.Parallel()
	r := shapeRand(t)
	br := &halfOpenN{Threshold: 2 + r.IntN(4), MaxRequests: 1, Cooldown: between(r, 500*time.Millisecond, 1800*time.Millisecond)}
	desc := fmt.Sprintf("%d failures open it, cooldown %s", br.Threshold, br.Cooldown)
	t.Log("breaker: " + desc)
	g, res := shapeDrill(t, br, "live-probe-slow", "{latency: {fixed: 300ms}}")
	checkShape(t, g, res, desc, analysis.ShapeLiveProbe, ptrInt(1))
}

// TestShapeRamp: Traefik-like ramp recovery: after a fallback period open,
// a share of the traffic growing over the recovery period is let through,
// then everything. Passes in a row mid-ramp must not be taken for the
// close; the ramp's start and end are reported and successes_to_close is
// null.
func TestShapeRamp(t *testing.T) {
	t.Parallel()
	r := shapeRand(t)
	br := &ramp{Threshold: 2 + r.IntN(3), Fallback: between(r, 700*time.Millisecond, 1500*time.Millisecond), Recovery: between(r, 1500*time.Millisecond, 3*time.Second)}
	desc := fmt.Sprintf("%d failures open it, fallback %s, recovery %s", br.Threshold, br.Fallback, br.Recovery)
	t.Log("breaker: " + desc)
	g, res := shapeDrill(t, br, "ramp", "")
	checkShape(t, g, res, desc, analysis.ShapeRamp, nil)
	cy := res.Analysis.Upstreams["app"].Episodes[0].Cycles
	if n := len(cy); n > 0 && (cy[n-1].RampStartS == nil || cy[n-1].RampEndS == nil) {
		t.Errorf("ramp start %v end %v: want both", cy[n-1].RampStartS, cy[n-1].RampEndS)
	} else if n > 0 {
		t.Logf("ramp from %.3f s to %.3f s", *cy[n-1].RampStartS, *cy[n-1].RampEndS)
	}
}

// TestShapeExpiry: a passive breaker whose failures expire (Caddy's
// max_fails/fail_duration, with other numbers), quick or slow healthy
// answers: every spell in which it turned a request away is a cycle (or,
// when the analysis reads the calls it let through as probes, part of
// one), each close within its stated bounds, and no success counted.
func TestShapeExpiry(t *testing.T) {
	t.Parallel()
	r := shapeRand(t)
	br := &expiring{MaxFails: 2 + r.IntN(3), Forget: between(r, 800*time.Millisecond, 2*time.Second)}
	healthy := ""
	if r.IntN(2) == 0 {
		healthy = "{latency: {fixed: 300ms}}"
	}
	desc := fmt.Sprintf("unhealthy while %d failures are remembered, each for %s; healthy answers %q", br.MaxFails, br.Forget, healthy)
	t.Log("breaker: " + desc)
	g, res := shapeDrill(t, br, "expiry", healthy)
	checkShape(t, g, res, desc, analysis.ShapeExpiry+"|"+analysis.ShapeUnknown, nil)
}

// TestShapeTimeoutWithBody: answers 2 s late, past the gateway's own
// timeout (400–900 ms), on a capture that is 90 % POST; the breaker
// counts each timeout and lets one live probe through per half-open. The
// upstream must see each hang-up at the timeout, with a body or without:
// the open, the failures before it and the cooldowns depend on it.
func TestShapeTimeoutWithBody(t *testing.T) {
	t.Parallel()
	r := shapeRand(t)
	br := &halfOpenN{Threshold: 2 + r.IntN(3), MaxRequests: 1, Cooldown: between(r, 500*time.Millisecond, 1200*time.Millisecond)}
	timeout := between(r, 400*time.Millisecond, 900*time.Millisecond)
	desc := fmt.Sprintf("%d failures open it, cooldown %s; gateway timeout %s", br.Threshold, br.Cooldown, timeout)
	t.Log("breaker: " + desc)
	g, res := shapeDrillFaults(t, br, "timeout-with-body", "",
		"  - {name: app-slow, type: latency, upstream: app, at: 3s, for: 3s, params: {fixed: 2s}}\n", timeout)
	checkShape(t, g, res, desc, analysis.ShapeLiveProbe+"|"+analysis.ShapeUnknown, ptrInt(1))
	events, _, err := journal.ReadFile(filepath.Join(res.Dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The gateway's own record of each call: when it let the call
	// through and when its proxy gave up. The hang-up comes at its timeout
	// after it sent the request, so the upstream sees it no sooner than
	// the timeout after the gateway let the call through (however late a
	// loaded upstream stamped the arrival), and before the fault's 2 s
	// answer would have come.
	g.mu.Lock()
	let := map[string]time.Time{}
	for _, k := range g.calls {
		let[k.Seq] = k.At
	}
	g.mu.Unlock()
	n := 0
	for _, e := range events {
		p, ok := e.Payload.(*journal.UpstreamRequest)
		if !ok || p.FaultType != "latency" || p.HealthCheck {
			continue
		}
		n++
		held := p.Done - e.T
		gone := res.Analysis.Run.WallStart.Add(p.Done)
		at, known := time.Time{}, false
		if p.Seq != nil {
			at, known = let[strconv.FormatUint(*p.Seq, 10)]
		}
		switch {
		case p.Outcome != journal.OutcomeUpstreamGone || held >= 2*time.Second:
			t.Errorf("%s %s: outcome %s after %s, want client_gone at the gateway's timeout %s, before the fault's 2 s", p.Method, p.Path, p.Outcome, held, timeout)
		case !known:
			t.Errorf("%s %s (seq %v): not in the gateway's record of the calls it let through", p.Method, p.Path, p.Seq)
		case gone.Sub(at) < timeout-5*time.Millisecond:
			t.Errorf("%s %s: the upstream saw the hang-up %s after the gateway let the call through, before its timeout %s", p.Method, p.Path, gone.Sub(at), timeout)
		}
	}
	if n == 0 {
		t.Error("no call was held by the latency fault: the drill was not exercised")
	}
}
