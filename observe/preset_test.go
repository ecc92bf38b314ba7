package observe

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/halfopen/rehearse/journal"
)

const (
	ctText = "text/plain; version=0.0.4; charset=utf-8"
	ctOM   = "application/openmetrics-text; version=1.0.0; charset=utf-8"
)

func TestPresetsOnRecordedExpositions(t *testing.T) {
	tests := []struct {
		name        string
		file, ctype string
		cfg         ScrapeConfig
		opts        []Option
		want        []journal.BreakerState
		wantSeries  []string // names of the kept series, in order, deduplicated
	}{
		{
			name: "reference openmetrics", file: "reference-openmetrics.txt", ctype: ctOM,
			cfg:  ScrapeConfig{Preset: PresetReference},
			opts: []Option{WithUpstreams("search", "weather", "vectors", "llm-primary", "llm-fallback")},
			want: []journal.BreakerState{
				{Dependency: "llm-primary", Upstream: "llm-primary", State: journal.StateHalfOpen},
				// eu is closed, local is open: the worst wins.
				{Dependency: "search", Upstream: "search", State: journal.StateOpen},
				{Dependency: "weather", Upstream: "weather", State: journal.StateClosed},
			},
			wantSeries: []string{"openclaw_breaker_probe_latency_ms_count", "openclaw_breaker_probe_latency_ms_sum", "openclaw_breaker_rejections_total", "openclaw_breaker_state"},
		},
		{
			name: "haproxy 2.6 exporter", file: "haproxy-2.6.txt", ctype: "text/plain; version=0.0.4",
			cfg: ScrapeConfig{Preset: PresetHAProxy, DependencyMap: map[string]string{"be_search": "search", "weather1": "weather"}},
			want: []journal.BreakerState{
				{Dependency: "be_search/search1", Upstream: "search", State: journal.StateOpen},
				{Dependency: "be_weather/weather1", Upstream: "weather", State: journal.StateClosed},
				{Dependency: "be_weather/weather2", State: journal.StateOpen}, // MAINT
			},
			wantSeries: []string{"haproxy_server_check_failures_total", "haproxy_server_check_up_down_total", "haproxy_server_downtime_seconds_total", "haproxy_server_status"},
		},
		{
			name: "caddy 2.6 admin metrics", file: "caddy-2.6.txt", ctype: ctText,
			cfg: ScrapeConfig{Preset: PresetCaddy, DependencyMap: map[string]string{"127.0.0.1:18501": "search"}},
			want: []journal.BreakerState{
				{Dependency: "127.0.0.1:18501", Upstream: "search", State: journal.StateClosed},
				{Dependency: "127.0.0.1:18502", State: journal.StateOpen},
			},
			wantSeries: []string{"caddy_reverse_proxy_upstreams_healthy"},
		},
		{
			name: "resilience4j micrometer", file: "resilience4j-micrometer.txt", ctype: ctText,
			cfg:  ScrapeConfig{Preset: PresetResilience4j},
			opts: []Option{WithUpstreams("search", "weather")},
			want: []journal.BreakerState{
				{Dependency: "search", Upstream: "search", State: journal.StateOpen},
				{Dependency: "vectors", State: journal.StateHalfOpen},
				{Dependency: "weather", Upstream: "weather", State: journal.StateClosed},
			},
			wantSeries: []string{"resilience4j_circuitbreaker_buffered_calls", "resilience4j_circuitbreaker_failure_rate", "resilience4j_circuitbreaker_not_permitted_calls_total", "resilience4j_circuitbreaker_state"},
		},
		{
			name: "envoy outlier ejections", file: "envoy-1.28.txt", ctype: "text/plain; charset=UTF-8",
			cfg:  ScrapeConfig{Preset: PresetEnvoy, Keep: []string{"envoy_cluster_upstream_rq_time_(sum|count)"}},
			opts: []Option{WithUpstreams("search", "llm-primary", "llm-fallback")},
			want: []journal.BreakerState{
				{Dependency: "llm-fallback", Upstream: "llm-fallback", State: journal.StateClosed},
				{Dependency: "llm-primary", Upstream: "llm-primary", State: journal.StateOpen},
				{Dependency: "search", Upstream: "search", State: journal.StateClosed},
			},
			wantSeries: []string{"envoy_cluster_membership_healthy", "envoy_cluster_outlier_detection_ejections_active", "envoy_cluster_outlier_detection_ejections_enforced_total", "envoy_cluster_upstream_rq_time_count", "envoy_cluster_upstream_rq_time_sum"},
		},
		{
			name: "custom one-hot", file: "resilience4j-micrometer.txt", ctype: ctText,
			cfg: ScrapeConfig{Custom: &CustomPreset{
				Metric: "resilience4j_circuitbreaker_state", DependencyLabels: []string{"application", "name"},
				StateLabel: "state", States: map[string]string{"CLOSED": "closed", "open": "open"}, Otherwise: "half_open",
			}},
			want: []journal.BreakerState{
				{Dependency: "agent-gateway/search", State: journal.StateOpen},
				{Dependency: "agent-gateway/vectors", State: journal.StateHalfOpen}, // by otherwise
				{Dependency: "agent-gateway/weather", State: journal.StateClosed},
			},
			wantSeries: []string{"resilience4j_circuitbreaker_state"},
		},
		{
			name: "custom values with otherwise", file: "envoy-1.28.txt", ctype: ctText,
			cfg: ScrapeConfig{Preset: PresetCustom, Custom: &CustomPreset{
				Metric: "envoy_cluster_upstream_rq_total", DependencyLabels: []string{"envoy_cluster_name"},
				Values: map[string]string{"17": "half_open", "310.0": "open"},
			}},
			want: []journal.BreakerState{
				{Dependency: "llm-fallback", State: journal.StateHalfOpen},
				{Dependency: "llm-primary", State: journal.StateOpen},
				// 1204 is not listed and there is no otherwise: no state.
			},
			wantSeries: []string{"envoy_cluster_upstream_rq_total"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.URL = serve(t, fixture(t, tt.file, tt.ctype)) + "/metrics"
			s, err := NewScraper(tt.cfg, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.ScrapeOnce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got.Error != "" {
				t.Fatalf("sample error %q", got.Error)
			}
			if !reflect.DeepEqual(got.States, tt.want) {
				t.Errorf("states\n got %+v\nwant %+v", got.States, tt.want)
			}
			var names []string
			for _, s := range got.Series {
				if len(names) == 0 || names[len(names)-1] != s.Name {
					names = append(names, s.Name)
				}
			}
			if !reflect.DeepEqual(names, tt.wantSeries) {
				t.Errorf("kept series\n got %q\nwant %q", names, tt.wantSeries)
			}
			// Every sample must encode: NaN (HAProxy's disabled
			// server) would stop the journal.
			if _, err := json.Marshal(got); err != nil {
				t.Errorf("sample does not encode: %v", err)
			}
			if got.Source != tt.cfg.URL {
				t.Errorf("source %q, want %q", got.Source, tt.cfg.URL)
			}
		})
	}
}

func TestPresetsListed(t *testing.T) {
	want := []string{"caddy", "custom", "envoy", "haproxy", "reference", "resilience4j"}
	if got := Presets(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Presets() = %q, want %q", got, want)
	}
	for _, p := range want {
		if PresetDoc(p) == "" {
			t.Errorf("preset %s has no doc", p)
		}
	}
}
