package inject

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/halfopen/rehearse/internal/wait"
	"github.com/halfopen/rehearse/journal"
)

// Fault is one compiled entry of the fault catalogue. Describe says in a few
// words what it does, for listings and logs. Where a fault acts is said by
// the interfaces it implements, at least one of: HTTPFault (answers or
// alters an HTTP exchange), ConnFault (takes over the raw connection of an
// HTTP exchange), TCPFault (alters a tcp-mode connection) and ListenerFault
// (acts on the listener for its whole window). The server asks for these
// interfaces; it never switches on concrete fault types.
type Fault interface {
	Describe() string
}

// HTTPFault alters one HTTP exchange. next serves the healthy response (the
// fake answer, or the real upstream's in proxy mode): a fault that replaces
// the response ignores it, a fault that alters the response wraps x.W and
// calls next.ServeHTTP(wrapped, x.R).
type HTTPFault interface {
	Fault
	ServeHTTP(x *Exchange, next http.Handler)
}

// ConnFault takes over the raw connection of an HTTP exchange before any
// response byte is written: the server has read the request headers,
// hijacked the connection and passes it; the fault must close it.
type ConnFault interface {
	Fault
	ServeConn(x *Exchange, conn net.Conn)
}

// TCPFault alters one tcp-mode connection. It may relay it (l.Pipe with
// wrapped writers), or not.
type TCPFault interface {
	Fault
	ServeTCP(l *Link)
}

// ListenerFault acts on an upstream's listener for the whole fault window
// rather than on requests (refuse closes it). Begin is called when the
// window opens, End when it closes.
type ListenerFault interface {
	Fault
	Begin(l ListenerControl) error
	End(l ListenerControl) error
}

// ListenerControl is what a ListenerFault may do to an upstream's listener.
type ListenerControl interface {
	// Pause closes the listener and every open connection: new connections
	// are refused by the kernel (ECONNREFUSED). Pauses nest.
	Pause() error
	// Resume reopens the listener on the same address when the last pause
	// ends.
	Resume() error
}

// Exchange is one HTTP request to an upstream and the means to answer it.
type Exchange struct {
	// R is the request as the upstream received it.
	R *http.Request
	// W writes the response; it records the status, the headers and the
	// body bytes for the journal, and supports http.Flusher and
	// http.Hijacker.
	W http.ResponseWriter
	// Upstream is the upstream's name; Fault the name of the fault
	// applied, "" when healthy.
	Upstream, Fault string

	rw       *respWriter
	api      string // the provider API of the request (provider.go), "" generic
	warn     func(msg string)
	newRand  func() *rand.Rand
	rng      *rand.Rand
	mu       sync.Mutex
	bodyLen  int64
	clientGo bool
	prompt   int64
	output   int64
	wrote    wroteState // how far the healthy handler got
	outcomeCell
}

// wroteState is how far the healthy handler got in writing its answer,
// every write and flush before it without an error.
type wroteState uint8

const (
	wroteNone wroteState = iota
	// wroteContent: every content event and the usage are written; only
	// the stream's end marker ("data: [DONE]", message_stop) is left.
	wroteContent
	// wroteAll: the whole answer is written; what is left is net/http's
	// (a chunked body's last chunk, the buffer flushed on return).
	wroteAll
)

// setWrote records how far the healthy handler got (fake.go).
func (x *Exchange) setWrote(w wroteState) {
	x.mu.Lock()
	x.wrote = max(x.wrote, w)
	x.mu.Unlock()
}

func (x *Exchange) getWrote() wroteState {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.wrote
}

// wroteOK reports whether every write and flush of the response so far
// went out without an error.
func (x *Exchange) wroteOK() bool {
	_, _, _, err := x.rw.snapshot()
	return err == nil
}

// SetUsage records the tokens the upstream charged for this exchange.
func (x *Exchange) SetUsage(prompt, completion int64) {
	x.mu.Lock()
	x.prompt, x.output = prompt, completion
	x.mu.Unlock()
}

func (x *Exchange) usage() (prompt, completion int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.prompt, x.output
}

// Context returns the request's context: it is cancelled when the client
// hangs up or the server closes.
func (x *Exchange) Context() context.Context { return x.R.Context() }

// Rand returns the exchange's random source, seeded from the server seed,
// the upstream and the request, so that sampled delays repeat across runs.
// It is made on first use: most requests never need one.
func (x *Exchange) Rand() *rand.Rand {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.rng == nil {
		x.rng = x.newRand()
	}
	return x.rng
}

// outcomeCell is how an exchange or a link ended, as a fault recorded it
// (SetOutcome) for an end the server cannot see itself (a reset, a cut, a
// stall). Faults set it from their own goroutines, hence the lock.
type outcomeCell struct {
	mu sync.Mutex
	o  journal.Outcome
}

// SetOutcome records how the exchange or the link ended.
func (c *outcomeCell) SetOutcome(o journal.Outcome) {
	c.mu.Lock()
	c.o = o
	c.mu.Unlock()
}

