package inject

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// Link is one tcp-mode connection from the gateway, relayed to the real
// upstream unless a fault decides otherwise.
type Link struct {
	// Client is the gateway's connection.
	Client net.Conn

	ctx    context.Context
	target string
	rng    *rand.Rand
	down   atomic.Int64
	outcomeCell
}

// Context is cancelled when the server closes.
func (l *Link) Context() context.Context { return l.ctx }

// Rand returns the link's seeded random source (see Exchange.Rand).
func (l *Link) Rand() *rand.Rand { return l.rng }

// Pipe dials the target and relays bytes both ways until both directions
// end, half-closing each side as its peer finishes. wrapDown and wrapUp,
// when not nil, wrap the writer towards the client and towards the target
// (a fault's delay or rate limit). Without wrappers the copy uses the
// kernel's splice where the OS has it.
func (l *Link) Pipe(wrapDown, wrapUp func(io.Writer) io.Writer) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
	up, err := d.DialContext(dctx, "tcp", l.target)
	cancel()
	if err != nil {
		// The real upstream is down: pass that on as a refusal would,
		// with a reset, and record it.
		resetConn(l.Client)
		l.SetOutcome(journal.OutcomeError)
		return
	}
	stop := context.AfterFunc(l.ctx, func() {
		l.Client.Close()
		up.Close()
	})
	defer stop()

	var failed atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var w io.Writer = up
		if wrapUp != nil {
			w = wrapUp(up)
		}
		_, err := io.Copy(w, l.Client)
		if err != nil {
			if peerGone(err) {
				failed.Store(true)
			}
			up.Close()
			l.Client.Close()
			return
		}
		closeWrite(up)
	}()
	var w io.Writer = l.Client
	if wrapDown != nil {
		w = wrapDown(l.Client)
	}
	n, err := io.Copy(w, up)
	l.down.Add(n)
	if err != nil {
		if peerGone(err) {
			failed.Store(true)
		}
		up.Close()
		l.Client.Close()
	} else {
		closeWrite(l.Client)
	}
	wg.Wait()
	up.Close()
	l.Client.Close()
	// A connection the harness closed itself (shutdown, refuse) counts as
	// completed; one the gateway reset is client_gone.
	if failed.Load() {
		l.SetOutcome(journal.OutcomeUpstreamGone)
	} else {
		l.SetOutcome(journal.OutcomeUpstreamComplete)
	}
}

// peerGone reports whether a relay error means a peer reset or vanished,
// as opposed to the harness closing the connection itself.
func peerGone(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

func tcpUsable(f *faultState) bool { return f.tcp != nil }

// acceptTCP accepts tcp-mode connections until ln closes.
func (u *upstream) acceptTCP(ln net.Listener) { u.acceptConns(ln, u.serveTCP) }

// acceptConns accepts connections until ln closes and serves each with
// serve in its own goroutine, tracked in u.conns so that a pause or a stop
// can close it; it returns when every connection it served is done.
// Connections arriving while the upstream is paused or stopped are closed
// at once.
func (u *upstream) acceptConns(ln net.Listener, serve func(net.Conn)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		u.mu.Lock()
		if u.stopped || u.pauses > 0 {
			u.mu.Unlock()
			c.Close()
			continue
		}
		u.conns[c] = struct{}{}
		u.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			serve(c)
			u.mu.Lock()
			delete(u.conns, c)
			u.mu.Unlock()
		}()
	}
}

// serveTCP relays one connection, or lets a fault have it, and records it
// as one upstream.request (method "TCP").
func (u *upstream) serveTCP(c net.Conn) {
	s := u.s
	arrival := s.now()
	if !u.handlers.enter() {
		c.Close()
		return
	}
	defer u.handlers.leave()
	inFlight, done := u.track()
	defer done()
	ord := u.ordinal.Add(1)
	l := &Link{Client: c, ctx: s.ctx, target: u.cfg.Target, rng: u.rand(nil, ord)}
	f := u.pick(reqInfo{method: "TCP"}, tcpUsable)
	ev := &journal.UpstreamRequest{Upstream: u.cfg.Name, Method: "TCP", Remote: c.RemoteAddr().String(), InFlight: int(inFlight)}
	if f != nil {
		ev.Fault, ev.FaultType = f.spec.Name, f.spec.Type
		s.m.applied.WithLabelValues(u.cfg.Name, f.spec.Name).Inc()
		f.tcp.ServeTCP(l)
	} else {
		l.Pipe(nil, nil)
	}
	c.Close()
	ev.Bytes = l.down.Load()
	ev.Outcome = l.getOutcome()
	if ev.Outcome == "" {
		ev.Outcome = journal.OutcomeUpstreamComplete
	}
	ev.Done = s.now()
	// Counted before it is recorded, as on the HTTP paths (record).
	s.m.requests.WithLabelValues(u.cfg.Name, string(ev.Outcome)).Inc()
	s.rec.RecordAt(arrival, ev)
}
