package inject

import "syscall"

// yieldCPU lets whatever else is runnable on this CPU go first (the poll
// for an answer must not keep the upstream itself, or the gateway, from
// the CPU it spins on): sched_yield(2), not runtime.Gosched, which yields
// only to this process's goroutines.
func yieldCPU() { syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
