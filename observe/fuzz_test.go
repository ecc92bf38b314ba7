package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// FuzzExpositionStates feeds arbitrary text-format expositions through the
// parser and every preset's mapping: nothing may panic, and the states must
// be valid, one per dependency, sorted.
func FuzzExpositionStates(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 8<<10 {
			b = b[:8<<10]
		}
		f.Add(b)
	}
	f.Add([]byte("openclaw_breaker_state{dependency=\"a\"} NaN\nopenclaw_breaker_state{dependency=\"a\",region=\"x\"} 2\n"))
	f.Add([]byte("haproxy_server_status{proxy=\"p\",server=\"\",state=\"UP\"} 1\n"))
	f.Add([]byte("mygw_state{dep=\"a/b\",st=\"Open\"} +Inf\n"))

	mappings := map[string]*mapping{}
	for name, p := range presets {
		mappings[name] = p.mapping
	}
	custom, err := (&CustomPreset{Metric: "mygw_state", DependencyLabels: []string{"dep", "zone"}, StateLabel: "st",
		States: map[string]string{"open": "open", "closed": "closed"}, Otherwise: "half_open"}).compile()
	if err != nil {
		f.Fatal(err)
	}
	mappings["custom"] = custom
	all := []*regexp.Regexp{regexp.MustCompile(".*")}
	h := http.Header{"Content-Type": {ctText}}
	r := resolver{depMap: map[string]string{"a": "search"}, upstreams: map[string]bool{"search": true}}

	f.Fuzz(func(t *testing.T, data []byte) {
		series, err := parseExposition(bytes.NewReader(data), h, all)
		if err != nil {
			return
		}
		if _, err := json.Marshal(series); err != nil {
			t.Fatalf("series do not encode: %v", err)
		}
		for name, m := range mappings {
			states := m.States(series, r)
			for i, s := range states {
				if !validState(s.State) || s.Dependency == "" {
					t.Fatalf("%s: invalid state %+v", name, s)
				}
				if i > 0 && states[i-1].Dependency >= s.Dependency {
					t.Fatalf("%s: states not sorted and unique: %+v", name, states)
				}
				if s.Upstream != "" && s.Upstream != "search" && !r.upstreams[s.Upstream] {
					t.Fatalf("%s: upstream %q out of nowhere", name, s.Upstream)
				}
			}
		}
		// Sorting is deterministic: a second parse gives the same series.
		again, _ := parseExposition(bytes.NewReader(data), h, all)
		if len(again) != len(series) {
			t.Fatalf("reparse gave %d series, first %d", len(again), len(series))
		}
		for i := range again {
			if again[i].Name != series[i].Name || labelKey(again[i].Labels) != labelKey(series[i].Labels) {
				t.Fatalf("series order differs at %d", i)
			}
		}
		_ = journal.StateOpen
	})
}

// FuzzExcerpt checks that health details stay short, valid UTF-8 and on
// one line whatever the body.
func FuzzExcerpt(f *testing.F) {
	f.Add([]byte("ok"), 10)
	f.Add([]byte("\xff\xfe\n\tbad"), 3)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		if max < 0 || max > 1<<12 {
			return
		}
		s := excerpt(b, max)
		if len(s) > max+len("…") {
			t.Fatalf("excerpt %d bytes for max %d", len(s), max)
		}
		if !utf8Valid(s) || bytes.ContainsAny([]byte(s), "\n\r\t") {
			t.Fatalf("excerpt %q", s)
		}
	})
}

func utf8Valid(s string) bool {
	return bytes.Equal([]byte(s), bytes.ToValidUTF8([]byte(s), []byte("\uFFFD")))
}

// FuzzConfigYAML decodes arbitrary gateway.metrics and health sections
// strictly and validates them: no panic, and every rejection is a
// configuration error naming a field.
func FuzzConfigYAML(f *testing.F) {
	f.Add([]byte("url: http://127.0.0.1:8080/metrics\npreset: custom\ncustom: {metric: x, values: {0: closed, 1e0: open}}\n"))
	f.Add([]byte("prom_query: {url: 'http://p:9090', mode: query_range, step: 1s}\nkeep: ['a(']\n"))
	f.Add([]byte("url: http://x/healthz\nhealthy_status: [2xx, 429, 6xx]\nheaders: {A: '${HOME}'}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFieldErrors[ScrapeConfig](t, "scrape", data)
		checkFieldErrors[HealthConfig](t, "health", data)
	})
}

// checkFieldErrors decodes data strictly into a T and validates it: a
// rejection must be a configuration error naming a field.
func checkFieldErrors[T interface{ Validate() error }](t *testing.T, what string, data []byte) {
	t.Helper()
	var c T
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if dec.Decode(&c) != nil {
		return
	}
	if err := c.Validate(); err != nil {
		var ce *rehearse.ConfigError
		if !errors.As(err, &ce) || ce.Path == "" {
			t.Fatalf("%s config error %v (%T) names no field", what, err, err)
		}
	}
}
