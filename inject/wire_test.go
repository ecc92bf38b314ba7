package inject

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

func TestHealthyFake(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "search", Healthy: &HealthyConfig{BodyBytes: 1000, Headers: map[string]string{"X-Up": "yes"}}}}, nil)
	resp, body, err := get(t, newClient(5*time.Second), s.URL("search")+"/tools/search?q=1", map[string]string{"X-Rehearse-Seq": "17", "User-Agent": "rehearse-gateway-probe/1"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || len(body) != 1000 || resp.Header.Get("X-Up") != "yes" {
		t.Fatalf("status %d, %d bytes, X-Up %q", resp.StatusCode, len(body), resp.Header.Get("X-Up"))
	}
	s.Close()
	evs := upstreamEvents(mem)
	if len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
	ev := evs[0]
	if ev.Seq == nil || *ev.Seq != 17 || ev.ProbeTag != "rehearse-gateway-probe/1" || ev.Path != "/tools/search" ||
		ev.Status != 200 || ev.Bytes != 1000 || ev.Outcome != journal.OutcomeUpstreamComplete || ev.InFlight != 1 || ev.Fault != "" {
		t.Fatalf("event %+v", ev)
	}
}

func TestStatusFault(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "search"}}, []FaultSpec{{
		Name: "boom", Type: "status", Upstream: "search",
		Params: &StatusParams{Code: 503, Body: "down", Headers: map[string]string{"X-Injected": "1"}},
	}})
	resp, body, err := get(t, newClient(5*time.Second), s.URL("search")+"/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || string(body) != "down" || resp.Header.Get("X-Injected") != "1" {
		t.Fatalf("got %d %q %v", resp.StatusCode, body, resp.Header)
	}
	s.Close()
	ev := upstreamEvents(mem)[0]
	if ev.Fault != "boom" || ev.FaultType != "status" || ev.Status != 503 || ev.Outcome != journal.OutcomeUpstreamComplete {
		t.Fatalf("event %+v", ev)
	}
	starts, ends := mem.OfKind(journal.KindFaultStart), mem.OfKind(journal.KindFaultEnd)
	if len(starts) != 1 || len(ends) != 1 || ends[0].(*journal.FaultEnd).Applied != 1 {
		t.Fatalf("fault events %v %v", starts, ends)
	}
	if fs := starts[0].(*journal.FaultStart); string(fs.Params) != `{"code":503,"body":"down","headers":{"X-Injected":"1"}}` || fs.Probability != 1 {
		t.Fatalf("fault.start %+v params %s", fs, fs.Params)
	}
}

