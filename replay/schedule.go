package replay

import (
	"context"
	"fmt"
	"runtime"
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
}

// spinWindow, when set (tests and benchmarks), replaces the calibrated
// spin window; a negative value disables spinning.
var spinWindow time.Duration

// calibrateSpin measures once per process how late short sleeps wake up
// and returns the spin window: the last part of each wait that the
// replayer spends yielding instead of sleeping. Go's timers wake through
// the network poller, whose timeout has millisecond granularity on Linux,
// so a sleep shorter than 1 ms returns about 1 ms late; macOS also
// coalesces timers. Sleeping to due − window and yielding the rest puts
// sends within microseconds of their due time (docs/benchmarks.md).
// The window is 1 ms plus the 90th percentile oversleep of a 2 ms sleep,
// capped at 3 ms; it costs about 1 % of a CPU at 10 requests per second.
var calibrateSpin = sync.OnceValue(func() time.Duration {
	_, p90 := measureOversleep(15, 2*time.Millisecond)
	return min(time.Millisecond+p90, 3*time.Millisecond)
})

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

// spinFor returns the spin window for a run whose requests are interval
// apart. Above about 200 requests per second the window would cover much
// of every interval and the yielding loop would take the CPU the senders
// need (measured: p50 lateness 28 ms instead of 0.9 ms at 1,000/s on a
// busy 2-core machine), so fast schedules only sleep.
func spinFor(interval time.Duration) time.Duration {
	switch {
	case spinWindow < 0:
		return 0
	case spinWindow > 0:
		return spinWindow
	}
	w := calibrateSpin()
	if interval < 4*w {
		return 0
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
