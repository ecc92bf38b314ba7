//go:build !linux

package inject

import "runtime"

// yieldCPU lets the process's other goroutines go first (the syscall
// package has no sched_yield here).
func yieldCPU() { runtime.Gosched() }
