package replay

import (
	"sync"
	"time"
)

// calibrateSpin measures once how late 1 ms sleeps wake up. macOS
// coalesces timers, so a sleep can wake up to about a millisecond late;
// when the median oversleep exceeds 250 µs, the replayer sleeps to
// due − p90 oversleep (at most 2 ms) and yields the rest.
var calibrateSpin = sync.OnceValue(func() time.Duration {
	p50, p90 := measureOversleep(25, time.Millisecond)
	if p50 <= 250*time.Microsecond {
		return 0
	}
	return min(p90, 2*time.Millisecond)
})
