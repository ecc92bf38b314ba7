package capture

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestCorpusRoundTrip: every request of the real test captures comes out
// of a Corpus as it went in (all fields, nil and empty bodies, trailers,
// incomplete ones), also when read concurrently and out of order.
func TestCorpusRoundTrip(t *testing.T) {
	var all []*Request
	for _, name := range []string{"edge-eth.pcap.gz", "odd-targets.pcap", "socks.pcap", "resync.pcap", "snaplen-120.pcap", "retrans-tbf.pcap"} {
		reqs, _, err := ReadFile(context.Background(), filepath.Join("testdata", name), Options{KeepSecrets: true})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, reqs...)
	}
	all = append(all, &Request{Method: "GET", Target: "/no-time", Body: []byte{}}, &Request{})
	var c Corpus
	// Many blocks: repeat the requests (big bodies included).
	for range 40 {
		for _, r := range all {
			c.Append(r)
		}
	}
	c.Done()
	if c.Len() != 40*len(all) || len(c.blocks) < 10 {
		t.Fatalf("%d requests in %d blocks", c.Len(), len(c.blocks))
	}
	check := func(i int) error {
		want := *all[i%len(all)]
		want.pkt = 0
		got := c.At(i)
		if !got.Time.Equal(want.Time) {
			return fmt.Errorf("request %d: time %v, want %v", i, got.Time, want.Time)
		}
		got.Time, want.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(*got, want) {
			return fmt.Errorf("request %d:\n got %+v\nwant %+v", i, *got, want)
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := c.Len() - 1 - w; i >= 0; i -= 4 {
				if err := check(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if c.Size() >= c.EncodedBytes()/2 {
		t.Errorf("%d bytes held for %d encoded: compression should at least halve repeated requests", c.Size(), c.EncodedBytes())
	}
}

// TestCorpusArenaFreed: the memory a corpus's blocks live in outside the
// heap is returned once the corpus is unreachable.
func TestCorpusArenaFreed(t *testing.T) {
	a := func() *blockArena {
		c := &Corpus{}
		for i := range 5000 {
			c.Append(&Request{Method: "GET", Target: fmt.Sprintf("/%d", i), Body: make([]byte, 100)})
		}
		c.Done()
		if len(c.arena.chunks) == 0 && runtime.GOOS != "windows" {
			t.Fatal("no chunk mapped")
		}
		return c.arena
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !a.freed.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the arena of an unreachable corpus is not freed")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
