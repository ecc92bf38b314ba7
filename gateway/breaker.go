package gateway

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// State is a breaker's state. Its numeric value is the value of the
// openclaw_breaker_state gauge.
type State int

// The breaker states.
const (
	Closed   State = 0
	HalfOpen State = 1
	Open     State = 2
)

// String returns the state's name as the journal and the fast-fail
// response write it: "closed", "half_open" or "open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half_open"
	case Open:
		return "open"
	}
	return "unknown"
}

// Class classifies how one upstream call ended, for the breaker and for
// openclaw_breaker_upstream_failures_total.
type Class string

// Outcome classes of an upstream call.
const (
	ClassOK             Class = "ok"              // 1xx–3xx, body complete
	ClassHTTP4xx        Class = "http_4xx"        // 4xx other than 429: the upstream is up
	ClassRateLimited    Class = "rate_limited"    // 429 (with or without Retry-After)
	ClassHTTP5xx        Class = "http_5xx"        // 5xx status
	ClassRefused        Class = "refused"         // connection refused: nobody listening
	ClassReset          Class = "reset"           // reset or closed before any body byte
	ClassHeadersTimeout Class = "headers_timeout" // headers never arrived within the header deadline
	ClassDeadline       Class = "deadline"        // the request deadline expired while reading the body (slow)
	ClassCutMidBody     Class = "cut_mid_body"    // reset or EOF after body bytes were passed on
	ClassMalformed      Class = "malformed"       // unparseable response
	ClassCanceled       Class = "canceled"        // the client went away: no verdict on the upstream
)

// transport reports whether c is a transport failure (no usable HTTP
// exchange), the kind counted by consecutive_failures.
func (c Class) transport() bool {
	switch c {
	case ClassRefused, ClassReset, ClassHeadersTimeout, ClassDeadline, ClassMalformed:
		return true
	}
	return false
}

// Result is the outcome of one admitted call, reported through
// Ticket.Done.
type Result struct {
	Class Class
	// RetryAfter is the upstream's Retry-After on a 429; zero when absent.
	RetryAfter time.Duration
	// Latency is the time from sending to the response headers, the
	// quantity whose P99 sets the probe deadline. Zero when unknown.
	Latency time.Duration
	// Worker identifies who carried the call (see docs/gateway.md): two
	// probe successes close the breaker only from different workers.
	Worker string
}

// Rejection tells why the breaker refused a call, for the fast-fail
// response.
type Rejection struct {
	State State
	// Reason is "open", "retry_after", "probe_in_flight" or
	// "probe_spacing".
	Reason string
	// RetryAfter is when the breaker expects to admit a call again.
	RetryAfter time.Duration
}

// Rejection reasons.
const (
	ReasonOpen          = "open"
	ReasonRetryAfter    = "retry_after"
	ReasonProbeInFlight = "probe_in_flight"
	ReasonProbeSpacing  = "probe_spacing"
)

// Transition is one state change, with why it happened.
type Transition struct {
	From, To State
	// Reason is "failure_ratio", "consecutive_failures", "retry_after",
	// "probe_failed", "cooldown_elapsed" or "probes_succeeded".
	Reason string
	At     time.Time
	// OpenFor is the planned open period when To is Open.
	OpenFor time.Duration
}

// BreakerOption configures a Breaker.
type BreakerOption func(*Breaker)

// WithBreakerClock sets the breaker's clock (default SystemClock).
func WithBreakerClock(c Clock) BreakerOption { return func(b *Breaker) { b.clock = c } }

// WithJitterSource sets the random source of the probe jitter (default a
// randomly seeded PCG), so that tests can pin it.
func WithJitterSource(r *rand.Rand) BreakerOption { return func(b *Breaker) { b.rnd = r } }

// WithTransitionFunc sets a function called on every state change, with
// the breaker's lock held (so calls arrive in order): it must not call the
// breaker.
func WithTransitionFunc(f func(Transition)) BreakerOption {
	return func(b *Breaker) { b.onTransition = f }
}

const (
	windowBuckets    = 30
	latencySamples   = 256
	minLatencyP99Obs = 20
)

type bucket struct {
	idx            int64 // time index of the bucket (now / width)
	total, failure int
}

// Breaker is one dependency's circuit breaker. It is safe for concurrent
// use. Callers ask Allow before calling the upstream and report the
// outcome on the returned Ticket.
type Breaker struct {
	cfg          BreakerConfig
	clock        Clock
	rnd          *rand.Rand
	onTransition func(Transition)

	mu          sync.Mutex
	state       State
	gen         uint64 // bumped on every transition: stale tickets are ignored
	buckets     [windowBuckets]bucket
	width       time.Duration
	consecutive int
	cooldown    time.Duration // current cooldown; doubles after failed probes
	openUntil   time.Time
	openReason  string
	timer       Timer
	// half-open
	probing     bool
	nextProbeAt time.Time
	successes   int
	workers     []string
	// latencies of successful calls, ring buffer
	lat    [latencySamples]time.Duration
	latN   int
	latPos int
}