func TestRetryAfterExact(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "a"}, {Name: "b"}, {Name: "c"}}, []FaultSpec{
		{Type: "retry_after", Upstream: "a", Params: &RetryAfterParams{After: rehearse.Duration(120 * time.Second)}},
		{Type: "retry_after", Upstream: "b", Params: &RetryAfterParams{After: rehearse.Duration(90 * time.Second), Form: RetryAfterDate}},
		{Type: "retry_after", Upstream: "c", Params: &RetryAfterParams{Date: "Wed, 21 Oct 2026 07:28:00 GMT", Status: 503}},
	})
	c := newClient(5 * time.Second)
	resp, _, err := get(t, c, s.URL("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "120" {
		t.Fatalf("got %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	before := time.Now()
	resp, _, err = get(t, c, s.URL("b"), nil)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	at, err := http.ParseTime(resp.Header.Get("Retry-After"))
	if err != nil {
		t.Fatalf("Retry-After %q: %v", resp.Header.Get("Retry-After"), err)
	}
	// Rounded up to whole seconds: in [before+90s, after+91s).
	if at.Before(before.Add(90*time.Second).Truncate(time.Second)) || !at.Before(after.Add(91*time.Second)) {
		t.Fatalf("Retry-After %v not 90s after %v", at, before)
	}
	resp, _, err = get(t, c, s.URL("c"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "Wed, 21 Oct 2026 07:28:00 GMT" {
		t.Fatalf("got %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	s.Close()
	for _, ev := range upstreamEvents(mem) {
		switch ev.Upstream {
		case "a":
			if ev.RetryAfter != 120*time.Second {
				t.Errorf("a: recorded Retry-After %v", ev.RetryAfter)
			}
		case "b":
			if ev.RetryAfter < 89*time.Second || ev.RetryAfter > 91*time.Second {
				t.Errorf("b: recorded Retry-After %v", ev.RetryAfter)
			}
		}
	}
}

func TestResetIsECONNRESET(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "search"}}, []FaultSpec{{Type: "reset", Upstream: "search"}})
	_, _, err := get(t, newClient(5*time.Second), s.URL("search"), nil)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("error %v, want ECONNRESET", err)
	}
	s.Close()
	if ev := upstreamEvents(mem)[0]; ev.Outcome != journal.OutcomeUpstreamReset || ev.Status != 0 || ev.Bytes != 0 {
		t.Fatalf("event %+v", ev)
	}
}

func TestRefuseIsECONNREFUSEDThenReopens(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "search"}}, nil)
	addr := s.Addr("search")
	c := &http.Client{Timeout: 5 * time.Second}
	// A kept-alive connection, to check the fault drops it too.
	if _, _, err := get(t, c, s.URL("search"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddFault(FaultSpec{Name: "down", Type: "refuse", Upstream: "search"}); err != nil {
		t.Fatal(err)
	}
	_, err := net.Dial("tcp", addr)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial error %v, want ECONNREFUSED", err)
	}
	_, _, err = get(t, c, s.URL("search"), nil)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("request error %v, want ECONNREFUSED", err)
	}
	if !s.RemoveFault("down") {
		t.Fatal("fault not found")
	}
	if s.Addr("search") != addr {
		t.Fatalf("address changed: %s → %s", addr, s.Addr("search"))
	}
	if resp, _, err := get(t, c, s.URL("search"), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the window: %v", err)
	}
	s.Close()
	if n := len(mem.OfKind(journal.KindFaultEnd)); n != 1 {
		t.Fatalf("%d fault.end events", n)
	}
}

// cutClient reads a response body and returns how many bytes arrived and
// how the read ended.
func readCut(t *testing.T, url string, readTimeout time.Duration) (int, error) {
	t.Helper()
	c := newClient(0)
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("headers should arrive: %v", err)
	}
	defer resp.Body.Close()
	n := 0
	buf := make([]byte, 256)
	deadline := time.AfterFunc(readTimeout, func() { c.CloseIdleConnections(); resp.Body.Close() })
	defer deadline.Stop()
	for {
		m, err := resp.Body.Read(buf)
		n += m
		if err != nil {
			return n, err
		}
	}
}

func TestStreamCutPercent(t *testing.T) {
	const body, chunk = 10000, 500
	for _, then := range []string{EndRST, EndFIN} {
		t.Run(then, func(t *testing.T) {
			s, mem := startServer(t, []UpstreamConfig{{Name: "llm", Healthy: &HealthyConfig{BodyBytes: body, Chunked: true, ChunkBytes: chunk, ChunkInterval: rehearse.Duration(time.Millisecond)}}},
				[]FaultSpec{{Type: "stream_cut", Upstream: "llm", Params: &StreamCutParams{AfterPercent: 40, Then: then}}})
			n, err := readCut(t, s.URL("llm")+"/v1/chat/completions", 5*time.Second)
			if n < 4000-chunk || n > 4000+chunk {
				t.Fatalf("received %d bytes, want 40%% of %d ± %d", n, body, chunk)
			}
			switch then {
			case EndRST:
				if !errors.Is(err, syscall.ECONNRESET) {
					t.Fatalf("error %v, want ECONNRESET", err)
				}
			case EndFIN:
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("error %v, want unexpected EOF", err)
				}
			}
			s.Close()
			ev := upstreamEvents(mem)[0]
			if ev.Bytes != 4000 {
				t.Fatalf("recorded %d bytes sent, want 4000", ev.Bytes)
			}
			want := map[string]journal.Outcome{EndRST: journal.OutcomeUpstreamReset, EndFIN: journal.OutcomeUpstreamCut}[then]
			if ev.Outcome != want {
				t.Fatalf("outcome %s, want %s", ev.Outcome, want)
			}
		})
	}
}

