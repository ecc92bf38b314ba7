package replay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// directTransport is the replayer's transport for http:// targets. It
// writes each request (but one with a large body, inlineBodyMax) and reads
// its response on the calling goroutine, the sender's: http.Transport
// hands a request to a writer goroutine per connection and the response
// back from a reader goroutine, and on a small virtual machine the
// wake-ups of those hand-offs cost more CPU than the work they hand over
// (docs/benchmarks.md). Serialising and parsing stay net/http's
// (Request.Write, ReadResponse and the bodies it returns: Content-Length,
// chunked with trailers, close-delimited), and so does what a caller of
// http.Transport can observe: the keep-alive rules, the re-send of a
// replayable request whose kept-alive connection failed before any byte
// of the answer, an answer sent before the request's body was read, the
// errors the outcome classes are told apart by (classify.go), and the
// trace hooks the sender uses. What it does not do it leaves to
// http.Transport (https, proxies, HTTP/2).
//
// A connection is reused only after its response's body was read to its
// end, when neither side asked for the connection to close; one whose
// exchange failed, or was abandoned before its body's end, is closed.
// Idle connections are kept per host, most recently used first, up to
// maxIdle each, and closed after idleTimeout unused (by a timer, as
// http.Transport's; checked again whenever the pool is used, and all of
// them closed by CloseIdleConnections). Before an idle connection is
// reused, a non-blocking peek at its socket tells whether the peer closed
// it (or sent something unasked) meanwhile, as http.Transport's reader
// goroutine, always reading an idle connection, would have noticed; such a
// connection is closed instead, and the request takes another one without
// a re-send.
type directTransport struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle     int // per host
	idleTimeout time.Duration

	mu   sync.Mutex
	idle map[string][]*directConn // by host:port, least recently used first
}

func newDirectTransport(o *Options) *directTransport {
	return &directTransport{dial: dialer(o), maxIdle: o.MaxInFlight, idleTimeout: idleConnTimeout, idle: map[string][]*directConn{}}
}

// idleConnTimeout closes a kept-alive connection left unused this long, on
// either transport.
const idleConnTimeout = 90 * time.Second

// maxResponseHeaderBytes bounds the status line and headers of a response
// (1xx answers included), as http.Transport's default does.
const maxResponseHeaderBytes = 10 << 20

// connBufferSize is the size of each connection's read and write buffers,
// http.Transport's default: a request that fits is one write(2).
const connBufferSize = 4 << 10

// aLongTimeAgo is a deadline in the past: setting it ends every read and
// write of the connection at once.
var aLongTimeAgo = time.Unix(1, 0)

// directConn is one connection of a directTransport.
type directConn struct {
	t      *directTransport
	key    string
	conn   net.Conn        // a *heldConn
	raw    syscall.RawConn // the socket, for the liveness peek; nil when none
	br     *bufio.Reader   // reads from the directConn (Read)
	bw     *bufio.Writer   // writes to the connection, counting
	nwrite int64           // bytes written to the connection
	werr   error           // the connection's last write error
	berr   error           // the request body's read error (writeRequest)
	// readLimit bounds what the response's head may read; sawEOF is set
	// when the connection's read returned EOF.
	readLimit int64
	sawEOF    bool
	reused    bool
	idleAt    time.Time
	idleTimer *time.Timer // closes the connection idle too long; nil until first idle
}

// Read reads from the connection within the head's limit (the bufio.Reader
// reads through it).
func (c *directConn) Read(p []byte) (int, error) {
	if c.readLimit <= 0 {
		return 0, fmt.Errorf("read limit of %d bytes exhausted", maxResponseHeaderBytes)
	}
	if int64(len(p)) > c.readLimit {
		p = p[:c.readLimit]
	}
	n, err := c.conn.Read(p)
	if err == io.EOF {
		c.sawEOF = true
	}
	c.readLimit -= int64(n)
	return n, err
}

// connWriter counts what is written to the connection: a failure with
// nothing written is a request the server never saw.
type connWriter struct{ c *directConn }

func (w connWriter) Write(p []byte) (int, error) {
	n, err := w.c.conn.Write(p)
	w.c.nwrite += int64(n)
	if err != nil {
		w.c.werr = err
	}
	return n, err
}

