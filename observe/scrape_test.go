package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

// refGateway is a real client_golang registry exporting the reference
// gateway's metric names, served by promhttp with OpenMetrics enabled.
type refGateway struct {
	state      *prometheus.GaugeVec
	rejections *prometheus.CounterVec
	probes     *prometheus.HistogramVec
	handler    http.Handler

	mu       sync.Mutex
	accept   []string // Accept header of each scrape
	served   []string // Content-Type of each response
	failWith int      // when non-zero, answer with this status
}

func newRefGateway() *refGateway {
	reg := prometheus.NewRegistry()
	g := &refGateway{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "openclaw_breaker_state", Help: "Breaker state: 0 closed, 1 half-open, 2 open.",
		}, []string{"dependency", "region", "env"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "openclaw_breaker_rejections_total", Help: "Calls rejected by the breaker.",
		}, []string{"dependency", "region", "env"}),
		probes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "openclaw_breaker_probe_latency_ms", Help: "Probe latency.",
			Buckets: []float64{25, 50, 100, 250, 500, 1000, 2000},
		}, []string{"dependency", "region", "env"}),
	}
	reg.MustRegister(g.state, g.rejections, g.probes)
	g.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	for _, d := range []string{"search", "weather", "vectors"} {
		g.set(d, 0)
	}
	g.rejections.WithLabelValues("search", "local", "rehearse").Add(7)
	g.probes.WithLabelValues("search", "local", "rehearse").Observe(42)
	return g
}

func (g *refGateway) set(dep string, v float64) {
	g.state.WithLabelValues(dep, "local", "rehearse").Set(v)
}

func (g *refGateway) fail(status int) {
	g.mu.Lock()
	g.failWith = status
	g.mu.Unlock()
}

func (g *refGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.accept = append(g.accept, r.Header.Get("Accept"))
	fail := g.failWith
	g.mu.Unlock()
	if fail != 0 {
		http.Error(w, "metrics unavailable", fail)
		return
	}
	g.handler.ServeHTTP(w, r)
	g.mu.Lock()
	g.served = append(g.served, w.Header().Get("Content-Type"))
	g.mu.Unlock()
}

func (g *refGateway) lastServed() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.served) == 0 {
		return ""
	}
	return g.served[len(g.served)-1]
}

func TestNegotiatesOpenMetricsAndText(t *testing.T) {
	g := newRefGateway()
	g.set("search", 2)
	g.set("weather", 1)
	url := serve(t, g) + "/metrics"
	want := []journal.BreakerState{
		{Dependency: "search", Upstream: "search", State: journal.StateOpen},
		{Dependency: "vectors", Upstream: "vectors", State: journal.StateClosed},
		{Dependency: "weather", Upstream: "weather", State: journal.StateHalfOpen},
	}
	for _, tt := range []struct {
		format, wantType string
	}{
		{"", "text/plain"},
		{FormatAuto, "text/plain"},
		{FormatOpenMetrics, "application/openmetrics-text"},
		{FormatText, "text/plain"},
	} {
		t.Run("format="+tt.format, func(t *testing.T) {
			s, err := NewScraper(ScrapeConfig{URL: url, Format: tt.format}, WithUpstreams("search", "weather", "vectors"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.ScrapeOnce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ct := g.lastServed(); !strings.HasPrefix(ct, tt.wantType) {
				t.Fatalf("server answered %q, want %s", ct, tt.wantType)
			}
			if !reflect.DeepEqual(got.States, want) {
				t.Errorf("states\n got %+v\nwant %+v", got.States, want)
			}
			// The counter keeps its _total name in both formats, and
			// only the preset's series are kept (no go_* series).
			var rej, other int
			for _, s := range got.Series {
				switch {
				case s.Name == "openclaw_breaker_rejections_total" && s.Value == 7:
					rej++
				case !strings.HasPrefix(s.Name, "openclaw_breaker_"):
					other++
				}
			}
			if rej != 1 || other != 0 {
				t.Errorf("rejections_total found %d times, %d foreign series kept: %+v", rej, other, got.Series)
			}
		})
	}
}

func TestScrapeFailuresAreSamples(t *testing.T) {
	closed := func() string {
		addr := testutil.FreeAddr(t)
		return "http://" + addr + "/metrics"
	}
	handler := func(ct, body string, status int) string {
		return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(status)
			w.Write([]byte(body))
		})) + "/metrics"
	}
	hang := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})) + "/metrics"
	big := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		pad := strings.Repeat("x", 1<<16)
		for i, n := 0, 0; n <= 1<<20; i++ {
			k, err := fmt.Fprintf(w, "filler{i=\"%d\",pad=\"%s\"} 1\n", i, pad)
			if err != nil {
				return
			}
			n += k
		}
	})) + "/metrics"
	tests := []struct {
		name, url  string
		timeout    time.Duration
		wantStatus int
		wantErr    string
	}{
		{name: "connection refused", url: closed(), wantErr: "connection refused"},
		{name: "HTTP 500", url: handler(ctText, "boom", 500), wantStatus: 500, wantErr: "HTTP 500: want HTTP 200"},
		{name: "HTML page", url: handler("text/html; charset=utf-8", "<html></html>", 200), wantStatus: 200, wantErr: `not a Prometheus exposition: content type "text/html; charset=utf-8"`},
		{name: "bad text exposition", url: handler(ctText, "openclaw_breaker_state{dependency=\"search\"} 2\nopenclaw_breaker_state{ 1\n", 200), wantStatus: 200, wantErr: "parse text exposition: text format parsing error in line 2"},
		{name: "openmetrics without EOF", url: handler(ctOM, "# TYPE openclaw_breaker_state gauge\nopenclaw_breaker_state{dependency=\"search\"} 2\n", 200), wantStatus: 200, wantErr: "parse OpenMetrics exposition"},
		{name: "timeout", url: hang, timeout: 100 * time.Millisecond, wantErr: "timed out"},
		{name: "too large", url: big, timeout: 5 * time.Second, wantStatus: 200, wantErr: "response larger than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ScrapeConfig{URL: tt.url, Timeout: rehearse.Duration(tt.timeout), Interval: rehearse.Duration(5 * time.Second)}
			s, err := NewScraper(cfg, func(o *options) { o.maxBytes = 1 << 20 })
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got, err := s.ScrapeOnce(context.Background())
			if err == nil {
				t.Fatalf("no error; sample %+v", got)
			}
			if tt.timeout > 0 && tt.timeout < time.Second && time.Since(start) > 5*tt.timeout {
				t.Errorf("scrape took %s with a %s timeout", time.Since(start), tt.timeout)
			}
			var se *ScrapeError
			if !errors.As(err, &se) || !errors.Is(err, ErrScrape) || !errors.Is(err, rehearse.ErrEnvironment) {
				t.Fatalf("error %v (%T) is not a ScrapeError of class environment", err, err)
			}
			if rehearse.ExitCode(err) != rehearse.ExitEnvironment {
				t.Errorf("exit code %d", rehearse.ExitCode(err))
			}
			if se.Status != tt.wantStatus {
				t.Errorf("status %d, want %d", se.Status, tt.wantStatus)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.url) {
				t.Errorf("error %q, want it to name %s and say %q", err, tt.url, tt.wantErr)
			}
			if got == nil || got.Error != err.Error() || got.States != nil || got.Series != nil {
				t.Errorf("sample %+v, want only Error set", got)
			}
		})
	}
}

