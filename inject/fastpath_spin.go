package inject

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// The wait for the upstream's answer. On an idle machine a process that
// blocks and is woken again pays for the wake-up of its CPU: on a virtual
// machine whose idle vCPUs halt, about 50 µs a wake-up (docs/benchmarks.md
// has the breakdown), and a proxied request has four of them where a
// direct one has none of its own. The one a proxy can save without
// guessing at what the gateway sends next is its own wait for the
// upstream's answer to a request it has just forwarded: for a short while
// it polls the upstream connection instead of blocking on it.
//
// The poll is bounded and adaptive, so that it costs nothing where it
// cannot pay: it runs only when no other request is in flight through the
// upstream (with others in flight the process has work and does not go
// idle) and when the upstream's recent answers came within the window
// (a slow real upstream is waited for as before); it ends at the first
// byte, at an error, or at the window's end, and then the read blocks as
// usual. Its CPU cost is at most spinWindow per request, spent only while
// the process would otherwise be idle.

// spinWindow bounds one poll for an answer, and is the recent answer time
// (answerEWMA) above which the fast path does not poll at all.
const spinWindow = 200 * time.Microsecond

// spinOff turns the poll off: REHEARSE_INJECT_POLL=off in the environment
// (to save the CPU on a machine where wake-ups are cheap, or to compare).
var spinOff = os.Getenv("REHEARSE_INJECT_POLL") == "off"

// answerTimes keeps the upstream's recent time from a forwarded request to
// its response head: an exponentially weighted mean (weight 1/8), shared by
// the upstream's fast connections. Updates from concurrent connections may
// overwrite each other; the mean only decides whether to poll.
type answerTimes struct{ ewma atomic.Int64 }

// add records one answer time.
func (a *answerTimes) add(d time.Duration) {
	old := a.ewma.Load()
	a.ewma.Store(old + (int64(d)-old)/8)
}

// spin returns how long to poll for the answer to a request just
// forwarded, inFlight being the requests in flight through the upstream
// (this one included); 0: do not poll.
func (a *answerTimes) spin(inFlight int64) time.Duration {
	if spinOff || inFlight != 1 || time.Duration(a.ewma.Load()) > spinWindow {
		return 0
	}
	return spinWindow
}

// upReader is what the fast path's buffered reader reads the upstream
// connection through: a plain read, or after spinFor a poll of at most
// that long first.
type upReader struct {
	c     net.Conn
	rc    syscall.RawConn // nil: the connection cannot be polled
	until time.Time       // end of the poll; zero: none
}

func newUpReader(c net.Conn) upReader {
	r := upReader{c: c}
	if sc, ok := c.(syscall.Conn); ok {
		r.rc, _ = sc.SyscallConn()
	}
	return r
}

// spinFor makes the next read poll for d (0: not at all).
func (r *upReader) spinFor(d time.Duration) {
	if d > 0 && r.rc != nil {
		r.until = time.Now().Add(d)
	} else {
		r.until = time.Time{}
	}
}

func (r *upReader) Read(p []byte) (int, error) {
	if !r.until.IsZero() {
		until := r.until
		r.until = time.Time{}
		for {
			if n, err, done := pollRead(r.c, r.rc, p); done {
				return n, err
			}
			if !time.Now().Before(until) {
				break
			}
			yieldCPU()
		}
	}
	return r.c.Read(p)
}