// writeRequest writes req and flushes it. A failure is reported as
// http.Transport reports it: the body's own read error when reading the
// body failed, else the connection's write error. Request.Write reports
// either, when the body's copy fails, as the body's, in an error that
// unwraps to nothing (a reset would not be told from any other failure);
// http.Transport unwraps it.
func (c *directConn) writeRequest(req *http.Request) error {
	c.werr, c.berr = nil, nil
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength != 0 && !inMemory(req.Body) {
		// A body in memory cannot fail to read, and wrapping it would
		// hide it from Request.Write, which then writes the head in a
		// write(2) of its own. (A body of length 0 is probed by
		// Request.Write: left as it is.)
		r := *req
		r.Body = recordingBody{req.Body, &c.berr}
		req = &r
	}
	err := req.Write(c.bw)
	if err == nil {
		err = c.bw.Flush()
	}
	switch {
	case err == nil:
	case c.berr != nil:
		err = c.berr
	case c.werr != nil:
		err = c.werr
	}
	return err
}

// nopCloserTypes are io.NopCloser's types, which inMemory looks through.
var nopCloserTypes = [2]reflect.Type{reflect.TypeOf(io.NopCloser(nil)), reflect.TypeOf(io.NopCloser(struct {
	io.Reader
	io.WriterTo
}{}))}

// inMemory reports a body of the standard library's in-memory readers,
// as net/http tells them (for the same reason: they never fail, nor
// block).
func inMemory(r io.Reader) bool {
	switch r.(type) {
	case *bytes.Reader, *bytes.Buffer, *strings.Reader:
		return true
	}
	if t := reflect.TypeOf(r); t == nopCloserTypes[0] || t == nopCloserTypes[1] {
		inner, _ := reflect.ValueOf(r).Field(0).Interface().(io.Reader)
		return inMemory(inner)
	}
	return false
}

// recordingBody is a request body that records its own read error.
type recordingBody struct {
	io.ReadCloser
	err *error
}

func (b recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		*b.err = err
	}
	return n, err
}

// nothingWrittenError is a failure to write a request of which no byte
// reached the connection.
type nothingWrittenError struct{ err error }

func (e nothingWrittenError) Error() string { return e.err.Error() }
func (e nothingWrittenError) Unwrap() error { return e.err }

// noAnswerError is a failure to read the first byte of the answer.
type noAnswerError struct{ err error }

func (e noAnswerError) Error() string { return e.err.Error() }
func (e noAnswerError) Unwrap() error { return e.err }

// RoundTrip sends req and reads the head of its response on the calling
// goroutine; reading the body (to its end) returns the connection to the
// pool.
func (t *directTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := checkRequest(req); err != nil {
		closeBody(req)
		return nil, err
	}
	ctx := req.Context()
	trace := httptrace.ContextClientTrace(ctx)
	addr := canonicalAddr(req)
	orig := req
	for {
		if err := ctx.Err(); err != nil {
			closeBody(req)
			return nil, context.Cause(ctx)
		}
		c, err := t.getConn(ctx, trace, addr)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := c.roundTrip(ctx, req, trace)
		if err == nil {
			resp.Request = orig
			return resp, nil
		}
		if !c.shouldRetry(req, err) {
			var nw nothingWrittenError
			var na noAnswerError
			switch {
			case errors.As(err, &nw):
				err = nw.err
			case errors.As(err, &na):
				err = na.err
			}
			return nil, err
		}
		// The connection failed before anything of the answer came:
		// send again on another, with the body from its start.
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, errors.New("replay: cannot rewind the request body for a re-send")
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r := *req
			r.Body = body
			req = &r
		}
	}
}

// checkRequest refuses what http.Transport refuses before sending.
func checkRequest(req *http.Request) error {
	switch {
	case req.URL == nil:
		return errors.New("http: nil Request.URL")
	case req.Header == nil:
		return errors.New("http: nil Request.Header")
	case req.URL.Scheme != "http":
		return fmt.Errorf("replay: the direct transport sends http:// requests only, not %q", req.URL.Scheme)
	case req.URL.Host == "":
		return errors.New("http: no Host in request URL")
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("net/http: invalid header field name %q", k)
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("net/http: invalid header field value for %q", k)
			}
		}
	}
	return nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// canonicalAddr is the request's host:port, the pool's key.
