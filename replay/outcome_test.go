package replay

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// rawServer accepts connections on a loopback listener, reads one request
// from each with http.ReadRequest and hands the connection to act, which
// misbehaves at the socket level. It returns the target URL.
func rawServer(t *testing.T, act func(c *net.TCPConn)) *url.URL {
	t.Helper()
	stop := make(chan struct{})
	addr := testutil.ServeTCP(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		done := make(chan struct{})
		go func() {
			select {
			case <-stop:
				c.Close() // unblock a holding act
			case <-done:
			}
		}()
		act(c.(*net.TCPConn))
		close(done)
	})
	// Runs before ServeTCP's cleanup, which waits for every act.
	t.Cleanup(func() { close(stop) })
	return &url.URL{Scheme: "http", Host: addr}
}

// rst aborts the connection: SO_LINGER 0 makes close send a RST.
func rst(c *net.TCPConn) {
	c.SetLinger(0)
	c.Close()
}

// hold blocks until the client closes the connection (or the test ends).
func hold(c *net.TCPConn) {
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// gap separates the part of a response the client must have received from
// the fault that follows, so the client has read the headers when the
// connection is reset. It is part of the fault's shape, not a wait for
// readiness: the classification does not depend on it on Linux, where
// data received before a RST stays readable.
const gap = 50 * time.Millisecond

func replayOne(t *testing.T, target *url.URL, req *capture.Request, opt Options) *journal.ClientRequest {
	t.Helper()
	opt.Target = target
	opt.Once = true
	if opt.Rate == 0 {
		opt.Rate = 100
	}
	if opt.Deadline == 0 {
		opt.Deadline = 2 * time.Second
	}
	if req == nil {
		req = getReq("/tools/search")
	}
	mem := journal.NewMemory(nil)
	_, sum := replayed(t, []*capture.Request{req}, opt, WithRecorder(mem))
	evs := mem.OfKind(journal.KindClientRequest)
	if len(evs) != 1 || sum.Scheduled != 1 {
		t.Fatalf("%d events, %d scheduled; want 1", len(evs), sum.Scheduled)
	}
	ev := evs[0].(*journal.ClientRequest)
	if sum.ByOutcome[ev.Outcome] != 1 {
		t.Errorf("summary by outcome %v does not count %s", sum.ByOutcome, ev.Outcome)
	}
	return ev
}

func write(c *net.TCPConn, s string) {
	c.Write([]byte(s))
}

func TestOutcomeClasses(t *testing.T) {
	body1000 := strings.Repeat("x", 1000)
	sse := "data: {\"n\":1}\n\n: comment\n\ndata: {\"n\":2}\n\nevent: x\ndata: {\"n\":3}\r\n\r\ndata: partial"
	for _, tc := range []struct {
		name     string
		act      func(c *net.TCPConn)
		opt      Options
		want     journal.Outcome
		status   int
		bytes    int64
		fraction float64
		sse      int
		code     string
	}{
		{name: "ok", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"+body1000)
		}, want: journal.OutcomeOK, status: 200, bytes: 1000},
		{name: "ok close-delimited", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"+body1000)
		}, want: journal.OutcomeOK, status: 200, bytes: 1000},
		{name: "redirect not followed", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n")
		}, want: journal.OutcomeOK, status: 302},
		{name: "404", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno")
		}, want: journal.OutcomeHTTP4xx, status: 404, bytes: 2},
		{name: "503 plain", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 26\r\n\r\n{\"error\":{\"code\":\"boom\"}}\n")
		}, want: journal.OutcomeHTTP5xx, status: 503, bytes: 26},
		{name: "fast-fail by header and body", act: func(c *net.TCPConn) {
			b := `{"error":{"code":"dependency_unavailable","dependency":"search","state":"open","retry_after_s":4.2,"message":"breaker open"}}`
			write(c, fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nX-Breaker-State: open\r\nRetry-After: 5\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(b), b))
		}, want: journal.OutcomeFastFail, status: 503, bytes: 125, code: "dependency_unavailable"},
		{name: "fast-fail by JSON field only", act: func(c *net.TCPConn) {
			b := `{"error":{"code":"dependency_unavailable"}}`
			write(c, fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n\r\n%s", len(b), b))
		}, want: journal.OutcomeFastFail, status: 503, bytes: 43, code: "dependency_unavailable"},
		{name: "fast-fail custom rule 429 header value", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 429 Too Many Requests\r\nX-Envoy-Overloaded: true\r\nContent-Length: 0\r\n\r\n")
		}, opt: Options{FastFail: FastFailRule{Statuses: []int{429}, Header: "X-Envoy-Overloaded=TRUE"}},
			want: journal.OutcomeFastFail, status: 429},
		{name: "breaker header on success is not a fast-fail", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 200 OK\r\nX-Breaker-State: closed\r\nContent-Length: 0\r\n\r\n")
		}, want: journal.OutcomeOK, status: 200},
		{name: "connect refused", want: journal.OutcomeConnectRefused},
		{name: "reset before headers", act: rst, want: journal.OutcomeResetBeforeHdrs},
		{name: "closed before headers", act: func(c *net.TCPConn) { c.Close() }, want: journal.OutcomeResetBeforeHdrs},
		{name: "headers never", act: hold, opt: Options{Deadline: 300 * time.Millisecond}, want: journal.OutcomeHeadersTimeout},
		{name: "cut mid-body by RST at 40%", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"+body1000[:400])
			time.Sleep(gap)
			rst(c)
		}, want: journal.OutcomeCutMidBody, status: 200, bytes: 400, fraction: 0.4},
		{name: "chunked cut by FIN", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
			c.Close()
		}, want: journal.OutcomeCutMidBody, status: 200, bytes: 5},
		{name: "SSE stream cut after 3 events", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\r\n"+sse)
			time.Sleep(gap)
			rst(c)
		}, want: journal.OutcomeCutMidBody, status: 200, bytes: int64(len(sse)), sse: 3},
		{name: "deadline mid-body", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"+body1000[:250])
			hold(c)
		}, opt: Options{Deadline: time.Second}, want: journal.OutcomeDeadlineMidBody, status: 200, bytes: 250, fraction: 0.25},
		{name: "truncated: FIN short of Content-Length", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"+body1000[:600])
			c.Close()
		}, want: journal.OutcomeTruncated, status: 200, bytes: 600, fraction: 0.6},
		{name: "malformed status line", act: func(c *net.TCPConn) {
			write(c, "HELLO WORLD\r\n\r\n")
		}, want: journal.OutcomeMalformed},
		{name: "malformed chunked body", act: func(c *net.TCPConn) {
			write(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n")
		}, want: journal.OutcomeMalformed, status: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var target *url.URL
			if tc.act == nil {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				target = &url.URL{Scheme: "http", Host: ln.Addr().String()}
				ln.Close()
			} else {
				target = rawServer(t, tc.act)
			}
			ev := replayOne(t, target, nil, tc.opt)
			if ev.Outcome != tc.want {
				t.Fatalf("outcome %s (error %q), want %s", ev.Outcome, ev.Error, tc.want)
			}
			if ev.Status != tc.status || ev.Bytes != tc.bytes || ev.SSEEvents != tc.sse || ev.FastFailCode != tc.code {
				t.Errorf("status %d bytes %d sse %d code %q; want %d %d %d %q", ev.Status, ev.Bytes, ev.SSEEvents, ev.FastFailCode, tc.status, tc.bytes, tc.sse, tc.code)
			}
			if ev.Fraction != tc.fraction {
				t.Errorf("fraction %v, want %v", ev.Fraction, tc.fraction)
			}
			if ev.FastFail != (tc.want == journal.OutcomeFastFail) {
				t.Errorf("fast_fail %v", ev.FastFail)
			}
			if ev.Outcome != journal.OutcomeOK && ev.Outcome != journal.OutcomeFastFail && !strings.HasPrefix(string(ev.Outcome), "http_") && ev.Error == "" {
				t.Error("no error text for a transport failure")
			}
			if ev.Done < ev.Sent || ev.Sent < ev.Scheduled {
				t.Errorf("times out of order: %+v", ev)
			}
		})
	}
}

