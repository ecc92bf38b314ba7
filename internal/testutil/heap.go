package testutil

import (
	"runtime"
	"time"
)

// HeapPeak samples the Go heap every 20 ms, as of reads it from the memory
// statistics (HeapInuse, HeapAlloc), until the returned stop is called;
// stop returns the highest value seen. A benchmark's peak is what bounds
// its memory, not what is left at the end.
func HeapPeak(of func(*runtime.MemStats) uint64) (stop func() uint64) {
	var peak uint64 // the sampler's until done is closed
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				peak = max(peak, of(&ms))
			}
		}
	}()
	return func() uint64 {
		close(quit)
		<-done
		return peak
	}
}
