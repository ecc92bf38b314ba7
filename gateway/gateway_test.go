package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// scrape reads the gateway's own /metrics over HTTP and flattens it to
// name{k=v,...} → value (histograms as _count).
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var kv []string
			for _, l := range m.GetLabel() {
				if l.GetName() == "env" || l.GetName() == "region" {
					continue
				}
				kv = append(kv, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(kv)
			key := name + "{" + strings.Join(kv, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[name+"_count{"+strings.Join(kv, ",")+"}"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// TestOpenProbeCloseEndToEnd drives real traffic through the gateway into
// a failing, then recovering upstream, and checks from the upstream's side
// that traffic stops at open, probes are tagged, spaced and never
// concurrent, the cooldown doubles, the breaker closes after recovery,
// and the metrics agree with what happened.
func TestOpenProbeCloseEndToEnd(t *testing.T) {
	up := newUpstream(t)
	up.set(status(503))
	cfg := fastConfig(map[string]string{"search": up.URL})
	cfg.Retry.MaxAttempts = 1
	clk := journal.NewClock(time.Now())
	mem := journal.NewMemory(clk)
	g, base := testGateway(t, cfg, WithRecorder(mem), WithInstance("gw-test"))

	// Four clients.
	var (
		mu      sync.Mutex
		results []clientResult
	)
	stop := loadClients([]string{base, base, base, base}, 10*time.Millisecond, func(c *http.Client, base string) {
		r := do(t, c, "POST", base+"/tools/search")
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
	})
	// Fail for 2.2 s: open, then failed probes with doubling cooldowns.
	time.Sleep(2200 * time.Millisecond)
	recovered := time.Now()
	up.set(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond) // let concurrent arrivals overlap a probe
		ok(`{"ok":true}`)(w, r)
	})
	deadline := time.Now().Add(5 * time.Second)
	for g.Breaker("search").State() != Closed && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	closedAt := time.Now()
	time.Sleep(200 * time.Millisecond) // traffic after the close
	stop()

	if st := g.Breaker("search").State(); st != Closed {
		t.Fatalf("breaker %s 5s after recovery, want closed; transitions %v", st, transitions(mem))
	}
	calls, maxProbe := up.snapshot()
	if maxProbe != 1 {
		t.Errorf("max probes in flight at the upstream: %d, want 1", maxProbe)
	}
	// Traffic stops at open: after the 4th failure only probes arrive until
	// the close (allowing the calls already in flight when it opened).
	// The close as the breaker recorded it (white-box), to split the
	// upstream's view into phases.
	var closeT time.Time
	for _, e := range mem.Events() {
		if bt, ok := e.Payload.(*journal.BreakerTransition); ok && bt.To == "closed" {
			closeT = clk.Time(e.T)
		}
	}
	var leaked []time.Duration
	var probes []arrival
	for _, a := range calls {
		if a.Probe {
			probes = append(probes, a)
			continue
		}
		if len(probes) > 0 && a.At.Before(closeT) {
			leaked = append(leaked, closeT.Sub(a.At))
		}
	}
	if len(leaked) > 0 {
		t.Errorf("%d untagged calls reached the upstream between the first probe and the close (%v before it)", len(leaked), leaked)
	}
	if len(probes) < 4 {
		t.Fatalf("%d probes, want at least 4 (2 failed, 2 to close)", len(probes))
	}
	for _, p := range probes {
		if p.UA != ProbeUserAgent || p.Headers.Get(HeaderProbe) != ProbeTag {
			t.Errorf("probe without tags: UA %q, %s %q", p.UA, HeaderProbe, p.Headers.Get(HeaderProbe))
		}
	}
	// Spacing and cooldown progression, measured at the upstream.
	var failedProbes int
	for i := 1; i < len(probes); i++ {
		gap := probes[i].At.Sub(probes[i-1].At)
		if gap < 240*time.Millisecond {
			t.Errorf("probes %d and %d only %s apart, want ≥ 250ms", i-1, i, gap)
		}
		if probes[i-1].At.Before(recovered) {
			failedProbes++
			// A failed probe doubles the 400ms cooldown to 800ms (the cap).
			if gap < 790*time.Millisecond {
				t.Errorf("probe after failed probe %d came %s later, want ≥ 800ms (doubled cooldown)", i-1, gap)
			}
		}
	}
	var gaps []string
	for i := 1; i < len(probes); i++ {
		gaps = append(gaps, probes[i].At.Sub(probes[i-1].At).Round(time.Millisecond).String())
	}
	t.Logf("upstream view: %d probes, gaps %v, max in flight %d, close %s after recovery",
		len(probes), gaps, maxProbe, closeT.Sub(recovered).Round(time.Millisecond))
	if failedProbes < 1 {
		t.Errorf("no failed probe observed")
	}
	var after int
	for _, a := range calls {
		if !a.Probe && a.At.After(closedAt) {
			after++
		}
	}
	if after == 0 {
		t.Errorf("no traffic reached the upstream after the breaker closed")
	}

	// Journal: closed>open, then (open>half_open, half_open>open)*, then
	// open>half_open, half_open>closed.
	tr := transitions(mem)
	if len(tr) < 4 || tr[0] != "closed>open" || tr[len(tr)-1] != "half_open>closed" {
		t.Fatalf("transitions %v", tr)
	}
	count := map[string]int{}
	for _, s := range tr {
		count[s]++
	}
	// Metrics agree with the journal and with what clients saw.
	m := scrape(t, base)
	for s, n := range count {
		from, to, _ := strings.Cut(s, ">")
		key := fmt.Sprintf("%s{dependency=search,from=%s,to=%s}", MetricTransitions, from, to)
		if m[key] != float64(n) {
			t.Errorf("%s = %v, journal has %d", key, m[key], n)
		}
	}
	if v := m[MetricState+"{dependency=search}"]; v != 0 {
		t.Errorf("state gauge %v, want 0 (closed)", v)
	}
	var fastFails int
	for _, r := range results {
		if r.State != "" {
			fastFails++
			if r.Status != 503 || r.Code != CodeDependencyUnavailable || r.RetryHdr == "" {
				t.Errorf("fast-fail response %+v", r)
			}
		}
	}
	if got := m[MetricRejections+"{dependency=search}"]; got != float64(fastFails) || fastFails == 0 {
		t.Errorf("rejections metric %v, clients saw %d fast-fails", got, fastFails)
	}
	if got := m[MetricProbes+"_total"]; got != 0 {
		t.Errorf("unexpected metric")
	}
	var probeCount float64
	for _, res := range []string{"success", "failure", "neutral"} {
		probeCount += m[fmt.Sprintf("%s{dependency=search,result=%s}", MetricProbes, res)]
	}
	if probeCount != float64(len(probes)) {
		t.Errorf("probes metric %v, upstream saw %d probes", probeCount, len(probes))
	}
	if got := m[MetricProbeLatency+"_count{dependency=search}"]; got != float64(len(probes)) {
		t.Errorf("probe latency histogram count %v, want %d", got, len(probes))
	}
	if m[MetricProbeLatencySeconds+"_count{dependency=search}"] != m[MetricProbeLatency+"_count{dependency=search}"] ||
		math.Abs(m[MetricProbeLatencySeconds+"_sum{dependency=search}"]*1000-m[MetricProbeLatency+"_sum{dependency=search}"]) > 1e-6 {
		t.Errorf("probe latency in seconds differs from the ms series: %v %v", m[MetricProbeLatencySeconds+"_count{dependency=search}"], m[MetricProbeLatencySeconds+"_sum{dependency=search}"])
	}
	if got := m[MetricUpstreamCalls+"{dependency=search}"]; got != float64(len(calls)) {
		t.Errorf("upstream calls metric %v, upstream saw %d", got, len(calls))
	}
}

// TestRetryAfterHonoured: a 429 with Retry-After opens the breaker for at
// least that long; the upstream sees nothing until then; the skipped calls
// are counted as retry_after_skips.
func TestRetryAfterHonoured(t *testing.T) {
	up := newUpstream(t)
	var once sync.Once
	up.set(func(w http.ResponseWriter, r *http.Request) {
		first := false
		once.Do(func() { first = true })
		if first {
			status(429, "Retry-After", "1")(w, r)
			return
		}
		ok("{}")(w, r)
	})
	cfg := fastConfig(map[string]string{"search": up.URL})
	g, base := testGateway(t, cfg)
	c := &http.Client{}
	first := do(t, c, "GET", base+"/tools/search")
	if first.Status != 429 || first.RetryHdr != "1" {
		t.Fatalf("the upstream's 429 was not passed through: %+v", first)
	}
	var skipped int
	deadline := time.Now().Add(4 * time.Second)
	for g.Breaker("search").State() != Closed || skipped == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("breaker %s after 4s", g.Breaker("search").State())
		}
		r := do(t, c, "GET", base+"/tools/search")
		if strings.Contains(r.Body, `"reason":"retry_after"`) {
			skipped++
		}
		time.Sleep(20 * time.Millisecond)
	}
	calls, _ := up.snapshot()
	if len(calls) < 3 {
		t.Fatalf("%d calls", len(calls))
	}
	if gap := calls[1].At.Sub(calls[0].At); gap < time.Second {
		t.Errorf("next call %s after the 429 with Retry-After: 1, want ≥ 1s", gap)
	}
	if !calls[1].Probe {
		t.Errorf("first call after the pause is not a probe")
	}
	m := scrape(t, base)
	if got := m[MetricRetryAfterSkips+"{dependency=search}"]; got != float64(skipped) || skipped == 0 {
		t.Errorf("retry_after_skips %v, clients saw %d retry_after fast-fails", got, skipped)
	}
	if got := m[MetricUpstreamFails+"{class=rate_limited,dependency=search}"]; got != 1 {
		t.Errorf("rate_limited failures %v, want 1", got)
	}
}

