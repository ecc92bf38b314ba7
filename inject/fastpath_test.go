package inject

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

// rawBackend is a real upstream on a raw TCP listener: for each request
// it reads the head (and a Content-Length body), records the bytes, and
// writes the next canned response as it is. After a response whose entry
// has closeAfter, it closes the connection.
type rawBackend struct {
	t       *testing.T
	addr    string
	mu      sync.Mutex
	got     []string // each request, head and body, as received
	accepts int
	resps   []rawResp
}

type rawResp struct {
	bytes      string
	closeAfter bool
	silent     bool // read the request and close without answering
}

func newRawBackend(t *testing.T, resps ...rawResp) *rawBackend {
	b := &rawBackend{t: t, resps: resps}
	b.addr = testutil.ServeTCP(t, func(c net.Conn) {
		b.mu.Lock()
		b.accepts++
		b.mu.Unlock()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			var buf bytes.Buffer
			req.Write(&buf)
			b.mu.Lock()
			b.got = append(b.got, buf.String())
			var r rawResp
			if len(b.resps) > 0 {
				r, b.resps = b.resps[0], b.resps[1:]
			}
			b.mu.Unlock()
			if r.silent {
				return
			}
			io.WriteString(c, r.bytes)
			if r.closeAfter {
				return
			}
		}
	})
	return b
}

// dialRaw opens a raw connection to addr.
func dialRaw(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// readN reads exactly n bytes.
func readN(t *testing.T, br *bufio.Reader, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		t.Fatalf("reading %d bytes: %v (got %q)", n, err, b)
	}
	return string(b)
}

