package inject

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// respWriter is the server's view of a response: it records the status, the
// headers at the time they were sent and the body bytes written, and it lets
// faults flush and hijack.
type respWriter struct {
	w http.ResponseWriter

	mu          sync.Mutex
	status      int
	wroteHeader bool
	retryAfter  string // the Retry-After header as sent
	sentTime    time.Time
	bytes       int64
	// flushed is bytes at the last flush that went out without an
	// error: when a write or flush fails, what net/http still held of
	// the body since then did not reach the connection, and bytes
	// falls back to it.
	flushed  int64
	err      error
	hijacked bool
	// now is the run's clock; headAt is when the head was released to
	// the connection (stampHead), zero while net/http still holds it.
	now    func() time.Duration
	headAt time.Duration
}

// stampHead notes, just before a write that can carry the response head
// to the connection, when the gateway could first read it; rw.mu is
// held. net/http keeps the head in its buffers until the handler
// flushes, hijacks, writes more than it buffers, or returns (record
// stamps that last case).
func (rw *respWriter) stampHead() {
	if rw.headAt == 0 && rw.now != nil {
		rw.headAt = max(rw.now(), 1)
	}
}

func (rw *respWriter) Header() http.Header { return rw.w.Header() }

func (rw *respWriter) WriteHeader(code int) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.wroteHeader || rw.hijacked {
		return
	}
	if code >= 200 || code == http.StatusSwitchingProtocols {
		rw.wroteHeader = true
		rw.status = code
		rw.retryAfter = rw.w.Header().Get("Retry-After")
		rw.sentTime = time.Now()
	}
	rw.w.WriteHeader(code)
}

func (rw *respWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	if rw.hijacked {
		rw.mu.Unlock()
		return 0, http.ErrHijacked
	}
	if !rw.wroteHeader {
		rw.wroteHeader = true
		rw.status = http.StatusOK
		rw.retryAfter = rw.w.Header().Get("Retry-After")
		rw.sentTime = time.Now()
	}
	if rw.bytes+int64(len(p)) > handlerBuffer {
		// Past what net/http buffers of a body: the head may go now.
		rw.stampHead()
	}
	rw.mu.Unlock()
	n, err := rw.w.Write(p)
	rw.mu.Lock()
	rw.bytes += int64(n)
	if err != nil {
		rw.failed(err)
	}
	rw.mu.Unlock()
	return n, err
}

// failed records a write or flush error; rw.mu is held. The body bytes
// since the last good flush are not counted written: net/http held them,
// and the connection they were for has failed.
func (rw *respWriter) failed(err error) {
	if rw.err == nil {
		rw.err = err
	}
	rw.bytes = rw.flushed
}

// Flush sends buffered bytes to the client.
func (rw *respWriter) Flush() {
	rw.mu.Lock()
	hj := rw.hijacked
	if !hj {
		rw.stampHead() // a flush sends the head (an implicit 200 without one)
	}
	rw.mu.Unlock()
	if hj {
		return
	}
	err := http.NewResponseController(rw.w).Flush()
	rw.mu.Lock()
	if err != nil {
		rw.failed(err)
	} else if rw.err == nil {
		rw.flushed = rw.bytes
	}
	rw.mu.Unlock()
}

// Hijack implements http.Hijacker.
func (rw *respWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, err := rw.hijack()
	if err != nil {
		return nil, nil, err
	}
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

func (rw *respWriter) hijack() (net.Conn, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.hijacked {
		return nil, http.ErrHijacked
	}
	rc := http.NewResponseController(rw.w)
	if rw.wroteHeader {
		// net/http's Hijack flushes its chunk writer but drops the bytes
		// still in the response buffer in front of it: flush those first.
		rw.stampHead()
		if err := rc.Flush(); err != nil {
			return nil, err
		}
	}
	c, buf, err := rc.Hijack()
	if err != nil {
		return nil, err
	}
	// Bytes the server buffered for us go out before the caller acts on
	// the raw connection.
	if buf != nil && buf.Writer.Buffered() > 0 {
		if err := buf.Writer.Flush(); err != nil {
			c.Close()
			return nil, err
		}
	}
	rw.hijacked = true
	rw.flushed = rw.bytes // flushed above: on the connection now
	return c, nil
}

// addBytes counts body bytes a fault wrote on a hijacked connection.
func (rw *respWriter) addBytes(n int64) {
	rw.mu.Lock()
	rw.bytes += n
	rw.flushed = rw.bytes // written to the connection itself
	rw.mu.Unlock()
}

func (rw *respWriter) snapshot() (status int, retryAfter string, bytes int64, err error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.status, rw.retryAfter, rw.bytes, rw.err
}

// sentAt returns when the headers were sent (now if they were not).
func (rw *respWriter) sentAt() time.Time {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.sentTime.IsZero() {
		return time.Now()
	}
	return rw.sentTime
}

// Unwrap lets http.ResponseController reach the server's writer.
func (rw *respWriter) Unwrap() http.ResponseWriter { return rw.w }

func contentLength(h http.Header) int64 {
	v := h.Get("Content-Length")
	if v == "" {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// bodyWriter adapts a write function and a base writer into an
// http.ResponseWriter that faults use to alter the body; Flush and Unwrap
// pass through to the base.
type bodyWriter struct {
	base  http.ResponseWriter
	write func(p []byte) (int, error)
	// header, when set, runs once before the headers are sent and may
	// change the status.
	header func(code int) int
	// flushHeader sends the headers at once rather than with the body.
	flushHeader bool
	sent        bool
}

func (b *bodyWriter) Header() http.Header { return b.base.Header() }

func (b *bodyWriter) WriteHeader(code int) {
	if b.sent {
		return
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		b.base.WriteHeader(code)
		return
	}
	b.sent = true
	if b.header != nil {
		code = b.header(code)
	}
	b.base.WriteHeader(code)
	if b.flushHeader {
		b.Flush()
	}
}

func (b *bodyWriter) Write(p []byte) (int, error) {
	if !b.sent {
		b.WriteHeader(http.StatusOK)
	}
	return b.write(p)
}

func (b *bodyWriter) Flush() {
	if f, ok := b.base.(http.Flusher); ok {
		f.Flush()
	}
}

func (b *bodyWriter) Unwrap() http.ResponseWriter { return b.base }
