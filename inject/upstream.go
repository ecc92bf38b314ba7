package inject

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/seqstamp"
	"github.com/halfopen/rehearse/internal/wait"
	"github.com/halfopen/rehearse/journal"
)

// upstream is one served dependency: a listener, how it answers when
// healthy, and its faults.
type upstream struct {
	s       *Server
	cfg     UpstreamConfig
	healthy http.Handler
	closeFn func()     // releases the healthy handler's resources (proxy pools)
	fast    *fastProxy // proxy mode's fast path; nil: every request takes the full path
	fake    *fastFake  // fake mode's fast path; nil: every request takes the full path
	handoff *connQueue // where the fast path hands connections to the full path (srv)
	probeUA *regexp.Regexp
	nameKey uint64

	gauge    prometheus.Gauge // in-flight, this upstream's child
	faults   atomic.Pointer[[]*faultState]
	inFlight atomic.Int64
	ordinal  atomic.Uint64
	handlers tracker

	mu      sync.Mutex
	addr    string
	ln      net.Listener
	srv     *http.Server
	conns   map[net.Conn]struct{}
	pauses  int
	stopped bool
	serving sync.WaitGroup
}

func newUpstream(s *Server, cfg UpstreamConfig) (*upstream, error) {
	u := &upstream{s: s, cfg: cfg, conns: map[net.Conn]struct{}{}, nameKey: hashKey("upstream", cfg.Name)}
	if pt := cfg.ProbeTag.UserAgent; pt != "-" {
		u.probeUA = regexp.MustCompile(pt) // validated by withDefaults
	}
	switch cfg.Mode {
	case ModeFake:
		fh := &fakeHandler{cfg: *cfg.Healthy, name: cfg.Name, api: cfg.API}
		u.healthy = fh
		if !fakeFastPathOff {
			u.fake = newFastFake(fh)
		}
	case ModeProxy:
		h, closeFn, err := newProxyHandler(cfg.Target)
		if err != nil {
			return nil, &rehearse.ConfigError{Path: fmt.Sprintf("upstreams[%s].target", cfg.Name), Err: err}
		}
		u.healthy, u.closeFn = h, closeFn
		if !fastPathOff {
			u.fast = newFastProxy(cfg.Target)
		}
	}
	empty := []*faultState{}
	u.faults.Store(&empty)
	return u, nil
}

// accepts checks that fault can act on this upstream's mode.
func (u *upstream) accepts(spec FaultSpec, f Fault) error {
	_, isHTTP := f.(HTTPFault)
	_, isConn := f.(ConnFault)
	_, isTCP := f.(TCPFault)
	lf, isListener := f.(ListenerFault)
	if isListener && lf != nil && (spec.Probability > 0 || spec.FirstN > 0 || spec.EveryNth > 0 || spec.Match != nil || spec.HealthChecks) {
		return fmt.Errorf("%s acts on the listener for the whole window: probability, first_n, every_nth, match and health_checks do not apply", spec.Type)
	}
	if u.cfg.Mode == ModeTCP {
		if !isTCP && !isListener {
			return fmt.Errorf("fault type %s does not apply to tcp upstream %q; tcp faults: latency, reset, blackhole, bandwidth, refuse", spec.Type, u.cfg.Name)
		}
		if spec.Match != nil || spec.HealthChecks {
			return fmt.Errorf("match and health_checks need HTTP; upstream %q is tcp", u.cfg.Name)
		}
		return nil
	}
	if !isHTTP && !isConn && !isListener {
		return fmt.Errorf("fault type %s applies to tcp upstreams only; %q is %s", spec.Type, u.cfg.Name, u.cfg.Mode)
	}
	return nil
}

// Addr returns the bound address, "" before start.
func (u *upstream) Addr() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.addr
}

func (u *upstream) start() error {
	ln, err := rehearse.Listen(u.cfg.Listen)
	if err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.addr = ln.Addr().String()
	u.ln = ln
	if u.cfg.Mode != ModeTCP {
		u.srv = &http.Server{
			Handler:     u,
			BaseContext: func(net.Listener) context.Context { return u.s.ctx },
			ConnState:   u.connState,
			ErrorLog:    log.New(discardWriter{}, "", 0),
			// Slowloris protection is not our job here: the gateway is the
			// client and holding requests open is what faults do.
		}
	}
	if u.fastPath() {
		// The full path serves what the fast path hands over, for the
		// server's whole life (pauses included).
		u.handoff = newConnQueue(ln.Addr())
		u.serving.Add(1)
		go func() {
			defer u.serving.Done()
			u.srv.Serve(u.handoff)
		}()
	}
	u.serveLocked(ln)
	return nil
}