// With no fault, responses reach the gateway byte for byte as the upstream
// sent them, on one kept-alive connection each way, and each request is
// one event with the response's status, decoded body length and
// Retry-After.
func TestFastPathRelaysVerbatim(t *testing.T) {
	resps := []rawResp{
		{bytes: "HTTP/1.1 200 OK\r\nX-Odd:  spaced \r\nContent-Length: 5\r\n\r\nhello"},
		{bytes: "HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n"},
		{bytes: "HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n"},
		{bytes: "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"}, // HEAD: no body follows
		{bytes: "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 2\r\n\r\n{}"},
		{bytes: "HTTP/1.1 200 OK\r\n\r\nuntil the end", closeAfter: true},
	}
	be := newRawBackend(t, resps...)
	s, mem := startServer(t, []UpstreamConfig{{Name: "api", Mode: ModeProxy, Target: "http://" + be.addr}}, nil)
	c, br := dialRaw(t, s.Addr("api"))
	reqs := []string{
		"GET /a?x=1 HTTP/1.1\r\nHost: gw.example\r\nX-Rehearse-Seq: 4\r\nUser-Agent: ua/1\r\n\r\n",
		"POST /b HTTP/1.1\r\nHost: gw.example\r\nContent-Length: 4\r\nConnection: keep-alive, X-Hop\r\nX-Hop: gone\r\nKeep-Alive: 5\r\nX-Forwarded-For: 6.6.6.6\r\n\r\nbody",
		"DELETE /c HTTP/1.1\r\nHost: gw.example\r\n\r\n",
		"HEAD /d HTTP/1.1\r\nHost: gw.example\r\n\r\n",
		"GET /e HTTP/1.1\r\nHost: gw.example\r\n\r\n",
		"GET /f HTTP/1.1\r\nHost: gw.example\r\n\r\n",
	}
	for i, req := range reqs {
		io.WriteString(c, req)
		want := resps[i].bytes
		if got := readN(t, br, len(want)); got != want {
			t.Fatalf("request %d: the gateway got\n%q\nwant\n%q", i, got, want)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after a close-delimited body the connection stays open: %v", err)
	}
	s.Close()

	be.mu.Lock()
	if be.accepts != 1 {
		t.Errorf("%d upstream connections for one gateway connection", be.accepts)
	}
	b := be.got[1]
	be.mu.Unlock()
	for _, want := range []string{"POST /b HTTP/1.1\r\n", "Host: " + be.addr + "\r\n", "X-Forwarded-For: 127.0.0.1\r\n", "X-Forwarded-Host: gw.example\r\n", "X-Forwarded-Proto: http\r\n", "\r\n\r\nbody"} {
		if !strings.Contains(b, want) {
			t.Errorf("the upstream got %q: no %q", b, want)
		}
	}
	for _, gone := range []string{"X-Hop", "Keep-Alive", "6.6.6.6"} {
		if strings.Contains(b, gone) {
			t.Errorf("the upstream got %q: %s was forwarded", b, gone)
		}
	}

	evs := upstreamEvents(mem)
	if len(evs) != len(reqs) {
		t.Fatalf("%d events for %d requests", len(evs), len(reqs))
	}
	type row struct {
		method, path string
		status       int
		bytes        int64
	}
	want := []row{{"GET", "/a", 200, 5}, {"POST", "/b", 200, 5}, {"DELETE", "/c", 204, 0}, {"HEAD", "/d", 200, 0}, {"GET", "/e", 429, 2}, {"GET", "/f", 200, 13}}
	for i, ev := range evs {
		if got := (row{ev.Method, ev.Path, ev.Status, ev.Bytes}); got != want[i] || ev.Outcome != journal.OutcomeUpstreamComplete || ev.Fault != "" {
			t.Errorf("event %d: %+v (outcome %s), want %+v", i, got, ev.Outcome, want[i])
		}
	}
	if evs[0].Seq == nil || *evs[0].Seq != 4 || evs[0].UserAgent != "ua/1" {
		t.Errorf("event 0: seq %v, user agent %q", evs[0].Seq, evs[0].UserAgent)
	}
	if evs[4].RetryAfter != 7*time.Second {
		t.Errorf("Retry-After recorded as %v", evs[4].RetryAfter)
	}
}

// A fault that becomes active while a gateway keeps a connection open acts
// on the next request it targets, exactly as on the full path; requests it
// does not target stay on the fast path.
func TestFastPathHandsOverToFaults(t *testing.T) {
	real, _ := startServer(t, []UpstreamConfig{{Name: "real", Healthy: &HealthyConfig{BodyBytes: 100}}}, nil)
	s, mem := startServer(t, []UpstreamConfig{{Name: "api", Mode: ModeProxy, Target: real.URL("real")}}, nil)
	c := newClient(5 * time.Second)
	u := s.URL("api")
	if resp, body, err := get(t, c, u+"/x", nil); err != nil || resp.StatusCode != 200 || len(body) != 100 {
		t.Fatalf("healthy: %v %v %d bytes", err, resp, len(body))
	}
	if _, err := s.AddFault(FaultSpec{Name: "down", Type: "status", Upstream: "api", Match: &MatchConfig{Path: "^/down"}, Params: &StatusParams{Code: 503}}); err != nil {
		t.Fatal(err)
	}
	if resp, _, err := get(t, c, u+"/still-ok", nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("untargeted request during the fault: %v %v", err, resp)
	}
	for range 2 {
		if resp, _, err := get(t, c, u+"/down", nil); err != nil || resp.StatusCode != 503 {
			t.Fatalf("targeted request: %v %v", err, resp)
		}
	}
	s.RemoveFault("down")
	if resp, _, err := get(t, c, u+"/down", nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the fault, on the full path: %v %v", err, resp)
	}
	s.Close()
	evs := byArrival(mem)
	if len(evs) != 5 {
		t.Fatalf("%d events, want 5", len(evs))
	}
	for i, want := range []struct {
		status int
		fault  string
	}{{200, ""}, {200, ""}, {503, "down"}, {503, "down"}, {200, ""}} {
		if evs[i].Status != want.status || evs[i].Fault != want.fault {
			t.Errorf("event %d: status %d fault %q, want %d %q", i, evs[i].Status, evs[i].Fault, want.status, want.fault)
		}
	}
	if fs := s.Faults(); len(fs) != 0 {
		t.Errorf("faults left: %+v", fs)
	}
}

// byArrival returns the upstream.request events in arrival order: each is
// recorded when its response has gone, so the next request on the
// connection (on the other path) can be recorded first.
func byArrival(mem *journal.Memory) []*journal.UpstreamRequest {
	evs := mem.Events()
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].T < evs[j].T })
	var out []*journal.UpstreamRequest
	for _, e := range evs {
		if u, ok := e.Payload.(*journal.UpstreamRequest); ok {
			out = append(out, u)
		}
	}
	return out
}

// A reset fault through a handed-over connection still resets (the
// embedded TCP connection reaches SetLinger).
func TestFastPathHandedResetIsECONNRESET(t *testing.T) {
	real, _ := startServer(t, []UpstreamConfig{{Name: "real"}}, nil)
	s, _ := startServer(t, []UpstreamConfig{{Name: "api", Mode: ModeProxy, Target: real.URL("real")}},
		[]FaultSpec{{Type: "reset", Upstream: "api", Match: &MatchConfig{Path: "^/reset"}}})
	c, br := dialRaw(t, s.Addr("api"))
	io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: gw\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	io.WriteString(c, "GET /reset HTTP/1.1\r\nHost: gw\r\n\r\n")
	_, err = br.ReadByte()
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after the reset fault: %v, want ECONNRESET", err)
	}
}

