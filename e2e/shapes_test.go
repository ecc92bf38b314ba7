package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse/rehearsal"
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
// Probes are live traffic; with slow healthy answers they are slow.

// shapeGW is the test gateway.
type shapeGW struct {
	URL string
	br  breaker

	mu     sync.Mutex
	trans  []shapeTrans
	probes []shapeProbe // calls let through while not closed
	srv    *http.Server
}

type shapeProbe struct {
	At, End time.Time
	OK      bool
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
// go through now; done reports how it ended.
type breaker interface {
	allow(now time.Time) bool
	done(now time.Time, ok bool)
	// state reports the state now (for the log).
	state() string
}

// halfOpenN is gobreaker's shape: Threshold consecutive failures open it;
// after Cooldown the next call finds it half-open, which lets MaxRequests
// calls through and closes after MaxRequests successes in a row.
type halfOpenN struct {
	Threshold, MaxRequests int
	Cooldown               time.Duration

	st        string
	fails     int
	openedAt  time.Time
	admitted  int
	successes int
}

func (b *halfOpenN) state() string { return b.st }

func (b *halfOpenN) allow(now time.Time) bool {
	switch b.st {
	case "open":
		if now.Sub(b.openedAt) < b.Cooldown {
			return false
		}
		b.st, b.admitted, b.successes = "half_open", 0, 0
		fallthrough
	case "half_open":
		if b.admitted >= b.MaxRequests {
			return false
		}
		b.admitted++
	}
	return true
}

func (b *halfOpenN) done(now time.Time, ok bool) {
	switch b.st {
	case "closed", "":
		if ok {
			b.fails = 0
			return
		}
		if b.fails++; b.fails >= b.Threshold {
			b.st, b.openedAt = "open", now
		}
	case "half_open":
		if !ok {
			b.st, b.openedAt = "open", now
			return
		}
		if b.successes++; b.successes >= b.MaxRequests {
			b.st, b.fails = "closed", 0
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
	fails     int
	openedAt  time.Time
	recovery  time.Time
	allowance float64
}

func (b *ramp) state() string { return b.st }

func (b *ramp) allow(now time.Time) bool {
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
			b.st, b.fails = "closed", 0
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

func (b *ramp) done(now time.Time, ok bool) {
	switch b.st {
	case "closed", "":
		if ok {
			b.fails = 0
			return
		}
		if b.fails++; b.fails >= b.Threshold {
			b.st, b.openedAt = "open", now
		}
	case "half_open":
		if !ok {
			b.st, b.openedAt = "open", now
		}
	}
}

// startShapeGW starts the test gateway in front of upstream (host:port).
func startShapeGW(t *testing.T, br breaker, upstream string) *shapeGW {
	t.Helper()
	g := &shapeGW{br: br}
	target := &url.URL{Scheme: "http", Host: upstream}
	rp := httputil.NewSingleHostReverseProxy(target)
	// A new connection per call: no transport re-sends to muddy the
	// counts; the harness's own re-send handling is tested elsewhere.
	rp.Transport = &http.Transport{DisableKeepAlives: true, ResponseHeaderTimeout: 2 * time.Second}
	fail := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Breaker-State", "open")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"code":"dependency_unavailable","dependency":"app"}}`)
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		g.finish(resp.StatusCode < 500)
		return nil
	}
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		g.finish(false)
		w.WriteHeader(http.StatusBadGateway)
	}
	g.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gw-ready" {
			w.WriteHeader(http.StatusOK)
			return
		}
		g.mu.Lock()
		now := time.Now()
		ok := g.br.allow(now)
		g.note()
		probe := -1
		if st := g.br.state(); ok && st != "closed" && st != "" {
			g.probes = append(g.probes, shapeProbe{At: now})
			probe = len(g.probes) - 1
		}
		g.mu.Unlock()
		if !ok {
			fail(w)
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		rp.ServeHTTP(sw, r)
		if probe >= 0 {
			g.mu.Lock()
			g.probes[probe].End, g.probes[probe].OK = time.Now(), sw.status < 500
			g.mu.Unlock()
		}
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

func (g *shapeGW) finish(ok bool) {
	g.mu.Lock()
	g.br.done(time.Now(), ok)
	g.note()
	g.mu.Unlock()
}

// note logs a state change; g.mu is held.
func (g *shapeGW) note() {
	st := g.br.state()
	if st == "" {
		st = "closed"
	}
	if n := len(g.trans); n == 0 || g.trans[n-1].To != st {
		g.trans = append(g.trans, shapeTrans{At: time.Now(), To: st})
	}
}

// truth turns the breaker's log into cycles: open at the first change
// away from closed, closed at the next change to closed.
func (g *shapeGW) truth(wallStart time.Time, from float64) []truthCycle {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []truthCycle
	open := false
	for _, tr := range g.trans {
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

// shapeDrill rehearses a 503 storm through the test gateway.
func shapeDrill(t *testing.T, br breaker, name, healthy string) (*shapeGW, *rehearsal.Result) {
	t.Helper()
	if testing.Short() {
		t.Skip("timed rehearsal; skipped with -short")
	}
	app := freePort(t)
	g := startShapeGW(t, br, app)
	src := singleScenario("shape", g.URL, g.URL+"/gw-ready", app, singleDrill{
		Name: name, Rate: 20, Duration: 10 * time.Second, Healthy: healthy,
		Faults: "  - {name: app-503, type: status, upstream: app, at: 3s, for: 2s, params: {code: 503}}\n",
	})
	res, _ := runScenario(t, "shape-"+name, src, 10*time.Second, &proc{name: "test gateway"})
	return g, res
}

// checkShape compares the episode with the test gateway's log: cycles,
// open, close (or its stated bounds), and the shape's own figures.
func checkShape(t *testing.T, g *shapeGW, res *rehearsal.Result, wantShape string, wantSuccesses *int) {
	t.Helper()
	ua := res.Analysis.Upstreams["app"]
	if ua == nil || len(ua.Episodes) != 1 {
		t.Fatalf("want one episode on app, analysis has %+v", ua)
	}
	ep := ua.Episodes[0]
	truth := g.truth(res.Analysis.Run.WallStart, ep.StartS)
	c := &comparer{t: t}
	c.note("shape", wantShape, ep.Shape+": "+ep.ShapeEvidence)
	c.note("statement", "—", ep.Statement)
	if ep.Shape != wantShape {
		t.Errorf("shape %q, want %q: %s", ep.Shape, wantShape, ep.ShapeEvidence)
	}
	// The gateway counts failures its own way (consecutive, reset by a
	// success); the calls failed before the open are compared with the
	// upstream's record instead.
	for i := range truth {
		if i < len(ep.Cycles) {
			truth[i].Failed = int(ep.Cycles[i].FailuresBeforeOpen)
		}
	}
	compareCycles(c, ep, truth, wantSuccesses)
	c.log(t.Name())
	if t.Failed() {
		g.mu.Lock()
		for _, tr := range g.trans {
			t.Logf("gateway: %.3f %s", tr.At.Sub(res.Analysis.Run.WallStart).Seconds(), tr.To)
		}
		g.mu.Unlock()
	}
}

// TestShapeHalfOpenSeveralSlow: a half-open that lets 3 untagged calls
// through and closes after 3 successes, with 300 ms healthy answers: the
// three probes are in flight together while requests are turned away, and
// the close is the third success's end.
func TestShapeHalfOpenSeveralSlow(t *testing.T) {
	t.Parallel()
	g, res := shapeDrill(t, &halfOpenN{Threshold: 3, MaxRequests: 3, Cooldown: time.Second}, "half-open-3-slow", "{latency: {fixed: 300ms}}")
	checkShape(t, g, res, "live_probes", ptrInt(3))
}

// TestShapeHalfOpenSeveralQuick: the same breaker with quick answers. The
// three probes come one after the other with nothing turned away between
// them and then traffic flows: from outside that is a single probe's
// success, or three, or a timer. The analysis must say so and give
// bounds, not a wrong exact count.
func TestShapeHalfOpenSeveralQuick(t *testing.T) {
	t.Parallel()
	g, res := shapeDrill(t, &halfOpenN{Threshold: 3, MaxRequests: 3, Cooldown: time.Second}, "half-open-3-quick", "")
	ep := res.Analysis.Upstreams["app"].Episodes[0]
	if ep.SuccessesToClose != nil {
		t.Errorf("successes_to_close = %d: the evidence cannot fix it (quick untagged probes), want null", *ep.SuccessesToClose)
	}
	checkShape(t, g, res, "ambiguous", nil)
}

// TestShapeRamp: Traefik-like ramp recovery: after 1 s open, a share of
// the traffic growing over 2 s is let through, then everything. The
// three passes in a row mid-ramp must not be taken for the close; the
// ramp's start and end are reported and successes_to_close is null.
func TestShapeRamp(t *testing.T) {
	t.Parallel()
	g, res := shapeDrill(t, &ramp{Threshold: 3, Fallback: time.Second, Recovery: 2 * time.Second}, "ramp", "")
	checkShape(t, g, res, "ramp", nil)
	cy := res.Analysis.Upstreams["app"].Episodes[0].Cycles
	if n := len(cy); n > 0 && (cy[n-1].RampStartS == nil || cy[n-1].RampEndS == nil) {
		t.Errorf("ramp start %v end %v: want both", cy[n-1].RampStartS, cy[n-1].RampEndS)
	} else if n > 0 {
		t.Logf("ramp from %.3f s to %.3f s", *cy[n-1].RampStartS, *cy[n-1].RampEndS)
	}
	_ = fmt.Sprint
}
