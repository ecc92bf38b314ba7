package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// ErrWritesRefused is the sentinel of WritesRefusedError, for branching.
var ErrWritesRefused = errors.New("write requests refused")

// WritesRefusedError reports a corpus holding state-changing requests
// while writes are not allowed. It is an invalid-input error.
type WritesRefusedError struct {
	// Count is the number of write requests; ByMethod splits it.
	Count    int
	ByMethod map[string]int
}

func (e *WritesRefusedError) Error() string {
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(e.ByMethod)) {
		parts = append(parts, fmt.Sprintf("%d %s", e.ByMethod[m], m))
	}
	return fmt.Sprintf("replay: the capture holds %d write request(s) (%s) that could change real data behind the gateway; "+
		"pass --allow-writes (replay.allow_writes in a scenario) to replay them, or filter them out", e.Count, strings.Join(parts, ", "))
}

// Is makes the error match ErrWritesRefused and rehearse.ErrInvalid.
func (e *WritesRefusedError) Is(target error) bool {
	return target == ErrWritesRefused || target == rehearse.ErrInvalid
}

// Replayer sends a corpus of captured requests to a target on a fixed
// schedule. Build one with New; Run it once.
type Replayer struct {
	opt Options
	cfg config
	// src holds the corpus; one pass sends n of its requests: those at
	// the indexes in sendable, or the first n when sendable is nil (every
	// request sendable, the common case: no index to hold). templates
	// holds them prepared when the corpus is small (maxTemplates); a large
	// one is prepared request by request as it is sent, so that memory
	// stays what the corpus takes.
	src       Source
	n         int
	sendable  []int32
	templates []template
	skipped   int
	// unsendable counts, by reason, complete requests net/http cannot
	// send as captured.
	unsendable map[string]int
	rt         http.RoundTripper
	ownRT      ownTransport // nil with Options.Transport
	met        *metrics
	started    atomic.Bool
}

// Source is a corpus the replayer reads by index, in capture order:
// Requests (a slice) or a *capture.Corpus (compressed, for large
// captures). At returns a request the replayer does not change.
type Source interface {
	Len() int
	At(i int) *capture.Request
}

// Requests is a Source over a slice of requests.
type Requests []*capture.Request

// Len implements Source.
func (rs Requests) Len() int { return len(rs) }

// At implements Source.
func (rs Requests) At(i int) *capture.Request { return rs[i] }

// maxTemplates is the largest corpus whose requests New prepares once
// for every pass (about 1 KB each: the target URL and the header map);
// a larger one is prepared as it is sent (a few microseconds and
// allocations a send, before its due time), so that a capture of a
// million requests costs what its Source holds, not a gigabyte.
const maxTemplates = 4096

// New prepares a replay of corpus. It refuses a corpus with write requests
// unless opt.AllowWrites (a *WritesRefusedError), and skips incomplete
// requests (counted in the Summary). Every returned error wraps
// rehearse.ErrInvalid except a metrics registration failure.
func New(corpus []*capture.Request, opt Options, opts ...Option) (*Replayer, error) {
	return NewFrom(Requests(corpus), opt, opts...)
}

// NewFrom is New on a Source.
func NewFrom(src Source, opt Options, opts ...Option) (*Replayer, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Replayer{opt: o, src: src}
	for _, f := range opts {
		f(&r.cfg)
	}
	if r.cfg.rec == nil {
		r.cfg.rec = journal.Discard
	}
	writes := &WritesRefusedError{ByMethod: map[string]int{}}
	var times []time.Time // of the sendable requests, for original timing
	keep := src.Len() <= maxTemplates
	complete := 0
	for i := range src.Len() {
		q := src.At(i)
		if q == nil {
			continue
		}
		if q.Incomplete {
			r.skipped++
			continue
		}
		complete++
		if isWrite(q.Method) {
			writes.Count++
			writes.ByMethod[strings.ToUpper(q.Method)]++
		}
		t, why := prepare(q, &r.opt)
		if why != "" {
			if r.unsendable == nil {
				r.unsendable = map[string]int{}
			}
			r.unsendable[why]++
			continue
		}
		if r.sendable == nil && i != r.n {
			// The first gap: from now on the indexes are listed.
			r.sendable = make([]int32, r.n, r.n+(src.Len()-i))
			for k := range r.sendable {
				r.sendable[k] = int32(k)
			}
		}
		if r.sendable != nil {
			r.sendable = append(r.sendable, int32(i))
		}
		r.n++
		if keep {
			r.templates = append(r.templates, t)
		}
		if o.Timing == TimingOriginal && r.cfg.pacer == nil {
			times = append(times, q.Time)
		}
	}
	if complete == 0 {
		return nil, fmt.Errorf("%w: replay: no complete requests to replay (%d in the corpus, %d incomplete)", rehearse.ErrInvalid, src.Len(), r.skipped)
	}
	if writes.Count > 0 && !o.AllowWrites {
		return nil, writes
	}
	if r.n == 0 {
		return nil, fmt.Errorf("%w: replay: no request of the corpus can be sent as captured: %v", rehearse.ErrInvalid, r.unsendable)
	}
	if err := r.defaultPacer(times); err != nil {
		return nil, err
	}
	switch {
	case o.Transport != nil:
		r.rt = o.Transport
	case o.Target.Scheme == "http" && !o.StdTransport:
		r.ownRT = newDirectTransport(&r.opt)
		r.rt = r.ownRT
	default:
		r.ownRT = newTransport(&r.opt)
		r.rt = r.ownRT
	}
	if r.met, err = newMetrics(r.cfg.reg); err != nil {
		return nil, err
	}
	return r, nil
}