func canonicalAddr(req *http.Request) string {
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port)
}

// getConn returns an idle connection to addr that is still open, or a new
// one.
func (t *directTransport) getConn(ctx context.Context, trace *httptrace.ClientTrace, addr string) (*directConn, error) {
	if trace != nil && trace.GetConn != nil {
		trace.GetConn(addr)
	}
	if c := t.takeIdle(addr); c != nil {
		if trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{Conn: c.conn, Reused: true, WasIdle: true, IdleTime: time.Since(c.idleAt)})
		}
		return c, nil
	}
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &directConn{t: t, key: addr, conn: conn, readLimit: maxResponseHeaderBytes}
	if hc := heldOf(conn); hc != nil {
		if sc, ok := hc.Conn.(syscall.Conn); ok {
			c.raw, _ = sc.SyscallConn()
		}
	}
	c.br = bufio.NewReaderSize(c, connBufferSize)
	c.bw = bufio.NewWriterSize(connWriter{c}, connBufferSize)
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: conn})
	}
	return c, nil
}

// takeIdle takes the most recently used idle connection to addr that the
// peer has not closed, closing the expired and the dead on the way.
func (t *directTransport) takeIdle(addr string) *directConn {
	for {
		t.mu.Lock()
		t.expireLocked(addr, time.Now())
		list := t.idle[addr]
		if len(list) == 0 {
			t.mu.Unlock()
			return nil
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[addr] = list[:len(list)-1]
		c.idleTimer.Stop()
		t.mu.Unlock()
		if c.br.Buffered() == 0 && (c.raw == nil || peekAlive(c.raw)) {
			c.reused = true
			return c
		}
		c.conn.Close()
	}
}

// expireLocked closes the idle connections to addr unused for longer than
// the idle timeout (the oldest are first).
func (t *directTransport) expireLocked(addr string, now time.Time) {
	list := t.idle[addr]
	n := 0
	for n < len(list) && now.Sub(list[n].idleAt) > t.idleTimeout {
		list[n].idleTimer.Stop()
		list[n].conn.Close()
		list[n] = nil
		n++
	}
	if n > 0 {
		t.idle[addr] = list[n:]
	}
}

// put returns c to the idle pool; false when the pool for its host is full.
func (t *directTransport) put(c *directConn) bool {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expireLocked(c.key, now)
	if len(t.idle[c.key]) >= t.maxIdle {
		return false
	}
	c.idleAt = now
	if c.idleTimer == nil {
		c.idleTimer = time.AfterFunc(t.idleTimeout, c.expire)
	} else {
		c.idleTimer.Reset(t.idleTimeout)
	}
	t.idle[c.key] = append(t.idle[c.key], c)
	return true
}

// expire closes c when its idle timeout has passed and it is still idle:
// the close happens on time, as with http.Transport, not at the pool's
// next use (a server keeping connections longer sees the client close
// them when net/http's would).
func (c *directConn) expire() {
	t := c.t
	t.mu.Lock()
	list := t.idle[c.key]
	i := slices.Index(list, c)
	if i < 0 || time.Since(c.idleAt) < t.idleTimeout {
		// Taken meanwhile, or taken and put back (the timer was
		// reset).
		t.mu.Unlock()
		return
	}
	t.idle[c.key] = slices.Delete(list, i, i+1)
	t.mu.Unlock()
	c.conn.Close()
}

// CloseIdleConnections closes every idle connection.
func (t *directTransport) CloseIdleConnections() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, list := range t.idle {
		for _, c := range list {
			c.idleTimer.Stop()
			c.conn.Close()
		}
		delete(t.idle, k)
	}
}