// serveLocked starts serving ln. The caller holds u.mu.
func (u *upstream) serveLocked(ln net.Listener) {
	u.serving.Add(1)
	go func() {
		defer u.serving.Done()
		switch {
		case u.fastPath():
			u.acceptFast(ln)
		case u.srv != nil:
			u.srv.Serve(ln)
		default:
			u.acceptTCP(ln)
		}
	}()
}

// fastPath reports whether connections are served on a fast path first
// (fastpath.go, fastfake.go).
func (u *upstream) fastPath() bool { return u.fast != nil || u.fake != nil }

func (u *upstream) connState(c net.Conn, st http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch st {
	case http.StateNew:
		if u.pauses > 0 || u.stopped {
			// Accepted just before the listener closed: refuse it too.
			c.Close()
			return
		}
		u.conns[c] = struct{}{}
	case http.StateHijacked, http.StateClosed:
		delete(u.conns, c)
	}
}

// Pause implements ListenerControl.
func (u *upstream) Pause() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.pauses++
	if u.pauses > 1 || u.stopped {
		return nil
	}
	err := u.ln.Close()
	for c := range u.conns {
		c.Close()
		delete(u.conns, c)
	}
	return err
}

// Resume implements ListenerControl: it rebinds the same address when the
// last pause ends. If the port was taken meanwhile, it says so and keeps
// trying in the background (every 50ms) until it succeeds or the server
// closes, so that ending a window never blocks.
func (u *upstream) Resume() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.pauses == 0 {
		return errors.New("resume without pause")
	}
	u.pauses--
	if u.pauses > 0 || u.stopped || u.s.ctx.Err() != nil {
		return nil // still paused, or closing: nothing to reopen
	}
	if u.relisten() {
		return nil
	}
	msg := fmt.Sprintf("upstream %s: cannot reopen %s yet (port taken?); retrying", u.cfg.Name, u.addr)
	u.s.log.Warn(msg)
	u.s.rec.Record(&journal.Log{Level: "warn", Source: "inject", Msg: msg})
	u.s.wg.Add(1)
	go func() {
		defer u.s.wg.Done()
		for wait.For(u.s.ctx, 50*time.Millisecond) {
			u.mu.Lock()
			done := u.stopped || u.pauses > 0 || u.relisten()
			u.mu.Unlock()
			if done {
				return
			}
		}
	}()
	return nil
}

// relisten binds u.addr again and serves it; the caller holds u.mu.
func (u *upstream) relisten() bool {
	ln, err := rehearse.Listen(u.addr)
	if err != nil {
		return false
	}
	u.ln = ln
	u.serveLocked(ln)
	return true
}

// stop closes the listener and every connection and waits for the serving
// goroutines and handlers.
func (u *upstream) stop() error {
	u.mu.Lock()
	u.stopped = true
	var err error
	srv := u.srv
	if (srv == nil || u.fastPath()) && u.ln != nil && u.pauses == 0 {
		err = u.ln.Close()
	}
	for c := range u.conns {
		c.Close()
		delete(u.conns, c)
	}
	u.mu.Unlock()
	// http.Server.Close waits for its Serve loop, which may be blocked in
	// connState waiting for u.mu (a connection accepted while stopping, as
	// a gateway's health checks keep making): close it without the lock,
	// or both wait forever. connState refuses such a connection (stopped).
	if srv != nil {
		err = srv.Close()
	}
	u.serving.Wait()
	u.handlers.closeAndWait()
	if u.closeFn != nil {
		u.closeFn()
	}
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// classify reads what targeting and the journal need from a request
// whose body (its first maxWatchedBody bytes) was read ahead.
func (u *upstream) classify(r *http.Request, body []byte) (reqInfo, string) {
	return u.classifyParts(r.Method, r.URL.Path, r.Header, body)
}

// classifyParts is classify from a request's method, path, header and
// body (the fast paths have no *http.Request).
//
// The sequence number is the forwarded sequence header's, else the stamp
// the replayer wrote into the body (internal/seqstamp): a gateway that
// builds its own upstream request (an AI agent runtime) forwards no client
// header but passes the client's text through, so the stamp is searched
// in the whole body, wherever the gateway put that text.
func (u *upstream) classifyParts(method, path string, h http.Header, body []byte) (reqInfo, string) {
	info := reqInfo{method: method, path: path, header: h}
	if v := h.Get(u.cfg.SeqHeader); v != "" {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			info.seq, info.seqSrc = &n, journal.SeqFromHeader
		}
	}
	if info.seq == nil && len(body) > 0 {
		if n, ok := seqstamp.Find(body); ok {
			info.seq, info.seqSrc = &n, journal.SeqFromBody
		}
	}
	hc := u.cfg.HealthCheck
	if slices.Contains(hc.Paths, path) {
		info.health = true
	}
	for _, name := range hc.Headers {
		if h.Get(name) != "" {
			info.health = true
		}
	}
	probe := ""
	if ph := u.cfg.ProbeTag.Header; ph != "-" {
		if vals := h.Values(ph); len(vals) > 0 {
			probe = vals[0]
			if probe == "" {
				probe = ph
			}
		}
	}
	if probe == "" && u.probeUA != nil && u.probeUA.MatchString(h.Get("User-Agent")) {
		probe = h.Get("User-Agent")
	}
	return info, probe
}

