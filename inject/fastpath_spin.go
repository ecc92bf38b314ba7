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
// machine whose idle vCPUs halt, some 50 µs a wake-up (docs/benchmarks.md
// has the breakdown), and a proxied request has four of them where a
// direct one has none of its own. The one a proxy can save without
// guessing at what the gateway sends next is its own wait for the
// upstream's answer to a request it has just forwarded: for a short while
// it polls the upstream connection instead of blocking on it.
//
// The poll is bounded and adaptive, so that it is used only where it pays:
//   - only when no other request is in flight through the upstream (with
//     others in flight the process has work and does not go idle);
//   - only while polled answers have been coming sooner than blocked ones:
//     both are measured (a mean of each), and one eligible request in
//     exploreEvery takes the other way, to keep both means current. Where
//     the upstream shares the process, or wake-ups are cheap, polling
//     does not shorten the wait and stops; for a slow real upstream polled
//     answers come no sooner, beyond the window, and polling stops too;
//   - a poll ends at the first byte, at an error or at spinWindow, and the
//     read then blocks as usual; between reads it yields the CPU
//     (sched_yield on Linux).
//
// Its CPU cost is at most spinWindow per request, spent only while the
// process would otherwise be idle.

// spinWindow bounds one poll for an answer; polling stops while polled
// answers take longer on average.
const spinWindow = 200 * time.Microsecond

// exploreEvery: one eligible request in this many takes the way not
// chosen, so that both means stay current (rare enough to leave the p99
// of a sequential client alone).
const exploreEvery = 128

// spinOff turns the poll off for upstreams made while it is set:
// REHEARSE_INJECT_POLL=off in the environment (to save the CPU on a
// machine where wake-ups are cheap, or to compare).
var spinOff = os.Getenv("REHEARSE_INJECT_POLL") == "off"

// answerTimes keeps the upstream's recent time from a forwarded request to
// its response head, polled and blocked apart: exponentially weighted means
// (weight 1/8; 0: none yet), shared by the upstream's fast connections.
// Updates from concurrent connections may overwrite each other; the means
// only decide whether to poll.
type answerTimes struct {
	polled, blocked atomic.Int64 // ns
	n               atomic.Uint64
	off             bool // no poll for this upstream (spinOff when it was made)
}

// add records one answer time, polled or not.
func (a *answerTimes) add(d time.Duration, polled bool) {
	m := &a.blocked
	if polled {
		m = &a.polled
	}
	old := m.Load()
	if old == 0 {
		m.Store(int64(d))
		return
	}
	m.Store(old + (int64(d)-old)/8)
}

// spin returns how long to poll for the answer to a request just
// forwarded, inFlight being the requests in flight through the upstream
// (this one included); 0: do not poll.
func (a *answerTimes) spin(inFlight int64) time.Duration {
	if a.off || inFlight != 1 {
		return 0
	}
	p, b := a.polled.Load(), a.blocked.Load()
	var poll bool
	switch {
	case b == 0:
		poll = false // measure the blocked wait first
	case p == 0:
		poll = true
	default:
		poll = p < b && time.Duration(p) <= spinWindow
	}
	if a.n.Add(1)%exploreEvery == 0 {
		poll = !poll
	}
	if !poll {
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
