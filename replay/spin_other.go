//go:build !darwin

package replay

import "time"

// calibrateSpin is zero off macOS: Linux timers wake within tens of µs
// when the CPU is free, and when it is not, spinning only takes CPU from
// the senders (measured in docs/benchmarks.md).
func calibrateSpin() time.Duration { return 0 }
