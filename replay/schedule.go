package replay

import (
	"context"
	"fmt"
	"runtime"
	"slices"
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
}

// spinWindow is how much of each wait is spent yielding in a loop
// instead of sleeping on a timer, to beat late timer wake-ups. It is zero
// unless the platform calibration (calibrateSpin, darwin only) measures
// timers waking late enough for spinning to help: on Linux, Go timers wake
// within tens of µs, and spinning on a busy machine made lateness worse
// (docs/benchmarks.md). Tests and benchmarks may set it.
var spinWindow time.Duration

// realWaiter is the monotonic wall clock.
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
	if d := t - w.Now() - w.spin; d > 0 {
		w.timer.Reset(d)
		select {
		case <-ctx.Done():
			w.timer.Stop()
			return ctx.Err()
		case <-w.timer.C:
		}
	}
	for w.Now() < t {
		if err := ctx.Err(); err != nil {
			return err
		}
		runtime.Gosched()
	}
	return nil
}

// spinFor returns the spin window for a schedule whose requests are
// interval apart: the calibrated window, but never more than a quarter of
// the interval, so that high rates do not turn into a busy loop.
func spinFor(interval time.Duration) time.Duration {
	w := spinWindow
	if w == 0 {
		w = calibrateSpin()
	}
	if interval > 0 && w > interval/4 {
		w = interval / 4
	}
	return w
}

// measureOversleep sleeps n times for d and returns the median and 90th
// percentile of how late the sleeps returned.
func measureOversleep(n int, d time.Duration) (p50, p90 time.Duration) {
	late := make([]time.Duration, n)
	for i := range late {
		t0 := time.Now()
		time.Sleep(d)
		late[i] = time.Since(t0) - d
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
		if err := s.clock.WaitUntil(ctx, due); err != nil {
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