// A kept-alive upstream connection closed between requests is replaced
// once, unseen; an upstream that takes a request and closes without a
// response is a 502 with the proxy's error body.
func TestFastPathUpstreamCloses(t *testing.T) {
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	// The third request finds its connection closed too, is sent again
	// on a new one, and that one closes without answering.
	be := newRawBackend(t, rawResp{bytes: ok, closeAfter: true}, rawResp{bytes: ok, closeAfter: true}, rawResp{silent: true})
	s, mem := startServer(t, []UpstreamConfig{{Name: "api", Mode: ModeProxy, Target: "http://" + be.addr}}, nil)
	c, br := dialRaw(t, s.Addr("api"))
	for i := range 2 {
		io.WriteString(c, "GET /r HTTP/1.1\r\nHost: gw\r\n\r\n")
		// The upstream's close shows only as a missing keep-alive: the
		// response is relayed as it is.
		if got := readN(t, br, len(ok)); got != ok {
			t.Fatalf("request %d: %q", i, got)
		}
	}
	io.WriteString(c, "GET /silent HTTP/1.1\r\nHost: gw\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 502 || !strings.Contains(string(body), "proxy_error") {
		t.Fatalf("silent upstream: %d %s", resp.StatusCode, body)
	}
	s.Close()
	evs := upstreamEvents(mem)
	if len(evs) != 3 || evs[2].Status != 502 || evs[2].Bytes != int64(len(body)) {
		t.Fatalf("events: %d, last %+v", len(evs), evs[len(evs)-1])
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	// Each request reached the upstream once: the resends went out
	// only because the closed connection never took them.
	if be.accepts != 3 || len(be.got) != 3 {
		t.Errorf("%d upstream connections, %d requests received; want 3 and 3", be.accepts, len(be.got))
	}
}

// The gateway hanging up mid-body is client_gone; the upstream breaking
// off its body reaches the gateway as a cut and is recorded as one.
func TestFastPathCutOutcomes(t *testing.T) {
	be := newRawBackend(t, rawResp{bytes: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", closeAfter: true})
	s, mem := startServer(t, []UpstreamConfig{{Name: "api", Mode: ModeProxy, Target: "http://" + be.addr}}, nil)
	c, br := dialRaw(t, s.Addr("api"))
	io.WriteString(c, "GET /cut HTTP/1.1\r\nHost: gw\r\n\r\n")
	got, err := io.ReadAll(br)
	if err != nil || !strings.HasSuffix(string(got), "only this") {
		t.Fatalf("%q %v", got, err)
	}
	s.Close()
	if evs := upstreamEvents(mem); len(evs) != 1 || evs[0].Outcome != journal.OutcomeUpstreamCut || evs[0].Bytes != 9 {
		t.Fatalf("events %+v", evs)
	}
}

// What the fast path does not take goes to the full path, which answers
// as net/http does: HTTP/1.0, Expect, a chunked request body, a malformed
// head, an unreachable upstream.
func TestFastPathHandsOverTheUnusual(t *testing.T) {
	real, _ := startServer(t, []UpstreamConfig{{Name: "real", Healthy: &HealthyConfig{BodyBytes: 10}}}, nil)
	s, mem := startServer(t, []UpstreamConfig{{Name: "api", Mode: ModeProxy, Target: real.URL("real")}}, nil)
	for _, tc := range []struct{ req, status string }{
		{"GET / HTTP/1.0\r\nHost: gw\r\n\r\n", "HTTP/1.0 200"},
		{"POST / HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "HTTP/1.1 200"},
		{"POST / HTTP/1.1\r\nHost: gw\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc", "HTTP/1.1 100"},
		{"GET / HTTP/1.1\r\nHost: gw\r\nBad Header: x\r\n\r\n", "HTTP/1.1 400"},
		{"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 400"},
	} {
		c, br := dialRaw(t, s.Addr("api"))
		io.WriteString(c, tc.req)
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, tc.status) {
			t.Errorf("%q: %q %v, want %s", tc.req, line, err, tc.status)
		}
		c.Close()
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	d, _ := startServer(t, []UpstreamConfig{{Name: "dead", Mode: ModeProxy, Target: "http://" + dead}}, nil)
	c, br := dialRaw(t, d.Addr("dead"))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: gw\r\n\r\n")
	if line, _ := br.ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 502") {
		t.Errorf("unreachable upstream: %q", line)
	}
	s.Close()
	// net/http answers the malformed heads itself (no handler, no event).
	if n := len(upstreamEvents(mem)); n != 3 {
		t.Errorf("%d events for the 3 handed-over requests the handler saw", n)
	}
}

// The fast path's head parser accepts only what net/http's would, and
// reads the same method, path, host and body length.
func FuzzFastHead(f *testing.F) {
	for _, s := range []string{
		"GET /a?b=c HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nConnection: close, X-A\r\nX-A: 1\r\n\r\n",
		"GET /%zz HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		"0 / HTTP/1.1\r\nHost:0 0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01b\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		i := bytes.Index(head, crlfcrlf)
		if i < 0 {
			return
		}
		head = head[:i+4]
		fc := &fastConn{header: http.Header{}}
		var r fastReq
		if !fc.parseHead(head, &r) {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			t.Fatalf("fast path accepted %q, net/http refuses it: %v", head, err)
		}
		// What net/http's server checks beyond ReadRequest.
		if hosts := req.Header["Host"]; len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]) {
			t.Fatalf("fast path accepted %q, net/http's server refuses its Host", head)
		}
		for name, vs := range req.Header {
			for _, v := range vs {
				if !httpguts.ValidHeaderFieldName(name) || !httpguts.ValidHeaderFieldValue(v) {
					t.Fatalf("fast path accepted %q, net/http's server refuses %s: %q", head, name, v)
				}
			}
		}
		if req.Method != r.method || req.URL.Path != r.path || req.Host != r.host || req.ContentLength != int64(r.bodyLen) && !(req.ContentLength == 0 && r.bodyLen == 0) {
			t.Fatalf("%q: fast path %q %q %q %d, net/http %q %q %q %d", head, r.method, r.path, r.host, r.bodyLen, req.Method, req.URL.Path, req.Host, req.ContentLength)
		}
		got := fc.header.Clone()
		delete(got, "Host") // net/http moves it to req.Host
		if len(got) != len(req.Header) {
			t.Fatalf("%q: fast path header %q, net/http %q", head, got, req.Header)
		}
		for name, vs := range req.Header {
			if !slices.Equal(got[name], vs) {
				t.Fatalf("%q: fast path %s %q, net/http %q", head, name, got[name], vs)
			}
		}
	})
}