// NewBreaker returns a closed breaker with the given parameters; zero
// fields mean the reference values (BreakerConfig.WithDefaults).
func NewBreaker(cfg BreakerConfig, opts ...BreakerOption) *Breaker {
	cfg = cfg.WithDefaults()
	b := &Breaker{cfg: cfg, clock: SystemClock{}}
	for _, o := range opts {
		o(b)
	}
	if b.rnd == nil {
		b.rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	b.width = cfg.Window.D() / windowBuckets
	if b.width <= 0 {
		b.width = 1
	}
	b.cooldown = cfg.Cooldown.D()
	return b
}

// State returns the current state.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Ticket is an admitted call. Exactly one of Done or Cancel must be called.
type Ticket struct {
	b     *Breaker
	gen   uint64
	once  sync.Once
	Probe bool
	// ProbeDeadline is the header deadline of a probe (P99 × factor,
	// clamped); zero for ordinary calls.
	ProbeDeadline time.Duration
	// Start is when the breaker admitted the call.
	Start time.Time
}

// Allow admits a call or rejects it. In the closed state every call is
// admitted; when open, none; when half-open, one probe at a time, spaced
// by at least ProbeInterval plus jitter.
func (b *Breaker) Allow() (*Ticket, *Rejection) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	switch b.state {
	case Closed:
		return &Ticket{b: b, gen: b.gen, Start: now}, nil
	case Open:
		reason := ReasonOpen
		if b.openReason == ReasonRetryAfter {
			reason = ReasonRetryAfter
		}
		return nil, &Rejection{State: Open, Reason: reason, RetryAfter: max(b.openUntil.Sub(now), 0)}
	default: // HalfOpen
		if b.probing {
			return nil, &Rejection{State: HalfOpen, Reason: ReasonProbeInFlight, RetryAfter: b.cfg.ProbeInterval.D()}
		}
		if now.Before(b.nextProbeAt) {
			return nil, &Rejection{State: HalfOpen, Reason: ReasonProbeSpacing, RetryAfter: b.nextProbeAt.Sub(now)}
		}
		b.probing = true
		var jitter time.Duration
		if j := b.cfg.ProbeJitter.D(); j > 0 {
			jitter = time.Duration(b.rnd.Int64N(int64(j) + 1))
		}
		b.nextProbeAt = now.Add(b.cfg.ProbeInterval.D() + jitter)
		return &Ticket{b: b, gen: b.gen, Start: now, Probe: true, ProbeDeadline: b.probeDeadlineLocked()}, nil
	}
}

// NextProbeAt returns the earliest time the breaker admits the next probe
// (meaningful when half-open).
func (b *Breaker) NextProbeAt() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nextProbeAt
}

// Cancel withdraws an admitted call that was never sent (the fleet lease
// was denied, or the client left first). A cancelled probe frees the probe
// slot; the spacing to the next probe still holds.
func (t *Ticket) Cancel() {
	if t.b == nil {
		return
	}
	t.once.Do(func() {
		if !t.Probe {
			return
		}
		b := t.b
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.gen == t.gen && b.state == HalfOpen {
			b.probing = false
		}
	})
}

// Done reports the outcome of an admitted call. Outcomes of calls
// admitted before the latest transition are ignored, except a
// Retry-After, which always extends the open period (the upstream's
// cooldown wins).
func (t *Ticket) Done(r Result) {
	if t.b == nil {
		return // no breaker (the naive mode's calls)
	}
	t.once.Do(func() { t.b.done(t, r) })
}

func (b *Breaker) done(t *Ticket, r Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	ra := r.RetryAfter
	if ra > b.cfg.RetryAfterMax.D() && b.cfg.RetryAfterMax > 0 {
		ra = b.cfg.RetryAfterMax.D()
	}
	honourRA := *b.cfg.RetryAfterOpens && ra > 0 && r.Class == ClassRateLimited
	stale := t.gen != b.gen

	if stale {
		if honourRA {
			if b.state == Open {
				b.extendLocked(now, ra)
			} else {
				b.openLocked(now, ReasonRetryAfter, ra)
			}
		}
		return
	}

	if t.Probe {
		b.probing = false
		switch {
		case r.Class == ClassCanceled:
			return
		case honourRA:
			b.openLocked(now, ReasonRetryAfter, max(ra, b.cooldown))
		case r.Class == ClassCutMidBody && !b.cfg.CountStreamCuts:
			// The upstream answered and streamed: no verdict either way.
			return
		case r.Class == ClassOK || r.Class == ClassHTTP4xx:
			b.successes++
			if !slices.Contains(b.workers, r.Worker) {
				b.workers = append(b.workers, r.Worker)
			}
			need := 1
			if *b.cfg.DistinctWorkers && b.cfg.SuccessesToClose > 1 {
				need = 2
			}
			if b.successes >= b.cfg.SuccessesToClose && len(b.workers) >= need {
				b.closeLocked(now)
			}
		default:
			b.cooldown = min(b.cooldown*2, b.cfg.CooldownMax.D())
			b.openLocked(now, "probe_failed", b.cooldown)
		}
		return
	}

	// An ordinary call, admitted while closed.
	switch {
	case r.Class == ClassCanceled:
		return
	case honourRA:
		b.openLocked(now, ReasonRetryAfter, ra)
		return
	}
	failure := r.Class == ClassHTTP5xx || r.Class.transport() ||
		(r.Class == ClassCutMidBody && b.cfg.CountStreamCuts)
	b.addLocked(now, failure)
	if r.Class.transport() {
		b.consecutive++
	} else {
		b.consecutive = 0
	}
	if r.Class == ClassOK && r.Latency > 0 {
		b.lat[b.latPos] = r.Latency
		b.latPos = (b.latPos + 1) % latencySamples
		b.latN = min(b.latN+1, latencySamples)
	}
	if b.consecutive >= b.cfg.ConsecutiveFailures {
		b.openLocked(now, "consecutive_failures", b.cooldown)
		return
	}
	total, failures := b.countLocked(now)
	if total >= b.cfg.MinSamples && float64(failures) > b.cfg.FailureRatio*float64(total) {
		b.openLocked(now, "failure_ratio", b.cooldown)
	}
}

