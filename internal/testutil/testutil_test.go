package testutil

import (
	"net"
	"strings"
	"sync"
	"testing"
)

// TestSyncBufferConcurrent writes from several goroutines while reading;
// under -race any unguarded access fails the test.
// TestFreeAddr: the address is free (it can be bound) and never handed
// out twice.
func TestFreeAddr(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		a := FreeAddr(t)
		if seen[a] {
			t.Fatalf("%s handed out twice", a)
		}
		seen[a] = true
	}
	ln, err := net.Listen("tcp", FreeAddr(t))
	if err != nil {
		t.Fatalf("the free address cannot be bound: %v", err)
	}
	ln.Close()
}

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
