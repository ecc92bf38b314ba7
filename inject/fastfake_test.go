package inject

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// The fake fast path is checked against the full path it stands in for:
// the same requests to two servers of the same config, one with the fast
// path off (every request through net/http and fakeHandler), must give
// the same bytes on the wire (Date and the stream's "created" second
// aside) and the same journal events (the gateway's port and the end time
// aside) and metrics.

// fakePair starts the same fake upstream twice: full (fast path off) and
// fast.
type fakePair struct {
	full, fast       *Server
	fullMem, fastMem *journal.Memory
}

func startFakePair(t *testing.T, cfg UpstreamConfig, faults []FaultSpec) *fakePair {
	t.Helper()
	var p fakePair
	fakeFastPathOff = true
	p.full, p.fullMem = startServer(t, []UpstreamConfig{cfg}, faults)
	fakeFastPathOff = false
	p.fast, p.fastMem = startServer(t, []UpstreamConfig{cfg}, faults)
	if p.fast.byName[cfg.Name].fake == nil {
		t.Fatalf("config %+v: the fast path does not take it", cfg)
	}
	if p.full.byName[cfg.Name].fake != nil {
		t.Fatal("fakeFastPathOff: the fast path is on")
	}
	return &p
}

// rawConn is a gateway's connection that keeps every byte it receives.
type rawConn struct {
	t   *testing.T
	c   net.Conn
	br  *bufio.Reader
	got bytes.Buffer
}

func dialGateway(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, _ := dialRaw(t, addr)
	rc := &rawConn{t: t, c: c}
	rc.br = bufio.NewReader(io.TeeReader(c, &rc.got))
	return rc
}

// do sends req and reads its whole response; it returns the response's
// bytes as received.
func (rc *rawConn) do(req string) string {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, req); err != nil {
		rc.t.Fatal(err)
	}
	return rc.read(strings.HasPrefix(req, "HEAD "))
}

func (rc *rawConn) read(head bool) string {
	rc.t.Helper()
	rc.got.Reset()
	method := http.MethodGet
	if head {
		method = http.MethodHead
	}
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: method})
	if err != nil {
		rc.t.Fatalf("reading a response: %v (got %q)", err, rc.got.String())
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		rc.t.Fatalf("reading a body: %v (got %q)", err, rc.got.String())
	}
	resp.Body.Close()
	// What the reader buffered beyond this response is not part of it.
	return rc.got.String()[:rc.got.Len()-rc.br.Buffered()]
}

