//go:build linux

package replay

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// precisionSlack is the timer slack asked for a precise sleep. Linux lets
// a normal thread's timers expire up to 50 µs late (timer_slack_ns) so as
// to batch wake-ups; the scheduler wants its one wake-up per request on
// time.
const precisionSlack = 1000 // ns

// preciseSleep blocks the calling thread in clock_nanosleep for d, with
// the thread's timer slack lowered to precisionSlack for the sleep. Unlike
// a Go timer it does not go through the network poller's millisecond
// timeout, so it wakes within tens of µs of d (the kernel's wake-up
// latency; docs/replay.md, "Timer accuracy"). It is not cancellable:
// callers use it for the last few milliseconds of a wait.
//
// The goroutine is locked to its thread only for the sleep, because the
// slack is a per-thread setting; locking it for the whole run would make
// every park of the scheduler hand its processor to another thread, a
// wake-up on the send path.
func preciseSleep(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	lowered := err == nil && old > precisionSlack &&
		unix.Prctl(unix.PR_SET_TIMERSLACK, precisionSlack, 0, 0, 0) == nil
	req := unix.NsecToTimespec(int64(d))
	var rem unix.Timespec
	// Interrupted by a signal (the Go runtime preempts with SIGURG), the
	// call reports the time left, and sleeps again for that.
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &req, &rem) == unix.EINTR {
		req = rem
	}
	if lowered {
		unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
	}
}
