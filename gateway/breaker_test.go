package gateway

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

type breakerRig struct {
	t     *testing.T
	clock *manualClock
	b     *Breaker
	trans []Transition
}

func newRig(t *testing.T, mod func(*BreakerConfig)) *breakerRig {
	t.Helper()
	cfg := BreakerConfig{}.WithDefaults()
	if mod != nil {
		mod(&cfg)
	}
	r := &breakerRig{t: t, clock: newManualClock()}
	r.b = NewBreaker(cfg, WithBreakerClock(r.clock),
		WithJitterSource(rand.New(rand.NewPCG(1, 2))),
		WithTransitionFunc(func(tr Transition) { r.trans = append(r.trans, tr) }))
	return r
}

// call admits one call and reports c; it fails the test if not admitted.
func (r *breakerRig) call(c Class) {
	r.t.Helper()
	tk, rej := r.b.Allow()
	if rej != nil {
		r.t.Fatalf("call rejected: %+v (state %s)", rej, r.b.State())
	}
	tk.Done(Result{Class: c, Worker: "w"})
}

func (r *breakerRig) probe(c Class, worker string) {
	r.t.Helper()
	tk, rej := r.b.Allow()
	if rej != nil {
		r.t.Fatalf("probe rejected: %+v", rej)
	}
	if !tk.Probe {
		r.t.Fatalf("admitted call is not a probe (state %s)", r.b.State())
	}
	tk.Done(Result{Class: c, Worker: worker})
}

func (r *breakerRig) want(s State) {
	r.t.Helper()
	if got := r.b.State(); got != s {
		r.t.Fatalf("state %s, want %s (transitions %+v)", got, s, r.trans)
	}
}

// wantReason fails the test unless the last transition gave reason.
func (r *breakerRig) wantReason(reason string) {
	r.t.Helper()
	if got := r.lastReason(); got != reason {
		r.t.Fatalf("last transition's reason %q, want %q", got, reason)
	}
}

func (r *breakerRig) lastReason() string {
	if len(r.trans) == 0 {
		return ""
	}
	return r.trans[len(r.trans)-1].Reason
}

func TestBreakerMinSamples(t *testing.T) {
	r := newRig(t, nil)
	for range 19 {
		r.call(ClassHTTP5xx)
	}
	r.want(Closed) // 100 % failures, but only 19 samples
	r.call(ClassHTTP5xx)
	r.want(Open)
	r.wantReason("failure_ratio")
}

func TestBreakerFailureRatioIsStrictlyAbove(t *testing.T) {
	r := newRig(t, nil)
	for range 8 {
		r.call(ClassOK)
	}
	for range 12 {
		r.call(ClassHTTP5xx)
	}
	r.want(Closed) // 12/20 = 60 %: not above
	r.call(ClassHTTP5xx)
	r.want(Open) // 13/21 > 60 %
}

func TestBreakerWindowSlides(t *testing.T) {
	r := newRig(t, nil)
	for range 19 {
		r.call(ClassHTTP5xx)
	}
	r.clock.Advance(31 * time.Second) // all 19 expired
	r.call(ClassHTTP5xx)
	r.want(Closed)
	if total, fails := r.b.Counts(); total != 1 || fails != 1 {
		t.Fatalf("window holds %d/%d, want 1/1", fails, total)
	}
	// Within the window samples add up.
	r.clock.Advance(10 * time.Second)
	for range 19 {
		r.call(ClassHTTP5xx)
	}
	r.want(Open)
}

func TestBreakerConsecutiveTransportFailures(t *testing.T) {
	for _, c := range []Class{ClassReset, ClassRefused, ClassHeadersTimeout, ClassDeadline, ClassMalformed} {
		t.Run(string(c), func(t *testing.T) {
			r := newRig(t, nil)
			for range 4 {
				r.call(c)
			}
			r.call(ClassHTTP5xx) // an HTTP answer resets the run
			for range 4 {
				r.call(c)
			}
			r.want(Closed)
			r.call(c)
			r.want(Open)
			r.wantReason("consecutive_failures")
		})
	}
}

