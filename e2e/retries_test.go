package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/scenarios"
)

// The retry analysis held to gateways the harness did not build: HAProxy's
// L7 retries, and a small proxy on net/http/httputil with the retry loop
// people write by hand. The measured attempts and waits must equal the
// configured ones.

// retryStorm is a 503 storm on search (not on its health checks, so that
// HAProxy keeps the server UP and every failed request is retried).
func retryStorm(name string) drill {
	return drill{Name: name, Rate: 10, Duration: 20 * time.Second, Faults: `  - name: search-503
    type: status
    upstream: search
    at: 5s
    for: 10s
    params: {code: 503}
`, Expect: `  upstreams: [search]
  max_attempts: 3
  no_write_retries: true
`}
}

// searchFigures returns search's retry figures of the run, failing the
// test when they are absent.
func searchFigures(t *testing.T, res *rehearsal.Result) *analysis.RetryFigures {
	t.Helper()
	r := res.Analysis.Resilience
	if r == nil || r.Upstreams["search"] == nil {
		t.Fatalf("no retry figures for search: %+v (notes %q)", r, res.Analysis.Notes)
	}
	return r.Upstreams["search"]
}

// logRetryFigures writes the figures a person compares with the
// configuration.
func logRetryFigures(t *testing.T, f *analysis.RetryFigures, statements []string) {
	t.Helper()
	b := f.Backoff
	t.Logf("attempts distribution %v, max %d; retried %.0f%%", f.Distribution, f.MaxAttempts, *f.RetriedShare*100)
	if b.P50Ms != nil {
		t.Logf("wait before a retry min/p50/max %.1f/%.1f/%.1f ms over %d retries, by retry %v", *b.MinMs, *b.P50Ms, *b.MaxMs, b.Retries, b.P50ByRetryMs)
	}
	if l := f.Lockstep; l.CoincidentShare != nil {
		t.Logf("lockstep: %.2f coincident vs %.2f independent (verdict %v)", *l.CoincidentShare, *l.IndependentShare, deref(l.Lockstep))
	}
	w := f.Writes
	t.Logf("writes %d: POST/PATCH sent again without a key %d, with the same key %d", w.Writes, w.PostPatch.WithoutKey, w.PostPatch.SameKey)
	for _, s := range statements {
		t.Logf("statement: %s", s)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestHAProxyRetries: HAProxy with "retries 2" and "retry-on 503" tries
// every failed search request exactly 3 times, immediately (it has no
// backoff between L7 retries).
func TestHAProxyRetries(t *testing.T) {
	t.Parallel() // its own HAProxy and free ports; counts, not timings
	tm := defaultTiming
	tm.Retries, tm.RetryOn = 2, "503"
	_, res, err := rehearseHAProxyWith(t, tm, retryStorm("retries"))
	f := searchFigures(t, res)
	logRetryFigures(t, f, res.Analysis.Resilience.Statements)
	// During the storm every search request fails on every attempt: 3
	// attempts (the first and 2 retries) for each; outside it, 1. A request
	// whose attempts straddle the storm's end (HAProxy retries within a
	// millisecond, so at most the one in flight then) can succeed on its
	// second attempt.
	for k, n := range f.Distribution {
		if k != "1" && k != "3" && (k != "2" || n > 1) {
			t.Errorf("%d search requests took %s attempts; HAProxy is configured for 1 + 2 retries: %v", n, k, f.Distribution)
		}
	}
	if f.Distribution["3"] < 20 || f.MaxAttempts != 3 {
		t.Errorf("attempts distribution %v: want every failed request at exactly 3", f.Distribution)
	}
	failed := res.Analysis.Phases["during"].Outcomes["http_5xx"]
	if failed == 0 {
		t.Fatalf("no failed client request during the storm: %v", res.Analysis.Phases["during"].Outcomes)
	}
	// HAProxy retries at once: no backoff.
	if b := f.Backoff; b.P50Ms == nil || *b.P50Ms > 50 {
		t.Errorf("median wait before an HAProxy retry %v ms, want about 0 (no backoff)", deref(b.P50Ms))
	}
	// max_attempts 3 is met; the POSTs without a key that HAProxy retried
	// fail no_write_retries, and say so.
	for _, e := range res.Expectations {
		switch e.Name {
		case "max_attempts":
			if !e.Passed {
				t.Errorf("max_attempts 3: %+v", e)
			}
		case "no_write_retries":
			if w := f.Writes.PostPatch.WithoutKey; (w > 0) == e.Passed {
				t.Errorf("no_write_retries %+v with %d POSTs sent again without a key", e, w)
			}
		}
	}
	if err != nil && !errors.Is(err, rehearse.ErrExpectations) {
		t.Fatal(err)
	}
}

// naiveProxy is a gateway the harness did not build: net/http/httputil's
// ReverseProxy with the retry loop often written by hand (every method,
// a fixed delay, no deadline of its own).
type naiveProxy struct {
	routes  map[string]*url.URL // path prefix → upstream
	retries int
	delay   time.Duration
}

func (p *naiveProxy) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		body = b
	}
	for n := 0; ; n++ {
		out := r.Clone(r.Context())
		out.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := http.DefaultTransport.RoundTrip(out)
		if n == p.retries || (err == nil && resp.StatusCode < 500) {
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		time.Sleep(p.delay)
	}
}

func (p *naiveProxy) start(t *testing.T) string {
	t.Helper()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			for prefix, u := range p.routes {
				if strings.HasPrefix(pr.In.URL.Path, prefix) {
					pr.SetURL(u)
					return
				}
			}
		},
		Transport: p,
		ErrorLog:  nil,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String()
}

