//go:build unix

package reports

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

// bigJournal writes a journal of about n events: 5 upstreams at 50 req/s,
// a 503 storm on one upstream for 2 minutes of every 10, tagged probes,
// metrics every 5 s and health checks every 2 s.
func bigJournal(tb testing.TB, path string, n int) int64 {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := journal.NewWriter(bw, journal.NewClock(time.Now()), journal.WithFlushInterval(time.Hour))
	// About 2.1 events per client request with this mix.
	dur := time.Duration(float64(n)/2.1/50) * time.Second
	s := &sim{rate: 50, dur: dur, upstreams: []string{"search", "weather", "vectors", "llm-primary", "llm-fallback"},
		threshold: 5, cooldown: 5 * time.Second, backoff: 2, spacing: 300 * time.Millisecond, need: 2, style: "tagged",
		fwdSeq: true, clientUp: true, metricsInt: 5 * time.Second, healthInt: 2 * time.Second, canary: true}
	ups := s.upstreams
	for i, at := 0, 5*time.Minute; at+2*time.Minute < dur; i, at = i+1, at+10*time.Minute {
		s.faults = append(s.faults, simFault{name: fmt.Sprintf("storm-%d", i), upstream: ups[i%len(ups)], typ: "status", at: at, for_: 2 * time.Minute})
	}
	var count int64
	s.sink = func(e journal.Event) {
		count++
		w.RecordAt(e.T, e.Payload)
	}
	s.build()
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
	// Synced, as the Writer syncs a run's journal when it closes: the
	// analysis then reads a journal on disk, not 223 MB of dirty pages
	// the kernel is still writing back.
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return count
}

// BenchmarkAnalyze1M analyses a 1,000,000-event journal from disk and
// reports events/s and the live heap the analysis holds at its end.
func BenchmarkAnalyze1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "journal.jsonl")
	n := bigJournal(b, path, 1_000_000)
	st, _ := os.Stat(path)
	b.Logf("generated %d events, %d bytes", n, st.Size())
	b.SetBytes(st.Size())
	// Sample the heap while the analysis runs: its peak is what bounds
	// memory, not what is left at the end.
	stopHeap := testutil.HeapPeak(func(ms *runtime.MemStats) uint64 { return ms.HeapAlloc })
	runtime.GC()
	cpu0 := cpuTime()
	b.ResetTimer()
	var heap uint64
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		a, err := analysis.Analyze(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = max(heap, ms.HeapAlloc)
		if i == 0 {
			b.Logf("%d events, %.1f MB journal, %d upstreams, %d episodes on search", n, float64(st.Size())/1e6, len(a.Upstreams), len(a.Upstreams["search"].Episodes))
		}
		runtime.KeepAlive(a)
		b.StartTimer()
	}
	cpu := cpuTime() - cpu0
	peak := stopHeap()
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(heap)/1e6, "live-MB")
}

// BenchmarkRender1M is `rehearse report render` of a 1,000,000-event
// journal: the analysis and every file written (run.json, report.html,
// report.md, the SVG and PNG timelines, junit.xml), timed in CPU seconds.
// Run with -cpu 1 for the one-core figure of docs/benchmarks.md.
func BenchmarkRender1M(b *testing.B) {
	dir := b.TempDir()
	n := bigJournal(b, filepath.Join(dir, "journal.jsonl"), 1_000_000)
	runtime.GC()
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		if _, _, err := RenderDir(dir); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(cpu.Seconds()/float64(b.N)*1e6/float64(n), "cpu-s/1M-events")
	b.ReportMetric(float64(n), "events")
}

// cpuTime is the process's user+system CPU time: on a shared machine it
// says more about the analysis's cost than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