// inlineBodyMax is the largest request body written on the caller's
// goroutine before the response is read. A request that fits the socket's
// send buffer is taken by the kernel whether or not the server reads it,
// so the write cannot wait on a server that answered early and stopped
// reading; 16 KiB is the send buffer Linux starts a TCP connection with
// (net.ipv4.tcp_wmem's default; darwin's net.inet.tcp.sendspace is
// larger), and the buffer only grows from there. A larger body, or one of
// unknown length, is written by a goroutine of its own while the caller
// reads, as http.Transport writes every request: an answer the server
// sends before the body's end (a breaker's fast-fail 503 that does not
// wait for the upload) is read when it comes, not after the upload.
const inlineBodyMax = 16 << 10

// writesInline reports whether req is written before its response is
// read (inlineBodyMax).
func writesInline(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || (req.ContentLength >= 0 && req.ContentLength <= inlineBodyMax)
}

// roundTrip writes req on c and reads the head of the response. The
// context's deadline is the connection's for the exchange, and its
// cancellation puts the deadline in the past, which ends a blocked read or
// write at once.
func (c *directConn) roundTrip(ctx context.Context, req *http.Request, trace *httptrace.ClientTrace) (*http.Response, error) {
	if d, ok := ctx.Deadline(); ok {
		if err := c.conn.SetDeadline(d); err != nil {
			c.conn.Close()
			return nil, err
		}
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(aLongTimeAgo) })
	start := c.nwrite
	if !writesInline(req) {
		return c.roundTripUploading(ctx, stop, req, trace, start)
	}
	// Request.Write calls the trace's WroteHeaders and WroteRequest.
	if err := c.writeRequest(req); err != nil {
		switch {
		case c.berr != nil:
			// The body's own failure, never re-sent (as
			// http.Transport, which reports it first).
			return nil, c.fail(ctx, stop, err)
		case c.nwrite == start:
			return nil, c.fail(ctx, stop, nothingWrittenError{err})
		case !isReset(err) || ctx.Err() != nil:
			return nil, c.fail(ctx, stop, err)
		}
		// The server reset the connection during the write: it may
		// have answered first (a fast-fail sent without reading the
		// body, then a close that the unread bytes turned into a
		// reset). The kernel keeps what arrived before the reset
		// readable, and a reset socket never blocks a read: take the
		// answer if there is one, on a connection never reused.
		resp, rerr := c.readHead(req, trace)
		if rerr != nil {
			return nil, c.fail(ctx, stop, err) // the write's error, as before the answer was looked for
		}
		return c.respond(ctx, stop, req, resp, nil, false), nil
	}
	resp, err := c.readHead(req, trace)
	if err != nil {
		return nil, c.fail(ctx, stop, err)
	}
	return c.respond(ctx, stop, req, resp, nil, true), nil
}

// upload is a request written by a goroutine of its own while the
// caller reads the response (roundTripUploading).
type upload struct {
	done chan struct{} // closed when the write has ended
	mu   sync.Mutex
	over bool  // the write has ended
	err  error // the write's error, once over
	// then is what the end of the response's body, come first, left to
	// the end of the write: the fate of the connection.
	then func(written bool)
}

// finish records the write's end and runs what the response's end left
// to it, if anything.
func (u *upload) finish(err error) {
	u.mu.Lock()
	u.over, u.err = true, err
	then := u.then
	u.mu.Unlock()
	close(u.done)
	if then != nil {
		then(err == nil)
	}
}

// uploadGrace is how long an upload still under way at the end of the
// response's body may take to end with the connection kept: the server
// answered before reading the whole body, and may have read it since.
// http.Transport's wait is the same (maxWriteWaitBeforeConnReuse), but
// it makes the caller wait for it; here the caller goes on, and the
// connection goes back to the pool, or is closed, when the upload ends.
const uploadGrace = 50 * time.Millisecond

