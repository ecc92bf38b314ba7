package observe

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFacts(t *testing.T) {
	// The processors the runtime uses, not the machine's CPUs: one fewer
	// than it has (1 on a single CPU) shows which Facts records.
	procs := max(1, runtime.NumCPU()-1)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	start := time.Now()
	p := Facts(context.Background())
	took := time.Since(start)
	if took > TimerBudget+time.Second {
		t.Errorf("Facts took %s", took)
	}
	if p.OS != runtime.GOOS || p.Arch != runtime.GOARCH || p.NumCPU < 1 || p.GoVersion != runtime.Version() || p.Hostname == "" {
		t.Errorf("portable facts: %+v", p)
	}
	if p.GOMAXPROCS != procs || p.NumCPU != runtime.NumCPU() {
		t.Errorf("gomaxprocs %d num_cpu %d, want %d and %d", p.GOMAXPROCS, p.NumCPU, procs, runtime.NumCPU())
	}
	tg := p.TimerGranularity
	if tg == nil || tg.Samples < 1 || tg.Samples > TimerSamples || tg.P50 < 0 || tg.P50 > tg.P99 || tg.P99 > tg.Max {
		t.Fatalf("timer granularity: %+v", tg)
	}
	t.Logf("platform: %s %s, %s, %d CPUs, %s; timer lateness p50 %s p99 %s max %s (%d sleeps); keepalive %v",
		p.OS, p.Kernel, p.CPU, p.NumCPU, p.GoVersion, tg.P50, tg.P99, tg.Max, tg.Samples, p.TCPKeepalive)
	switch runtime.GOOS {
	case "linux":
		if !strings.HasPrefix(p.Kernel, "Linux ") {
			t.Errorf("kernel %q", p.Kernel)
		}
		for _, k := range []string{"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"} {
			if _, err := strconv.Atoi(p.TCPKeepalive[k]); err != nil {
				t.Errorf("%s = %q", k, p.TCPKeepalive[k])
			}
		}
	case "darwin":
		if !strings.HasPrefix(p.Kernel, "Darwin ") || p.TCPKeepalive["net.inet.tcp.keepidle"] == "" {
			t.Errorf("darwin facts: %+v", p)
		}
	}
}

func TestMeasureTimerBounds(t *testing.T) {
	start := time.Now()
	ts := MeasureTimer(context.Background(), time.Millisecond, 1_000_000, 30*time.Millisecond)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("a 30ms budget took %s", d)
	}
	if ts == nil || ts.Samples >= 1_000_000 {
		t.Fatalf("stats %+v", ts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ts := MeasureTimer(ctx, time.Hour, 10, time.Hour); ts != nil {
		t.Errorf("cancelled measurement returned %+v", ts)
	}
}

func TestQuantile(t *testing.T) {
	var v []time.Duration
	for i := 1; i <= 100; i++ {
		v = append(v, time.Duration(i))
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50}, {0.99, 99}, {1, 100}, {0, 1}} {
		if got := quantile(v, tt.q); got != tt.want {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := quantile([]time.Duration{7}, 0.99); got != 7 {
		t.Errorf("single value: %v", got)
	}
}
