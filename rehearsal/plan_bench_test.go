package rehearsal

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/replay/capture"
)

// BenchmarkCheck1M measures the memory `rehearse validate` and `run` take
// to hold a large capture for replay, beside what streaming it (`rehearse
// inspect`) takes: a capture of REHEARSE_BENCH_REQUESTS requests (a
// million by default) of the agent-gateway mix, written by `capturegen
// -mode synth`. peak-heap-MB is the heap in use sampled every 20 ms;
// held-MB what the compressed corpus holds.
//
//	go test -run '^$' -bench Check1M -benchtime 1x ./rehearsal
func BenchmarkCheck1M(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("REHEARSE_BENCH_REQUESTS")); err == nil && v > 0 {
		n = v
	}
	path := filepath.Join(b.TempDir(), "gw.pcap")
	gen := exec.Command("go", "run", "../scripts/capturegen", "-mode", "synth", "-n", strconv.Itoa(n), "-conns", "64", "-o", path)
	if out, err := gen.CombinedOutput(); err != nil {
		b.Fatalf("capturegen: %v: %s", err, out)
	}
	heap := func(ms *runtime.MemStats) uint64 { return ms.HeapInuse }
	b.Run("stream", func(b *testing.B) {
		runtime.GC()
		stop := testutil.HeapPeak(heap)
		for b.Loop() {
			st, err := capture.ExtractFile(context.Background(), path, capture.Options{}, func(*capture.Request) error { return nil })
			if err != nil || st.Delivered != int64(n) {
				b.Fatalf("%v: %d requests", err, st.Delivered)
			}
		}
		b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MB")
	})
	b.Run("check", func(b *testing.B) {
		sc := parse(b, fmt.Sprintf("version: 1\nname: big\nreplay: {capture: %q, allow_writes: true, duration: 2s}\n", path))
		runtime.GC()
		stop := testutil.HeapPeak(heap)
		var p *Plan
		for b.Loop() {
			var err error
			if p, err = Check(context.Background(), sc); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MB")
		if p.Replayable != n {
			b.Fatalf("%d replayable, want %d", p.Replayable, n)
		}
		b.ReportMetric(float64(p.corpus.Size())/(1<<20), "held-MB")
		b.ReportMetric(float64(p.corpus.EncodedBytes())/(1<<20), "encoded-MB")
	})
}