func TestStreamCutStall(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "llm", Healthy: &HealthyConfig{BodyBytes: 4096}}},
		[]FaultSpec{{Type: "stream_cut", Upstream: "llm", Params: &StreamCutParams{AfterBytes: 1000, Then: EndStall}}})
	conn, err := net.Dial("tcp", s.Addr("llm"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	n, err := io.Copy(io.Discard, resp.Body)
	var ne net.Error
	if n != 1000 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read %d bytes, error %v; want 1000 and a deadline", n, err)
	}
	conn.Close()
	s.Close()
	if ev := upstreamEvents(mem)[0]; ev.Outcome != journal.OutcomeUpstreamStalled || ev.Bytes != 1000 {
		t.Fatalf("event %+v", ev)
	}
}

func TestStreamCutSSEEvents(t *testing.T) {
	s, _ := startServer(t, []UpstreamConfig{{Name: "llm", Healthy: &HealthyConfig{SSE: &SSEConfig{Events: 8, Interval: rehearse.Duration(time.Millisecond)}}}},
		[]FaultSpec{{Type: "stream_cut", Upstream: "llm", Params: &StreamCutParams{AfterEvents: 3}}})
	resp, err := newClient(5*time.Second).Post(s.URL("llm")+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	events := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			events++
		}
	}
	if events != 3 || !errors.Is(sc.Err(), syscall.ECONNRESET) {
		t.Fatalf("%d events, error %v; want 3 and ECONNRESET", events, sc.Err())
	}
}

func TestSSEHealthy(t *testing.T) {
	s, _ := startServer(t, []UpstreamConfig{{Name: "llm", Healthy: &HealthyConfig{SSE: &SSEConfig{Events: 4, Interval: rehearse.Duration(time.Millisecond), Model: "gpt-x"}}}}, nil)
	req, _ := http.NewRequest("POST", s.URL("llm")+"/v1/chat/completions", strings.NewReader(`{"stream": true}`))
	resp, err := newClient(5 * time.Second).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	if strings.Count(out, "data: ") != 7 || !strings.HasSuffix(out, "data: [DONE]\n\n") || !strings.Contains(out, `"model":"gpt-x"`) || !strings.Contains(out, `"finish_reason":"stop"`) ||
		!strings.Contains(out, `"usage":{"prompt_tokens":200,"completion_tokens":50,"total_tokens":250}`) {
		t.Fatalf("stream:\n%s", out)
	}
}

func TestHeadersNever(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "search"}}, []FaultSpec{{Type: "headers_never", Upstream: "search"}})
	// Raw socket: not one byte arrives before the client's deadline.
	conn, err := net.Dial("tcp", s.Addr("search"))
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"))
	conn.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
	buf := make([]byte, 1)
	n, err := conn.Read(buf)
	var ne net.Error
	if n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read %d bytes, error %v; want 0 and a deadline", n, err)
	}
	conn.Close()
	// Through net/http: the client's deadline fires with no response.
	c := newClient(0)
	c.Transport.(*http.Transport).ResponseHeaderTimeout = 200 * time.Millisecond
	start := time.Now()
	_, _, err = get(t, c, s.URL("search"), nil)
	if err == nil || !strings.Contains(err.Error(), "timeout awaiting response headers") || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("error %v after %v", err, time.Since(start))
	}
	s.Close()
	for _, ev := range upstreamEvents(mem) {
		if ev.Outcome != journal.OutcomeUpstreamStalled || ev.Status != 0 {
			t.Fatalf("event %+v", ev)
		}
	}
}