// defaultPacer sets the pacer the options ask for unless one was given:
// the capture's spacing (from the sendable requests' times) or the rate
// on its schedule (fixed, poisson or jittered).
func (r *Replayer) defaultPacer(times []time.Time) error {
	if r.cfg.pacer != nil {
		return nil
	}
	if r.opt.Timing != TimingOriginal {
		p, err := NewRatePacer(r.opt.Schedule, r.opt.Rate, r.opt.Seed)
		if err != nil {
			return err
		}
		r.cfg.pacer = p
		return nil
	}
	p, err := newOriginalPacer(times, r.opt.Speed)
	if err != nil {
		return err
	}
	r.cfg.pacer = p
	return nil
}

// ownTransport is a transport of the replayer's own: its connections are
// heldConns.
type ownTransport interface {
	http.RoundTripper
	CloseIdleConnections()
}

// dialer dials the replayer's connections: dial errors marked so that
// connect failures are classified as such, and each connection a
// heldConn, so that an early-dispatched request waits for its due time at
// the write.
func dialer(o *Options) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, &dialError{err}
		}
		return &heldConn{Conn: c}, nil
	}
}

// newTransport is the replayer's tuned net/http transport, for https://
// targets (and http:// ones with Options.StdTransport): connections kept
// alive and pooled up to the in-flight cap (so high rates do not churn
// ports), no transparent compression (byte counts are what the gateway
// sent), no HTTP/2 (the captures are HTTP/1.x), no proxy, and the
// replayer's dialer. newDirectTransport is the same for http:// targets
// without net/http's per-connection goroutines.
func newTransport(o *Options) *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         dialer(o),
		MaxIdleConns:        o.MaxInFlight,
		MaxIdleConnsPerHost: o.MaxInFlight,
		IdleConnTimeout:     idleConnTimeout,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		TLSHandshakeTimeout: o.ConnectTimeout,
	}
}

// seqOf is send i's sequence number: i, or above journal.WarmupSeqBase
// for a warm-up, so that no call of the warm-up is taken for one of the
// scored replay's. The schedule and the corpus position stay i's.
func (r *Replayer) seqOf(i uint64) uint64 {
	if r.opt.Warmup {
		return journal.WarmupSeqBase + i
	}
	return i
}

// Corpus returns the number of requests one pass of the corpus holds.
func (r *Replayer) Corpus() int { return r.n }

// template returns send i's request prepared for the target.
func (r *Replayer) template(i uint64) *template {
	k := int(i % uint64(r.n))
	if r.templates != nil {
		return &r.templates[k]
	}
	if r.sendable != nil {
		k = int(r.sendable[k])
	}
	t, _ := prepare(r.src.At(k), &r.opt)
	return &t
}

// Unsendable counts, by reason, the complete requests of the corpus that
// net/http cannot send as captured and New left out; nil when none.
func (r *Replayer) Unsendable() map[string]int { return maps.Clone(r.unsendable) }

// run is the state of one Run.
type run struct {
	r         *Replayer
	rec       journal.Recorder
	clock     waiter
	base      time.Duration // run time of the start of sending
	st        *stats
	inFlight  atomic.Int64
	wg        sync.WaitGroup
	work      chan job       // to idle workers; unbuffered
	workers   sync.WaitGroup // worker goroutines
	abortCtx  context.Context
	abort     context.CancelFunc
	threshold time.Duration
	lead      time.Duration // requests are dispatched this long before due; the sender waits the rest
	streams   streamRoutes  // what the run's complete streams taught (stream.go)
}

