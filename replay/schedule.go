package replay

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// waiter is the scheduler's view of time, so that tests can drive the
// schedule loop with a fake clock.
type waiter interface {
	// Now returns the time since the start of sending.
	Now() time.Duration
	// WaitUntil returns when Now() >= t, or with ctx's error.
	WaitUntil(ctx context.Context, t time.Duration) error
	// WaitAbout returns when Now() >= t, possibly later by the coarse
	// timer's granularity, or with ctx's error: a wait whose precision
	// does not matter, made cheaply (one wake-up, no spin).
	WaitAbout(ctx context.Context, t time.Duration) error
}

// spinWindow, when set (tests and benchmarks), replaces the calibrated
// spin window; a negative value disables spinning.
var spinWindow time.Duration

// coarseMargin is how long before a due time the Go timer is asked to
// wake the scheduler; the rest is a precise sleep (preciseSleep). Go's
// timers wake through the network poller, whose timeout has millisecond
// granularity on Linux (a timer due in 0.5 ms fires about 1 ms late), so
// the margin covers that granularity plus the usual oversleep of a loaded
// machine. It only bounds how long a cancellation can wait: the precise
// sleep is not interrupted by ctx.
const coarseMargin = 2 * time.Millisecond

// preciseMax is the longest wait made with the precise sleep alone; a
// longer one first sleeps on the Go timer to coarseMargin before the due
// time. A sender dispatched dispatchLead early so waits with one wake-up.
const preciseMax = 2 * coarseMargin

// dispatchLead is how long before its due time a request of a slow
// schedule is handed to its sender (leadFor).
const dispatchLead = 2 * coarseMargin

// maxSpin caps the spin window wherever it comes from: at 10 requests per
// second it bounds the spinning to 0.1 % of a core; a longer window would
// only chase the oversleep of a loaded machine.
const maxSpin = 100 * time.Microsecond

// calibrateSpin measures once per process how late the precise sleep
// wakes up and returns the spin window: the last part of each wait spent
// polling the clock instead of sleeping. It is the 90th percentile
// oversleep of 21 precise sleeps of 500 µs (about 11 ms at start-up),
// capped at maxSpin: on Linux tens of µs (docs/replay.md, "Timer accuracy").
var calibrateSpin = sync.OnceValue(func() time.Duration {
	_, p90 := measureOversleep(21, 500*time.Microsecond, preciseSleep)
	return min(p90, maxSpin)
})

// realWaiter is the monotonic wall clock. A wait is a Go timer (which ctx
// can cancel) to coarseMargin before the due time, a precise sleep to
// spin before it, and a poll of the clock for the rest: at most spin of
// busy CPU per send (docs/replay.md, "Timer accuracy").
type realWaiter struct {
	start time.Time
	timer *time.Timer
	spin  time.Duration
}

func newRealWaiter(start time.Time, spin time.Duration) *realWaiter {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &realWaiter{start: start, timer: t, spin: spin}
}

func (w *realWaiter) Now() time.Duration { return time.Since(w.start) }

