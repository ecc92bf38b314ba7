package gateway

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

const validConfig = `# reference gateway for the weekly drill
listen: 127.0.0.1:8088
env: staging
region: eu-west-1
primary: llm-primary
fallback: llm-fallback
coord: redis://127.0.0.1:6379/0
upstreams:
  search:
    url: http://127.0.0.1:9001/v2
    timeout: 10s
    header_timeout: 2s
  llm-primary:
    url: https://api.example.com
    kind: model
    credential_env: PRIMARY_KEY
  llm-fallback:
    url: http://127.0.0.1:9003
    kind: model
    region: us-east-1
    credential: sk-test
breaker:
  window: 60s
  min_samples: 10
  failure_ratio: 0.5
  cooldown: 2s
  cooldown_max: 30s
  probe_interval: 500ms
  count_stream_cuts: true
retry:
  max_attempts: 2
canary:
  interval: 10s
`

func TestParseConfigValid(t *testing.T) {
	cfg, err := ParseConfig([]byte(validConfig), "gw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Breaker
	switch {
	case cfg.Listen != "127.0.0.1:8088", cfg.Env != "staging", cfg.Primary != "llm-primary",
		len(cfg.Upstreams) != 3, cfg.Upstreams["search"].HeaderTimeout.D() != 2*time.Second,
		cfg.Upstreams["llm-fallback"].Region != "us-east-1",
		b.Window.D() != time.Minute, b.MinSamples != 10, b.FailureRatio != 0.5, !b.CountStreamCuts,
		b.ProbeInterval.D() != 500*time.Millisecond, cfg.Retry.MaxAttempts != 2:
		t.Fatalf("decoded %+v", cfg)
	}
	// Unset fields are zero, and mean their defaults.
	if b.SuccessesToClose != 0 || b.ProbeJitter != nil || cfg.Canary.Path != "" {
		t.Fatalf("unset fields decoded: %+v", cfg)
	}
	cfg = cfg.WithDefaults()
	b = cfg.Breaker
	if b.SuccessesToClose != 2 || b.ProbeJitter.D() != 50*time.Millisecond || !*b.DistinctWorkers || !*cfg.FallbackOnError || cfg.Canary.Interval.D() != 10*time.Second ||
		cfg.Retry.BaseDelay.D() != DefaultRetryBaseDelay || cfg.Canary.Path != "/healthz" {
		t.Fatalf("defaults lost: %+v", cfg)
	}
}

func TestParseConfigErrors(t *testing.T) {
	base := "upstreams:\n  search:\n    url: http://127.0.0.1:1\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown key", base + "breaker:\n  cooldwn: 5s\n",
			`gw.yaml:5:3: breaker.cooldwn: unknown field "cooldwn"; allowed: consecutive_failures, cooldown, cooldown_max, count_stream_cuts, distinct_workers, failure_ratio, min_samples, probe_deadline_factor, probe_deadline_max, probe_deadline_min, probe_interval, probe_jitter, retry_after_max, retry_after_opens, successes_to_close, window`},
		{"unknown upstream key", "upstreams:\n  search:\n    uri: http://x\n",
			`gw.yaml:3:5: upstreams.search.uri: unknown field "uri"; allowed: credential, credential_env, header_timeout, kind, region, timeout, url`},
		{"bare number duration", base + "breaker:\n  cooldown: 5\n",
			`gw.yaml:5:13: breaker.cooldown: duration must be a string with a unit such as "250ms", "30s" or "5m", got "5"`},
		{"bad duration", base + "breaker:\n  cooldown: 5 seconds\n",
			`gw.yaml:5:13: breaker.cooldown: invalid duration "5 seconds": want a number with a unit such as "250ms", "30s" or "5m"`},
		{"not an int", base + "breaker:\n  min_samples: many\n",
			`gw.yaml:5:16: breaker.min_samples: want an integer, got "many"`},
		{"ratio out of range", base + "breaker:\n  failure_ratio: 1.5\n",
			"gw.yaml:5:18: breaker.failure_ratio: must be in (0, 1], got 1.5"},
		{"ratio NaN", base + "breaker:\n  failure_ratio: .nan\n",
			"gw.yaml:5:18: breaker.failure_ratio: want a finite number, got .nan"},
		{"factor infinite", base + "breaker:\n  probe_deadline_factor: .inf\n",
			"gw.yaml:5:26: breaker.probe_deadline_factor: want a finite number, got .inf"},
		{"cooldown max below cooldown", base + "breaker:\n  cooldown: 10s\n  cooldown_max: 5s\n",
			"gw.yaml:6:17: breaker.cooldown_max: cooldown_max 5s is below cooldown 10s"},
		{"unknown primary", base + "primary: llm\n",
			`gw.yaml:4:10: primary: no upstream named "llm"`},
		{"bad url", "upstreams:\n  search:\n    url: ftp://x\n",
			`gw.yaml:3:10: upstreams.search.url: want an absolute http:// or https:// URL, got "ftp://x"`},
		{"missing url", "upstreams:\n  search:\n    kind: tool\n",
			"gw.yaml:3:5: upstreams.search: url is required"},
		{"bad kind", "upstreams:\n  search:\n    url: http://x\n    kind: db\n",
			`gw.yaml:4:11: upstreams.search.kind: want "tool" or "model", got "db"`},
		{"bad coord", base + "coord: localhost:6379\n",
			`gw.yaml:4:8: coord: want redis://host:port/db, got "localhost:6379"`},
		{"sequence for mapping", "upstreams: [a, b]\n",
			"gw.yaml:1:12: upstreams: want a mapping, got a list"},
		{"duplicate key", base + "env: a\nenv: b\n",
			"gw.yaml:5:1: env: duplicate key"},
		{"syntax", "upstreams:\n  search: [\n",
			"gw.yaml:2: invalid YAML: did not find expected node content"},
		{"empty", "", "gw.yaml: empty gateway config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml), "gw.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tc.want {
				t.Fatalf("error\n got: %s\nwant: %s", err, tc.want)
			}
			if !errors.Is(err, rehearse.ErrInvalid) || rehearse.ExitCode(err) != rehearse.ExitInvalid {
				t.Fatalf("%v does not map to exit code 2", err)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(p, []byte(validConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(p); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, rehearse.ErrInvalid) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestConfigJSONRedactsCredential(t *testing.T) {
	cfg, err := ParseConfig([]byte(validConfig), "gw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "sk-test") {
		t.Fatalf("credential written: %s", b)
	}
	fp := cfg.Upstreams["llm-fallback"].Fingerprint()
	if len(fp) != 12 || !strings.Contains(string(b), "REDACTED sha256:"+fp) {
		t.Fatalf("fingerprint %q missing from %s", fp, b)
	}
}

func TestBreakerKeyIncludesCredential(t *testing.T) {
	cfg := Config{Upstreams: map[string]UpstreamConfig{}}
	cfg.Canary.Interval = new(rehearse.Duration(0)) // off
	cfg.Upstreams["a"] = UpstreamConfig{URL: "http://127.0.0.1:1", Credential: "k1"}
	cfg.Upstreams["b"] = UpstreamConfig{URL: "http://127.0.0.1:1", Credential: "k2", Region: "r2"}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ka, kb := g.deps["a"].key, g.deps["b"].key
	if ka == kb || !strings.HasPrefix(ka, "a|local|") || !strings.HasPrefix(kb, "b|r2|") || strings.Contains(ka+kb, "k1") {
		t.Fatalf("keys %q %q", ka, kb)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(validConfig))
	f.Add([]byte("upstreams:\n  a:\n    url: http://x\nbreaker:\n  cooldown: 1s\n"))
	f.Add([]byte("upstreams: [1]\n"))
	f.Add([]byte("&a x: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data, "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, rehearse.ErrInvalid) {
				t.Fatalf("error not invalid input: %v", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("parsed config does not validate: %v", err)
		}
	})
}