// Run replays until the schedule ends (Duration, or one pass with Once)
// and every request in flight has ended, and returns the summary. When ctx
// is cancelled it stops sending, waits up to DrainTimeout for the requests
// in flight (then aborts them), and returns the partial summary with an
// error wrapping ctx's error. Outcomes of requests are data in the
// summary and the journal, never errors.
func (r *Replayer) Run(ctx context.Context) (*Summary, error) {
	if !r.started.CompareAndSwap(false, true) {
		return nil, errors.New("replay: a Replayer runs once; build a new one")
	}
	var spin, lead time.Duration
	if r.cfg.waiter == nil {
		// Calibrates once per process, before the start. A random
		// schedule is sized by its mean interval: Due(1) is one random
		// gap, and the spin's share of a core is the mean's.
		if m, ok := r.cfg.pacer.(meanIntervaler); ok {
			spin, lead = spinFor(m.meanInterval()), leadFor(m.meanInterval())
		} else if d, ok := r.cfg.pacer.Due(1); ok {
			spin, lead = spinFor(d), leadFor(d)
		}
	}
	// The schedule starts one lead after now, so that the first request is
	// dispatched early like every other: due at now itself, it would have
	// its build, its connection's dial and the hand-offs on its send path,
	// the one late send of every run (docs/replay.md, "Timer accuracy").
	start := time.Now()
	origin := start.Add(lead)
	clock := r.cfg.clock
	if clock == nil {
		clock = journal.NewClock(start)
	}
	ru := &run{
		r:         r,
		rec:       r.cfg.rec,
		base:      clock.At(origin),
		st:        newStats(),
		threshold: r.opt.LateThreshold,
		lead:      lead,
	}
	if r.cfg.waiter != nil {
		ru.clock = r.cfg.waiter
	} else {
		ru.clock = newRealWaiter(origin, spin)
	}
	ru.abortCtx, ru.abort = context.WithCancel(context.WithoutCancel(ctx))
	defer ru.abort()
	if r.ownRT != nil {
		defer r.ownRT.CloseIdleConnections()
	}

	var count uint64
	if r.opt.Once {
		count = uint64(r.n)
	}
	s := &scheduler{
		pacer:       r.cfg.pacer,
		clock:       ru.clock,
		limit:       r.opt.Duration,
		count:       count,
		maxLateness: r.opt.MaxLateness,
		maxInFlight: int64(r.opt.MaxInFlight),
		inFlight:    &ru.inFlight,
		lead:        lead,
		dispatch:    ru.dispatch,
		drop:        ru.drop,
	}

	stopProgress := func() {}
	if r.cfg.progress != nil {
		stopProgress = ru.showProgress(r.cfg.progress)
	}
	slog.Debug("replay starting", "target", redact.URL(r.opt.Target.String()), "timing", r.opt.Timing, "rate", r.opt.Rate,
		"duration", r.opt.Duration, "corpus", r.n)

	ru.work = make(chan job)
	_, err := s.run(ctx)
	close(ru.work) // idle workers exit; busy ones after their request
	done := make(chan struct{})
	go func() { ru.wg.Wait(); ru.workers.Wait(); close(done) }()
	if err == nil {
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		// Interrupted: give the requests in flight a bounded grace, then
		// abort them; they are recorded as aborted errors.
		t := time.NewTimer(r.opt.DrainTimeout)
		select {
		case <-done:
		case <-t.C:
			ru.abort()
			<-done
		}
		t.Stop()
	}
	stopProgress()

	sum := ru.st.snapshot()
	sum.Target = redact.URL(r.opt.Target.String())
	sum.Timing = r.opt.Timing
	if r.opt.Timing == TimingOriginal {
		sum.Speed = r.opt.Speed
	} else {
		sum.Rate = r.opt.Rate
		sum.Schedule = r.opt.Schedule
	}
	sum.Duration = r.opt.Duration
	sum.DurationS = r.opt.Duration.Seconds()
	sum.Elapsed = ru.clock.Now()
	sum.ElapsedS = sum.Elapsed.Seconds()
	sum.LateThresholdMS = float64(r.opt.LateThreshold) / float64(time.Millisecond)
	sum.SkippedIncomplete = r.skipped
	sum.SkippedUnsendable = r.unsendable
	if err != nil {
		sum.Partial = true
		return &sum, fmt.Errorf("replay stopped after %d requests: %w", sum.Scheduled, err)
	}
	return &sum, nil
}

// job is one request handed to a worker.
type job struct {
	i   uint64
	due time.Duration
}

