package observe_test

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"github.com/halfopen/rehearse/observe"
)

// A gateway exposing resilience4j's breaker gauge through Micrometer,
// served on a loopback listener for the example.
const exposition = `# TYPE resilience4j_circuitbreaker_state gauge
resilience4j_circuitbreaker_state{name="search",state="closed",} 0.0
resilience4j_circuitbreaker_state{name="search",state="open",} 1.0
resilience4j_circuitbreaker_state{name="search",state="half_open",} 0.0
resilience4j_circuitbreaker_state{name="weather-api",state="closed",} 1.0
resilience4j_circuitbreaker_state{name="weather-api",state="open",} 0.0
resilience4j_circuitbreaker_state{name="weather-api",state="half_open",} 0.0
`

func ExampleNewScraper() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, exposition)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	s, err := observe.NewScraper(observe.ScrapeConfig{
		URL:           "http://" + ln.Addr().String() + "/actuator/prometheus",
		Preset:        observe.PresetResilience4j,
		DependencyMap: map[string]string{"weather-api": "weather"},
	}, observe.WithUpstreams("search", "weather"))
	if err != nil {
		panic(err)
	}
	sample, err := s.ScrapeOnce(context.Background())
	if err != nil {
		panic(err)
	}
	for _, b := range sample.States {
		fmt.Printf("%s (upstream %s): %s\n", b.Dependency, b.Upstream, b.State)
	}
	// Output:
	// search (upstream search): open
	// weather-api (upstream weather): closed
}

func ExamplePresets() {
	for _, name := range observe.Presets() {
		fmt.Printf("%-12s %s\n", name, observe.PresetDoc(name))
	}
	// Output:
	// caddy        Caddy's reverse proxy (caddy_reverse_proxy_upstreams_healthy: 1 closed, 0 open)
	// custom       your own metric: a value mapping or a one-hot state label (see docs/metrics.md)
	// envoy        Envoy outlier detection (envoy_cluster_outlier_detection_ejections_active: 0 closed, more open)
	// haproxy      HAProxy's prometheus-exporter (haproxy_server_status one-hot: UP closed; DOWN, MAINT, DRAIN, NOLB open)
	// reference    the built-in reference gateway (openclaw_breaker_state: 0 closed, 1 half-open, 2 open)
	// resilience4j resilience4j via Micrometer (resilience4j_circuitbreaker_state one-hot by state)
}
