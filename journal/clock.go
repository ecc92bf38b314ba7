package journal

import "time"

// Clock is the run's one time base. Its readings are durations since the
// run's start, taken from the monotonic clock (immune to wall-clock steps),
// so that every component stamps events on the same scale.
type Clock struct {
	start time.Time
}

// NewClock returns a clock whose zero is start. Pass time.Now(): it carries
// a monotonic reading, and all later readings are monotonic differences.
func NewClock(start time.Time) *Clock { return &Clock{start: start} }

// Start returns the wall-clock instant of the run's start.
func (c *Clock) Start() time.Time { return c.start }

// Now returns the time elapsed since the run's start.
func (c *Clock) Now() time.Duration { return time.Since(c.start) }

// At converts an instant taken with time.Now() to run time.
func (c *Clock) At(t time.Time) time.Duration { return t.Sub(c.start) }

// Time converts a run time back to an instant.
func (c *Clock) Time(d time.Duration) time.Time { return c.start.Add(d) }