// dispatch hands request i to an idle worker, or starts a new one when
// all are busy (their number is bounded by the in-flight cap). It never
// blocks the scheduler. Reusing workers, rather than a goroutine per
// request, keeps stacks grown and goroutine creation off the send path.
func (ru *run) dispatch(i uint64, due time.Duration) {
	ru.wg.Add(1)
	select {
	case ru.work <- job{i, due}:
	default:
		ru.workers.Add(1)
		go ru.worker(job{i, due})
	}
}

func (ru *run) worker(first job) {
	defer ru.workers.Done()
	ru.send(first.i, first.due)
	for j := range ru.work {
		ru.send(j.i, j.due)
	}
}

func (ru *run) drop(i uint64, due, now time.Duration, reason string) {
	t := ru.r.template(i)
	ru.st.dropped(reason)
	label := "in_flight_cap"
	if reason != dropInFlight {
		label = "missed"
	}
	ru.r.met.dropped.WithLabelValues(label).Inc()
	ru.r.met.requests.WithLabelValues(string(journal.OutcomeDropped), t.upstream).Inc()
	ru.rec.RecordAt(ru.base+due, &journal.ClientRequest{
		Seq:       ru.r.seqOf(i),
		Warmup:    ru.r.opt.Warmup,
		Method:    t.method,
		Route:     t.route,
		Upstream:  t.upstream,
		Scheduled: ru.base + due,
		Outcome:   journal.OutcomeDropped,
		Late:      now-due > ru.threshold,
		Error:     reason,
	})
}

