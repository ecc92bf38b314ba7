package inject

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/time/rate"

	"github.com/halfopen/rehearse/journal"
)

// openFDs counts the process's open file descriptors; -1 where unknown.
func openFDs() int {
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if ents, err := os.ReadDir(dir); err == nil {
			return len(ents)
		}
	}
	return -1
}

// TestLoadThenBaseline drives 2,000 req/s for 5 s (10,000 requests, set
// LOAD_SECONDS to change) through a fake and a proxy upstream with faults
// mixed in, then checks that every request was recorded and that goroutines
// and file descriptors return to their baseline after Close.
func TestLoadThenBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("load test skipped in -short mode")
	}
	const rps = 2000
	secs := 5 * time.Second
	if v := os.Getenv("LOAD_SECONDS"); v != "" {
		d, err := time.ParseDuration(v + "s")
		if err != nil {
			t.Fatal(err)
		}
		secs = d
	}
	baseG, baseFD := runtime.NumGoroutine(), openFDs()
	baseline := goleak.IgnoreCurrent()

	clock := journal.NewClock(time.Now())
	mem := journal.NewMemory(clock)
	real, err := New([]UpstreamConfig{{Name: "real"}}, nil, WithClock(clock), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := real.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := New([]UpstreamConfig{{Name: "search"}, {Name: "llm", Mode: ModeProxy, Target: real.URL("real")}}, []FaultSpec{
		{Type: "status", Upstream: "search", Probability: 0.2},
		{Type: "reset", Upstream: "search", Probability: 0.05},
		{Type: "retry_after", Upstream: "llm", EveryNth: 7, Params: &RetryAfterParams{}},
	}, WithRecorder(mem), WithClock(clock), WithSeed(1), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}

	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	lim := rate.NewLimiter(rps, 20)
	ctx, cancel := context.WithTimeout(context.Background(), secs)
	defer cancel()
	var sent, failed, resets atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := s.URL("search") + "/tools/search"
			if w%2 == 1 {
				url = s.URL("llm") + "/v1/x"
			}
			for lim.Wait(ctx) == nil {
				sent.Add(1)
				resp, err := c.Get(url)
				if err != nil {
					if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
						resets.Add(1)
					} else {
						failed.Add(1)
						t.Log(err)
					}
					continue
				}
				var buf [4096]byte
				for {
					if _, err := resp.Body.Read(buf[:]); err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	tr.CloseIdleConnections()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := real.Close(); err != nil {
		t.Fatal(err)
	}
	n := sent.Load()
	t.Logf("sent %d requests in %v (%.0f req/s), %d resets seen, %d other errors", n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), resets.Load(), failed.Load())
	if failed.Load() > 0 {
		t.Fatalf("%d requests failed other than by an injected reset", failed.Load())
	}
	if got := len(mem.OfKind(journal.KindUpstreamRequest)); int64(got) < n {
		// Reset connections may be retried by the transport on a new
		// connection, so the upstream can see more requests, never fewer.
		t.Fatalf("%d upstream.request events for %d requests", got, n)
	}
	if !raceEnabled && n < int64(secs.Seconds()*rps/4) {
		t.Errorf("only %d requests in %v: the machine is too loaded to call this a load test", n, secs)
	}

	// Everything the server started is gone.
	goleak.VerifyNone(t, baseline)
	deadline := time.Now().Add(5 * time.Second)
	for {
		g, fd := runtime.NumGoroutine(), openFDs()
		if g <= baseG && fd <= baseFD {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines %d (baseline %d), fds %d (baseline %d)", g, baseG, fd, baseFD)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