// TestNaiveReverseProxyRetries: a ReverseProxy retrying 3 times after a
// fixed 150 ms is measured as 4 attempts, waits of 150 ms that do not
// grow, retries in lockstep, and POSTs sent again without a key.
func TestNaiveReverseProxyRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s rehearsal; skipped with -short")
	}
	ups := map[string]string{}
	p := &naiveProxy{routes: map[string]*url.URL{}, retries: 3, delay: 150 * time.Millisecond}
	for _, n := range upstreamNames {
		ups[n] = testutil.FreeAddr(t)
		prefix := "/tools/" + n
		if n == "llm-primary" {
			prefix = "/v1/chat/completions"
		}
		p.routes[prefix] = &url.URL{Scheme: "http", Host: ups[n]}
	}
	front := p.start(t)
	d := retryStorm("naive-proxy")
	d.Expect += "  no_lockstep_retries: true\n  retry_backoff_min: 100ms\n  retry_jitter: full\n"
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: naive-proxy\ngateway:\n  url: %s\nreplay:\n  rate: %g\n  duration: %s\n  deadline: 5s\n  idempotency_keys: {share: 0.5}\nupstreams:\n", front, d.Rate, d.Duration)
	for _, n := range upstreamNames {
		fmt.Fprintf(&b, "  - {name: %s, listen: \"%s\"}\n", n, ups[n])
	}
	b.WriteString("faults:\n" + d.Faults + "expectations:\n" + d.Expect)
	sc, err := scenarios.Parse(filepath.Join(t.TempDir(), "naive.yaml"), []byte(b.String()))
	if err != nil {
		t.Fatalf("scenario:\n%s\n%v", b.String(), err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if keep := os.Getenv("REHEARSE_E2E_OUT"); keep != "" {
		dir = filepath.Join(keep, fmt.Sprintf("naive-proxy-%d", time.Now().UnixNano()))
	}
	res, err := rehearsal.Run(context.Background(), sc, rehearsal.Options{OutDir: dir})
	if err != nil && !errors.Is(err, rehearse.ErrExpectations) {
		t.Fatal(err)
	}
	f := searchFigures(t, res)
	logRetryFigures(t, f, res.Analysis.Resilience.Statements)
	if f.MaxAttempts != 4 || f.Distribution["4"] < 20 {
		t.Errorf("attempts %v, want 1 + 3 retries for every failed request", f.Distribution)
	}
	if b := f.Backoff; b.MinMs == nil || *b.MinMs < 145 || *b.P50Ms > 200 || b.Grows == nil || *b.Grows {
		t.Errorf("waits %+v, want a fixed 150 ms that does not grow", b)
	}
	if w := f.Writes; w.PostPatch.WithoutKey == 0 || w.PostPatch.SameKey == 0 {
		t.Errorf("writes %+v: the proxy retries every POST, with and without a key", w)
	}
	verdict := map[string]bool{}
	for _, e := range res.Expectations {
		verdict[e.Name] = e.Passed
	}
	if verdict["max_attempts"] || verdict["no_write_retries"] || !verdict["retry_backoff_min"] || verdict["retry_jitter"] {
		t.Errorf("verdicts %v: want max_attempts, no_write_retries and retry_jitter (a fixed 150 ms wait) not met, retry_backoff_min met", verdict)
	}
	t.Logf("no_lockstep_retries met: %v", verdict["no_lockstep_retries"])
}