// rand returns the random source of one request: seeded from the server
// seed, the upstream and the request's sequence stamp (or its arrival
// ordinal), so sampled delays repeat across runs.
func (u *upstream) rand(seq *uint64, ordinal uint64) *rand.Rand {
	key := ordinal<<1 | 1
	if seq != nil {
		key = *seq << 1
	}
	return rand.New(rand.NewPCG(uint64(u.s.seed), u.nameKey^key*0x9E3779B97F4A7C15))
}

// pick returns the first active fault that decides to act on the request,
// among those that can (usable tells).
func (u *upstream) pick(info reqInfo, usable func(*faultState) bool) *faultState {
	for _, f := range *u.faults.Load() {
		if usable(f) && f.decide(info, u.s.seed) {
			return f
		}
	}
	return nil
}

func httpUsable(f *faultState) bool { return f.http != nil || f.conn != nil }

// ServeHTTP serves one request: classify, decide, answer, record.
func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := u.s
	arrival := s.now()
	if !u.handlers.enter() {
		// Closing: hang up rather than answer an empty 200.
		panic(http.ErrAbortHandler)
	}
	defer u.handlers.leave()
	inFlight, done := u.track()
	defer done()

	// The body is read ahead before anything else (watchBody): the
	// sequence stamp may be in it, and faults are picked by sequence.
	info, probe := u.classify(r, watchBody(r))
	ord := u.ordinal.Add(1)
	rw := &respWriter{w: w, now: s.now}
	x := &Exchange{W: rw, Upstream: u.cfg.Name, rw: rw, bodyLen: -1, api: dialect(u.cfg.API, r.URL.Path)}
	x.newRand = func() *rand.Rand { return u.rand(info.seq, ord) }
	x.warn = func(msg string) {
		msg = "upstream " + u.cfg.Name + ": " + msg
		s.log.Warn(msg)
		s.rec.Record(&journal.Log{Level: "warn", Source: "inject", Msg: msg})
	}
	r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, x))
	x.R = r
	f := u.pick(info, httpUsable)
	ev := u.newEvent(r.Method, r.URL.Path, r.RemoteAddr, r.Header, info, probe, inFlight)
	if f != nil {
		x.Fault = f.spec.Name
		ev.Fault, ev.FaultType = f.spec.Name, f.spec.Type
		s.m.applied.WithLabelValues(u.cfg.Name, f.spec.Name).Inc()
	}
	// Deferred so that a fault aborting the handler (panic) is recorded too.
	defer u.record(arrival, ev, x)

	switch {
	case f == nil:
		u.healthy.ServeHTTP(rw, r)
	case f.conn != nil:
		drain(r)
		conn, err := x.Hijack()
		if err != nil {
			s.log.Error("hijack failed", "upstream", u.cfg.Name, "err", err)
			x.SetOutcome(journal.OutcomeError)
			return
		}
		f.conn.ServeConn(x, conn)
	default:
		f.http.ServeHTTP(x, u.healthy)
	}
	if x.getOutcome() == "" {
		_, _, _, werr := rw.snapshot()
		x.SetOutcome(handlerOutcome(werr, x.getWrote(), r.Context().Err()))
	}
}

