package inject

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`
seed: 42
upstreams:
  - name: search
    healthy:
      body_bytes: 2048
      latency: {uniform: {min: 5ms, max: 20ms}}
  - name: redis
    mode: tcp
    target: 127.0.0.1:6379
faults:
  - name: search-503
    type: status
    upstream: search
    at: 30s
    for: 1m
    probability: 0.5
    params: {code: 503, headers: {X-Why: injected}}
  - type: retry_after
    upstream: search
    params: {after: 120s}
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Seed != 42 || len(cfg.Upstreams) != 2 || len(cfg.Faults) != 2 {
		t.Fatalf("decoded %+v", cfg)
	}
	sp, ok := cfg.Faults[0].Params.(*StatusParams)
	if !ok || sp.Code != 503 || sp.Headers["X-Why"] != "injected" {
		t.Fatalf("params = %#v", cfg.Faults[0].Params)
	}
	if cfg.Faults[0].At.D().String() != "30s" {
		t.Fatalf("at = %v", cfg.Faults[0].At)
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown envelope field", "upstreams: [{name: a}]\nfaults:\n  - type: status\n    upstream: a\n    colour: red\n",
			`5:5: faults[0].colour: unknown field "colour"; allowed: at, every_nth, first_n, for, health_checks, match, name, params, probability, type, upstream`},
		{"unknown param field", "upstreams: [{name: a}]\nfaults:\n  - type: status\n    upstream: a\n    params:\n      cod: 503\n",
			`6:7: faults[0].params.cod: unknown field "cod"; allowed: body, code, headers`},
		{"unknown type", "upstreams: [{name: a}]\nfaults:\n  - type: explode\n    upstream: a\n",
			`3:11: faults[0].type: unknown fault type "explode"; allowed: abort, bandwidth, blackhole, headers_never, latency, malformed, refuse, reset, retry_after, slow_body, status, stream_cut, stream_error, truncate`},
		{"bad param value", "upstreams: [{name: a}]\nfaults:\n  - type: status\n    upstream: a\n    params: {code: 42}\n",
			`5:13: faults[0].params: status: code: want 200-599, got 42`},
		{"bare number duration", "upstreams: [{name: a}]\nfaults:\n  - type: status\n    upstream: a\n    at: 30\n",
			`5:9: faults[0].at: duration must be a string with a unit`},
		{"wrong kind", "upstreams: [{name: a}]\nfaults:\n  - type: status\n    upstream: a\n    probability: lots\n",
			`5:18: faults[0].probability: want a number, got "lots"`},
		{"control character in an upstream name", "upstreams: [{name: \"a\\e\"}]\n",
			`1:20: upstreams[0].name: contains the control character U+001B at byte 1`},
		{"probability range", "upstreams: [{name: a}]\nfaults:\n  - type: status\n    upstream: a\n    probability: 1.5\n",
			`5:18: faults[0].probability: want a number between 0 and 1, got 1.5`},
		{"unknown upstream field", "upstreams:\n  - name: a\n    port: 80\n",
			`3:5: upstreams[0].port: unknown field "port"`},
		{"no upstreams", "faults: []\n", "no upstreams"},
		{"bad mode at its line", "upstreams:\n  - name: a\n    mode: udp\n", `3:11: upstreams[0].mode: unknown mode "udp"; allowed: fake, proxy, tcp`},
		{"bad nested value at its line", "upstreams:\n  - name: a\n    healthy:\n      status: 42\n", `4:15: upstreams[0].healthy.status: want 100-599, got 42`},
		{"cut needs one trigger", "upstreams: [{name: a}]\nfaults:\n  - type: stream_cut\n    upstream: a\n    params: {after_bytes: 10, after_percent: 40}\n",
			"set exactly one of after_bytes, after_percent, after_events"},
		{"retry after not whole", "upstreams: [{name: a}]\nfaults:\n  - type: retry_after\n    upstream: a\n    params: {after: 1500ms}\n",
			"the seconds form sends whole seconds, got 1.5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, tt.want)
			}
			if !errors.Is(err, rehearse.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name   string
		ups    []UpstreamConfig
		faults []FaultSpec
		want   string
	}{
		{"unknown upstream", []UpstreamConfig{{Name: "a"}}, []FaultSpec{{Type: "status", Upstream: "b"}}, `faults[0].upstream: unknown upstream "b"`},
		{"tcp fault on http", []UpstreamConfig{{Name: "a"}}, []FaultSpec{{Type: "bandwidth", Upstream: "a", Params: &BandwidthParams{BytesPerSecond: 10}}}, ""},
		{"http fault on tcp", []UpstreamConfig{{Name: "r", Mode: ModeTCP, Target: "127.0.0.1:1"}}, []FaultSpec{{Type: "status", Upstream: "r"}}, "does not apply to tcp upstream"},
		{"refuse with probability", []UpstreamConfig{{Name: "a"}}, []FaultSpec{{Type: "refuse", Upstream: "a", Probability: 0.5}}, "acts on the listener"},
		{"duplicate names", []UpstreamConfig{{Name: "a"}}, []FaultSpec{{Name: "x", Type: "status", Upstream: "a"}, {Name: "x", Type: "reset", Upstream: "a"}}, `duplicate fault name "x"`},
		{"bad mode", []UpstreamConfig{{Name: "a", Mode: "udp"}}, nil, `unknown mode "udp"; allowed: fake, proxy, tcp`},
		{"proxy without target", []UpstreamConfig{{Name: "a", Mode: ModeProxy}}, nil, "proxy mode: want an absolute http:// or https:// URL"},
		{"wrong params type", []UpstreamConfig{{Name: "a"}}, []FaultSpec{{Type: "status", Upstream: "a", Params: RetryAfterParams{}}}, "params must be *inject.StatusParams"},
		{"typed params ok", []UpstreamConfig{{Name: "a"}}, []FaultSpec{{Type: "status", Upstream: "a", Params: &StatusParams{Code: 500}}}, ""},
		{"map params", []UpstreamConfig{{Name: "a"}}, []FaultSpec{{Type: "status", Upstream: "a", Params: map[string]any{"code": 500}}}, "params must be *inject.StatusParams, got map[string]interface {}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.ups, tt.faults)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
			if !errors.Is(err, rehearse.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestExampleDrillConfig(t *testing.T) {
	c, err := LoadConfig("testdata/drill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(c.Upstreams, c.Faults); err != nil {
		t.Fatal(err)
	}
	if len(c.Upstreams) != 5 || len(c.Faults) != 4 {
		t.Fatalf("%d upstreams, %d faults", len(c.Upstreams), len(c.Faults))
	}
}

func TestRegistryEntries(t *testing.T) {
	for _, typ := range FaultTypes() {
		p := NewParams(typ)
		if p == nil || FaultTypeSummary(typ) == "" {
			t.Fatalf("%s: no params or summary", typ)
		}
		// Params are a pointer to a struct: what the decoder fills and the
		// schema describes.
		if pt := reflect.TypeOf(p); pt.Kind() != reflect.Pointer || pt.Elem().Kind() != reflect.Struct {
			t.Fatalf("%s: params %T are not a pointer to a struct", typ, p)
		}
	}
	if NewParams("nope") != nil {
		t.Fatal("params for an unknown type")
	}
}

func TestFaultDecodedAndBuiltOnce(t *testing.T) {
	var spec FaultSpec
	if err := yaml.Unmarshal([]byte("type: status\nupstream: a\nparams: {code: 429}\n"), &spec); err != nil {
		t.Fatal(err)
	}
	if p, ok := spec.Params.(*StatusParams); !ok || p.Code != 429 || spec.fault == nil {
		t.Fatalf("decoded %+v", spec)
	}
	f1, err := spec.compile()
	if err != nil || f1 != spec.fault {
		t.Fatalf("compile built the fault again (%v)", err)
	}
	// JSON goes through the same strict walker, positioned in the JSON text.
	err = json.Unmarshal([]byte("{\"type\": \"status\", \"upstream\": \"a\",\n \"params\": {\"code\": \"x\"}}"), &spec)
	if err == nil || err.Error() != `2:21: params.code: want an integer, got "x"` {
		t.Fatalf("JSON error: %v", err)
	}
	err = json.Unmarshal([]byte(`{"type": "status", "upstream": "a", "params": {"cod": 1}}`), &spec)
	if err == nil || !strings.Contains(err.Error(), `params.cod: unknown field "cod"; allowed: body, code, headers`) {
		t.Fatalf("JSON error: %v", err)
	}
	// A fault posted to the control API is a name in the journal and the
	// reports: no control characters.
	err = json.Unmarshal([]byte(`{"name": "evil\u001b[31m", "type": "status", "upstream": "a"}`), &spec)
	if err == nil || !strings.Contains(err.Error(), `name: contains the control character U+001B at byte 4`) {
		t.Fatalf("JSON error: %v", err)
	}
}