func TestBreakerNeutralOutcomes(t *testing.T) {
	// 4xx, 429 without Retry-After, cancelled calls and (by default) cuts
	// after bytes are not failures.
	r := newRig(t, nil)
	for range 50 {
		r.call(ClassHTTP4xx)
		r.call(ClassRateLimited)
		r.call(ClassCanceled)
		r.call(ClassCutMidBody)
	}
	r.want(Closed)

	r = newRig(t, func(c *BreakerConfig) { c.CountStreamCuts = true })
	for range 20 {
		r.call(ClassCutMidBody)
	}
	r.want(Open)
}

func TestBreakerOpenRejectsUntilCooldown(t *testing.T) {
	r := newRig(t, nil)
	for range 5 {
		r.call(ClassReset)
	}
	r.want(Open)
	r.clock.Advance(2 * time.Second)
	_, rej := r.b.Allow()
	if rej == nil || rej.State != Open || rej.Reason != ReasonOpen || rej.RetryAfter != 3*time.Second {
		t.Fatalf("rejection %+v, want open with 3s left", rej)
	}
	r.clock.Advance(3*time.Second - time.Nanosecond)
	r.want(Open)
	r.clock.Advance(time.Nanosecond)
	r.want(HalfOpen)
	r.wantReason("cooldown_elapsed")
}

func openThenHalfOpen(r *breakerRig) {
	r.t.Helper()
	for range 5 {
		r.call(ClassReset)
	}
	r.clock.Advance(r.b.Cooldown())
	r.want(HalfOpen)
}

func TestBreakerHalfOpenOneProbeInFlight(t *testing.T) {
	r := newRig(t, nil)
	openThenHalfOpen(r)
	tk, rej := r.b.Allow()
	if rej != nil || !tk.Probe {
		t.Fatalf("first probe not admitted: %+v", rej)
	}
	// However long the probe takes, no second one is admitted.
	for range 10 {
		r.clock.Advance(time.Second)
		if _, rej := r.b.Allow(); rej == nil || rej.Reason != ReasonProbeInFlight || rej.State != HalfOpen {
			t.Fatalf("second probe admitted while one is in flight: %+v", rej)
		}
	}
	tk.Done(Result{Class: ClassOK, Worker: "a"})
	if tk2, rej := r.b.Allow(); rej != nil || !tk2.Probe {
		t.Fatalf("probe after the first ended not admitted: %+v", rej)
	}
}

func TestBreakerProbeSpacingAndJitterBounds(t *testing.T) {
	r := newRig(t, func(c *BreakerConfig) { c.SuccessesToClose = 1000 })
	openThenHalfOpen(r)
	var gaps []time.Duration
	last := r.clock.Now()
	first := true
	for len(gaps) < 200 {
		tk, rej := r.b.Allow()
		if rej != nil {
			if rej.Reason != ReasonProbeSpacing {
				t.Fatalf("rejection %+v", rej)
			}
			r.clock.Advance(time.Millisecond)
			continue
		}
		now := r.clock.Now()
		if !first {
			gaps = append(gaps, now.Sub(last))
		}
		first = false
		last = now
		tk.Done(Result{Class: ClassOK, Worker: "a"}) // same worker: never closes
	}
	lo, hi := gaps[0], gaps[0]
	for _, g := range gaps {
		lo, hi = min(lo, g), max(hi, g)
	}
	// Spacing is 250ms + U[0, 50ms], observed on a 1 ms grid.
	if lo < 250*time.Millisecond || hi > 301*time.Millisecond {
		t.Fatalf("probe spacing in [%s, %s], want within [250ms, 300ms]", lo, hi)
	}
	if hi-lo < 30*time.Millisecond {
		t.Fatalf("jitter spread only %s over 200 probes: jitter not applied", hi-lo)
	}
	r.want(HalfOpen)
}

