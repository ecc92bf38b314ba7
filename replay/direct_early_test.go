package replay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// An open breaker's fast-fail, as a gateway sends it without reading the
// request's body.
const (
	earlyBody    = `{"error":{"code":"dependency_unavailable"}}`
	earlyHead    = "HTTP/1.1 503 Service Unavailable\r\nX-Breaker-State: open\r\nContent-Length: 43\r\n"
	earlyKeep    = earlyHead + "\r\n" + earlyBody
	earlyClosing = earlyHead + "Connection: close\r\n\r\n" + earlyBody
)

// earlyServer answers every request as soon as its head is read, before
// its body, and then goes on as mode says:
//
//   - "close": closes at once, the body unread, so the kernel resets the
//     connection under the client's upload;
//   - "linger": half-closes and reads the rest to the client's close (what
//     nginx's lingering close and Go's server do);
//   - "slow reader": keeps the connection and reads the body, slowly
//     (64 KiB every 20 ms: 8 MiB in 2.6 s);
//   - "stop reading": keeps the connection and reads nothing more.
//
// It returns the target and the count of connections accepted.
func earlyServer(t *testing.T, mode string) (*url.URL, func() int64) {
	t.Helper()
	var conns atomic.Int64
	stop := make(chan struct{})
	addr := testutil.ServeTCP(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		conns.Add(1)
		tc := c.(*net.TCPConn)
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br) // the head; the body is left in the socket
			if err != nil {
				return
			}
			switch mode {
			case "close":
				write(tc, earlyClosing)
				return // ServeTCP closes it
			case "linger":
				write(tc, earlyClosing)
				tc.CloseWrite()
				io.Copy(io.Discard, br)
				return
			case "slow reader":
				write(tc, earlyKeep)
				for {
					if _, err := io.CopyN(io.Discard, req.Body, 64<<10); err == io.EOF {
						break
					} else if err != nil {
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			case "stop reading":
				write(tc, earlyKeep)
				select {
				case <-stop:
				case <-time.After(8 * time.Second):
				}
				return
			default:
				panic(mode)
			}
		}
	})
	t.Cleanup(func() { close(stop) }) // runs before ServeTCP's, which waits for the handlers
	return &url.URL{Scheme: "http", Host: addr}, conns.Load
}

// bigPost is a POST with a body of n bytes.
func bigPost(target string, n int) *capture.Request {
	q := postReq(target)
	q.Body = bytes.Repeat([]byte("x"), n)
	return q
}

// A gateway that answers a large upload early — an open breaker's 503 that
// does not wait for the body — has that answer recorded as the fast-fail
// it is, when it is sent (not after the upload, nor a network error
// instead), and the connection is not reused: whether the server then
// resets the connection, half-closes it, reads the body slowly or stops
// reading. net/http's transport records the same, but under a reset,
// where it loses the race between the failed write and the answer most
// of the time (it returns the write's error): there only the direct
// transport is held to the expectation.
func TestDirectTransportEarlyAnswer(t *testing.T) {
	const size = 8 << 20 // several times the socket buffers: the upload cannot be absorbed
	corpus := []*capture.Request{bigPost("/upload", size), bigPost("/upload", size)}
	// Each answer must come well before the slow reader has read the
	// body (2.6 s) or the deadline (4 s) would end a blocked upload; the
	// margin is for a loaded machine.
	const soon = 1500 * time.Millisecond
	for _, mode := range []string{"close", "linger", "slow reader", "stop reading"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var got [2][]record
			for i, std := range []bool{true, false} {
				target, conns := earlyServer(t, mode)
				evs := runEvents(t, std, target, corpus, Options{Rate: 2, Deadline: 4 * time.Second})
				got[i] = records(evs)
				if std && mode == "close" {
					t.Logf("net/http under a reset: %+v", got[i])
					continue
				}
				if len(evs) != 2 {
					t.Fatalf("std %v: %d events, want 2", std, len(evs))
				}
				for _, ev := range evs {
					if ev.Outcome != journal.OutcomeFastFail || ev.Status != 503 || ev.Bytes != int64(len(earlyBody)) || ev.FastFailCode != "dependency_unavailable" {
						t.Errorf("std %v: request %d: %s %d, %d bytes, code %q (%s); want fast_fail 503, %d bytes, dependency_unavailable",
							std, ev.Seq, ev.Outcome, ev.Status, ev.Bytes, ev.FastFailCode, ev.Error, len(earlyBody))
					}
					if d := ev.HeadersAt - ev.Sent; ev.Status != 0 && d >= soon {
						t.Errorf("std %v: request %d: headers %v after the send, want under %v: read after the upload", std, ev.Seq, d, soon)
					}
					if d := ev.Done - ev.Sent; d >= soon {
						t.Errorf("std %v: request %d: done %v after the send, want under %v", std, ev.Seq, d, soon)
					}
				}
				if n := conns(); n != 2 {
					t.Errorf("std %v: the server saw %d connections, want 2: a connection whose upload was cut was reused", std, n)
				}
			}
			if mode != "close" && !slices.Equal(got[0], got[1]) {
				t.Errorf("the transports disagree:\nnet/http %+v\ndirect   %+v", got[0], got[1])
			}
		})
	}
}