// handlerOutcome is how an exchange no fault ended ended: werr the first
// write or flush error, wrote how far the healthy handler got, ctxErr the
// request context's error when the handler returned. A handler that
// wrote its whole answer without an error completed it, even if the
// gateway closed the connection the moment it had read it (net/http then
// cancels the context, racing this check), as on the fast path; one cut
// short by a hang-up (it returns early) or a failed write is client_gone.
func handlerOutcome(werr error, wrote wroteState, ctxErr error) journal.Outcome {
	switch {
	case werr == nil && wrote == wroteAll:
		return journal.OutcomeUpstreamComplete
	case werr != nil || ctxErr != nil:
		return journal.OutcomeUpstreamGone
	}
	return journal.OutcomeUpstreamComplete
}

func (u *upstream) record(arrival time.Duration, ev *journal.UpstreamRequest, x *Exchange) {
	status, ra, n, _ := x.rw.snapshot()
	ev.Status = status
	ev.Bytes = n
	if d, ok := parseRetryAfter(ra, x.rw.sentAt()); ok {
		ev.RetryAfter = d
	}
	ev.PromptTokens, ev.CompletionTokens = x.usage()
	ev.Outcome = x.getOutcome()
	// A hang-up after the content, before the stream's end marker: the
	// gateway had its answer (journal.UpstreamRequest.Delivered).
	ev.Delivered = ev.Outcome == journal.OutcomeUpstreamGone && x.getWrote() >= wroteContent
	if ev.Outcome == "" {
		// The handler panicked before deciding (an abort from the proxy).
		ev.Outcome = journal.OutcomeUpstreamCut
	}
	ev.Done = u.s.now()
	x.rw.mu.Lock()
	ev.HeadersAt = x.rw.headAt
	x.rw.mu.Unlock()
	headReleased(ev)
	// Counted before it is recorded: whoever sees the exchange in the
	// journal finds it in the requests counter too (a goroutine
	// preempted in between, on a loaded machine, once left the counter
	// a request behind the journal).
	u.s.m.requests.WithLabelValues(u.cfg.Name, string(ev.Outcome)).Inc()
	u.s.rec.RecordAt(arrival, ev)
}

// newEvent is the journal event of an exchange, with what the request
// tells, for the full path and both fast paths alike: one constructor, so
// that a field the analysis reads cannot be filled on one path and missed
// on another (the fast paths once lacked the idempotency key and budget).
func (u *upstream) newEvent(method, path, remote string, h http.Header, info reqInfo, probe string, inFlight int64) *journal.UpstreamRequest {
	return &journal.UpstreamRequest{
		Upstream: u.cfg.Name, Method: method, Path: path, Seq: info.seq, SeqFrom: info.seqSrc,
		Remote: remote, UserAgent: h.Get("User-Agent"), ProbeTag: probe,
		HealthCheck: info.health, InFlight: int(inFlight),
		IdempotencyKey: keyFingerprint(h.Get(u.cfg.IdempotencyHeader)),
		Budget:         budget(h.Get(u.cfg.DeadlineHeader)),
	}
}

// headReleased completes an exchange's event as it is recorded (Done
// set), on every path: a head not yet released to the connection (a
// small answer net/http, or the fast path copying it, writes after the
// exchange is recorded) leaves with the rest of the answer, at Done. An
// exchange that answered no status sent no head: HeadersAt stays zero.
func headReleased(ev *journal.UpstreamRequest) {
	if ev.Status != 0 && ev.HeadersAt == 0 {
		ev.HeadersAt = ev.Done
	}
}

// keyFingerprint is a short, non-reversible fingerprint of an idempotency
// key: enough to tell attempts with the same key from attempts with
// different keys, without writing the key.
func keyFingerprint(v string) string {
	if v == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(v))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// budget reads a deadline header in milliseconds; zero when absent or
// unreadable.
func budget(v string) time.Duration {
	ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || ms <= 0 || ms > 1e10 || ms != ms {
		return 0
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// tracker counts running handlers and lets stop wait for them; once closed,
// no handler enters.
type tracker struct {
	mu     sync.Mutex
	n      int
	closed bool
	zero   chan struct{}
}

func (t *tracker) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.n++
	return true
}

func (t *tracker) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 && t.zero != nil {
		close(t.zero)
		t.zero = nil
	}
}

func (t *tracker) closeAndWait() {
	t.mu.Lock()
	t.closed = true
	if t.n == 0 {
		t.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	t.zero = ch
	t.mu.Unlock()
	<-ch
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// track counts one exchange or connection in flight on the upstream (its
// count and its gauge) until done is called; inFlight includes this one.
func (u *upstream) track() (inFlight int64, done func()) {
	inFlight = u.inFlight.Add(1)
	u.gauge.Inc()
	return inFlight, func() {
		u.inFlight.Add(-1)
		u.gauge.Dec()
	}
}