// roundTripUploading writes req (a body larger than inlineBodyMax, or of
// unknown length) on a goroutine of its own and reads the response on the
// caller's meanwhile, as http.Transport does: a server may answer before
// it has read the body, and then stop reading it or close. The answer is
// the response even when the upload then fails; the connection is reused
// only when the upload ends in full, by the end of the response's body
// or within uploadGrace after it.
func (c *directConn) roundTripUploading(ctx context.Context, stop func() bool, req *http.Request, trace *httptrace.ClientTrace, start int64) (*http.Response, error) {
	u := &upload{done: make(chan struct{})}
	go func() {
		err := c.writeRequest(req)
		if c.berr != nil {
			// No answer is coming to a request cut short by its own
			// body: end the read waiting for it.
			c.conn.Close()
		}
		u.finish(err)
	}()
	resp, err := c.readHead(req, trace)
	if err != nil {
		// Closing the connection ends the upload if it is still
		// going; then the two errors are weighed.
		err = c.fail(ctx, stop, err)
		<-u.done
		switch {
		case c.berr != nil:
			return nil, c.berr
		case ctx.Err() != nil:
		case c.nwrite == start:
			var na noAnswerError
			if errors.As(err, &na) {
				err = na.err
			}
			err = nothingWrittenError{err}
		}
		return nil, err
	}
	return c.respond(ctx, stop, req, resp, u, true), nil
}

// readHead reads the head of the response to req, past the informational
// answers before it.
func (c *directConn) readHead(req *http.Request, trace *httptrace.ClientTrace) (*http.Response, error) {
	c.readLimit = maxResponseHeaderBytes
	if _, err := c.br.Peek(1); err != nil {
		return nil, noAnswerError{err}
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	continued := false
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			if c.readLimit <= 0 {
				err = fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", maxResponseHeaderBytes)
			}
			return nil, err
		}
		// Informational answers precede the response (101 ends the
		// exchange: the connection is no longer HTTP).
		code := resp.StatusCode
		if code < 100 || code > 199 || code == http.StatusSwitchingProtocols {
			c.readLimit = math.MaxInt64
			return resp, nil
		}
		if trace != nil {
			if code == http.StatusContinue && !continued && trace.Got100Continue != nil && expectsContinue(req) {
				// As http.Transport, for a request that asked for it.
				continued = true
				trace.Got100Continue()
			}
			if trace.Got1xxResponse != nil {
				if err := trace.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
					return nil, err
				}
			}
		}
	}
}

// expectsContinue reports a request with a body sent with "Expect:
// 100-continue".
func expectsContinue(req *http.Request) bool {
	return req.ProtoAtLeast(1, 1) && req.Body != nil && req.Body != http.NoBody &&
		httpguts.HeaderValuesContainsToken(req.Header["Expect"], "100-continue")
}

// respond gives resp its body, which decides the connection's fate at its
// end; alive is false when the connection cannot be reused whatever the
// response says. u is the request's upload when it was written
// concurrently.
func (c *directConn) respond(ctx context.Context, stop func() bool, req *http.Request, resp *http.Response, u *upload, alive bool) *http.Response {
	alive = alive && !resp.Close && !wantsClose(req) && resp.StatusCode > 199
	if resp.StatusCode == http.StatusSwitchingProtocols && resp.Header.Get("Upgrade") != "" &&
		httpguts.HeaderValuesContainsToken(resp.Header["Connection"], "Upgrade") {
		// A protocol switch: the connection is the new protocol's,
		// read and written through the body, as http.Transport hands
		// it over.
		resp.Body = &switchedBody{c: c, ctx: ctx, stop: stop}
		return resp
	}
	b := &directBody{c: c, ctx: ctx, stop: stop, body: resp.Body, alive: alive, upload: u}
	if req.Method == http.MethodHead || resp.ContentLength == 0 {
		// No body to read: the connection is free now.
		b.end(true)
		return resp
	}
	resp.Body = b
	return resp
}

// switchedBody is the body of a 101 Switching Protocols response: the
// connection itself, an io.ReadWriteCloser as http.Transport's is, what
// was read past the response's head first. Unlike http.Transport's, it
// stays bounded by the request's context: the replayer's exchanges end at
// their deadline whatever the protocol.
type switchedBody struct {
	c    *directConn
	ctx  context.Context
	stop func() bool
}

func (b *switchedBody) Read(p []byte) (int, error) {
	n, err := b.c.br.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() != nil {
		err = context.Cause(b.ctx)
	}
	return n, err
}