func TestSourceRedactsPassword(t *testing.T) {
	var auth string
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", ctText)
	}))
	url = strings.Replace(url, "http://", "http://scraper:s3cret@", 1) + "/metrics"
	s, err := NewScraper(ScrapeConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.ScrapeOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if auth == "" {
		t.Error("basic auth from the URL was not sent")
	}
	if strings.Contains(got.Source, "s3cret") || !strings.Contains(got.Source, "scraper:REDACTED@") {
		t.Errorf("source %q leaks or lost the user", got.Source)
	}
}

// signalRecorder records into a Memory and signals each event.
type signalRecorder struct {
	*journal.Memory
	ch chan journal.Payload
}

func newSignalRecorder(clock *journal.Clock) *signalRecorder {
	return &signalRecorder{Memory: journal.NewMemory(clock), ch: make(chan journal.Payload, 1024)}
}

func (r *signalRecorder) Record(p journal.Payload) { r.RecordAt(0, p) }

func (r *signalRecorder) RecordAt(t time.Duration, p journal.Payload) {
	r.Memory.RecordAt(t, p)
	select {
	case r.ch <- p:
	default: // nobody is counting any more
	}
}

func (r *signalRecorder) next(t *testing.T) journal.Payload {
	t.Helper()
	select {
	case p := <-r.ch:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no event recorded within 10s")
		return nil
	}
}