// A server that answers early and reads the whole body before the
// response's end keeps its connection: the upload had ended, so the next
// request reuses it, on both transports.
func TestDirectTransportEarlyAnswerKeptAlive(t *testing.T) {
	for _, std := range []bool{true, false} {
		var conns atomic.Int64
		addr := testutil.ServeTCP(t, func(c net.Conn) {
			c.SetDeadline(time.Now().Add(10 * time.Second))
			conns.Add(1)
			br := bufio.NewReader(c)
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				// The head of the answer first, its body after the
				// request's.
				write(c.(*net.TCPConn), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
				if _, err := io.Copy(io.Discard, req.Body); err != nil {
					return
				}
				write(c.(*net.TCPConn), "ok")
			}
		})
		evs := runEvents(t, std, &url.URL{Scheme: "http", Host: addr},
			[]*capture.Request{bigPost("/u", 1<<20), bigPost("/u", 1<<20), bigPost("/u", 100)}, Options{})
		for _, ev := range evs {
			if ev.Outcome != journal.OutcomeOK || ev.Bytes != 2 {
				t.Errorf("std %v: request %d: %s, %d bytes (%s); want ok, 2", std, ev.Seq, ev.Outcome, ev.Bytes, ev.Error)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("std %v: %d connections, want 1", std, n)
		}
	}
}

// A request body that fails to read ends the exchange with its error at
// once (no answer is coming to a request cut short), on both transports,
// for a body of unknown length, one written inline and one too large to
// be.
func TestDirectTransportBodyReadError(t *testing.T) {
	addr := testutil.ServeTCP(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		hold(c.(*net.TCPConn))
	})
	o := transportOptions(t, addr)
	errBody := errors.New("the body's disk went away")
	for _, std := range []bool{true, false} {
		rt := newOwnTransport(std, &o)
		for _, length := range []int64{-1, 1000, 1 << 20} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/", io.MultiReader(strings.NewReader(strings.Repeat("x", 100<<10)), iotestErr{errBody}))
			req.ContentLength = length
			t0 := time.Now()
			_, err := rt.RoundTrip(req)
			if !errors.Is(err, errBody) {
				t.Errorf("std %v, length %d: %v, want the body's error", std, length, err)
			}
			if d := time.Since(t0); d > 3*time.Second {
				t.Errorf("std %v, length %d: the error took %v: it waited for an answer", std, length, d)
			}
			cancel()
		}
		rt.CloseIdleConnections()
	}
}

type iotestErr struct{ err error }

