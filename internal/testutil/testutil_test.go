package testutil

import (
	"strings"
	"sync"
	"testing"
)

// TestSyncBufferConcurrent writes from several goroutines while reading;
// under -race any unguarded access fails the test.
func TestSyncBufferConcurrent(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("x"))
			}
		}()
	}
	for range 50 {
		_ = b.String()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 400) {
		t.Fatalf("%d bytes, want 400", len(got))
	}
	// Bytes is a copy: a later write does not change it.
	snap := b.Bytes()
	b.Write([]byte("y"))
	if len(snap) != 400 || strings.Contains(string(snap), "y") {
		t.Fatalf("Bytes changed after a write: %d bytes", len(snap))
	}
}