func TestBreakerCooldownDoublesAndCaps(t *testing.T) {
	r := newRig(t, nil)
	openThenHalfOpen(r) // opened for 5s
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 60 * time.Second, 60 * time.Second}
	for i, w := range want {
		r.probe(ClassHTTP5xx, "a")
		r.want(Open)
		if r.lastReason() != "probe_failed" || r.trans[len(r.trans)-1].OpenFor != w {
			t.Fatalf("failed probe %d: open for %s (%s), want %s", i+1, r.trans[len(r.trans)-1].OpenFor, r.lastReason(), w)
		}
		r.clock.Advance(w - time.Millisecond)
		r.want(Open)
		r.clock.Advance(time.Millisecond)
		r.want(HalfOpen)
	}
	// Recovery resets the cooldown.
	r.probe(ClassOK, "a")
	r.clock.Advance(time.Second)
	r.probe(ClassOK, "b")
	r.want(Closed)
	if r.b.Cooldown() != 5*time.Second {
		t.Fatalf("cooldown after close %s, want 5s", r.b.Cooldown())
	}
}

func TestBreakerCloseNeedsTwoWorkers(t *testing.T) {
	r := newRig(t, nil)
	openThenHalfOpen(r)
	r.probe(ClassOK, "gw1/127.0.0.1:40001")
	r.clock.Advance(time.Second)
	r.probe(ClassOK, "gw1/127.0.0.1:40001")
	r.want(HalfOpen) // two successes, one worker
	r.clock.Advance(time.Second)
	r.probe(ClassOK, "gw1/127.0.0.1:40002")
	r.want(Closed)
	r.wantReason("probes_succeeded")

	// A failed probe in between restarts the count.
	r = newRig(t, nil)
	openThenHalfOpen(r)
	r.probe(ClassOK, "a")
	r.clock.Advance(time.Second)
	r.probe(ClassReset, "b")
	r.want(Open)
	r.clock.Advance(r.b.Cooldown())
	r.probe(ClassOK, "c")
	r.want(HalfOpen)
	r.clock.Advance(time.Second)
	r.probe(ClassOK, "d")
	r.want(Closed)

	// Without the distinct-worker rule two successes suffice.
	r = newRig(t, func(c *BreakerConfig) { c.DistinctWorkers = new(false) })
	openThenHalfOpen(r)
	r.probe(ClassOK, "a")
	r.clock.Advance(time.Second)
	r.probe(ClassOK, "a")
	r.want(Closed)
}

func TestBreakerRetryAfterOpensForAtLeastRetryAfter(t *testing.T) {
	r := newRig(t, nil)
	tk, _ := r.b.Allow()
	tk.Done(Result{Class: ClassRateLimited, RetryAfter: 120 * time.Second})
	r.want(Open)
	if r.lastReason() != ReasonRetryAfter || r.trans[0].OpenFor != 120*time.Second {
		t.Fatalf("transition %+v", r.trans)
	}
	_, rej := r.b.Allow()
	if rej == nil || rej.Reason != ReasonRetryAfter || rej.RetryAfter != 120*time.Second {
		t.Fatalf("rejection %+v", rej)
	}
	r.clock.Advance(119 * time.Second)
	r.want(Open)
	r.clock.Advance(time.Second)
	r.want(HalfOpen)
	// A quota pause is not a failure: the cooldown did not double.
	if r.b.Cooldown() != 5*time.Second {
		t.Fatalf("cooldown %s", r.b.Cooldown())
	}
}

func TestBreakerRetryAfterExtendsOpenPeriod(t *testing.T) {
	r := newRig(t, nil)
	late, _ := r.b.Allow() // in flight while the breaker opens
	for range 5 {
		r.call(ClassReset)
	}
	r.want(Open) // for 5s
	r.clock.Advance(time.Second)
	late.Done(Result{Class: ClassRateLimited, RetryAfter: 30 * time.Second}) // until t=31s
	r.clock.Advance(30*time.Second - time.Millisecond)
	r.want(Open)
	r.clock.Advance(time.Millisecond)
	r.want(HalfOpen)
	if n := len(r.trans); n != 2 {
		t.Fatalf("%d transitions, want 2 (open, half-open): %+v", n, r.trans)
	}

	// A shorter Retry-After never shortens the open period.
	r = newRig(t, nil)
	late, _ = r.b.Allow()
	for range 5 {
		r.call(ClassReset)
	}
	late.Done(Result{Class: ClassRateLimited, RetryAfter: time.Second})
	r.clock.Advance(4 * time.Second)
	r.want(Open)
}

