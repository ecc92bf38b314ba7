package expect

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"go.yaml.in/yaml/v3"
)

func TestExpectationsYAMLStrict(t *testing.T) {
	src := `
opens_within: 10s
probe_spacing_min: 200ms
max_probes_in_flight: 1
honours_retry_after: true
healthy_unaffected: [weather, vectors]
closes_within: 30s
amplification_max: 1.2
metrics_lag_max: 15s
health_disagreement_max: 3m
leaked_max: 0
client_success_min: 0.5
`
	var e Expectations
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&e); err != nil {
		t.Fatal(err)
	}
	if e.OpensWithin.D() != 10*time.Second || *e.MaxProbesInFlight != 1 || !*e.HonoursRetryAfter ||
		len(e.HealthyUnaffected.Names) != 2 || *e.AmplificationMax != 1.2 || *e.LeakedMax != 0 {
		t.Errorf("decoded %+v", e)
	}
	if err := e.Validate(); err != nil {
		t.Error(err)
	}
	// Round trip through JSON (run.start's config carries it as JSON).
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Expectations
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if back.HealthDisagreementMax.D() != 3*time.Minute || back.HealthyUnaffected.Names[1] != "vectors" {
		t.Errorf("json round trip %s", b)
	}

	for _, bad := range []struct{ src, want string }{
		{"opens_within: 10\n", "unit"},
		{"open_within: 10s\n", "field open_within not found"},
		{"healthy_unaffected: maybe\n", "list of upstream names"},
	} {
		var e Expectations
		dec := yaml.NewDecoder(strings.NewReader(bad.src))
		dec.KnownFields(true)
		err := dec.Decode(&e)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err %v, want %q", bad.src, err, bad.want)
		}
	}
	var all Expectations
	if err := yaml.Unmarshal([]byte("healthy_unaffected: true\n"), &all); err != nil || !all.HealthyUnaffected.All {
		t.Errorf("bool form: %+v %v", all.HealthyUnaffected, err)
	}
	if err := (Expectations{ClientSuccessMin: ptr(1.5)}).Validate(); err == nil {
		t.Error("client_success_min 1.5 accepted")
	}
	// The retry expectations: each bad value at its own key.
	err = (Expectations{MaxAttempts: ptr(0), OrphanedCallsMax: ptr(-1), RetryBackoffMin: ptr(dur(-time.Millisecond)), CostAmplificationMax: ptr(0.0)}).Validate()
	for _, key := range []string{"max_attempts", "orphaned_calls_max", "retry_backoff_min", "cost_amplification_max"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err %v", key, err)
		}
	}
	// The failover and give-up expectations: a negative duration can
	// never be met.
	err = (Expectations{FailsOverWithin: ptr(dur(-time.Second)), FailsBackWithin: ptr(dur(-time.Second)), CallTimeoutMax: ptr(dur(-time.Second))}).Validate()
	for _, key := range []string{"fails_over_within", "fails_back_within", "call_timeout_max"} {
		if err == nil || !strings.Contains(err.Error(), key+": must not be negative") {
			t.Errorf("%s: err %v", key, err)
		}
	}
}

func dur(d time.Duration) rehearse.Duration { return rehearse.Duration(d) }

func ptr[T any](v T) *T { return &v }