func TestRetryOnReusedConnectionCounted(t *testing.T) {
	// The first connection answers one request, then closes after
	// reading the second without answering; Go's transport re-sends the
	// idempotent GET on a new connection, which answers. The request is
	// ok, and counted as retried.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(first bool) {
				defer c.Close()
				br := bufio.NewReader(c)
				for k := 0; ; k++ {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					if first && k == 1 {
						return // close without answering
					}
					write(c.(*net.TCPConn), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			}(n == 0)
		}
	}()
	mem := journal.NewMemory(journal.NewClock(time.Now()))
	// 250 ms between the two sends: the first response must be read and
	// its connection back in the idle pool before the second request is
	// sent, or the transport dials a fresh connection and nothing is
	// retried. 50 ms was too little on a loaded CI machine.
	_, sum := replayed(t, []*capture.Request{getReq("/a")}, Options{Target: &url.URL{Scheme: "http", Host: ln.Addr().String()}, Rate: 4, Duration: 500 * time.Millisecond}, WithRecorder(mem))
	if sum.Sent != 2 || sum.ByOutcome[journal.OutcomeOK] != 2 || sum.Retried != 1 {
		t.Errorf("sent %d outcomes %v retried %d; want 2 ok, 1 retried", sum.Sent, sum.ByOutcome, sum.Retried)
	}
	// The re-send is journaled: the second request went out twice, the
	// second time after it first went out.
	var sends []int
	for _, p := range mem.OfKind(journal.KindClientRequest) {
		ev := p.(*journal.ClientRequest)
		sends = append(sends, ev.Sends())
		if len(ev.Resent) == 1 && ev.Resent[0] < ev.Sent {
			t.Errorf("re-send at %v before the first send at %v", ev.Resent[0], ev.Sent)
		}
	}
	if len(sends) != 2 || sends[0]+sends[1] != 3 || sends[0] != 1 {
		t.Errorf("journaled sends per request %v, want [1 2]", sends)
	}
}