// transportOptions are the replayer's options for a target at addr, with
// its defaults, as its transports are built from them.
func transportOptions(t *testing.T, addr string) Options {
	t.Helper()
	o, err := Options{Target: mustURL("http://" + addr), ConnectTimeout: time.Second}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// newOwnTransport is the replayer's net/http transport when std, else its
// direct one.
func newOwnTransport(std bool, o *Options) ownTransport {
	if std {
		return newTransport(o)
	}
	return newDirectTransport(o)
}

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

// "Expect: 100-continue" (which the replayer drops from captured
// requests, but a caller of the transport may send): the body is sent at
// once, as net/http's transport does with the replayer's settings
// (ExpectContinueTimeout 0), the 100 is skipped and reported to the
// Got100Continue hook, and the final answer is the response.
func TestDirectTransportExpectContinue(t *testing.T) {
	addr := testutil.ServeTCP(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			write(c.(*net.TCPConn), "HTTP/1.1 100 Continue\r\n\r\n")
			n, err := io.Copy(io.Discard, req.Body)
			if err != nil {
				return
			}
			b := fmt.Sprint(n)
			write(c.(*net.TCPConn), fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b))
		}
	})
	o := transportOptions(t, addr)
	for _, std := range []bool{true, false} {
		rt := newOwnTransport(std, &o)
		for _, size := range []int{1000, 1 << 20} {
			var continues, others atomic.Int64
			trace := &httptrace.ClientTrace{
				Got100Continue: func() { continues.Add(1) },
				Got1xxResponse: func(code int, _ textproto.MIMEHeader) error { others.Add(1); return nil },
			}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "PUT", "http://"+addr+"/", bytes.NewReader(make([]byte, size)))
			req.Header.Set("Expect", "100-continue")
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("std %v, %d bytes: %v", std, size, err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || string(b) != fmt.Sprint(size) {
				t.Errorf("std %v, %d bytes: %d %q %v; want 200 %q", std, size, resp.StatusCode, b, err, fmt.Sprint(size))
			}
			if c, o := continues.Load(), others.Load(); c != 1 || o != 1 {
				t.Errorf("std %v, %d bytes: Got100Continue %d times, Got1xxResponse %d; want 1, 1", std, size, c, o)
			}
		}
		rt.CloseIdleConnections()
	}
}

// A 101 Switching Protocols response hands the connection over: its body
// reads and writes the new protocol (an io.ReadWriteCloser, what was read
// past the head first), and the connection never goes back to the pool.
func TestDirectTransportSwitchingProtocols(t *testing.T) {
	var conns atomic.Int64
	addr := testutil.ServeTCP(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		conns.Add(1)
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if req.Header.Get("Upgrade") != "echo" {
			write(c.(*net.TCPConn), "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
			return
		}
		write(c.(*net.TCPConn), "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nhello ")
		io.Copy(c, br) // echoes to the client's half-close
	})
	o := transportOptions(t, addr)
	for _, std := range []bool{true, false} {
		conns.Store(0)
		rt := newOwnTransport(std, &o)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/", nil)
		req.Header.Set("Upgrade", "echo")
		req.Header.Set("Connection", "Upgrade")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("std %v: %v", std, err)
		}
		rw, ok := resp.Body.(io.ReadWriteCloser)
		if resp.StatusCode != 101 || !ok {
			t.Fatalf("std %v: %d, body a %T; want 101 and an io.ReadWriteCloser", std, resp.StatusCode, resp.Body)
		}
		if _, err := io.WriteString(rw, "world"); err != nil {
			t.Errorf("std %v: write after the switch: %v", std, err)
		}
		b := make([]byte, len("hello world"))
		if _, err := io.ReadFull(rw, b); string(b) != "hello world" || err != nil {
			t.Errorf("std %v: read %q, %v; want \"hello world\"", std, b, err)
		}
		// Half-closing (net/http's cannot with the replayer's
		// connections, which do not expose the TCP connection's
		// CloseWrite) ends the echo.
		if cw, ok := rw.(interface{ CloseWrite() error }); !std && (!ok || cw.CloseWrite() != nil) {
			t.Errorf("std %v: the switched body cannot half-close", std)
		} else if !std {
			if b, err := io.ReadAll(rw); len(b) != 0 || err != nil {
				t.Errorf("std %v: after the half-close: %q, %v; want the end", std, b, err)
			}
		}
		rw.Close()
		cancel()
		// The switched connection is not the pool's: the next request
		// dials.
		req, _ = http.NewRequest("GET", "http://"+addr+"/", nil)
		if resp, err := rt.RoundTrip(req); err != nil {
			t.Errorf("std %v: after the switch: %v", std, err)
		} else {
			resp.Body.Close()
		}
		if n := conns.Load(); n != 2 {
			t.Errorf("std %v: %d connections, want 2", std, n)
		}
		rt.CloseIdleConnections()
	}
}

