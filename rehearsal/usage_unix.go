//go:build unix

package rehearsal

import (
	"fmt"
	"runtime"
	"syscall"

	"github.com/halfopen/rehearse/reports/num"
)

// resourceUsage reports the harness's own CPU time and peak memory, so a
// run records whether the harness itself could have disturbed the timings.
func resourceUsage() string {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return "harness resource usage unavailable: " + err.Error()
	}
	maxRSS := ru.Maxrss * 1024 // kilobytes on Linux
	if runtime.GOOS == "darwin" {
		maxRSS = ru.Maxrss // bytes on macOS
	}
	cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	return fmt.Sprintf("harness resource usage: cpu %s (user+system), max RSS %.1f MB", num.Sec(cpu), float64(maxRSS)/(1<<20))
}
