package gateway

import (
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

// TestRetryAfterOn503Waited: a 503 with Retry-After is retried no sooner
// than the upstream asked, when that fits in the deadline; a Retry-After
// beyond the deadline is not waited for: the client gets the upstream's
// own answer, its Retry-After included.
func TestRetryAfterOn503Waited(t *testing.T) {
	up := newUpstream(t)
	var seen callCounter
	up.set(func(w http.ResponseWriter, r *http.Request) {
		n := seen.add(r)
		switch {
		case r.Header.Get(HeaderSeq) == "far":
			status(503, "Retry-After", "60")(w, r)
		case n == 1:
			status(503, "Retry-After", "1")(w, r)
		default:
			ok("{}")(w, r)
		}
	})
	cfg := fastConfig(map[string]string{"search": up.URL})
	cfg.Breaker.MinSamples = 100
	_, base := testGateway(t, cfg)
	c := &http.Client{}
	r := do(t, c, "GET", base+"/tools/search", HeaderSeq, "near")
	if r.Status != 200 {
		t.Fatalf("status %d, want 200 after waiting Retry-After: 1", r.Status)
	}
	calls, _ := up.snapshot()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2", len(calls))
	}
	if gap := calls[1].At.Sub(calls[0].At); gap < time.Second {
		t.Errorf("retry %s after a 503 with Retry-After: 1, want ≥ 1s", gap)
	}
	start := time.Now()
	r = do(t, c, "GET", base+"/tools/search", HeaderSeq, "far")
	if r.Status != 503 || r.RetryHdr != "60" || seen.calls("far") != 1 {
		t.Errorf("Retry-After 60 beyond a 3s deadline: status %d Retry-After %q after %d calls, want the upstream's 503 with 60 after 1 call",
			r.Status, r.RetryHdr, seen.calls("far"))
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("answered after %s: the gateway waited for a Retry-After it could not honour", took)
	}
}

// TestDeadlinePropagated: the client's budget shortens the gateway's
// deadline (less the reserve), the upstream is told its own budget (less
// another reserve), and a hanging upstream is given up on before the
// client's deadline.
func TestDeadlinePropagated(t *testing.T) {
	up := newUpstream(t)
	up.set(hang)
	cfg := fastConfig(map[string]string{"search": up.URL})
	cfg.Upstreams["search"] = UpstreamConfig{URL: up.URL, Timeout: rehearse.Duration(20 * time.Second)}
	cfg.Deadline.Reserve = rehearse.Duration(100 * time.Millisecond)
	cfg.Retry.MaxAttempts = 1
	_, base := testGateway(t, cfg)
	start := time.Now()
	r := do(t, &http.Client{}, "GET", base+"/tools/search", DefaultDeadlineHeader, "800")
	took := time.Since(start)
	if r.Status != http.StatusGatewayTimeout || r.Code != CodeUpstreamTimeout {
		t.Fatalf("status %d code %q, want 504 upstream_timeout", r.Status, r.Code)
	}
	// Gateway deadline 700ms, upstream call ends at 600ms.
	if took < 550*time.Millisecond || took > 790*time.Millisecond {
		t.Errorf("answered after %s; want about 600ms, and before the client's 800ms", took)
	}
	calls, _ := up.snapshot()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	ms, err := strconv.Atoi(calls[0].Headers.Get(DefaultDeadlineHeader))
	if err != nil || ms > 600 || ms < 400 {
		t.Errorf("upstream told %q ms, want at most 600 (800 less two 100ms reserves)", calls[0].Headers.Get(DefaultDeadlineHeader))
	}
	// Without a client budget the upstream's timeout applies.
	up.set(ok("{}"))
	do(t, &http.Client{}, "GET", base+"/tools/search")
	calls, _ = up.snapshot()
	if ms, _ := strconv.Atoi(calls[1].Headers.Get(DefaultDeadlineHeader)); ms < 19000 || ms > 19900 {
		t.Errorf("upstream told %d ms, want about 20s less the reserve", ms)
	}
}

