//go:build !linux

package replay

import "time"

// preciseSleep is a Go timer sleep outside Linux. On macOS Go's timers
// wait in kevent with a nanosecond timeout, so they have no millisecond
// granularity to avoid; what remains is the kernel's timer coalescing,
// which the calibrated spin window covers (docs/replay.md, "Timer
// accuracy").
func preciseSleep(d time.Duration) { time.Sleep(d) }