func TestSlowBodyRate(t *testing.T) {
	const body, per, every = 640, 64, 40 * time.Millisecond
	s, _ := startServer(t, []UpstreamConfig{{Name: "search", Healthy: &HealthyConfig{BodyBytes: body}}},
		[]FaultSpec{{Type: "slow_body", Upstream: "search", Params: &SlowBodyParams{Bytes: per, Interval: rehearse.Duration(every)}}})
	c := newClient(0)
	start := time.Now()
	resp, err := c.Get(s.URL("search"))
	if err != nil {
		t.Fatal(err)
	}
	headers := time.Since(start)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil || len(b) != body {
		t.Fatalf("read %d bytes: %v", len(b), err)
	}
	// 10 sends with 9 pauses between them: at least 360ms; the headers
	// come at once.
	if took < 9*every || took > 9*every+2*time.Second {
		t.Fatalf("body took %v, want about %v", took, 9*every)
	}
	if headers > 4*every {
		t.Fatalf("headers took %v", headers)
	}
}

func TestTruncate(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "search", Healthy: &HealthyConfig{BodyBytes: 300}}},
		[]FaultSpec{{Type: "truncate", Upstream: "search", Params: &TruncateParams{MissingBytes: 50}}})
	resp, body, err := get(t, newClient(5*time.Second), s.URL("search"), nil)
	if resp == nil || resp.ContentLength != 350 || len(body) != 300 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("content length %v, %d bytes, error %v", resp, len(body), err)
	}
	s.Close()
	if ev := upstreamEvents(mem)[0]; ev.Outcome != journal.OutcomeUpstreamCut || ev.Bytes != 300 {
		t.Fatalf("event %+v", ev)
	}
}

func TestMalformed(t *testing.T) {
	s, _ := startServer(t, []UpstreamConfig{{Name: "search"}}, []FaultSpec{{Type: "malformed", Upstream: "search"}})
	_, _, err := get(t, newClient(5*time.Second), s.URL("search"), nil)
	if err == nil || !strings.Contains(err.Error(), "malformed HTTP status code") {
		t.Fatalf("error %v", err)
	}
}

func TestAbort(t *testing.T) {
	s, _ := startServer(t, []UpstreamConfig{{Name: "search"}}, []FaultSpec{{Type: "abort", Upstream: "search"}})
	_, _, err := get(t, newClient(5*time.Second), s.URL("search"), nil)
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("error %v, want EOF (or a reset)", err)
	}
}

func TestLatency(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "search"}}, []FaultSpec{{Type: "latency", Upstream: "search",
		Params: &LatencyParams{LatencyConfig{Fixed: rehearse.Duration(150 * time.Millisecond)}}}})
	start := time.Now()
	resp, _, err := get(t, newClient(5*time.Second), s.URL("search"), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("took %v", took)
	}
	s.Close()
	if ev := upstreamEvents(mem)[0]; ev.Done < 150*time.Millisecond {
		t.Fatalf("event %+v", ev)
	}
}

func TestListenerTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s, err := New([]UpstreamConfig{{Name: "ok"}, {Name: "search", Listen: ln.Addr().String()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start(t.Context())
	if !errors.Is(err, rehearse.ErrEnvironment) || !strings.Contains(err.Error(), `upstream "search"`) || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("error %v", err)
	}
	s.Close()
}

func TestRefusePortTakenMeanwhile(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "search"}}, []FaultSpec{{Name: "down", Type: "refuse", Upstream: "search"}})
	addr := s.Addr("search")
	// Someone takes the port during the window.
	thief, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s.RemoveFault("down") // must not block
	thief.Close()
	// The upstream comes back on its address once the port is free.
	deadline := time.Now().Add(5 * time.Second)
	c := newClient(time.Second)
	for {
		resp, _, err := get(t, c, s.URL("search"), nil)
		if err == nil && resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream never came back: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.Close()
	if logs := mem.OfKind(journal.KindLog); len(logs) != 1 {
		t.Fatalf("logs %v", logs)
	}
}

func TestCloseDuringRefuse(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "search"}}, []FaultSpec{{Type: "refuse", Upstream: "search"}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(mem.OfKind(journal.KindFaultEnd)); n != 1 {
		t.Fatalf("%d fault.end", n)
	}
}