func TestBreakerRetryAfterOnProbe(t *testing.T) {
	r := newRig(t, nil)
	openThenHalfOpen(r)
	tk, _ := r.b.Allow()
	tk.Done(Result{Class: ClassRateLimited, RetryAfter: 2 * time.Second, Worker: "a"})
	r.want(Open)
	// Open for max(Retry-After, cooldown) = 5s; cooldown not doubled.
	if got := r.trans[len(r.trans)-1].OpenFor; got != 5*time.Second {
		t.Fatalf("open for %s, want 5s", got)
	}
	if r.b.Cooldown() != 5*time.Second {
		t.Fatalf("cooldown %s, want 5s", r.b.Cooldown())
	}
}

func TestBreakerRetryAfterCapAndSwitch(t *testing.T) {
	r := newRig(t, func(c *BreakerConfig) { c.RetryAfterMax = rehearse.Duration(time.Minute) })
	tk, _ := r.b.Allow()
	tk.Done(Result{Class: ClassRateLimited, RetryAfter: 24 * time.Hour})
	if got := r.trans[0].OpenFor; got != time.Minute {
		t.Fatalf("open for %s, want the 1m cap", got)
	}
	r = newRig(t, func(c *BreakerConfig) { c.RetryAfterOpens = new(false) })
	for range 30 {
		tk, _ := r.b.Allow()
		tk.Done(Result{Class: ClassRateLimited, RetryAfter: time.Minute})
	}
	r.want(Closed)
}

func TestBreakerStaleOutcomesIgnored(t *testing.T) {
	r := newRig(t, nil)
	var old []*Ticket
	for range 10 {
		tk, _ := r.b.Allow()
		old = append(old, tk)
	}
	openThenHalfOpen(r)
	for _, tk := range old {
		tk.Done(Result{Class: ClassReset})
	}
	r.want(HalfOpen) // calls admitted before opening say nothing now
	tk, _ := r.b.Allow()
	tk.Done(Result{Class: ClassOK, Worker: "a"})
	tk.Done(Result{Class: ClassReset}) // a second Done is ignored
	r.want(HalfOpen)
}

func TestBreakerCancelledProbeFreesSlot(t *testing.T) {
	r := newRig(t, nil)
	openThenHalfOpen(r)
	tk, _ := r.b.Allow()
	tk.Cancel()
	if _, rej := r.b.Allow(); rej == nil || rej.Reason != ReasonProbeSpacing {
		t.Fatalf("after a cancelled probe: %+v, want spacing rejection", rej)
	}
	r.clock.Advance(300 * time.Millisecond)
	if tk, rej := r.b.Allow(); rej != nil || !tk.Probe {
		t.Fatalf("probe slot not freed: %+v", rej)
	}
}

func TestBreakerProbeDeadlineFromP99(t *testing.T) {
	r := newRig(t, nil)
	if d := r.b.ProbeDeadline(); d != DefaultProbeDeadlineMax {
		t.Fatalf("no observations: %s, want the max", d)
	}
	for i := range 100 {
		tk, _ := r.b.Allow()
		lat := 100 * time.Millisecond
		if i == 0 {
			lat = 200 * time.Millisecond // one outlier: the 100th percentile, not P99
		}
		tk.Done(Result{Class: ClassOK, Latency: lat})
	}
	if d := r.b.ProbeDeadline(); d != 140*time.Millisecond {
		t.Fatalf("probe deadline %s, want P99 100ms × 1.4 = 140ms", d)
	}
	r = newRig(t, nil)
	for range 30 {
		tk, _ := r.b.Allow()
		tk.Done(Result{Class: ClassOK, Latency: time.Millisecond})
	}
	if d := r.b.ProbeDeadline(); d != DefaultProbeDeadlineMin {
		t.Fatalf("probe deadline %s, want the 100ms floor", d)
	}
}
