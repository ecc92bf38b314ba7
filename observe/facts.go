package observe

import (
	"context"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// Timer measurement parameters: TimerSamples sleeps of TimerSleep, stopped
// early after TimerBudget so that Facts stays quick on a machine whose
// timers are coarse.
const (
	TimerSleep   = time.Millisecond
	TimerSamples = 100
	TimerBudget  = 250 * time.Millisecond
)

// Facts describes the machine the run is on: OS, architecture, kernel, CPU
// model and count, Go version, hostname, the measured timer granularity and
// the OS TCP keepalive settings. Facts that cannot be read are left empty;
// it never fails. It takes at most about TimerBudget, less if ctx ends.
func Facts(ctx context.Context) journal.Platform {
	p := journal.Platform{
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		Kernel:    kernel(),
		CPU:       cpuModel(),
		NumCPU:    runtime.NumCPU(),
		GoVersion: runtime.Version(),
		// Read now, before the run: the harness never changes it.
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	if h, err := os.Hostname(); err == nil {
		p.Hostname = h
	}
	if ka := tcpKeepalive(); len(ka) > 0 {
		p.TCPKeepalive = ka
	}
	p.TimerGranularity = MeasureTimer(ctx, TimerSleep, TimerSamples, TimerBudget)
	return p
}

// MeasureTimer sleeps d up to n times (stopping once budget has passed or
// ctx ends) and summarises how late each sleep woke up. It is how macOS
// timer coalescing shows up next to Linux's high-resolution timers. It
// returns nil when no sleep completed.
func MeasureTimer(ctx context.Context, d time.Duration, n int, budget time.Duration) *journal.TimerStats {
	late := make([]time.Duration, 0, n)
	deadline := time.Now().Add(budget)
	t := time.NewTimer(d)
	defer t.Stop()
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		start := time.Now()
		t.Reset(d)
		select {
		case <-ctx.Done():
			return summarise(late)
		case <-t.C:
		}
		late = append(late, max(time.Since(start)-d, 0))
	}
	return summarise(late)
}

func summarise(late []time.Duration) *journal.TimerStats {
	if len(late) == 0 {
		return nil
	}
	slices.Sort(late)
	return &journal.TimerStats{
		Samples: len(late),
		P50:     quantile(late, 0.50),
		P99:     quantile(late, 0.99),
		Max:     late[len(late)-1],
	}
}

// quantile returns the nearest-rank q-quantile of sorted values.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