func TestRunScrapesEachIntervalAndRecordsFailures(t *testing.T) {
	g := newRefGateway()
	url := serve(t, g) + "/metrics"
	clock := journal.NewClock(time.Now())
	rec := newSignalRecorder(clock)
	tick := newManualTicker()
	s, err := NewScraper(ScrapeConfig{URL: url, Interval: rehearse.Duration(time.Hour)},
		WithRecorder(rec), WithClock(clock), WithUpstreams("search"), tick.option())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	stateOf := func(p journal.Payload) string {
		m := p.(*journal.MetricsSample)
		if m.Error != "" {
			return "error"
		}
		for _, b := range m.States {
			if b.Dependency == "search" {
				return b.State
			}
		}
		return "none"
	}
	// The first scrape happens at once, without a tick.
	if got := stateOf(rec.next(t)); got != journal.StateClosed {
		t.Fatalf("first sample %s, want closed", got)
	}
	steps := []struct {
		do   func()
		want string
	}{
		{func() { g.set("search", 2) }, journal.StateOpen},
		{func() { g.fail(http.StatusServiceUnavailable) }, "error"},
		{func() { g.fail(0); g.set("search", 1) }, journal.StateHalfOpen},
		{func() { g.set("search", 0) }, journal.StateClosed},
	}
	for i, st := range steps {
		st.do()
		tick.C <- time.Now()
		if got := stateOf(rec.next(t)); got != st.want {
			t.Fatalf("step %d: sample %s, want %s", i, got, st.want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	<-tick.stopped
	evs := rec.Events()
	if len(evs) != 5 {
		t.Fatalf("%d events, want 5", len(evs))
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].T < evs[i-1].T || evs[i].T <= 0 {
			t.Errorf("event times not increasing: %v then %v", evs[i-1].T, evs[i].T)
		}
		if m := evs[i].Payload.(*journal.MetricsSample); m.Took <= 0 || m.Took > evs[i].T {
			t.Errorf("took %v at %v", m.Took, evs[i].T)
		}
	}
	if e := evs[2].Payload.(*journal.MetricsSample).Error; !strings.Contains(e, "HTTP 503") {
		t.Errorf("failed sample error %q", e)
	}
}

func TestRunStopsDuringHangingScrape(t *testing.T) {
	entered := make(chan struct{}, 1)
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-r.Context().Done()
	})) + "/metrics"
	rec := journal.NewMemory(nil)
	s, err := NewScraper(ScrapeConfig{URL: url, Interval: rehearse.Duration(time.Minute)}, WithRecorder(rec))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-entered
	start := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Run took %s to stop", d)
	}
	if n := len(rec.Events()); n != 0 {
		t.Errorf("a scrape cut by the end of the run was recorded (%d events)", n)
	}
}

// TestOpenMetricsGoCollectorLimitation pins a known limitation of expfmt's
// OpenMetrics decoder (v0.73.1): client_golang's own OpenMetrics output for
// the Go collector has two families named go_memstats_alloc_bytes (a gauge,
// and a counter once OpenMetrics drops _total), which the decoder refuses.
// That is why FormatAuto prefers the text format. If this test starts
// failing after a dependency upgrade, the decoder was fixed: reconsider
// AcceptHeader.
func TestOpenMetricsGoCollectorLimitation(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGoCollector())
	url := serve(t, promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})) + "/metrics"
	for _, tt := range []struct {
		format  string
		wantErr string
	}{
		{FormatAuto, ""},
		{FormatOpenMetrics, `metadata for metric "go_memstats_alloc_bytes" after samples`},
	} {
		s, err := NewScraper(ScrapeConfig{URL: url, Format: tt.format, Interval: rehearse.Duration(time.Minute), Timeout: rehearse.Duration(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.ScrapeOnce(context.Background())
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("format %q: %v", tt.format, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("format %q: error %v, want %q", tt.format, err, tt.wantErr)
		}
	}
}

func TestHeadersFromEnvironment(t *testing.T) {
	t.Setenv("REHEARSE_TEST_TOKEN", "s3cret")
	var got []string
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/api/") {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
			return
		}
		w.Header().Set("Content-Type", ctText)
	})
	base := serve(t, h)
	headers := HeaderMap{"Authorization": "Bearer ${REHEARSE_TEST_TOKEN}"}
	for _, cfg := range []ScrapeConfig{
		{URL: base + "/metrics", Headers: headers},
		{PromQuery: &PromQueryConfig{URL: base}, Headers: headers},
	} {
		s, err := NewScraper(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ScrapeOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	c, err := NewCanary(HealthConfig{URL: base + "/healthz", Headers: headers})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Check(context.Background()); !s.Healthy {
		t.Fatalf("health %+v", s)
	}
	want := []string{"/metrics Bearer s3cret", "/api/v1/query Bearer s3cret", "/healthz Bearer s3cret"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests %q, want %q", got, want)
	}

	_, err = NewScraper(ScrapeConfig{URL: base, Headers: HeaderMap{"Authorization": "Bearer ${REHEARSE_TEST_UNSET}"}})
	if err == nil || err.Error() != "headers.Authorization: environment variable REHEARSE_TEST_UNSET is not set" || !errors.Is(err, rehearse.ErrInvalid) {
		t.Errorf("unset variable: %v", err)
	}
}

// TestHeadersRedactedInJSON: configs are recorded in run.start; a literal
// token must not be.
func TestHeadersRedactedInJSON(t *testing.T) {
	cfg := ScrapeConfig{URL: "http://127.0.0.1:9/metrics", Headers: HeaderMap{"Authorization": "Bearer literal-token"}}
	hc := HealthConfig{URL: "http://127.0.0.1:9/healthz", Headers: HeaderMap{"X-Api-Key": "k3y"}}
	for _, v := range []any{cfg, &cfg, hc} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "literal-token") || strings.Contains(string(b), "k3y") || !strings.Contains(string(b), `"REDACTED"`) {
			t.Errorf("JSON %s", b)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:9/metrics":                        "http://127.0.0.1:9/metrics",
		"http://u:p@gw:9/metrics":                           "http://u:REDACTED@gw:9/metrics",
		"http://gw:9/metrics?module=http&api_key=abc":       "http://gw:9/metrics?module=http&api_key=REDACTED",
		"https://gw/actuator/prometheus?access_token=t0k3n": "https://gw/actuator/prometheus?access_token=REDACTED",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
