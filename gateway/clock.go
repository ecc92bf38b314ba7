package gateway

import "time"

// Clock is the time source of the breakers: the current time and timers.
// Production uses the system clock; tests inject a manual clock so that
// every transition is checked without sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed, unless the
	// returned Timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a stoppable pending call of Clock.AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened; it reports whether it
	// did prevent it.
	Stop() bool
}

// SystemClock is the Clock of the operating system.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