func (w *realWaiter) WaitUntil(ctx context.Context, t time.Duration) error {
	if d := t - w.Now(); d > preciseMax {
		w.timer.Reset(d - coarseMargin)
		select {
		case <-ctx.Done():
			w.timer.Stop()
			return ctx.Err()
		case <-w.timer.C:
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d := t - w.Now() - w.spin; d > 0 {
		preciseSleep(d)
	}
	// Bounded by spin, or by less when the sleep overslept: the precise
	// sleep never returns early.
	for w.Now() < t {
	}
	return nil
}

// WaitAbout is the Go timer alone, to t: it fires up to about a
// millisecond late (the poller's granularity), more on a loaded machine,
// never early. The scheduler's early dispatch waits so (its precision is
// the sender's precise wait): a precise sleep and a spin there had been a
// second wake-up and a second spin per request. It uses the waiter's one
// timer, as WaitUntil does for waits longer than preciseMax: only the
// scheduler's goroutine makes either (a sender's precise wait is shorter).
func (w *realWaiter) WaitAbout(ctx context.Context, t time.Duration) error {
	if d := t - w.Now(); d > 0 {
		w.timer.Reset(d)
		select {
		case <-ctx.Done():
			w.timer.Stop()
			return ctx.Err()
		case <-w.timer.C:
		}
	}
	return ctx.Err()
}

// spinFor returns the spin window for a run whose requests are interval
// apart: the calibrated window when it is at most a twentieth of the
// interval (so spinning never takes more than 5 % of a core), else none:
// fast schedules only sleep precisely, which is already within tens of µs
// on Linux.
func spinFor(interval time.Duration) time.Duration {
	switch {
	case spinWindow < 0:
		return 0
	case spinWindow > 0:
		return spinWindow
	}
	w := calibrateSpin()
	if interval < 20*w {
		return 0
	}
	return w
}

// leadFor returns how long before its due time each request of a run
// whose requests are interval apart is handed to its sender: dispatchLead
// for slow schedules (at most one request in every two leads, 125/s and
// slower, which includes a rehearsal's 10/s), else 0. With a lead, the
// scheduler's Go timer wakes it early, it dispatches, and the sender
// builds the request and then makes the precise wait itself (one precise
// sleep, no Go timer: the rest is at most preciseMax), so the hand-off
// from the scheduler to a sender goroutine (tens of µs on a virtual
// machine, where the sender's thread may be on an idle vCPU) and the
// request's build are off the send path. The lead is twice the Go timer's
// margin so that a late timer still leaves the sender its precise wait.
// Fast schedules keep the precise wait in the scheduler: a lead there
// would take the drop decisions (missed slot, in-flight cap) several
// requests ahead.
func leadFor(interval time.Duration) time.Duration {
	if interval >= 2*dispatchLead {
		return dispatchLead
	}
	return 0
}

// measureOversleep sleeps n times for d with sleep and returns the median
// and 90th percentile of how late the sleeps returned.
func measureOversleep(n int, d time.Duration, sleep func(time.Duration)) (p50, p90 time.Duration) {
	late := make([]time.Duration, n)
	for i := range late {
		t0 := time.Now()
		sleep(d)
		late[i] = max(time.Since(t0)-d, 0)
	}
	slices.Sort(late)
	return late[n/2], late[n*9/10]
}

// Drop reasons, in the error text of a dropped request.
const (
	dropInFlight = "in-flight cap reached"
	dropMissed   = "missed its slot: the replayer was stalled"
)

// scheduler walks the pacer's schedule. It never waits for a response:
// for each due request it either dispatches it (to be sent at once) or
// drops it, and both are reported, so nothing is silently shifted.
type scheduler struct {
	pacer       Pacer
	clock       waiter
	limit       time.Duration // requests due at or after limit are not scheduled; 0: none
	count       uint64        // at most count requests; 0: no limit
	maxLateness time.Duration // lateness beyond which a slot counts as missed when its successor is due too
	maxInFlight int64
	inFlight    *atomic.Int64
	// lead is how long before its due time a request is dispatched; the
	// sender then waits for the due time itself (leadFor).
	lead time.Duration

	// dispatch starts request i; it must not block. The scheduler has
	// already counted it in inFlight; the sender decrements when done.
	dispatch func(i uint64, due time.Duration)
	// drop records request i as dropped for reason.
	drop func(i uint64, due, now time.Duration, reason string)
}

// due returns the due time of request i within the run's limits.
func (s *scheduler) due(i uint64) (time.Duration, bool) {
	if s.count > 0 && i >= s.count {
		return 0, false
	}
	d, ok := s.pacer.Due(i)
	if !ok || (s.limit > 0 && d >= s.limit) {
		return 0, false
	}
	return d, true
}

// run schedules every request and returns how many it scheduled (sent or
// dropped), and ctx's error if it was cancelled first.
func (s *scheduler) run(ctx context.Context) (uint64, error) {
	var i uint64
	for ; ; i++ {
		due, ok := s.due(i)
		if !ok {
			return i, nil
		}
		wait := s.clock.WaitUntil
		if s.lead > 0 {
			wait = s.clock.WaitAbout // the sender waits precisely
		}
		if err := wait(ctx, due-s.lead); err != nil {
			return i, err
		}
		now := s.clock.Now()
		// After a stall, every slot that passed would be due at once.
		// Sending them all would be a burst the real traffic never had;
		// shifting them would hide the stall. So a slot later than
		// maxLateness whose successor is also due is dropped and
		// recorded; within maxLateness overdue slots go at once, each
		// recorded with its lateness.
		if now-due > s.maxLateness {
			if next, ok := s.due(i + 1); ok && next <= now {
				s.drop(i, due, now, fmt.Sprintf("%s (%s late)", dropMissed, (now-due).Round(time.Microsecond)))
				continue
			}
		}
		if s.inFlight.Load() >= s.maxInFlight {
			s.drop(i, due, now, dropInFlight)
			continue
		}
		s.inFlight.Add(1)
		s.dispatch(i, due)
	}
}