// Counts returns the outcomes in the sliding window: total and failures.
func (b *Breaker) Counts() (total, failures int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.countLocked(b.clock.Now())
}

// ProbeDeadline returns the header deadline the next probe would get.
func (b *Breaker) ProbeDeadline() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.probeDeadlineLocked()
}

// Cooldown returns the current cooldown (the open period after the next
// failure).
func (b *Breaker) Cooldown() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cooldown
}

func (b *Breaker) probeDeadlineLocked() time.Duration {
	lo, hi := b.cfg.ProbeDeadlineMin.D(), b.cfg.ProbeDeadlineMax.D()
	if b.latN < minLatencyP99Obs {
		return hi
	}
	s := slices.Clone(b.lat[:b.latN])
	slices.Sort(s)
	// Nearest-rank P99.
	rank := (99*len(s) + 99) / 100
	p99 := s[rank-1]
	d := time.Duration(float64(p99) * b.cfg.ProbeDeadlineFactor)
	return min(max(d, lo), hi)
}

func (b *Breaker) addLocked(now time.Time, failure bool) {
	idx := now.UnixNano() / int64(b.width)
	bk := &b.buckets[idx%windowBuckets]
	if bk.idx != idx {
		*bk = bucket{idx: idx}
	}
	bk.total++
	if failure {
		bk.failure++
	}
}

func (b *Breaker) countLocked(now time.Time) (total, failures int) {
	idx := now.UnixNano() / int64(b.width)
	for _, bk := range b.buckets {
		if bk.idx > idx-windowBuckets && bk.idx <= idx {
			total += bk.total
			failures += bk.failure
		}
	}
	return total, failures
}

func (b *Breaker) transitionLocked(now time.Time, to State, reason string, openFor time.Duration) {
	from := b.state
	b.state = to
	b.gen++
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if b.onTransition != nil && from != to {
		b.onTransition(Transition{From: from, To: to, Reason: reason, At: now, OpenFor: openFor})
	}
}

// openLocked opens the breaker for d (or, already open, extends it).
func (b *Breaker) openLocked(now time.Time, reason string, d time.Duration) {
	if b.state == Open {
		b.extendLocked(now, d)
		return
	}
	b.transitionLocked(now, Open, reason, d)
	b.openReason = reason
	b.openUntil = now.Add(d)
	b.probing = false
	b.armLocked(d)
}

// extendLocked keeps an open breaker open until at least now+d.
func (b *Breaker) extendLocked(now time.Time, d time.Duration) {
	until := now.Add(d)
	if !until.After(b.openUntil) {
		return
	}
	b.openUntil = until
	b.openReason = ReasonRetryAfter
	if b.timer != nil {
		b.timer.Stop()
	}
	b.armLocked(d)
}

func (b *Breaker) armLocked(d time.Duration) {
	gen := b.gen
	b.timer = b.clock.AfterFunc(d, func() { b.cooldownElapsed(gen) })
}

// cooldownElapsed moves an open breaker to half-open. The first probe may
// go at once.
func (b *Breaker) cooldownElapsed(gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gen != gen || b.state != Open {
		return
	}
	now := b.clock.Now()
	if now.Before(b.openUntil) { // extended meanwhile; a new timer is armed
		return
	}
	b.timer = nil
	b.transitionLocked(now, HalfOpen, "cooldown_elapsed", 0)
	b.probing = false
	b.successes = 0
	b.workers = b.workers[:0]
	b.nextProbeAt = now
}

func (b *Breaker) closeLocked(now time.Time) {
	b.transitionLocked(now, Closed, "probes_succeeded", 0)
	b.buckets = [windowBuckets]bucket{}
	b.consecutive = 0
	b.cooldown = b.cfg.Cooldown.D()
	b.successes = 0
	b.workers = b.workers[:0]
	b.openReason = ""
}

// Close stops the breaker's pending timer.
func (b *Breaker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}
