package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

// fakeProm is a loopback stand-in for a Prometheus server's query API: it
// answers /api/v1/query and /api/v1/query_range from a table of series,
// like Prometheus would for the stored data, and records what it was asked.
type fakeProm struct {
	mu sync.Mutex
	// points holds, per series (labels incl. __name__), values by unix
	// second.
	points map[string]map[int64]string
	labels map[string]map[string]string
	asked  []url.Values
	fail   string // when set, answer with this API error
}

func newFakeProm() *fakeProm {
	return &fakeProm{points: map[string]map[int64]string{}, labels: map[string]map[string]string{}}
}

func (f *fakeProm) add(labels map[string]string, sec int64, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := labelKey(labels)
	if f.points[k] == nil {
		f.points[k] = map[int64]string{}
		f.labels[k] = labels
	}
	f.points[k][sec] = v
}

// valueAt returns the latest point at or before sec (Prometheus' lookback).
func (f *fakeProm) valueAt(k string, sec int64) (string, bool) {
	best, ok := int64(-1), false
	for t := range f.points[k] {
		if t <= sec && t > best {
			best, ok = t, true
		}
	}
	return f.points[k][best], ok
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, r.Form)
	w.Header().Set("Content-Type", "application/json")
	if f.fail != "" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%q}`, f.fail)
		return
	}
	type result struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value,omitempty"`
		Values [][]any           `json:"values,omitempty"`
	}
	var results []result
	parse := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	switch r.URL.Path {
	case "/api/v1/query":
		ts := parse(r.Form.Get("time"))
		for k, l := range f.labels {
			if v, ok := f.valueAt(k, int64(ts)); ok {
				results = append(results, result{Metric: l, Value: []any{ts, v}})
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": results}})
	case "/api/v1/query_range":
		start, end, step := parse(r.Form.Get("start")), parse(r.Form.Get("end")), parse(r.Form.Get("step"))
		for k, l := range f.labels {
			res := result{Metric: l}
			for ts := start; ts <= end; ts += step {
				if v, ok := f.valueAt(k, int64(ts)); ok {
					res.Values = append(res.Values, []any{ts, v})
				}
			}
			if len(res.Values) > 0 {
				results = append(results, res)
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": results}})
	default:
		http.NotFound(w, r)
	}
}

func stateLabels(dep string) map[string]string {
	return map[string]string{"__name__": "openclaw_breaker_state", "dependency": dep, "job": "gateway"}
}

func TestPromQueryInstant(t *testing.T) {
	f := newFakeProm()
	base := time.Unix(1_800_000_000, 0)
	f.add(stateLabels("search"), base.Unix(), "0")
	f.add(stateLabels("search"), base.Unix()+10, "2")
	f.add(stateLabels("weather"), base.Unix(), "1")
	f.add(map[string]string{"__name__": "openclaw_breaker_rejections_total", "dependency": "search"}, base.Unix(), "12")
	promURL := serve(t, f)
	now := base.Add(5 * time.Second)
	s, err := NewScraper(ScrapeConfig{PromQuery: &PromQueryConfig{URL: promURL, Selector: `job="gateway"`}},
		WithUpstreams("search", "weather"), func(o *options) { o.now = func() time.Time { return now } })
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.ScrapeOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []journal.BreakerState{
		{Dependency: "search", Upstream: "search", State: journal.StateClosed},
		{Dependency: "weather", Upstream: "weather", State: journal.StateHalfOpen},
	}
	if !reflect.DeepEqual(got.States, want) {
		t.Errorf("states %+v, want %+v", got.States, want)
	}
	if got.Source != promURL+"/api/v1/query" {
		t.Errorf("source %q", got.Source)
	}
	if len(got.Series) != 3 || got.Series[0].Labels["__name__"] != "" {
		t.Errorf("series %+v", got.Series)
	}
	asked := f.asked[len(f.asked)-1]
	wantQuery := `{__name__=~"openclaw_breaker_transitions_total|openclaw_breaker_rejections_total|openclaw_breaker_retry_after_skips_total|openclaw_breaker_probes_total|openclaw_breaker_probe_latency_ms_count|openclaw_breaker_probe_latency_ms_sum|openclaw_breaker_state",job="gateway"}`
	if asked.Get("query") != wantQuery {
		t.Errorf("query\n got %s\nwant %s", asked.Get("query"), wantQuery)
	}
	if asked.Get("time") != "1800000005" {
		t.Errorf("time %q", asked.Get("time"))
	}

	// An aggregation without __name__ is taken as the preset's metric.
	s, err = NewScraper(ScrapeConfig{PromQuery: &PromQueryConfig{URL: promURL, Query: "max by (dependency) (openclaw_breaker_state)"}},
		func(o *options) { o.now = func() time.Time { return base.Add(20 * time.Second) } })
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.labels = map[string]map[string]string{"x": {"dependency": "search"}}
	f.points = map[string]map[int64]string{"x": {base.Unix(): "2"}}
	f.mu.Unlock()
	got, err = s.ScrapeOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.States) != 1 || got.States[0].State != journal.StateOpen {
		t.Errorf("aggregated states %+v", got.States)
	}

	// API errors are scrape failures with the server's message.
	f.mu.Lock()
	f.fail = `1:2: parse error: unexpected "}"`
	f.mu.Unlock()
	got, err = s.ScrapeOnce(context.Background())
	if !errors.Is(err, ErrScrape) || !errors.Is(err, rehearse.ErrEnvironment) || !strings.Contains(got.Error, "parse error") {
		t.Errorf("API error: %v, sample %+v", err, got)
	}
}

// TestPromQueryRange drives range mode with a controlled wall clock: each
// poll fetches the steps since the previous one, and each step is recorded
// at its evaluation time on the run clock.
func TestPromQueryRange(t *testing.T) {
	f := newFakeProm()
	start := time.Unix(1_800_000_000, 0)
	f.add(stateLabels("search"), start.Unix(), "0")
	f.add(stateLabels("search"), start.Unix()+3, "2")
	f.add(stateLabels("search"), start.Unix()+7, "1")
	promURL := serve(t, f)

	var mu sync.Mutex
	now := start
	setNow := func(d time.Duration) { mu.Lock(); now = start.Add(d); mu.Unlock() }
	clock := journal.NewClock(start.Add(-10 * time.Second))
	rec := newSignalRecorder(clock)
	tick := newManualTicker()
	s, err := NewScraper(ScrapeConfig{
		Interval:  rehearse.Duration(5 * time.Second),
		PromQuery: &PromQueryConfig{URL: promURL, Mode: PromModeQueryRange, Step: rehearse.Duration(2 * time.Second)},
	}, WithRecorder(rec), WithClock(clock), tick.option(),
		func(o *options) { o.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now } })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	// First poll at t=0 fetches the step at 0.
	rec.next(t)
	setNow(5 * time.Second) // steps 2, 4
	tick.C <- time.Now()
	rec.next(t)
	rec.next(t)
	setNow(9 * time.Second) // steps 6, 8
	tick.C <- time.Now()
	rec.next(t)
	rec.next(t)
	f.mu.Lock()
	f.fail = "overloaded"
	f.mu.Unlock()
	setNow(11 * time.Second)
	tick.C <- time.Now()
	if m := rec.next(t).(*journal.MetricsSample); !strings.Contains(m.Error, "overloaded") {
		t.Fatalf("failed poll recorded as %+v", m)
	}
	f.mu.Lock()
	f.fail = ""
	f.mu.Unlock()
	setNow(12 * time.Second) // step 10 and 12: the failed poll's steps are not lost
	tick.C <- time.Now()
	rec.next(t)
	rec.next(t)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	type point struct {
		at    time.Duration
		state string
	}
	var got []point
	for _, e := range rec.Events() {
		m := e.Payload.(*journal.MetricsSample)
		if m.Error != "" {
			continue
		}
		got = append(got, point{e.T, m.States[0].State})
	}
	sec := func(n int) time.Duration { return time.Duration(10+n) * time.Second }
	want := []point{
		{sec(0), "closed"}, {sec(2), "closed"}, {sec(4), "open"}, {sec(6), "open"},
		{sec(8), "half_open"}, {sec(10), "half_open"}, {sec(12), "half_open"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("points\n got %v\nwant %v", got, want)
	}
}

// TestPromQueryRealPrometheus runs a real Prometheus server scraping a
// loopback gateway and reads the breaker state back through its API.
func TestPromQueryRealPrometheus(t *testing.T) {
	bin := realServer(t, "prometheus", "apt-get install prometheus (Debian)")
	g := newRefGateway()
	g.set("search", 2)
	gw := strings.TrimPrefix(serve(t, g), "http://")

	// Prometheus cannot inherit a listener: find a free port and let it
	// bind; a clash fails the start, which the test reports.
	promAddr := testutil.FreeAddr(t)

	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 200ms\n  scrape_timeout: 200ms\nscrape_configs:\n  - job_name: gateway\n    static_configs:\n      - targets: [%q]\n", gw)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr, "--log.level=warn"))

	rec := newSignalRecorder(nil)
	s, err := NewScraper(ScrapeConfig{
		Interval:  rehearse.Duration(100 * time.Millisecond),
		PromQuery: &PromQueryConfig{URL: "http://" + promAddr, Selector: `job="gateway"`},
	}, WithRecorder(rec), WithUpstreams("search"))
	if err != nil {
		t.Fatal(err)
	}
	runScraper(t, s)

	waitFor := func(want string) {
		t.Helper()
		srv.awaitStates(t, rec, map[string]string{"search": want}, 45*time.Second)
	}
	waitFor(journal.StateOpen)
	g.set("search", 1)
	waitFor(journal.StateHalfOpen)
}
