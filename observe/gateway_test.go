package observe_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/gateway"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/observe"
)

// TestReferenceGatewayEndToEnd scrapes the real built-in reference gateway
// with the reference preset while one of its upstreams fails, and checks
// the breaker is read closed, then open, with the other dependency
// unaffected.
func TestReferenceGatewayEndToEnd(t *testing.T) {
	var failing atomic.Bool
	upstream := func() string {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if failing.Load() && r.Header.Get("X-Health-Check") == "" {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte(`{"ok":true}`))
		})}
		return "http://" + testutil.Serve(t, srv)
	}
	search, weather := upstream(), upstream()

	cfg := gateway.Config{Upstreams: map[string]gateway.UpstreamConfig{}}
	cfg.Canary.Interval = new(rehearse.Duration(0)) // off
	cfg.Upstreams["search"] = gateway.UpstreamConfig{URL: search, Timeout: rehearse.Duration(3 * time.Second)}
	cfg.Upstreams["weather"] = gateway.UpstreamConfig{URL: weather, Timeout: rehearse.Duration(3 * time.Second)}
	cfg.Breaker.MinSamples = 4
	cfg.Breaker.Cooldown = rehearse.Duration(time.Minute) // stays open while the test reads it
	cfg.Breaker.CooldownMax = rehearse.Duration(time.Minute)
	g, err := gateway.New(cfg, gateway.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + testutil.Serve(t, g)

	call := func(dep string) *http.Response {
		resp, err := http.Get(base + "/tools/" + dep)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	call("search")
	call("weather")

	s, err := observe.NewScraper(observe.ScrapeConfig{URL: base + "/metrics"}, observe.WithUpstreams("search", "weather"))
	if err != nil {
		t.Fatal(err)
	}
	states := func() map[string]string {
		t.Helper()
		m, err := s.ScrapeOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, b := range m.States {
			out[b.Upstream] = b.State
		}
		return out
	}
	if got := states(); got["search"] != journal.StateClosed || got["weather"] != journal.StateClosed {
		t.Fatalf("healthy gateway read as %v", got)
	}

	failing.Store(true)
	opened := false
	for i := 0; i < 50 && !opened; i++ {
		opened = call("search").Header.Get("X-Breaker-State") == "open"
	}
	if !opened {
		t.Fatal("the reference gateway never opened search's breaker")
	}
	if got := states(); got["search"] != journal.StateOpen || got["weather"] != journal.StateClosed {
		t.Fatalf("after opening: %v, want search open and weather closed", got)
	}

	c, err := observe.NewCanary(observe.HealthConfig{URL: base + "/healthz"})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Check(context.Background())
	if h.Status == 0 || h.Error != "" || h.Detail == "" {
		t.Errorf("health sample %+v", h)
	}
	t.Logf("gateway health with search open: %d %q", h.Status, h.Detail)
}