func (c *outcomeCell) getOutcome() journal.Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.o
}

// Warn reports a problem with how a fault could be applied (not an outcome:
// a harness limitation the user should know about) to the log and the
// journal.
func (x *Exchange) Warn(msg string) {
	if x.warn != nil {
		x.warn(msg)
	}
}

// SetBodyLength tells faults the full length of the healthy body when the
// response does not carry a Content-Length (a chunked or streamed body);
// healthy handlers call it before writing the body.
func (x *Exchange) SetBodyLength(n int64) {
	x.mu.Lock()
	x.bodyLen = n
	x.mu.Unlock()
}

// BodyLength returns the full length of the healthy body: the one given to
// SetBodyLength, else the response's Content-Length header, else -1.
func (x *Exchange) BodyLength() int64 {
	x.mu.Lock()
	n := x.bodyLen
	x.mu.Unlock()
	if n >= 0 {
		return n
	}
	return contentLength(x.rw.Header())
}

// Hijack takes the raw connection away from the HTTP server, flushing what
// was written so far. The caller owns the connection and must close it.
func (x *Exchange) Hijack() (net.Conn, error) {
	c, err := x.rw.hijack()
	return c, err
}

// cutConn takes the connection over to end the response a fault's way.
// When the server will not give it up, the response is cut by aborting
// the handler instead, which closes the connection: either way the
// client's response ends early, recorded as cut.
func (x *Exchange) cutConn() net.Conn {
	conn, err := x.Hijack()
	if err != nil {
		x.SetOutcome(journal.OutcomeUpstreamCut)
		panic(http.ErrAbortHandler)
	}
	return conn
}

type exchangeKey struct{}

// ExchangeFrom returns the exchange a request belongs to, for healthy
// handlers that announce their body length; nil outside the server.
func ExchangeFrom(ctx context.Context) *Exchange {
	x, _ := ctx.Value(exchangeKey{}).(*Exchange)
	return x
}

// resetConn closes c with an RST instead of a FIN: SO_LINGER with a zero
// timeout makes close(2) abort the connection, so the peer's next read or
// write fails with ECONNRESET.
func resetConn(c net.Conn) error {
	// An interface, not *net.TCPConn: a connection the proxy's fast path
	// handed over embeds the TCP connection (fastpath.go).
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		if err := tc.SetLinger(0); err != nil {
			c.Close()
			return err
		}
	}
	return c.Close()
}

// awaitAcked waits, up to max, until the peer has acknowledged every byte
// written to c, so that a reset that follows cannot discard bytes still in
// flight: a cut "after 40 %" then delivers the 40 %. Where the send queue
// cannot be read it returns at once.
func awaitAcked(c net.Conn, max time.Duration) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	deadline := time.Now().Add(max)
	for {
		n, err := unsentBytes(rc)
		if err != nil || n == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// drain reads and discards the request body (bounded), so that net/http
// starts watching the connection and cancels the request's context when the
// client hangs up.
func drain(r *http.Request) {
	if r.Body != nil {
		io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
	}
}

// maxWatchedBody bounds how much of a request body watchBody reads ahead.
// Agent-gateway requests are a few kilobytes; a larger body is read ahead
// up to this bound and the rest is left to the handler to stream.
const maxWatchedBody = 8 << 20

// watchBody reads the request body ahead, before any fault or healthy
// handler runs, and gives the handler the same bytes to read. net/http
// watches a connection for the client hanging up only once the handler has
// read the body to its end; a handler that waits first (a latency fault,
// a slow healthy answer, a hold) would otherwise not notice a gateway that
// gave up on a POST until it writes, and the journal would record an
// exchange completed at the fault's delay instead of the gateway's
// timeout. Requests without a body are watched from the start already.
// It returns what it read ahead (the sequence stamp may be in it).
func watchBody(r *http.Request) []byte {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	orig := r.Body
	ahead, err := io.ReadAll(io.LimitReader(orig, maxWatchedBody))
	var rest io.Reader = orig // EOF again when ahead was the whole body
	if err != nil {
		rest = errReader{err}
	}
	r.Body = readCloser{Reader: io.MultiReader(bytes.NewReader(ahead), rest), Closer: orig}
	return ahead
}

// readCloser joins a reader and the closer of the body it replaces.
type readCloser struct {
	io.Reader
	io.Closer
}

// errReader fails every read with err (a body that broke while read ahead).
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// holdUntilGone blocks until the client hangs up, the server closes, or max
// elapses (0: no limit). It reports whether the client (or server) ended it.
func holdUntilGone(ctx context.Context, max time.Duration) bool {
	if max <= 0 {
		<-ctx.Done()
		return true
	}
	return !wait.For(ctx, max)
}

// errCut is returned to the healthy handler once a fault has ended the
// response, so that it stops writing.
var errCut = errors.New("inject: response ended by fault")