func (b *switchedBody) Write(p []byte) (int, error) {
	n, err := b.c.conn.Write(p)
	if err != nil && b.ctx.Err() != nil {
		err = context.Cause(b.ctx)
	}
	return n, err
}

// CloseWrite half-closes the connection, when it is TCP.
func (b *switchedBody) CloseWrite() error {
	var conn net.Conn = b.c.conn
	if hc := heldOf(conn); hc != nil {
		conn = hc.Conn
	}
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return fmt.Errorf("CloseWrite: %w", http.ErrNotSupported)
}

func (b *switchedBody) Close() error {
	b.stop()
	return b.c.conn.Close()
}

// wantsClose reports a request asking for its connection to be closed.
func wantsClose(req *http.Request) bool {
	if req.Close {
		return true
	}
	for _, v := range req.Header["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "close") {
				return true
			}
		}
	}
	return false
}

// fail ends a failed exchange: the connection is closed, never reused. A
// cancelled or expired context is the error, as http.Transport reports it,
// rather than what the connection's deadline made of it.
func (c *directConn) fail(ctx context.Context, stop func() bool, err error) error {
	stop()
	c.conn.Close()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// shouldRetry reports whether a failed exchange is re-sent on another
// connection, by http.Transport's rule: only on a reused connection, when
// nothing was written and the body can be sent again, or when nothing of
// the answer arrived and the request is replayable.
func (c *directConn) shouldRetry(req *http.Request, err error) bool {
	if !c.reused {
		// A fresh connection the server hung up on: it does not want
		// this request.
		return false
	}
	if _, ok := err.(nothingWrittenError); ok {
		return req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 || req.GetBody != nil
	}
	if !isReplayable(req) {
		return false
	}
	_, ok := err.(noAnswerError)
	return ok
}

// isReplayable is http.Transport's rule for re-sending a request: an
// idempotent method, or an idempotency key (under the two names net/http
// knows), and a body that can be sent again.
func isReplayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, k1 := req.Header["Idempotency-Key"]
	_, k2 := req.Header["X-Idempotency-Key"]
	return k1 || k2
}

// directBody is a response body read on the caller's goroutine; its end
// decides the connection's fate.
type directBody struct {
	c     *directConn // nil once ended
	ctx   context.Context
	stop  func() bool
	body  io.ReadCloser
	alive bool
	// upload is the request's, when it was written concurrently: the
	// connection is reused only if it ends in full (uploadGrace).
	upload *upload
	err    error // what reads return once ended by an error or Close
}

func (b *directBody) Read(p []byte) (int, error) {
	if b.c == nil {
		if b.err != nil {
			return 0, b.err
		}
		return 0, io.EOF
	}
	n, err := b.body.Read(p)
	switch {
	case err == io.EOF:
		b.end(true)
	case err != nil:
		if b.ctx.Err() != nil {
			err = context.Cause(b.ctx)
		}
		b.err = err
		b.end(false)
	}
	return n, err
}

// Close ends the body; before its end the connection is closed.
func (b *directBody) Close() error {
	if b.c != nil {
		b.err = errors.New("http: read on closed response body")
		b.end(false)
	}
	return nil
}

// end returns the connection to the pool after a complete exchange that
// allows keep-alive, or closes it.
func (b *directBody) end(complete bool) {
	c := b.c
	b.c = nil
	keep := complete && b.alive && !c.sawEOF
	if !b.stop() {
		// The cancellation ran, or is running: its deadline may land
		// on the connection at any time.
		keep = false
	}
	if u := b.upload; u != nil {
		u.mu.Lock()
		if !u.over {
			if keep {
				// The upload decides, within its grace.
				u.then = func(written bool) { c.release(written) }
				c.conn.SetWriteDeadline(time.Now().Add(uploadGrace))
				u.mu.Unlock()
				return
			}
			u.mu.Unlock()
			c.conn.Close() // which ends the upload
			return
		}
		keep = keep && u.err == nil
		u.mu.Unlock()
	}
	c.release(keep)
}

// release returns c to the pool when keep, or closes it.
func (c *directConn) release(keep bool) {
	if keep && c.conn.SetDeadline(time.Time{}) == nil && c.t.put(c) {
		return
	}
	c.conn.Close()
}
