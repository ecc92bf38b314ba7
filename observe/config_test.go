package observe

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

func TestScrapeConfigErrors(t *testing.T) {
	const u = "http://127.0.0.1:9/metrics"
	tests := []struct {
		name string
		cfg  ScrapeConfig
		want string
	}{
		{"no source", ScrapeConfig{}, "url: required (or prom_query)"},
		{"both sources", ScrapeConfig{URL: u, PromQuery: &PromQueryConfig{URL: "http://p:9090"}}, "url: set either url or prom_query, not both"},
		{"bad scheme", ScrapeConfig{URL: "ftp://x/metrics"}, `url: want an absolute http:// or https:// URL, got "ftp://x/metrics"`},
		{"no host", ScrapeConfig{URL: "http:///metrics"}, `url: URL "http:///metrics" has no host`},
		{"timeout over interval", ScrapeConfig{URL: u, Interval: rehearse.Duration(time.Second), Timeout: rehearse.Duration(2 * time.Second)}, "timeout: 2s is longer than the interval 1s"},
		{"unknown preset", ScrapeConfig{URL: u, Preset: "nginx"}, `preset: unknown preset "nginx" (want one of: caddy, custom, envoy, haproxy, reference, resilience4j)`},
		{"unknown format", ScrapeConfig{URL: u, Format: "proto"}, `format: unknown format "proto" (want auto, text or openmetrics)`},
		{"custom without mapping", ScrapeConfig{URL: u, Preset: "custom"}, `custom: required by preset "custom"`},
		{"custom with other preset", ScrapeConfig{URL: u, Preset: "haproxy", Custom: &CustomPreset{Metric: "x"}}, `custom: only allowed with preset "custom" (preset is "haproxy")`},
		{"custom no metric", ScrapeConfig{URL: u, Custom: &CustomPreset{}}, "custom.metric: required"},
		{"custom bad metric", ScrapeConfig{URL: u, Custom: &CustomPreset{Metric: "my-gw state"}}, `custom.metric: invalid metric name "my-gw state"`},
		{"custom no values", ScrapeConfig{URL: u, Custom: &CustomPreset{Metric: "x"}}, "custom.values: required: map each value to a state, e.g. {0: closed, 1: half_open, 2: open}"},
		{"custom both modes", ScrapeConfig{URL: u, Custom: &CustomPreset{Metric: "x", Values: map[string]string{"0": "closed"}, StateLabel: "s"}}, "custom.values: set either values (value mode) or state_label and states (one-hot mode), not both"},
		{"custom value not a number", ScrapeConfig{URL: u, Custom: &CustomPreset{Metric: "x", Values: map[string]string{"up": "closed"}}}, `custom.values: key "up" is not a number`},
		{"custom bad state", ScrapeConfig{URL: u, Custom: &CustomPreset{Metric: "x", Values: map[string]string{"2": "tripped"}}}, `custom.values.2: unknown state "tripped" (want closed, half_open or open)`},
		{"custom states without label", ScrapeConfig{URL: u, Custom: &CustomPreset{Metric: "x", States: map[string]string{"UP": "closed"}}}, "custom.state_label: required with states"},
		{"custom label without states", ScrapeConfig{URL: u, Custom: &CustomPreset{Metric: "x", StateLabel: "state"}}, "custom.states: required with state_label"},
		{"custom bad one-hot state", ScrapeConfig{URL: u, Custom: &CustomPreset{Metric: "x", StateLabel: "state", States: map[string]string{"UP": "fine"}}}, `custom.states.UP: unknown state "fine" (want closed, half_open or open)`},
		{"custom bad otherwise", ScrapeConfig{URL: u, Custom: &CustomPreset{Metric: "x", Otherwise: "broken"}}, `custom.otherwise: unknown state "broken" (want closed, half_open or open)`},
		{"custom empty label", ScrapeConfig{URL: u, Custom: &CustomPreset{Metric: "x", DependencyLabels: []string{""}, Otherwise: "open"}}, "custom.dependency_labels[0]: empty label name"},
		{"bad keep", ScrapeConfig{URL: u, Keep: []string{"ok_total", "bad("}}, "keep[1]: invalid regular expression \"bad(\""},
		{"empty map name", ScrapeConfig{URL: u, DependencyMap: map[string]string{"be_search": ""}}, `dependency_map: empty name in "be_search": ""`},
		{"prom no url", ScrapeConfig{PromQuery: &PromQueryConfig{}}, "prom_query.url: required"},
		{"prom bad mode", ScrapeConfig{PromQuery: &PromQueryConfig{URL: "http://p:9090", Mode: "range"}}, `prom_query.mode: unknown mode "range" (want query or query_range)`},
		{"prom query and selector", ScrapeConfig{PromQuery: &PromQueryConfig{URL: "http://p:9090", Query: "up", Selector: `job="x"`}}, "prom_query.selector: not used when query is set; put the matchers in the query"},
		{"prom selector braces", ScrapeConfig{PromQuery: &PromQueryConfig{URL: "http://p:9090", Selector: `{job="x"}`}}, `prom_query.selector: write the matchers without braces, e.g. job="gateway"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n got %q\nwant %q", err, tt.want)
			}
			if !errors.Is(err, rehearse.ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if _, err2 := NewScraper(tt.cfg); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("NewScraper error %v differs from Validate %v", err2, err)
			}
		})
	}
}

func TestScrapeConfigDefaults(t *testing.T) {
	s, err := NewScraper(ScrapeConfig{URL: "http://127.0.0.1:9/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Config()
	if got.Interval.D() != DefaultScrapeInterval || got.Timeout.D() != DefaultScrapeInterval || got.Preset != DefaultPreset {
		t.Errorf("defaults: %+v", got)
	}
	s, err = NewScraper(ScrapeConfig{URL: "http://127.0.0.1:9/metrics", Interval: rehearse.Duration(time.Minute), Custom: &CustomPreset{Metric: "x", Otherwise: "open"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Config(); got.Timeout.D() != DefaultMaxScrapeTimeout || got.Preset != PresetCustom {
		t.Errorf("custom defaults: %+v", got)
	}
	p, err := NewScraper(ScrapeConfig{PromQuery: &PromQueryConfig{URL: "http://127.0.0.1:9090"}})
	if err != nil {
		t.Fatal(err)
	}
	if pq := p.Config().PromQuery; pq.Mode != PromModeQuery || pq.Step.D() != DefaultScrapeInterval {
		t.Errorf("prom defaults: %+v", pq)
	}
}

// TestScrapeConfigYAML decodes the scenario's gateway.metrics section
// strictly, as the scenarios package does.
func TestScrapeConfigYAML(t *testing.T) {
	const doc = `
url: http://127.0.0.1:8080/metrics
interval: 2s
preset: custom
custom:
  metric: mygw_breaker_state
  dependency_labels: [upstream]
  values: {0: closed, 1: half_open, 2: open}
keep: [mygw_breaker_trips_total, 'mygw_requests_.*']
dependency_map: {search-svc: search}
`
	var cfg ScrapeConfig
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	want := ScrapeConfig{
		URL: "http://127.0.0.1:8080/metrics", Interval: rehearse.Duration(2 * time.Second), Preset: "custom",
		Custom: &CustomPreset{Metric: "mygw_breaker_state", DependencyLabels: []string{"upstream"},
			Values: map[string]string{"0": "closed", "1": "half_open", "2": "open"}},
		Keep:          []string{"mygw_breaker_trips_total", "mygw_requests_.*"},
		DependencyMap: map[string]string{"search-svc": "search"},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("decoded\n %+v\nwant\n %+v", cfg, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}

	dec = yaml.NewDecoder(strings.NewReader("url: http://x/metrics\nintervall: 5s\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err == nil || !strings.Contains(err.Error(), "field intervall not found") {
		t.Errorf("unknown field: %v", err)
	}

	var hc HealthConfig
	dec = yaml.NewDecoder(strings.NewReader("url: http://x/healthz\nhealthy_status: [2xx, 429]\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&hc); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(hc.HealthyStatus, []string{"2xx", "429"}) {
		t.Errorf("healthy_status %q", hc.HealthyStatus)
	}
}

func TestHealthConfigErrors(t *testing.T) {
	const u = "http://127.0.0.1:9/healthz"
	tests := []struct {
		name string
		cfg  HealthConfig
		want string
	}{
		{"no url", HealthConfig{}, "url: required"},
		{"bad url", HealthConfig{URL: "127.0.0.1:9/healthz"}, `url: invalid URL "127.0.0.1:9/healthz"`},
		{"timeout over interval", HealthConfig{URL: u, Timeout: rehearse.Duration(3 * time.Second)}, "timeout: 3s is longer than the interval 1s"},
		{"bad status", HealthConfig{URL: u, HealthyStatus: []string{"2xx", "ok"}}, `healthy_status[1]: "ok" is not a status code (100-599) or class (2xx)`},
		{"status out of range", HealthConfig{URL: u, HealthyStatus: []string{"600"}}, `healthy_status[0]: "600" is not a status code (100-599) or class (2xx)`},
		{"bad class", HealthConfig{URL: u, HealthyStatus: []string{"7xx"}}, `healthy_status[0]: "7xx" is not a status code (100-599) or class (2xx)`},
		{"bad header", HealthConfig{URL: u, Headers: HeaderMap{"X Bad": "1"}}, `headers: invalid header name "X Bad"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewCanary(tt.cfg)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if rehearse.ExitCode(err) != rehearse.ExitInvalid {
				t.Errorf("exit code %d", rehearse.ExitCode(err))
			}
		})
	}
}