// A non-idempotent request is never sent twice; one that follows an idle
// close of the upstream connection goes out on a new connection, because
// the close is noticed before anything is sent.
func TestFastPathIdleCloseBeforePost(t *testing.T) {
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	be := newRawBackend(t, rawResp{bytes: ok, closeAfter: true}, rawResp{bytes: ok})
	s, _ := startServer(t, []UpstreamConfig{{Name: "api", Mode: ModeProxy, Target: "http://" + be.addr}}, nil)
	c, br := dialRaw(t, s.Addr("api"))
	io.WriteString(c, "GET /first HTTP/1.1\r\nHost: gw\r\n\r\n")
	readN(t, br, len(ok))
	time.Sleep(100 * time.Millisecond) // the upstream's FIN arrives
	io.WriteString(c, "POST /second HTTP/1.1\r\nHost: gw\r\nContent-Length: 1\r\n\r\nx")
	if got := readN(t, br, len(ok)); got != ok {
		t.Fatalf("POST after an idle close: %q", got)
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	if be.accepts != 2 || len(be.got) != 2 {
		t.Errorf("%d connections, %d requests received; want 2 and 2", be.accepts, len(be.got))
	}
}

// Bytes an upstream sends beyond the response it framed are not the next
// request's answer: the connection is given up, as http.Transport does
// with an unsolicited response, and the next request goes out on a new
// one.
func TestFastPathBytesBeyondTheResponse(t *testing.T) {
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	be := newRawBackend(t, rawResp{bytes: ok + "HTTP/1.1 500 Stray\r\nContent-Length: 0\r\n\r\n"}, rawResp{bytes: ok})
	s, _ := startServer(t, []UpstreamConfig{{Name: "api", Mode: ModeProxy, Target: "http://" + be.addr}}, nil)
	c, br := dialRaw(t, s.Addr("api"))
	for i := range 2 {
		io.WriteString(c, "GET /r HTTP/1.1\r\nHost: gw\r\n\r\n")
		if got := readN(t, br, len(ok)); got != ok {
			t.Fatalf("request %d: %q", i, got)
		}
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	if be.accepts != 2 || len(be.got) != 2 {
		t.Errorf("%d upstream connections, %d requests received; want 2 and 2", be.accepts, len(be.got))
	}
}
