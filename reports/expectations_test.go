package reports

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/verdict"

	"github.com/halfopen/rehearse/reports/expect"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

func dur(d time.Duration) rehearse.Duration { return rehearse.Duration(d) }

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
	var e expect.Expectations
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
	var back expect.Expectations
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
		var e expect.Expectations
		dec := yaml.NewDecoder(strings.NewReader(bad.src))
		dec.KnownFields(true)
		err := dec.Decode(&e)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err %v, want %q", bad.src, err, bad.want)
		}
	}
	var all expect.Expectations
	if err := yaml.Unmarshal([]byte("healthy_unaffected: true\n"), &all); err != nil || !all.HealthyUnaffected.All {
		t.Errorf("bool form: %+v %v", all.HealthyUnaffected, err)
	}
	if err := (expect.Expectations{ClientSuccessMin: analysis.Ptr(1.5)}).Validate(); err == nil {
		t.Error("client_success_min 1.5 accepted")
	}
	// The retry expectations: each bad value at its own key.
	err = (expect.Expectations{MaxAttempts: analysis.Ptr(0), OrphanedCallsMax: analysis.Ptr(-1), RetryBackoffMin: analysis.Ptr(dur(-time.Millisecond)), CostAmplificationMax: analysis.Ptr(0.0)}).Validate()
	for _, key := range []string{"max_attempts", "orphaned_calls_max", "retry_backoff_min", "cost_amplification_max"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err %v", key, err)
		}
	}
}

func TestEvaluateCleanRun(t *testing.T) {
	a, _ := analyse(t, base())
	e := expect.Expectations{
		OpensWithin: analysis.Ptr(dur(10 * time.Second)), ProbeSpacingMin: analysis.Ptr(dur(200 * time.Millisecond)),
		MaxProbesInFlight: analysis.Ptr(1), HealthyUnaffected: &expect.UpstreamSet{All: true}, ClosesWithin: analysis.Ptr(dur(30 * time.Second)),
		AmplificationMax: analysis.Ptr(1.2), MetricsLagMax: analysis.Ptr(dur(2 * time.Second)), LeakedMax: analysis.Ptr(0),
		SuccessesToCloseMin: analysis.Ptr(2), CooldownMin: analysis.Ptr(dur(4 * time.Second)), FailuresBeforeOpenMax: analysis.Ptr(5),
	}
	res := verdict.Evaluate(a, e)
	if len(res) != 11 {
		t.Errorf("%d results", len(res))
	}
	for _, r := range res {
		if !r.Passed {
			t.Errorf("%s failed: %+v", r.Name, r)
		}
	}
	// Tighter bounds fail with observed and want in the message.
	res = verdict.Evaluate(a, expect.Expectations{ClosesWithin: analysis.Ptr(dur(5 * time.Second)), HonoursRetryAfter: analysis.Ptr(true)})
	if res[0].Passed || res[0].Name != "honours_retry_after" || !strings.Contains(res[0].Message, "no upstream served a 429") {
		t.Errorf("honours_retry_after without 429: %+v", res[0])
	}
	if res[1].Passed || !strings.Contains(res[1].Message, "search episode 1 (storm)") || res[1].Want != "<= 5s" {
		t.Errorf("closes_within: %+v", res[1])
	}
	if err := expect.Failed(res); err == nil || rehearse.ExitCode(err) != rehearse.ExitExpectations {
		t.Errorf("Failed: %v", err)
	}
}
