package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

func TestMain(m *testing.M) {
	if fleetChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

// arrival is one request as a test upstream saw it.
type arrival struct {
	At      time.Time
	Method  string
	Path    string
	Probe   bool
	UA      string
	Seq     string
	Run     string
	Auth    string
	Via     string
	Health  bool
	Remote  string
	Headers http.Header
}

// testUpstream is a real loopback HTTP server whose behaviour a test
// switches at run time, recording every arrival.
type testUpstream struct {
	t    testing.TB
	URL  string
	srv  *http.Server
	ln   net.Listener
	mode atomic.Pointer[func(http.ResponseWriter, *http.Request)]

	mu       sync.Mutex
	arrivals []arrival
	health   []arrival
	probeIn  int
	maxProbe int
}

// loadClients keeps calling: one goroutine a base URL, each with its own
// client, calling send and then pausing for pace (client pacing, not
// synchronisation), until stop, which waits for them all.
func loadClients(bases []string, pace time.Duration, send func(c *http.Client, base string)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, base := range bases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 5 * time.Second}
			for {
				select {
				case <-done:
					return
				default:
				}
				send(c, base)
				time.Sleep(pace)
			}
		}()
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// callCounter counts the calls an upstream handler sees per client
// request, by its HeaderSeq: the first call of a request is 1.
type callCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// add counts r's call and returns its number.
func (c *callCounter) add(r *http.Request) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[r.Header.Get(HeaderSeq)]++
	return c.n[r.Header.Get(HeaderSeq)]
}

// calls returns how many calls of request seq were seen.
func (c *callCounter) calls(seq string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[seq]
}

func newUpstream(t testing.TB) *testUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &testUpstream{t: t, ln: ln, URL: "http://" + ln.Addr().String()}
	u.set(ok("{}"))
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve)}
	go func() { _ = u.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = u.srv.Shutdown(ctx)
		u.srv.Close()
	})
	return u
}

func (u *testUpstream) set(f func(http.ResponseWriter, *http.Request)) { u.mode.Store(&f) }

func (u *testUpstream) serve(w http.ResponseWriter, r *http.Request) {
	a := arrival{
		At: time.Now(), Method: r.Method, Path: r.URL.Path,
		Probe: r.Header.Get(HeaderProbe) == ProbeTag && r.UserAgent() == ProbeUserAgent,
		UA:    r.UserAgent(), Seq: r.Header.Get(HeaderSeq), Run: r.Header.Get(HeaderRun),
		Auth: r.Header.Get("Authorization"), Via: r.Header.Get("Via"),
		Health: r.Header.Get(HeaderHealthCheck) != "" || r.URL.Path == "/healthz",
		Remote: r.RemoteAddr, Headers: r.Header.Clone(),
	}
	u.mu.Lock()
	if a.Health {
		u.health = append(u.health, a)
	} else {
		u.arrivals = append(u.arrivals, a)
	}
	if a.Probe {
		u.probeIn++
		u.maxProbe = max(u.maxProbe, u.probeIn)
	}
	u.mu.Unlock()
	if a.Probe {
		defer func() {
			u.mu.Lock()
			u.probeIn--
			u.mu.Unlock()
		}()
	}
	(*u.mode.Load())(w, r)
}

func (u *testUpstream) snapshot() (calls []arrival, maxProbeInFlight int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]arrival(nil), u.arrivals...), u.maxProbe
}

func (u *testUpstream) healthChecks() []arrival {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]arrival(nil), u.health...)
}

// Behaviours.

func ok(body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

func status(code int, hdr ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, "upstream says %d\n", code)
	}
}

// reset answers with a TCP RST: hijack, SO_LINGER 0, close.
func reset(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// hang never answers until the client gives up. It reads the body first:
// net/http notices a closed connection only once the body is consumed.
func hang(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// cutAfter announces size bytes, sends n, then resets the connection.
func cutAfter(size, n int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		w.WriteHeader(200)
		_, _ = w.Write([]byte(strings.Repeat("x", n)))
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		conn, _, err := rc.Hijack()
		if err != nil {
			panic(err)
		}
		_ = conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	}
}

// testGateway starts a gateway on a loopback listener.
func testGateway(t testing.TB, cfg Config, opts ...Option) (*Gateway, string) {
	t.Helper()
	opts = append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	g, err := New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g, "http://" + testutil.Serve(t, g)
}

// fastConfig is a configuration with small numbers, so that end-to-end
// tests run in a few seconds of real time.
func fastConfig(ups map[string]string) Config {
	cfg := Config{Upstreams: map[string]UpstreamConfig{}}
	cfg.Canary.Interval = new(rehearse.Duration(0)) // off
	for name, u := range ups {
		cfg.Upstreams[name] = UpstreamConfig{URL: u, Timeout: rehearse.Duration(3 * time.Second)}
	}
	b := &cfg.Breaker
	b.Window = rehearse.Duration(10 * time.Second)
	b.MinSamples = 4
	b.Cooldown = rehearse.Duration(400 * time.Millisecond)
	b.CooldownMax = rehearse.Duration(800 * time.Millisecond)
	cfg.Retry.BaseDelay = rehearse.Duration(5 * time.Millisecond)
	cfg.Retry.MaxDelay = rehearse.Duration(20 * time.Millisecond)
	return cfg
}

// clientResult is what a test client saw.
type clientResult struct {
	At       time.Time
	Status   int
	State    string // X-Breaker-State
	Code     string
	Body     string
	Err      error
	RetryHdr string
}

func do(t *testing.T, c *http.Client, method, url string, hdr ...string) clientResult {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(`{"q":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res := clientResult{At: time.Now()}
	resp, err := c.Do(req)
	if err != nil {
		res.Err = err
		return res
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	res.Status, res.Body, res.Err = resp.StatusCode, string(b), err
	res.State = resp.Header.Get(HeaderBreakerState)
	res.RetryHdr = resp.Header.Get("Retry-After")
	if i := strings.Index(res.Body, `"code":"`); i >= 0 {
		rest := res.Body[i+8:]
		res.Code = rest[:strings.IndexByte(rest, '"')]
	}
	return res
}

// transitions returns the recorded breaker transitions as "from>to".
func transitions(m *journal.Memory) []string {
	var out []string
	for _, p := range m.OfKind(journal.KindBreakerTransition) {
		bt := p.(*journal.BreakerTransition)
		out = append(out, bt.From+">"+bt.To)
	}
	return out
}