// TestBackoffFullJitterWithinDeadline: attempts are bounded, the waits are
// drawn from [0, base×2^(n-1)), and no retry starts when it could not end
// before the deadline less the reserve.
func TestBackoffFullJitterWithinDeadline(t *testing.T) {
	up := newUpstream(t)
	up.set(status(503))
	cfg := fastConfig(map[string]string{"search": up.URL})
	cfg.Breaker.MinSamples = 1000
	cfg.Retry.MaxAttempts = 4
	cfg.Retry.BaseDelay = rehearse.Duration(40 * time.Millisecond)
	cfg.Retry.MaxDelay = rehearse.Duration(400 * time.Millisecond)
	_, base := testGateway(t, cfg, WithSeed(7))
	c := &http.Client{}
	for i := range 10 {
		r := do(t, c, "GET", base+"/tools/search", HeaderSeq, strconv.Itoa(i))
		if r.Status != 503 {
			t.Fatalf("status %d", r.Status)
		}
	}
	calls, _ := up.snapshot()
	if len(calls) != 40 {
		t.Fatalf("%d calls for 10 requests, want exactly 4 attempts each", len(calls))
	}
	// The wait before attempt n+1 is drawn in [0, 40ms·2^(n-1)). A loaded
	// machine stretches single gaps by hundreds of milliseconds, so each
	// position is judged by its median (the bound's half in expectation,
	// allowed the whole bound plus 30 ms), and single gaps only against a
	// gross bound (a second beyond).
	for n := 1; n < 4; n++ {
		bound := 40 * time.Millisecond << (n - 1)
		var gaps []time.Duration
		for i := 0; i < len(calls); i += 4 {
			gap := calls[i+n].At.Sub(calls[i+n-1].At)
			gaps = append(gaps, gap)
			if gap > bound+time.Second {
				t.Errorf("request %d: wait before attempt %d %s, far beyond its bound %s", i/4, n+1, gap, bound)
			}
		}
		slices.Sort(gaps)
		if med := gaps[len(gaps)/2]; med > bound+30*time.Millisecond {
			t.Errorf("median wait before attempt %d %s over %d requests, beyond its bound %s: %v", n+1, med, len(gaps), bound, gaps)
		}
	}
	// A 150ms client budget: the gateway's deadline is 120ms, its calls
	// end by 90ms; retries go on while a wait fits, and the answer comes
	// before the client's deadline: the upstream's 503, or the gateway's
	// 504 when a loaded machine made the last call reach its own deadline.
	cfg.Deadline.Reserve = rehearse.Duration(30 * time.Millisecond)
	_, base2 := testGateway(t, cfg)
	start := time.Now()
	r := do(t, c, "GET", base2+"/tools/search", DefaultDeadlineHeader, "150")
	if took := time.Since(start); took > 150*time.Millisecond || (r.Status != 503 && r.Status != 504) {
		t.Errorf("status %d after %s with a 150ms client budget", r.Status, took)
	}
}

// TestNaiveMode: every call, a POST without an Idempotency-Key included,
// is tried 1 + 3 times 200ms apart, no breaker ever opens, and no deadline
// header is sent.
func TestNaiveMode(t *testing.T) {
	up := newUpstream(t)
	up.set(status(503))
	cfg := fastConfig(map[string]string{"search": up.URL})
	cfg.Mode = ModeNaive
	g, base := testGateway(t, cfg)
	c := &http.Client{}
	for i := range 8 {
		r := do(t, c, "POST", base+"/tools/search", HeaderSeq, strconv.Itoa(i))
		if r.Status != 503 || r.Code == CodeDependencyUnavailable {
			t.Fatalf("request %d: status %d code %q, want the upstream's 503", i, r.Status, r.Code)
		}
	}
	calls, _ := up.snapshot()
	if len(calls) != 32 {
		t.Fatalf("%d calls for 8 POSTs, want 4 each", len(calls))
	}
	for i := 1; i < 4; i++ {
		if gap := calls[i].At.Sub(calls[i-1].At); gap < NaiveRetryDelay || gap > NaiveRetryDelay+150*time.Millisecond {
			t.Errorf("naive retry %d after %s, want the fixed %s", i, gap, NaiveRetryDelay)
		}
		if calls[i].Headers.Get(DefaultDeadlineHeader) != "" {
			t.Errorf("naive mode sent a deadline")
		}
	}
	if st := g.Breaker("search").State(); st != Closed {
		t.Errorf("breaker %s in naive mode", st)
	}
}

func TestModeValidated(t *testing.T) {
	cfg := Config{}
	cfg.Mode = "clever"
	if err := cfg.Validate(); err == nil {
		t.Fatal("mode clever accepted")
	}
	cfg.Mode = ModeNaive
	cfg.Deadline.Reserve = -1
	if err := cfg.Validate(); err == nil {
		t.Fatal("negative reserve accepted")
	}
}

// TestNoSilentResend: net/http's Transport re-sends a replayable request
// by itself when a reused connection is reset before the response; the
// gateway must not let it, or its attempts are not bounded. With one
// attempt allowed, a reset GET and a reset POST with an Idempotency-Key
// each reach the upstream exactly once.
func TestNoSilentResend(t *testing.T) {
	up := newUpstream(t)
	cfg := fastConfig(map[string]string{"search": up.URL})
	cfg.Retry.MaxAttempts = 1
	cfg.Breaker.ConsecutiveFailures = 100
	cfg.Breaker.MinSamples = 1000
	_, base := testGateway(t, cfg)
	c := &http.Client{}
	for i, tc := range []struct{ method, key string }{{"GET", ""}, {"POST", "k1"}, {"DELETE", ""}} {
		up.set(ok("{}"))
		do(t, c, tc.method, base+"/tools/search", HeaderSeq, "warm") // a keep-alive connection to reuse
		up.set(reset)
		seq := "s" + strconv.Itoa(i)
		hdr := []string{HeaderSeq, seq}
		if tc.key != "" {
			hdr = append(hdr, "Idempotency-Key", tc.key)
		}
		r := do(t, c, tc.method, base+"/tools/search", hdr...)
		calls, _ := up.snapshot()
		n := 0
		for _, a := range calls {
			if a.Seq == seq {
				n++
			}
		}
		if n != 1 || r.Status != http.StatusBadGateway {
			t.Errorf("%s: %d upstream calls, status %d; want 1 call and 502", tc.method, n, r.Status)
		}
	}
}