// TestResetsOpenAfterFiveConsecutive: five real TCP resets open the
// breaker; the sixth call never reaches the upstream.
func TestResetsOpenAfterFiveConsecutive(t *testing.T) {
	up := newUpstream(t)
	up.set(reset)
	cfg := fastConfig(map[string]string{"search": up.URL})
	cfg.Breaker.Cooldown = rehearse.Duration(time.Minute)
	cfg.Breaker.CooldownMax = rehearse.Duration(time.Minute)
	cfg.Breaker.MinSamples = 100 // only the consecutive rule can open
	_, base := testGateway(t, cfg)
	c := &http.Client{}
	for i := range 5 {
		r := do(t, c, "POST", base+"/tools/search")
		if r.Status != 502 || r.Code != CodeUpstreamError || !strings.Contains(r.Body, `"class":"reset"`) {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	for range 3 {
		r := do(t, c, "POST", base+"/tools/search")
		if r.Status != 503 || r.State != "open" || r.Code != CodeDependencyUnavailable {
			t.Fatalf("after 5 resets: %+v", r)
		}
		var body struct {
			Error apiError `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil || body.Error.Dependency != "search" ||
			body.Error.State != "open" || body.Error.RetryAfterS == nil || *body.Error.RetryAfterS < 50 {
			t.Fatalf("fast-fail body %s (%v)", r.Body, err)
		}
	}
	if calls, _ := up.snapshot(); len(calls) != 5 {
		t.Fatalf("upstream saw %d calls, want exactly 5", len(calls))
	}
	if got := scrape(t, base)[MetricUpstreamFails+"{class=reset,dependency=search}"]; got != 5 {
		t.Fatalf("reset failures metric %v", got)
	}
}

// TestTimeoutsClassified tells "headers never arrived" from a slow body.
func TestTimeoutsClassified(t *testing.T) {
	up := newUpstream(t)
	cfg := fastConfig(map[string]string{"search": up.URL})
	u := cfg.Upstreams["search"]
	u.HeaderTimeout = rehearse.Duration(150 * time.Millisecond)
	u.Timeout = rehearse.Duration(600 * time.Millisecond)
	cfg.Upstreams["search"] = u
	cfg.Retry.MaxAttempts = 1
	_, base := testGateway(t, cfg)
	c := &http.Client{}

	up.set(hang)
	start := time.Now()
	r := do(t, c, "GET", base+"/tools/search")
	took := time.Since(start)
	if r.Status != 504 || r.Code != CodeUpstreamTimeout || !strings.Contains(r.Body, "headers_timeout") {
		t.Fatalf("headers never: %+v", r)
	}
	if took < 150*time.Millisecond || took > 590*time.Millisecond {
		t.Fatalf("headers timeout after %s, want ≈150ms (not the 600ms deadline)", took)
	}

	up.set(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for range 20 {
			_, _ = w.Write([]byte("x"))
			_ = http.NewResponseController(w).Flush()
			select {
			case <-time.After(100 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	r = do(t, c, "GET", base+"/tools/search")
	if r.Status != 200 || r.Err == nil {
		t.Fatalf("slow body: want 200 with a broken body, got %+v", r)
	}
	m := scrape(t, base)
	if m[MetricUpstreamFails+"{class=headers_timeout,dependency=search}"] != 1 ||
		m[MetricUpstreamFails+"{class=deadline,dependency=search}"] != 1 {
		t.Fatalf("failure classes: %v", m)
	}
}

// TestSSEFlushedPerEvent proves pass-through without buffering: the
// upstream sends its second event only after the client received the
// first through the gateway.
func TestSSEFlushedPerEvent(t *testing.T) {
	up := newUpstream(t)
	got1 := make(chan struct{})
	up.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-got1:
		case <-time.After(5 * time.Second):
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\ndata: [DONE]\n\n")
	})
	cfg := fastConfig(map[string]string{"llm-primary": up.URL})
	cfg.Primary = "llm-primary"
	_, base := testGateway(t, cfg)
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var events []string
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "data: ") {
			events = append(events, line)
			if len(events) == 1 {
				close(got1)
			}
		}
	}
	if len(events) != 3 || events[2] != "data: [DONE]" {
		t.Fatalf("events %q (err %v)", events, sc.Err())
	}
	if calls, _ := up.snapshot(); len(calls) != 1 || calls[0].Path != "/v1/chat/completions" {
		t.Fatalf("upstream calls %+v", calls)
	}
}

// TestFallbackWhenPrimaryOpen: with the primary's breaker open, chat
// requests go to the fallback without touching the primary.
func TestFallbackWhenPrimaryOpen(t *testing.T) {
	primary, fallback := newUpstream(t), newUpstream(t)
	primary.set(status(503))
	fallback.set(ok(`{"model":"fallback"}`))
	cfg := fastConfig(map[string]string{"llm-primary": primary.URL, "llm-fallback": fallback.URL})
	cfg.Primary, cfg.Fallback = "llm-primary", "llm-fallback"
	cfg.Breaker.Cooldown = rehearse.Duration(time.Minute)
	cfg.Breaker.CooldownMax = rehearse.Duration(time.Minute)
	g, base := testGateway(t, cfg)
	c := &http.Client{}
	for i := range 12 {
		r := do(t, c, "POST", base+"/v1/chat/completions")
		if r.Status != 200 || !strings.Contains(r.Body, "fallback") {
			t.Fatalf("chat %d: %+v", i, r)
		}
	}
	if st := g.Breaker("llm-primary").State(); st != Open {
		t.Fatalf("primary breaker %s", st)
	}
	p, _ := primary.snapshot()
	f, _ := fallback.snapshot()
	if len(p) != cfg.Breaker.MinSamples || len(f) != 12 {
		t.Fatalf("primary saw %d calls (want %d, then none), fallback %d (want 12)", len(p), cfg.Breaker.MinSamples, len(f))
	}
	if got := scrape(t, base)[MetricFallbacks+"{dependency=llm-primary}"]; got != 12 {
		t.Fatalf("fallbacks metric %v", got)
	}
	// Both open: a fast-fail naming the primary.
	fallback.set(status(503))
	for range 25 { // 12 successes in the window: > 18 failures to exceed 60 %
		do(t, c, "POST", base+"/v1/chat/completions")
	}
	r := do(t, c, "POST", base+"/v1/chat/completions")
	if r.Status != 503 || r.State != "open" || !strings.Contains(r.Body, `"dependency":"llm-primary"`) {
		t.Fatalf("both open: %+v", r)
	}
}

// TestMidStreamCutNotABreakerFailure: a body cut after bytes were sent is
// passed on to the client as a broken body and counted, but does not
// open the breaker (default).
func TestMidStreamCutNotABreakerFailure(t *testing.T) {
	up := newUpstream(t)
	up.set(cutAfter(1000, 400))
	cfg := fastConfig(map[string]string{"search": up.URL})
	g, base := testGateway(t, cfg)
	c := &http.Client{}
	for range 10 {
		r := do(t, c, "GET", base+"/tools/search")
		if r.Status != 200 || r.Err == nil || len(r.Body) != 400 {
			t.Fatalf("cut: want 200 with a broken body of 400 bytes, got status %d err %v len %d", r.Status, r.Err, len(r.Body))
		}
	}
	if st := g.Breaker("search").State(); st != Closed {
		t.Fatalf("breaker %s after 10 mid-stream cuts", st)
	}
	if got := scrape(t, base)[MetricUpstreamFails+"{class=cut_mid_body,dependency=search}"]; got != 10 {
		t.Fatalf("cut_mid_body %v, want 10", got)
	}
	if calls, _ := up.snapshot(); len(calls) != 10 {
		t.Fatalf("%d upstream calls: a cut after headers must not be retried", len(calls))
	}
}

// TestRetriesOnlyIdempotent: GET and Idempotency-Key calls are retried,
// plain POSTs never.
func TestRetriesOnlyIdempotent(t *testing.T) {
	up := newUpstream(t)
	var seen callCounter
	up.set(func(w http.ResponseWriter, r *http.Request) {
		if seen.add(r) == 1 {
			status(503)(w, r)
			return
		}
		ok("{}")(w, r)
	})
	cfg := fastConfig(map[string]string{"search": up.URL})
	cfg.Breaker.MinSamples = 100
	_, base := testGateway(t, cfg)
	c := &http.Client{}
	for _, tc := range []struct {
		name, method string
		hdr          []string
		want, calls  int
	}{
		{"get", "GET", nil, 200, 2},
		{"post", "POST", nil, 503, 1},
		{"post with key", "POST", []string{"Idempotency-Key", "k1"}, 200, 2},
	} {
		seq := fmt.Sprint(len(tc.name))
		r := do(t, c, tc.method, base+"/tools/search", append([]string{HeaderSeq, seq + tc.name[:1]}, tc.hdr...)...)
		n := seen.calls(seq + tc.name[:1])
		if r.Status != tc.want || n != tc.calls {
			t.Errorf("%s: status %d after %d upstream calls, want %d after %d", tc.name, r.Status, n, tc.want, tc.calls)
		}
	}
	if got := scrape(t, base)[MetricRetries+"{dependency=search}"]; got != 2 {
		t.Errorf("retries metric %v, want 2", got)
	}
}

// TestForwardedHeaders: sequence and run stamps reach the upstream; the
// configured credential replaces the client's; clients cannot forge the
// probe tag; the gateway names itself in Via.
func TestForwardedHeaders(t *testing.T) {
	up := newUpstream(t)
	cfg := fastConfig(map[string]string{"search": up.URL})
	u := cfg.Upstreams["search"]
	u.Credential = "sk-secret-123"
	cfg.Upstreams["search"] = u
	_, base := testGateway(t, cfg, WithInstance("gw-7"))
	r := do(t, &http.Client{}, "POST", base+"/tools/search/deep/path?q=1",
		HeaderSeq, "42", HeaderRun, "run-9", "Authorization", "Bearer client", HeaderProbe, "half-open",
		"Connection", "X-Hop", "X-Hop", "drop me")
	if r.Status != 200 {
		t.Fatalf("%+v", r)
	}
	calls, _ := up.snapshot()
	a := calls[0]
	if a.Seq != "42" || a.Run != "run-9" || a.Auth != "Bearer sk-secret-123" || a.Probe ||
		a.Headers.Get(HeaderProbe) != "" || !strings.Contains(a.Via, "gw-7") || a.Headers.Get("X-Hop") != "" ||
		a.Path != "/tools/search/deep/path" {
		t.Fatalf("upstream saw %+v", a)
	}
	r = do(t, &http.Client{}, "GET", base+"/tools/nope")
	if r.Status != 404 || r.Code != CodeUnknownDependency {
		t.Fatalf("unknown tool: %+v", r)
	}
	r = do(t, &http.Client{}, "GET", base+"/v1/chat/completions")
	if r.Status != 404 {
		t.Fatalf("chat without providers: %+v", r)
	}
}

// TestHealthzCanary: the canary checks every upstream with the health
// header; /healthz is 200 while all are up and 503 when one is down.
func TestHealthzCanary(t *testing.T) {
	good, bad := newUpstream(t), newUpstream(t)
	cfg := fastConfig(map[string]string{"search": good.URL, "weather": bad.URL})
	cfg.Canary.Interval = new(rehearse.Duration(50 * time.Millisecond))
	_, base := testGateway(t, cfg)

	waitHealth := func(want int) map[string]any {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			resp, err := http.Get(base + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			deps, _ := body["dependencies"].(map[string]any)
			w, _ := deps["weather"].(map[string]any)
			if resp.StatusCode == want && w["canary"] != "unknown" {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("healthz %d, want %d: %v", resp.StatusCode, want, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitHealth(200)
	bad.set(status(503))
	body := waitHealth(503)
	w := body["dependencies"].(map[string]any)["weather"].(map[string]any)
	if w["canary"] != "down" || w["breaker"] != "closed" || w["disagree"] != true {
		t.Fatalf("weather health %v", w)
	}
	checks := good.healthChecks()
	if len(checks) == 0 || checks[0].Headers.Get(HeaderHealthCheck) != "canary" || checks[0].Path != "/healthz" {
		t.Fatalf("canary requests %+v", checks)
	}
	if calls, _ := good.snapshot(); len(calls) != 0 {
		t.Fatalf("canary requests counted as traffic: %d", len(calls))
	}
	if got := scrape(t, base)[MetricCanaryUp+"{dependency=weather}"]; got != 0 {
		t.Fatalf("canary_up{weather} %v", got)
	}
}

// TestSlowUpstreamOpens: an upstream that never sends headers opens the
// breaker after five header timeouts; the sixth call never reaches it.
func TestSlowUpstreamOpens(t *testing.T) {
	up := newUpstream(t)
	up.set(hang)
	cfg := fastConfig(map[string]string{"search": up.URL})
	u := cfg.Upstreams["search"]
	u.HeaderTimeout = rehearse.Duration(80 * time.Millisecond)
	cfg.Upstreams["search"] = u
	cfg.Breaker.MinSamples = 100
	cfg.Breaker.Cooldown = rehearse.Duration(time.Minute)
	cfg.Breaker.CooldownMax = rehearse.Duration(time.Minute)
	g, base := testGateway(t, cfg)
	c := &http.Client{}
	for i := range 5 {
		if r := do(t, c, "POST", base+"/tools/search"); r.Status != 504 || r.Code != CodeUpstreamTimeout {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	if r := do(t, c, "POST", base+"/tools/search"); r.Status != 503 || r.State != "open" {
		t.Fatalf("after 5 timeouts: %+v (breaker %s)", r, g.Breaker("search").State())
	}
	if calls, _ := up.snapshot(); len(calls) != 5 {
		t.Fatalf("upstream saw %d calls, want 5", len(calls))
	}
}

// TestIsolation: two dependencies open at once do not affect a third,
// healthy one.
func TestIsolation(t *testing.T) {
	a, b, healthy := newUpstream(t), newUpstream(t), newUpstream(t)
	a.set(status(503))
	b.set(reset)
	cfg := fastConfig(map[string]string{"search": a.URL, "weather": b.URL, "vectors": healthy.URL})
	cfg.Retry.MaxAttempts = 1
	cfg.Breaker.Cooldown = rehearse.Duration(time.Minute)
	cfg.Breaker.CooldownMax = rehearse.Duration(time.Minute)
	g, base := testGateway(t, cfg)
	c := &http.Client{}
	for range 10 {
		do(t, c, "POST", base+"/tools/search")
		do(t, c, "POST", base+"/tools/weather")
		if r := do(t, c, "POST", base+"/tools/vectors"); r.Status != 200 || r.State != "" {
			t.Fatalf("healthy dependency affected: %+v", r)
		}
	}
	if g.Breaker("search").State() != Open || g.Breaker("weather").State() != Open || g.Breaker("vectors").State() != Closed {
		t.Fatalf("states %s %s %s", g.Breaker("search").State(), g.Breaker("weather").State(), g.Breaker("vectors").State())
	}
	if calls, _ := healthy.snapshot(); len(calls) != 10 {
		t.Fatalf("healthy upstream saw %d calls, want 10", len(calls))
	}
	m := scrape(t, base)
	if m[MetricState+"{dependency=search}"] != 2 || m[MetricState+"{dependency=weather}"] != 2 || m[MetricState+"{dependency=vectors}"] != 0 {
		t.Fatalf("state gauges: search %v weather %v vectors %v", m[MetricState+"{dependency=search}"],
			m[MetricState+"{dependency=weather}"], m[MetricState+"{dependency=vectors}"])
	}
}

// TestProbeDeadlineFromObservedLatency: a probe gets P99 × 1.4 of the
// observed latency (at least the 50ms floor) to send its headers; an
// upstream that "recovered" to hundreds of times its usual latency fails
// the probe, long before its 3s request timeout.
func TestProbeDeadlineFromObservedLatency(t *testing.T) {
	up := newUpstream(t)
	slow := func(d time.Duration) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
			ok("{}")(w, r)
		}
	}
	up.set(slow(2 * time.Millisecond))
	cfg := fastConfig(map[string]string{"search": up.URL})
	cfg.Retry.MaxAttempts = 1
	cfg.Breaker.MinSamples = 1000
	cfg.Breaker.ProbeDeadlineMin = rehearse.Duration(50 * time.Millisecond)
	cfg.Breaker.Cooldown = rehearse.Duration(100 * time.Millisecond)
	cfg.Breaker.CooldownMax = rehearse.Duration(time.Minute)
	g, base := testGateway(t, cfg)
	c := &http.Client{}
	for range 30 {
		do(t, c, "POST", base+"/tools/search")
	}
	// P99 of ~2ms calls × 1.4, floored at 50ms; a loaded machine may
	// observe more, but far below the recovered upstream's 1.5s.
	if d := g.Breaker("search").ProbeDeadline(); d < 50*time.Millisecond || d > 500*time.Millisecond {
		t.Fatalf("probe deadline %s after fast calls, want 50ms (floor) up to 500ms", d)
	}
	up.set(reset)
	for range 5 {
		do(t, c, "POST", base+"/tools/search")
	}
	if st := g.Breaker("search").State(); st != Open {
		t.Fatalf("breaker %s after 5 resets", st)
	}
	up.set(slow(1500 * time.Millisecond))
	deadline := time.Now().Add(3 * time.Second)
	var probe clientResult
	var took time.Duration
	for {
		probe = do(t, c, "POST", base+"/tools/search")
		took = time.Since(probe.At)
		if probe.State == "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if probe.Status != 504 || !strings.Contains(probe.Body, "headers_timeout") {
		t.Fatalf("probe against a 1.5s upstream: %+v, want 504 headers_timeout", probe)
	}
	if took >= time.Second {
		t.Fatalf("probe gave up after %s: the probe deadline, not the 3s timeout, must end it", took)
	}
	if st := g.Breaker("search").State(); st != Open {
		t.Fatalf("breaker %s after the slow probe, want open again", st)
	}
	if cd := g.Breaker("search").Cooldown(); cd != 200*time.Millisecond {
		t.Fatalf("cooldown %s after the failed probe, want doubled to 200ms", cd)
	}
}

// TestShutdownGracefulAndRegisterer: Shutdown lets a request in flight
// finish; WithRegisterer exposes the same collectors on another registry.
func TestShutdownGracefulAndRegisterer(t *testing.T) {
	up := newUpstream(t)
	release := make(chan struct{})
	arrived := make(chan struct{})
	up.set(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		ok(`{"done":true}`)(w, r)
	})
	cfg := fastConfig(map[string]string{"search": up.URL})
	reg := prometheus.NewRegistry()
	g, err := New(cfg, WithRegisterer(reg), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(ln) }()
	got := make(chan clientResult, 1)
	go func() { got <- do(t, &http.Client{}, "GET", "http://"+ln.Addr().String()+"/tools/search") }()
	<-arrived
	shut := make(chan error, 1)
	go func() { shut <- g.Shutdown(context.Background()) }()
	close(release)
	if r := <-got; r.Status != 200 || !strings.Contains(r.Body, "done") {
		t.Fatalf("in-flight request during Shutdown: %+v", r)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range fams {
		found = found || f.GetName() == MetricUpstreamCalls
	}
	if !found {
		t.Fatalf("%s not on the given registry", MetricUpstreamCalls)
	}
}