// The idle timeout closes an unused connection when it passes, as
// net/http's transport does (not at the pool's next use), and the next
// request dials a new connection without a re-send.
func TestDirectTransportIdleTimeout(t *testing.T) {
	closed := make(chan time.Time, 4)
	addr := testutil.ServeTCP(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				if err == io.EOF {
					closed <- time.Now()
				}
				return
			}
			write(c.(*net.TCPConn), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	o := transportOptions(t, addr)
	const idle = 200 * time.Millisecond
	for _, std := range []bool{true, false} {
		var rt ownTransport
		if std {
			tr := newTransport(&o)
			tr.IdleConnTimeout = idle
			rt = tr
		} else {
			tr := newDirectTransport(&o)
			tr.idleTimeout = idle
			rt = tr
		}
		var gets, reused atomic.Int64
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			gets.Add(1)
			if info.Reused {
				reused.Add(1)
			}
		}}
		get := func() {
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+addr+"/", nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("std %v: %v", std, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		get()
		idleFrom := time.Now()
		select {
		case at := <-closed:
			if d := at.Sub(idleFrom); d < idle-20*time.Millisecond {
				t.Errorf("std %v: closed %v after the exchange, before the idle timeout %v", std, d, idle)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("std %v: the idle connection was not closed 5 s after its idle timeout of %v", std, idle)
		}
		get()
		if g, r := gets.Load(), reused.Load(); g != 2 || r != 0 {
			t.Errorf("std %v: %d connections got, %d reused; want 2, 0", std, g, r)
		}
		rt.CloseIdleConnections()
		<-closed
	}
}

// pausedConn pauses before its second write: long enough for the server
// to have answered the request's head and reset the connection.
type pausedConn struct {
	net.Conn
	writes int
}

func (c *pausedConn) Write(p []byte) (int, error) {
	if c.writes++; c.writes == 2 {
		time.Sleep(200 * time.Millisecond)
	}
	return c.Conn.Write(p)
}

// A request written inline (a body within inlineBodyMax, in several
// writes) that the server answers after its head and then resets: the
// write fails, and the answer that came before the reset is the
// response, not the write's error.
func TestDirectTransportResetUnderInlineWrite(t *testing.T) {
	var conns atomic.Int64
	addr := testutil.ServeTCP(t, func(c net.Conn) {
		conns.Add(1)
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		write(c.(*net.TCPConn), earlyKeep)
		rst(c.(*net.TCPConn))
	})
	o := transportOptions(t, addr)
	tr := newDirectTransport(&o)
	tr.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return &pausedConn{Conn: c}, err
	}
	defer tr.CloseIdleConnections()
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/", bytes.NewReader(make([]byte, inlineBodyMax)))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%v, want the 503 sent before the reset", err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || string(b) != earlyBody || err != nil {
			t.Errorf("%d %q %v; want 503 %q", resp.StatusCode, b, err, earlyBody)
		}
		cancel()
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: a reset connection was reused", n)
	}
}

// The bodies Request.Write treats as in memory (written with the head in
// one write(2)) are left unwrapped; others are wrapped to tell their read
// errors from the connection's.
func TestInMemoryBodies(t *testing.T) {
	for i, c := range []struct {
		r    io.Reader
		want bool
	}{
		{io.NopCloser(bytes.NewReader(nil)), true}, // the replayer's
		{io.NopCloser(strings.NewReader("")), true},
		{io.NopCloser(bytes.NewBufferString("")), true}, // a WriterTo: NopCloser's other type
		{strings.NewReader(""), true},
		{io.NopCloser(io.MultiReader()), false},
		{io.NopCloser(nil), false},
		{iotestErr{}, false},
	} {
		if got := inMemory(c.r); got != c.want {
			t.Errorf("%d: %T in memory: %v, want %v", i, c.r, got, c.want)
		}
	}
}