// closed reports whether the server closed the connection (EOF or a reset
// within a second, nothing else received).
func (rc *rawConn) closed() bool {
	rc.c.SetReadDeadline(time.Now().Add(time.Second))
	n, err := rc.br.Read(make([]byte, 1))
	return n == 0 && err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

var (
	dateLine = regexp.MustCompile(`\r\nDate: [^\r]*\r\n`)
	created  = regexp.MustCompile(`"created":\d+`)
)

// normalise blanks what two answers made at different moments may differ
// in: the Date field and the second a completion was created.
func normalise(wire string) string {
	return created.ReplaceAllString(dateLine.ReplaceAllString(wire, "\r\nDate: *\r\n"), `"created":*`)
}

// waitEvents waits until mem has n upstream.request events.
func waitEvents(t *testing.T, mem *journal.Memory, n int) []*journal.UpstreamRequest {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := upstreamEvents(mem)
		if len(evs) >= n || time.Now().After(deadline) {
			if len(evs) != n {
				t.Fatalf("%d upstream.request events, want %d", len(evs), n)
			}
			return evs
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sameEvents compares the events of both servers: every field but the
// gateway's port and the end time, which must come after the arrival and
// within slack of the other path's duration.
func sameEvents(t *testing.T, p *fakePair, n int, slack time.Duration) []*journal.UpstreamRequest {
	t.Helper()
	full, fast := waitEvents(t, p.fullMem, n), waitEvents(t, p.fastMem, n)
	fullT, fastT := eventTimes(p.fullMem), eventTimes(p.fastMem)
	for i := range full {
		a, b := *full[i], *fast[i]
		if !strings.HasPrefix(a.Remote, "127.0.0.1:") || !strings.HasPrefix(b.Remote, "127.0.0.1:") {
			t.Errorf("event %d: remote %q / %q", i, a.Remote, b.Remote)
		}
		da, db := a.Done-fullT[i], b.Done-fastT[i]
		if da < 0 || db < 0 || db-da > slack || da-db > slack {
			t.Errorf("event %d: took %v on the full path, %v on the fast path", i, da, db)
		}
		// The head's release, as the fast path does it, within slack of
		// the full path's, both within [arrival, done]; none when no
		// status was sent.
		for _, x := range []struct {
			path   string
			e      journal.UpstreamRequest
			arrive time.Duration
		}{{"full", a, fullT[i]}, {"fast", b, fastT[i]}} {
			switch {
			case x.e.Status != 0 && (x.e.HeadersAt < x.arrive || x.e.HeadersAt > x.e.Done):
				t.Errorf("event %d, %s path: head released at %v, outside [arrival %v, done %v]", i, x.path, x.e.HeadersAt, x.arrive, x.e.Done)
			case x.e.Status == 0 && x.e.HeadersAt != 0:
				t.Errorf("event %d, %s path: no status but a head released at %v", i, x.path, x.e.HeadersAt)
			}
		}
		if ha, hb := a.HeadersAt-fullT[i], b.HeadersAt-fastT[i]; hb-ha > slack || ha-hb > slack {
			t.Errorf("event %d: head released %v after arrival on the full path, %v on the fast path", i, ha, hb)
		}
		a.Remote, b.Remote, a.Done, b.Done, a.HeadersAt, b.HeadersAt = "", "", 0, 0, 0, 0
		if !reflect.DeepEqual(a, b) {
			t.Errorf("event %d differs:\nfull %+v\nfast %+v", i, a, b)
		}
	}
	for _, o := range []journal.Outcome{journal.OutcomeUpstreamComplete, journal.OutcomeUpstreamGone, journal.OutcomeUpstreamCut} {
		name := p.full.Upstreams()[0]
		a, b := requestsCount(p.full, name, o), requestsCount(p.fast, name, o)
		if a != b {
			t.Errorf("requests{outcome=%s}: %v on the full path, %v on the fast path", o, a, b)
		}
	}
	return fast
}

// requestsCount reads the requests counter of an upstream and outcome.
func requestsCount(s *Server, upstream string, o journal.Outcome) float64 {
	var m dto.Metric
	s.m.requests.WithLabelValues(upstream, string(o)).Write(&m)
	return m.GetCounter().GetValue()
}

// eventTimes are the arrival times of the upstream.request events.
func eventTimes(mem *journal.Memory) []time.Duration {
	var out []time.Duration
	for _, e := range mem.Events() {
		if e.Payload.Kind() == journal.KindUpstreamRequest {
			out = append(out, e.T)
		}
	}
	return out
}

// handedOver counts the connections the fast path handed to the full path
// that are still open.
func handedOver(s *Server) int {
	u := s.upstreams[0]
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for c := range u.conns {
		if _, ok := c.(*handedConn); ok {
			n++
		}
	}
	return n
}

// script sends the same requests on one connection to both servers and
// compares each answer.
func (p *fakePair) script(t *testing.T, reqs ...string) (fullRC, fastRC *rawConn) {
	t.Helper()
	fullRC, fastRC = dialGateway(t, p.full.Addr(p.full.Upstreams()[0])), dialGateway(t, p.fast.Addr(p.fast.Upstreams()[0]))
	for i, req := range reqs {
		a, b := fullRC.do(req), fastRC.do(req)
		if normalise(a) != normalise(b) {
			t.Errorf("request %d %q:\nfull path %q\nfast path %q", i, req, a, b)
		}
		if !dateLine.MatchString(b) {
			t.Errorf("request %d: no Date field: %q", i, b)
		}
	}
	return fullRC, fastRC
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

func post(path, body string, fields ...string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: up\r\nContent-Type: application/json\r\n" + strings.Join(fields, "") +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// JSON answers, chat completions, streams (asked for by body and by
// Accept), HEAD, health checks and probes, a kept-alive sequence ending in
// Connection: close: the same bytes and events on both paths, and the
// fast path kept every one of them.
func TestFakeFastPathSameAsFull(t *testing.T) {
	cfg := UpstreamConfig{Name: "llm", Healthy: &HealthyConfig{
		BodyBytes: 700,
		SSE:       &SSEConfig{Events: 3, Interval: rehearse.Duration(15 * time.Millisecond)},
		Headers:   map[string]string{"X-Upstream": "llm", "content-type": "text/plain", "A-First": "a", "Zz-Last": "z"},
	}}
	p := startFakePair(t, cfg, nil)
	reqs := []string{
		"GET /v1/models?x=1 HTTP/1.1\r\nHost: up\r\nUser-Agent: gw/1\r\nX-Rehearse-Seq: 17\r\nIdempotency-Key: k-1\r\nX-Request-Timeout-Ms: 1500\r\n\r\n",
		post("/v1/chat/completions", chatBody, "X-Rehearse-Seq: 18\r\n"),
		post("/v1/chat/completions", `{"model":"m","stream":true}`, "User-Agent: breaker-probe/1\r\n"),
		"GET /v1/chat/completions HTTP/1.1\r\nHost: up\r\nAccept: text/event-stream\r\nX-Breaker-Probe: 1\r\n\r\n",
		"HEAD /v1/models HTTP/1.1\r\nHost: up\r\n\r\n",
		"GET /healthz HTTP/1.1\r\nHost: up\r\n\r\n",
		"GET /%7Eescaped/path HTTP/1.1\r\nHost: up\r\nConnection: keep-alive\r\n\r\n",
		post("/v1/embeddings", `{"input":"x","stream":false}`, "Connection: close\r\n"),
	}
	fullRC, fastRC := p.script(t, reqs...)
	if !fullRC.closed() || !fastRC.closed() {
		t.Error("Connection: close: the connection stays open")
	}
	evs := sameEvents(t, p, len(reqs), 100*time.Millisecond)
	if handedOver(p.fast) != 0 {
		t.Error("the fast path handed a connection over")
	}
	// What the comparison rests on: the fields are filled.
	if e := evs[0]; e.Seq == nil || *e.Seq != 17 || e.UserAgent != "gw/1" || e.IdempotencyKey == "" || e.Budget != 1500*time.Millisecond || e.Bytes != 700 || e.Status != 200 {
		t.Errorf("JSON event %+v", e)
	}
	if e := evs[1]; e.PromptTokens != 200 || e.CompletionTokens != 50 {
		t.Errorf("chat event %+v: no usage", e)
	}
	if e := evs[2]; e.ProbeTag != "breaker-probe/1" || e.Outcome != journal.OutcomeUpstreamComplete || e.Done-eventTimes(p.fastMem)[2] < 45*time.Millisecond {
		t.Errorf("stream event %+v: not a probe, or not three pauses long", e)
	}
	if e := evs[5]; !e.HealthCheck {
		t.Errorf("health check event %+v", e)
	}
	// A small answer leaves with the end of the exchange; a stream's head
	// goes before its first pause (two more follow it), on both paths.
	for path, mem := range map[string]*journal.Memory{"full": p.fullMem, "fast": p.fastMem} {
		evs := upstreamEvents(mem)
		if e := evs[0]; e.HeadersAt != e.Done {
			t.Errorf("%s path: a 700-byte answer's head released at %v, want with the answer at %v", path, e.HeadersAt, e.Done)
		}
		if e := evs[2]; e.Done-e.HeadersAt < 25*time.Millisecond {
			t.Errorf("%s path: a stream's head released at %v, %v before its end: want before its pauses (15 ms each)", path, e.HeadersAt, e.Done-e.HeadersAt)
		}
	}
}

// A chunked JSON answer with pauses between chunks, a configured status
// and Retry-After, and a status net/http has no text for.
func TestFakeFastPathChunkedAndStatus(t *testing.T) {
	for _, h := range []*HealthyConfig{
		{BodyBytes: 300, Chunked: true, ChunkBytes: 100, ChunkInterval: rehearse.Duration(5 * time.Millisecond)},
		{BodyBytes: 300, Chunked: true, ChunkBytes: 64},
		{BodyBytes: 5000}, // past net/http's buffer: its head may leave before the handler returns
		{Status: 429, Headers: map[string]string{"Retry-After": "7"}},
		{Status: 299},
	} {
		p := startFakePair(t, UpstreamConfig{Name: "api", Healthy: h}, nil)
		reqs := []string{
			"GET /a HTTP/1.1\r\nHost: up\r\n\r\n",
			post("/v1/chat/completions", chatBody),
			"HEAD /a HTTP/1.1\r\nHost: up\r\n\r\n", // chunked: handed over
			"GET /b HTTP/1.1\r\nHost: up\r\n\r\n",
		}
		p.script(t, reqs...)
		evs := sameEvents(t, p, len(reqs), 100*time.Millisecond)
		if h.Status == 429 && evs[0].RetryAfter != 7*time.Second {
			t.Errorf("Retry-After: %v", evs[0].RetryAfter)
		}
		if want := 0; !h.Chunked && handedOver(p.fast) != want {
			t.Errorf("%+v: %d connections handed over", h, handedOver(p.fast))
		}
		if h.Chunked && handedOver(p.fast) != 1 {
			t.Errorf("chunked HEAD: %d connections handed over, want 1", handedOver(p.fast))
		}
	}
}

// A configured status without a body, or fields that change net/http's
// framing, keep the upstream on the full path.
func TestFakeFastPathNotTaken(t *testing.T) {
	for _, h := range []HealthyConfig{
		{Status: 204},
		{Status: 304},
		{Status: 103},
		{Headers: map[string]string{"Connection": "close"}},
		{Headers: map[string]string{"content-length": "3"}},
		{Headers: map[string]string{"Date": "then"}},
		{Headers: map[string]string{"Transfer-Encoding": "chunked"}},
		{Headers: map[string]string{"Trailer": "X"}},
	} {
		if ff := newFastFake(&fakeHandler{cfg: h}); ff != nil {
			t.Errorf("%+v: the fast path takes it", h)
		}
	}
}

// A gateway hanging up mid-stream, and one giving up during the healthy
// latency: both paths notice it during the wait, end the exchange there
// as client_gone with the bytes written so far, and write nothing more.
func TestFakeFastPathClientGone(t *testing.T) {
	cfg := UpstreamConfig{Name: "llm", Healthy: &HealthyConfig{
		SSE:     &SSEConfig{Events: 5, Interval: rehearse.Duration(300 * time.Millisecond)},
		Latency: &LatencyConfig{Fixed: rehearse.Duration(0)},
	}}
	p := startFakePair(t, cfg, nil)
	for _, s := range []*Server{p.full, p.fast} {
		rc := dialGateway(t, s.Addr("llm"))
		io.WriteString(rc.c, post("/v1/chat/completions", `{"stream":true}`))
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The first two events, then hang up during the pause.
		sc := bufio.NewScanner(resp.Body)
		for events := 0; events < 2 && sc.Scan(); {
			if strings.HasPrefix(sc.Text(), "data: ") {
				events++
			}
		}
		rc.c.Close()
	}
	evs := sameEvents(t, p, 1, 150*time.Millisecond)
	if e := evs[0]; e.Outcome != journal.OutcomeUpstreamGone || e.Bytes == 0 || e.Done-eventTimes(p.fastMem)[0] > 900*time.Millisecond {
		t.Errorf("stream cut by the gateway: %+v", e)
	}

	slow := UpstreamConfig{Name: "slow", Healthy: &HealthyConfig{Latency: &LatencyConfig{Fixed: rehearse.Duration(2 * time.Second)}}}
	q := startFakePair(t, slow, nil)
	for _, s := range []*Server{q.full, q.fast} {
		rc := dialGateway(t, s.Addr("slow"))
		io.WriteString(rc.c, "GET /x HTTP/1.1\r\nHost: up\r\n\r\n")
		time.Sleep(100 * time.Millisecond)
		rc.c.Close()
	}
	evs = sameEvents(t, q, 1, 300*time.Millisecond)
	if e := evs[0]; e.Outcome != journal.OutcomeUpstreamGone || e.Status != 0 || e.Done-eventTimes(q.fastMem)[0] > time.Second {
		t.Errorf("gave up during the latency: %+v", e)
	}
}

// Bytes of a next request arriving during a wait stop the watch (as
// net/http's background read stops): the answer still comes whole, and
// the pipelined request is answered after it.
func TestFakeFastPathPipelined(t *testing.T) {
	cfg := UpstreamConfig{Name: "api", Healthy: &HealthyConfig{Latency: &LatencyConfig{Fixed: rehearse.Duration(30 * time.Millisecond)}}}
	p := startFakePair(t, cfg, nil)
	two := "GET /one HTTP/1.1\r\nHost: up\r\n\r\nGET /two HTTP/1.1\r\nHost: up\r\nConnection: close\r\n\r\n"
	var wires [2]string
	for i, s := range []*Server{p.full, p.fast} {
		rc := dialGateway(t, s.Addr("api"))
		io.WriteString(rc.c, two)
		wires[i] = rc.read(false) + rc.read(false)
		if !rc.closed() {
			t.Error("not closed after Connection: close")
		}
	}
	if normalise(wires[0]) != normalise(wires[1]) {
		t.Errorf("full path %q\nfast path %q", wires[0], wires[1])
	}
	sameEvents(t, p, 2, 100*time.Millisecond)
}

// A fault whose window opens between two requests on one kept-alive
// connection: the next request is handed over with its connection and
// faulted as on the full path; after the window the connection stays on
// the full path and answers as before. A stream in progress when the
// window opens is not touched, on either path.
func TestFakeFastPathFaultStartsBetweenRequests(t *testing.T) {
	cfg := UpstreamConfig{Name: "api", Healthy: &HealthyConfig{SSE: &SSEConfig{Events: 3, Interval: rehearse.Duration(100 * time.Millisecond)}}}
	p := startFakePair(t, cfg, nil)
	get := "GET /a HTTP/1.1\r\nHost: up\r\n\r\n"
	fullRC, fastRC := p.script(t, get)
	// A stream, and the fault's window opening during it.
	stream := "GET /s HTTP/1.1\r\nHost: up\r\nAccept: text/event-stream\r\n\r\n"
	io.WriteString(fullRC.c, stream)
	io.WriteString(fastRC.c, stream)
	time.Sleep(50 * time.Millisecond)
	for _, s := range []*Server{p.full, p.fast} {
		if _, err := s.AddFault(FaultSpec{Name: "down", Type: "status", Upstream: "api", Params: &StatusParams{Code: 503}}); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := fullRC.read(false), fastRC.read(false); normalise(a) != normalise(b) || !strings.Contains(b, "[DONE]") {
		t.Errorf("stream across the window's start:\nfull %q\nfast %q", a, b)
	}
	if handedOver(p.fast) != 0 {
		t.Error("handed over before a request a fault could target")
	}
	var during [2]string
	for i, rc := range []*rawConn{fullRC, fastRC} {
		during[i] = rc.do(get)
	}
	if normalise(during[0]) != normalise(during[1]) || !strings.HasPrefix(during[1], "HTTP/1.1 503") {
		t.Errorf("during the window:\nfull %q\nfast %q", during[0], during[1])
	}
	if handedOver(p.fast) != 1 {
		t.Errorf("%d connections handed over, want 1", handedOver(p.fast))
	}
	p.full.RemoveFault("down")
	p.fast.RemoveFault("down")
	var after [2]string
	for i, rc := range []*rawConn{fullRC, fastRC} {
		after[i] = rc.do(get)
	}
	if normalise(after[0]) != normalise(after[1]) || !strings.HasPrefix(after[1], "HTTP/1.1 200") {
		t.Errorf("after the window:\nfull %q\nfast %q", after[0], after[1])
	}
	evs := sameEvents(t, p, 4, 100*time.Millisecond)
	if evs[1].Fault != "" || evs[2].Fault != "down" || evs[3].Fault != "" {
		t.Errorf("faults applied: %q %q %q", evs[1].Fault, evs[2].Fault, evs[3].Fault)
	}
}

// A refuse window (the listener paused) closes the fast path's kept-alive
// connections and a stream in progress, as the full path's; connections
// are refused during it, and a new connection after it is served on the
// fast path again.
func TestFakeFastPathPauseResume(t *testing.T) {
	cfg := UpstreamConfig{Name: "api", Healthy: &HealthyConfig{SSE: &SSEConfig{Events: 5, Interval: rehearse.Duration(200 * time.Millisecond)}}}
	p := startFakePair(t, cfg, nil)
	get := "GET /a HTTP/1.1\r\nHost: up\r\n\r\n"
	idleFull, idleFast := p.script(t, get)
	streamFull, streamFast := p.script(t, get)
	stream := "GET /s HTTP/1.1\r\nHost: up\r\nAccept: text/event-stream\r\n\r\n"
	for _, rc := range []*rawConn{streamFull, streamFast} {
		io.WriteString(rc.c, stream)
		// Through the first event, not only the status line: both paths
		// then have it on the wire before the pause, so both count its
		// bytes (net/http may send the head in a flush of its own, and
		// on a loaded machine the first event's flush can come after
		// the pause has closed the connection: 0 bytes against 206).
		rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		data := false
		for {
			l, err := rc.br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(l, "data:") {
				data = true
			} else if data && strings.TrimSpace(l) == "" {
				break
			}
		}
	}
	for _, s := range []*Server{p.full, p.fast} {
		if _, err := s.AddFault(FaultSpec{Name: "down", Type: "refuse", Upstream: "api", For: rehearse.Duration(400 * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	for _, rc := range []*rawConn{idleFull, idleFast} {
		if !rc.closed() {
			t.Error("an idle connection outlived the pause")
		}
	}
	for _, rc := range []*rawConn{streamFull, streamFast} {
		rc.c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.Copy(io.Discard, rc.br); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Error("a stream outlived the pause") // else EOF (nil) or a reset
		}
	}
	for _, s := range []*Server{p.full, p.fast} {
		if c, err := net.DialTimeout("tcp", s.Addr("api"), time.Second); err == nil {
			c.Close()
			t.Error("a connection was accepted during the pause")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, s := range []*Server{p.full, p.fast} {
		for {
			c, err := net.Dial("tcp", s.Addr("api"))
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("not listening again after the pause")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	p.script(t, get, get)
	evs := sameEvents(t, p, 5, 150*time.Millisecond)
	if e := evs[2]; e.Outcome != journal.OutcomeUpstreamGone {
		t.Errorf("stream cut by the pause: %+v", e)
	}
	if handedOver(p.fast) != 0 {
		t.Error("a connection was handed over")
	}
}

// The proxy fast path's events carry what the full path's do (the
// idempotency key's fingerprint and the announced budget among them).
func TestProxyFastPathEventsSameAsFull(t *testing.T) {
	real, _ := startServer(t, []UpstreamConfig{{Name: "real", Healthy: &HealthyConfig{BodyBytes: 100}}}, nil)
	cfg := UpstreamConfig{Name: "api", Mode: ModeProxy, Target: real.URL("real")}
	var p fakePair
	fastPathOff = true
	p.full, p.fullMem = startServer(t, []UpstreamConfig{cfg}, nil)
	fastPathOff = false
	p.fast, p.fastMem = startServer(t, []UpstreamConfig{cfg}, nil)
	p.script(t,
		"GET /a HTTP/1.1\r\nHost: up\r\nIdempotency-Key: k-1\r\nX-Request-Timeout-Ms: 250\r\nX-Rehearse-Seq: 3\r\nUser-Agent: probe/2\r\n\r\n",
		post("/v1/chat/completions", chatBody, "Idempotency-Key: k-2\r\n"))
	evs := sameEvents(t, &p, 2, 100*time.Millisecond)
	if evs[0].IdempotencyKey == "" || evs[0].Budget != 250*time.Millisecond || evs[0].ProbeTag == "" {
		t.Errorf("event %+v", evs[0])
	}
}

// A gateway that shuts only its sending side after a request: net/http
// notices the end of its input during the wait, ends the exchange as
// client_gone, still writes what ends its response (the last chunk of a
// stream, an empty 200 when nothing was written), serves what the gateway
// had sent before, and closes. The fast path does the same, byte for byte.
func TestFakeFastPathHalfClose(t *testing.T) {
	stream := UpstreamConfig{Name: "llm", Healthy: &HealthyConfig{SSE: &SSEConfig{Events: 3, Interval: rehearse.Duration(100 * time.Millisecond)}}}
	slow := UpstreamConfig{Name: "llm", Healthy: &HealthyConfig{Latency: &LatencyConfig{Fixed: rehearse.Duration(500 * time.Millisecond)}}}
	for _, c := range []struct {
		cfg  UpstreamConfig
		reqs string
		n    int // events
	}{
		{stream, "GET /s HTTP/1.1\r\nHost: up\r\nAccept: text/event-stream\r\n\r\n", 1},
		{slow, "GET /j HTTP/1.1\r\nHost: up\r\n\r\n", 1},
		{slow, "GET /j HTTP/1.1\r\nHost: up\r\n\r\nGET /k HTTP/1.1\r\nHost: up\r\nConnection: close\r\n\r\n", 2},
	} {
		p := startFakePair(t, c.cfg, nil)
		var wires [2]string
		for i, s := range []*Server{p.full, p.fast} {
			rc := dialGateway(t, s.Addr("llm"))
			io.WriteString(rc.c, c.reqs)
			rc.c.(*net.TCPConn).CloseWrite()
			b, err := io.ReadAll(rc.c)
			if err != nil {
				t.Fatal(err)
			}
			wires[i] = string(b)
		}
		if normalise(wires[0]) != normalise(wires[1]) || !strings.HasPrefix(wires[1], "HTTP/1.1 200 OK") {
			t.Errorf("%q, half closed:\nfull path %q\nfast path %q", c.reqs, wires[0], wires[1])
		}
		for _, e := range sameEvents(t, p, c.n, 100*time.Millisecond) {
			if e.Outcome != journal.OutcomeUpstreamGone {
				t.Errorf("%q: %+v", c.reqs, e)
			}
		}
	}
}

// FuzzFakeFastPath sends any bytes, then a request that closes the
// connection, to a fake upstream with the fast path and to one without,
// and compares what each sends back: what the fast path answers itself
// must be what net/http would, and what it does not take (malformed,
// unusual or partial input) is net/http's answer anyway.
func FuzzFakeFastPath(f *testing.F) {
	for _, s := range []string{
		"GET /a?b=c HTTP/1.1\r\nHost: h\r\nUser-Agent: u\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 15\r\n\r\n{\"stream\":true}",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /s HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n",
		"HEAD /s HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n",
		"GET / HTTP/1.0\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET /%zz HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"garbage\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	cfg := UpstreamConfig{Name: "api", Healthy: &HealthyConfig{
		BodyBytes: 300,
		SSE:       &SSEConfig{Events: 2, Interval: rehearse.Duration(2 * time.Millisecond)},
		Headers:   map[string]string{"X-A": "a"},
	}}
	fakeFastPathOff = true
	full, _ := startServer(f, []UpstreamConfig{cfg}, nil)
	fakeFastPathOff = false
	fast, _ := startServer(f, []UpstreamConfig{cfg}, nil)
	const last = "GET /last HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
	f.Fuzz(func(t *testing.T, in []byte) {
		var wires [2][]byte
		done := make(chan struct{}, 2)
		for i, s := range []*Server{full, fast} {
			go func() {
				defer func() { done <- struct{}{} }()
				c, err := net.Dial("tcp", s.Addr("api"))
				if err != nil {
					return
				}
				defer c.Close()
				// Input that leaves a request unfinished waits for the
				// deadline on both paths.
				c.SetDeadline(time.Now().Add(2 * time.Second))
				c.Write(append(in[:len(in):len(in)], last...))
				wires[i], _ = io.ReadAll(c)
			}()
		}
		<-done
		<-done
		if a, b := normalise(string(wires[0])), normalise(string(wires[1])); a != b {
			t.Fatalf("%q:\nfull path %q\nfast path %q", in, a, b)
		}
	})
}

// A gateway that sends its next request as soon as an answer arrives
// (on a new connection, as a breaker's probes may) never finds the
// previous exchange still in flight: the fast paths (fake, and proxy in
// front of a fake) record an exchange before the answer's last bytes, as
// the full path does.
func TestFastPathsNothingInFlightAfterTheAnswer(t *testing.T) {
	healthy := &HealthyConfig{SSE: &SSEConfig{Events: 1, Interval: rehearse.Duration(time.Millisecond)}}
	t.Run("fake", func(t *testing.T) {
		s, mem := startServer(t, []UpstreamConfig{{Name: "api", Healthy: healthy}}, nil)
		if s.byName["api"].fake == nil {
			t.Fatal("the fast path does not take it")
		}
		nothingInFlightAfter(t, s, mem)
	})
	t.Run("proxy", func(t *testing.T) {
		real, _ := startServer(t, []UpstreamConfig{{Name: "real", Healthy: healthy}}, nil)
		s, mem := startServer(t, []UpstreamConfig{{Name: "api", Mode: ModeProxy, Target: real.URL("real")}}, nil)
		if s.byName["api"].fast == nil {
			t.Fatal("the fast path does not take it")
		}
		nothingInFlightAfter(t, s, mem)
	})
}

func nothingInFlightAfter(t *testing.T, s *Server, mem *journal.Memory) {
	const n = 200
	for i := range n {
		rc := dialGateway(t, s.Addr("api"))
		req := "GET /a HTTP/1.1\r\nHost: up\r\n\r\n"
		if i%2 == 1 {
			req = "GET /s HTTP/1.1\r\nHost: up\r\nAccept: text/event-stream\r\n\r\n"
		}
		rc.do(req)
		rc.c.Close()
	}
	evs := waitEvents(t, mem, n)
	at := eventTimes(mem)
	for i, e := range evs {
		if e.InFlight != 1 {
			t.Fatalf("request %d found %d in flight", i, e.InFlight)
		}
		if i > 0 && evs[i-1].Done > at[i] {
			t.Fatalf("request %d arrived at %v, before the previous one was done (%v)", i, at[i], evs[i-1].Done)
		}
	}
}