// send performs request i, due at due, and records how it ended.
func (ru *run) send(i uint64, due time.Duration) {
	defer ru.wg.Done()
	defer ru.inFlight.Add(-1)
	r := ru.r
	t := r.template(i)
	ev := &journal.ClientRequest{
		Seq:       ru.r.seqOf(i),
		Warmup:    ru.r.opt.Warmup,
		Method:    t.method,
		Route:     t.route,
		Upstream:  t.upstream,
		Scheduled: ru.base + due,
		Expected:  -1,
	}
	// The send is stamped immediately before the request's first write to
	// the socket. A request dispatched early (lead) goes to the transport
	// at once and makes its precise wait there (heldConn): its first write
	// waits for the due time and stamps. Otherwise (no lead, or a transport
	// given in Options) the sender waits first and the send is stamped when
	// the transport has written the request's header into the connection's
	// buffer, just before the flush that puts it on the wire (WroteHeaders).
	// Either way lateness includes whatever delays the write after the due
	// time: a dial or the connection pool, the worker hand-off, as the
	// gateway sees it. A request that never reached a connection (a refused
	// dial) is stamped when its exchange started, and never before its due
	// time. Whichever comes first stamps, once (docs/replay.md, "Timer
	// accuracy").
	var stamped atomic.Bool
	var sentAt atomic.Int64
	stamp := func(at time.Duration) {
		if stamped.CompareAndSwap(false, true) {
			sentAt.Store(int64(at))
			ru.markSent(due, at)
		}
	}
	wait := func() error { return ru.clock.WaitUntil(ru.abortCtx, due) }
	early := ru.lead > 0 && r.ownRT != nil
	// held is set once a connection is armed with the wait: the write
	// stamps, not the header hook.
	var held atomic.Bool
	// Every connection the transport gets for this request is one send of
	// it; after the first, each is a re-send the journal must show, or the
	// upstream's extra call for this seq would look like the gateway's.
	// The transport calls GotConn before RoundTrip returns; the lock
	// orders those calls with each other.
	var conns atomic.Int32
	var resentMu sync.Mutex
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if conns.Add(1) > 1 {
				at := ru.base + ru.clock.Now()
				resentMu.Lock()
				ev.Resent = append(ev.Resent, at)
				resentMu.Unlock()
				return
			}
			if !early {
				return
			}
			if hc := heldOf(info.Conn); hc != nil {
				held.Store(true)
				hc.hold.Store(&sendHold{wait: wait, stamp: func() { stamp(ru.clock.Now()) }})
				return
			}
			_ = wait() // not the replayer's connection: wait here, before the write
		},
		WroteHeaders: func() {
			if !held.Load() {
				stamp(ru.clock.Now())
			}
		},
	}
	req := t.build(&r.opt, r.seqOf(i))
	if ru.lead > 0 && !early {
		// Dispatched early, built: now the precise wait (leadFor). An
		// abort ends it and then the exchange, recorded as aborted.
		_ = wait()
	}
	// The deadline runs from the due time, however early the exchange
	// starts.
	ctx, cancel := context.WithTimeout(ru.abortCtx, r.opt.Deadline+max(due-ru.clock.Now(), 0))
	defer cancel()
	req = req.WithContext(httptrace.WithClientTrace(ctx, trace))
	ev.IdempotencyKey = req.Header.Get(r.opt.IdempotencyKeys.Header) != ""
	ev.BodyStamp = t.stamp != nil
	ev.Deadline = r.opt.Deadline

	r.met.inFlight.Inc()
	defer r.met.inFlight.Dec()
	started := ru.clock.Now()
	resp, err := r.rt.RoundTrip(req)
	if !stamped.Load() && early {
		// Ended before any write (a refused dial): stamped no earlier
		// than its due time, and not recorded before it.
		_ = wait()
		started = max(started, due)
	}
	stamp(started) // no-op when the write or the hook stamped
	ev.Sent = ru.base + time.Duration(sentAt.Load())
	ev.Late = time.Duration(sentAt.Load())-due > ru.threshold
	if err != nil {
		ev.Outcome = classifyNoResponse(err, conns.Load() > 0)
		ev.Error = err.Error()
		ru.finish(ev, conns.Load() > 1)
		return
	}
	ev.HeadersAt = ru.base + ru.clock.Now()
	ev.Status = resp.StatusCode
	ev.Headers = keptHeaders(r.opt.KeepHeaders, resp.Header)
	ev.Expected = resp.ContentLength
	if req.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		ev.Expected = 0
	}

	var keep *limitedBuffer
	var sse *sseCounter
	var sinks []io.Writer
	if !r.opt.FastFail.Disabled && resp.StatusCode >= 400 {
		keep = &limitedBuffer{limit: maxJSONBody}
		sinks = append(sinks, keep)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
		sse = &sseCounter{}
		sinks = append(sinks, sse)
	}
	var w io.Writer = io.Discard
	if len(sinks) > 0 {
		w = io.MultiWriter(sinks...)
	}
	n, rerr := io.Copy(w, resp.Body)
	resp.Body.Close()
	ev.Bytes = n
	if sse != nil {
		ev.SSEEvents = sse.events
	}
	if rerr != nil {
		ev.Outcome = classifyBodyError(rerr, ev.Expected >= 0)
		ev.Error = rerr.Error()
		if ev.Expected > 0 {
			ev.Fraction = float64(n) / float64(ev.Expected)
		}
	} else {
		var body []byte
		if keep != nil {
			body = keep.b
		}
		if ff, code := r.opt.FastFail.match(resp.StatusCode, resp.Header, body); ff {
			ev.Outcome = journal.OutcomeFastFail
			ev.FastFail = true
			ev.FastFailCode = code
		} else {
			ev.Outcome = statusOutcome(resp.StatusCode)
		}
		if sse != nil && ev.Outcome == journal.OutcomeOK && resp.StatusCode >= 200 && resp.StatusCode < 300 {
			if o, why := ru.streams.verdict(ev.Route, sse); o != "" {
				ev.Outcome, ev.Error = o, why
			}
		}
	}
	ru.finish(ev, conns.Load() > 1)
}

// markSent counts a request sent at run time at, due at due.
func (ru *run) markSent(due, at time.Duration) {
	late := at-due > ru.threshold
	ru.st.sent(due, at, late)
	ru.r.met.lateness.Observe((at - due).Seconds())
	if late {
		ru.r.met.late.Inc()
	}
}

// finish stamps the end of an exchange and records it.
func (ru *run) finish(ev *journal.ClientRequest, retried bool) {
	ev.Done = ru.base + ru.clock.Now()
	ev.Latency = ev.Done - ev.Scheduled
	ev.Service = ev.Done - ev.Sent
	if ru.abortCtx.Err() != nil && isErrorOutcome(ev.Outcome) {
		// Aborted by the harness after an interruption, not by the
		// gateway: say so rather than blame a deadline or a reset.
		ev.Outcome = journal.OutcomeError
		ev.Error = "aborted: replay interrupted and the drain timeout passed: " + ev.Error
		ru.st.aborted(ev)
	} else {
		ru.st.done(ev, retried)
		ru.r.met.latency.WithLabelValues(ev.Upstream).Observe(ev.Latency.Seconds())
	}
	ru.r.met.requests.WithLabelValues(string(ev.Outcome), ev.Upstream).Inc()
	ru.rec.RecordAt(ev.Scheduled, ev)
}

// limitedBuffer keeps the first limit bytes written to it.
type limitedBuffer struct {
	b     []byte
	limit int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.limit - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
