package expect

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

// Expectations are what a scenario asserts about the gateway's behaviour.
// Every field is optional: nil (or an empty UpstreamSet) means "not
// asserted", and each set field becomes one JUnit test case. The breaker
// expectations (opens_within … successes_to_close) apply to every fault
// episode of the upstreams in Upstreams (all faulted upstreams when empty).
//
// The type decodes from YAML with strict decoding (KnownFields) and from
// JSON; durations are rehearse.Duration strings such as "10s".
type Expectations struct {
	// Upstreams restricts the breaker expectations to these upstreams;
	// empty means every upstream that had a fault episode.
	Upstreams []string `yaml:"upstreams,omitempty" json:"upstreams,omitempty"`

	// OpensWithin: the breaker opens within this time of the fault's start
	// in every episode (an episode that never opens fails).
	OpensWithin *rehearse.Duration `yaml:"opens_within,omitempty" json:"opens_within,omitempty" judges:"episodes"`
	// FailuresBeforeOpenMax caps the failed upstream calls before opening.
	FailuresBeforeOpenMax *int `yaml:"failures_before_open_max,omitempty" json:"failures_before_open_max,omitempty" judges:"episodes"`
	// CooldownMin is the least time from opening to the first probe.
	CooldownMin *rehearse.Duration `yaml:"cooldown_min,omitempty" json:"cooldown_min,omitempty" judges:"episodes"`
	// ProbeSpacingMin is the least time between two probes while open.
	ProbeSpacingMin *rehearse.Duration `yaml:"probe_spacing_min,omitempty" json:"probe_spacing_min,omitempty" judges:"episodes"`
	// MaxProbesInFlight caps concurrent probes while open.
	MaxProbesInFlight *int `yaml:"max_probes_in_flight,omitempty" json:"max_probes_in_flight,omitempty" judges:"episodes"`
	// HonoursRetryAfter: true asserts no non-health call reached an upstream
	// before a served 429's Retry-After elapsed; false asserts the opposite
	// (for documenting a known non-compliant gateway). Episodes without a
	// 429 are not counted.
	HonoursRetryAfter *bool `yaml:"honours_retry_after,omitempty" json:"honours_retry_after,omitempty" judges:"episodes"`
	// HealthyUnaffected: upstreams without faults (true: all of them, or a
	// list) see no breaker opening and keep their client success ratio
	// while other upstreams are faulted.
	HealthyUnaffected *UpstreamSet `yaml:"healthy_unaffected,omitempty" json:"healthy_unaffected,omitempty"`
	// ClosesWithin: the breaker closes within this time of the fault's
	// end: the moment closed_at_s estimates, judged on close_bounds_s when
	// the evidence only bounds it (a close with no latest moment seen from
	// outside, a ramp's or an ambiguous half-open's, is then never met on
	// its earliest estimate).
	ClosesWithin *rehearse.Duration `yaml:"closes_within,omitempty" json:"closes_within,omitempty" judges:"episodes"`
	// OpenTimeMax caps how long the breaker keeps an upstream out per
	// fault episode, every open/close cycle summed (open_time_s): a
	// breaker that keeps reopening and lengthening its cooldown fails it
	// even when each cycle looks reasonable. Judged on open_time_bounds_s
	// when the evidence only bounds the time; an episode still open at
	// the run's end fails once it has been open longer than the cap.
	OpenTimeMax *rehearse.Duration `yaml:"open_time_max,omitempty" json:"open_time_max,omitempty" judges:"episodes"`
	// SuccessesToCloseMin is the least number of consecutive successful
	// probes seen before the breaker closed.
	SuccessesToCloseMin *int `yaml:"successes_to_close_min,omitempty" json:"successes_to_close_min,omitempty" judges:"episodes"`
	// AmplificationMax caps upstream calls per client request, per
	// upstream over the whole run.
	AmplificationMax *float64 `yaml:"amplification_max,omitempty" json:"amplification_max,omitempty"`
	// MetricsLagMax caps how late the gateway's metrics show a black-box
	// open or close.
	MetricsLagMax *rehearse.Duration `yaml:"metrics_lag_max,omitempty" json:"metrics_lag_max,omitempty" judges:"episodes"`
	// HealthDisagreementMax caps the longest interval in which an
	// upstream's health checks and its breaker state disagree.
	HealthDisagreementMax *rehearse.Duration `yaml:"health_disagreement_max,omitempty" json:"health_disagreement_max,omitempty"`
	// LeakedMax caps the live calls that reached an upstream while its
	// breaker was open, beyond the probes.
	LeakedMax *int `yaml:"leaked_max,omitempty" json:"leaked_max,omitempty" judges:"episodes"`
	// ClientSuccessMin is the least fraction (0..1) of client requests over
	// the whole run that ended ok.
	ClientSuccessMin *float64 `yaml:"client_success_min,omitempty" json:"client_success_min,omitempty"`
	// ReplayLatenessMax caps the replayer's p99 send lateness, so a run on
	// an overloaded machine is not trusted silently.
	ReplayLatenessMax *rehearse.Duration `yaml:"replay_lateness_max,omitempty" json:"replay_lateness_max,omitempty"`

	// The retry, deadline and cost expectations (docs/analysis.md,
	// "Retries, deadlines and cost"); the per-upstream ones apply to
	// Upstreams (every upstream that received attributed calls when
	// empty). Each fails when the run gave it nothing to observe.

	// MaxAttempts caps the attempts per client request at any upstream,
	// the first call included (2 = one retry).
	MaxAttempts *int `yaml:"max_attempts,omitempty" json:"max_attempts,omitempty"`
	// NoWriteRetries: true asserts that no POST, PATCH, PUT or DELETE
	// without an idempotency key reached an upstream more than once;
	// false asserts some did (documenting a known non-compliant gateway).
	NoWriteRetries *bool `yaml:"no_write_retries,omitempty" json:"no_write_retries,omitempty"`
	// RetryBackoffMin is the least median wait before a retry (full
	// jitter draws single waits near zero by design; the median is what
	// tells a backoff from an immediate retry).
	RetryBackoffMin *rehearse.Duration `yaml:"retry_backoff_min,omitempty" json:"retry_backoff_min,omitempty"`
	// RetryJitter: "full" asserts that the waits before each retry
	// position are drawn uniformly between zero and a cap (see
	// JitterFigures for the test): a fixed wait, or one with a floor, fails.
	RetryJitter *Jitter `yaml:"retry_jitter,omitempty" json:"retry_jitter,omitempty"`
	// NoLockstepRetries: true asserts that retries of different requests
	// are not synchronised (see LockstepFigures).
	NoLockstepRetries *bool `yaml:"no_lockstep_retries,omitempty" json:"no_lockstep_retries,omitempty"`
	// OrphanedCallsMax caps the upstream calls still running after the
	// client's exchange had ended.
	OrphanedCallsMax *int `yaml:"orphaned_calls_max,omitempty" json:"orphaned_calls_max,omitempty"`
	// GatewayAnswersBeforeClientDeadline: true asserts that no client
	// request gave up at its own deadline before the gateway answered
	// (deadline order client > gateway > upstream).
	GatewayAnswersBeforeClientDeadline *bool `yaml:"gateway_answers_before_client_deadline,omitempty" json:"gateway_answers_before_client_deadline,omitempty"`
	// CostAmplificationMax caps upstream work per completed client request
	// during faults over before them, in calls and, where the upstreams
	// charge tokens, in tokens.
	CostAmplificationMax *float64 `yaml:"cost_amplification_max,omitempty" json:"cost_amplification_max,omitempty"`

	// The failover and give-up expectations (docs/analysis.md, "Failover"
	// and "Give-ups"). The failover ones judge every fault episode of
	// Upstreams (the primaries); each route needs a second upstream to
	// fail over to.

	// FailsOverWithin: in every episode the gateway handed the primary's
	// client requests to another upstream within this time of the
	// fault's start (failover.failed_over_after_s; an episode in which it
	// never did fails).
	FailsOverWithin *rehearse.Duration `yaml:"fails_over_within,omitempty" json:"fails_over_within,omitempty" judges:"episodes"`
	// FailsBackWithin: after every failover the primary served a request
	// of its own again within this time of the fault's end
	// (failover.failed_back_after_s; still on the fallback longer than
	// that when the run ended fails).
	FailsBackWithin *rehearse.Duration `yaml:"fails_back_within,omitempty" json:"fails_back_within,omitempty" judges:"episodes"`
	// CallTimeoutMax caps how long the gateway waits on an upstream call
	// before it gives up: every call it abandoned at the covered
	// upstreams (Upstreams; every upstream with a give-up when empty) was
	// abandoned within this time of its start.
	CallTimeoutMax *rehearse.Duration `yaml:"call_timeout_max,omitempty" json:"call_timeout_max,omitempty"`
}

// IsZero reports whether no expectation is set (Upstreams alone asserts
// nothing).
func (e Expectations) IsZero() bool {
	v := reflect.ValueOf(e)
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return false
		}
	}
	return true
}

// JudgesEpisodes reports whether any expectation set judges fault
// episodes (a field tagged judges:"episodes"): then the report says which
// episodes the verdict covered. The tag is the one list; a new breaker
// expectation carries it.
func (e *Expectations) JudgesEpisodes() bool {
	if e == nil {
		return false
	}
	v, t := reflect.ValueOf(e).Elem(), reflect.TypeFor[Expectations]()
	for i := range v.NumField() {
		if t.Field(i).Tag.Get("judges") == "episodes" && !v.Field(i).IsNil() {
			return true
		}
	}
	return false
}

// Validate reports values that can never be met (negative counts, ratios
// outside 0..1): rehearse.ConfigErrors (rehearse.ErrInvalid), one a field,
// each with its key as the path, so that a scenario places it at that key.
func (e Expectations) Validate() error {
	var errs rehearse.ConfigErrors
	bad := func(name, format string, args ...any) {
		errs = append(errs, &rehearse.ConfigError{Path: name, Err: fmt.Errorf(format, args...)})
	}
	neg := func(name string, v *int) {
		if v != nil && *v < 0 {
			bad(name, "must not be negative, got %d", *v)
		}
	}
	neg("failures_before_open_max", e.FailuresBeforeOpenMax)
	neg("max_probes_in_flight", e.MaxProbesInFlight)
	neg("successes_to_close_min", e.SuccessesToCloseMin)
	neg("leaked_max", e.LeakedMax)
	neg("orphaned_calls_max", e.OrphanedCallsMax)
	if e.MaxAttempts != nil && *e.MaxAttempts < 1 {
		bad("max_attempts", "must be at least 1 (the first call counts), got %d", *e.MaxAttempts)
	}
	for _, d := range []struct {
		key string
		v   *rehearse.Duration
	}{{"fails_over_within", e.FailsOverWithin}, {"fails_back_within", e.FailsBackWithin}, {"call_timeout_max", e.CallTimeoutMax}} {
		if d.v != nil && *d.v < 0 {
			bad(d.key, "must not be negative, got %s", *d.v)
		}
	}
	if e.RetryBackoffMin != nil && *e.RetryBackoffMin < 0 {
		bad("retry_backoff_min", "must not be negative, got %s", *e.RetryBackoffMin)
	}
	if e.RetryJitter != nil && *e.RetryJitter != JitterFull {
		bad("retry_jitter", "must be %q (waits drawn between zero and a cap), got %q", JitterFull, *e.RetryJitter)
	}
	if e.CostAmplificationMax != nil && !(*e.CostAmplificationMax > 0) {
		bad("cost_amplification_max", "must be positive, got %g", *e.CostAmplificationMax)
	}
	if e.AmplificationMax != nil && *e.AmplificationMax < 1 {
		bad("amplification_max", "must be at least 1 (one upstream call per request), got %g", *e.AmplificationMax)
	}
	if e.ClientSuccessMin != nil && (*e.ClientSuccessMin < 0 || *e.ClientSuccessMin > 1) {
		bad("client_success_min", "must be a fraction between 0 and 1, got %g", *e.ClientSuccessMin)
	}
	return errs.Err()
}

// Jitter names a kind of retry jitter an expectation asks for.
type Jitter string

// JitterFull is full jitter: each wait uniform between zero and a cap.
const JitterFull Jitter = "full"

// JSONSchema describes the values retry_jitter accepts.
func (*Jitter) JSONSchema() map[string]any {
	return map[string]any{"type": "string", "enum": []string{string(JitterFull)},
		"description": "full: the waits before each retry are uniform between zero and a cap (Kolmogorov–Smirnov, α = 0.001)"}
}

// UpstreamSet is "all" (true), "none" (false) or a list of upstream names;
// in YAML and JSON it is written as a bool or a list.
type UpstreamSet struct {
	// All selects every upstream (written as true).
	All bool
	// Names selects these upstreams (written as a list) when All is false.
	Names []string
}

// Has reports whether the set selects name.
func (s UpstreamSet) Has(name string) bool { return s.All || slices.Contains(s.Names, name) }

// Enabled reports whether the set selects anything.
func (s UpstreamSet) Enabled() bool { return s.All || len(s.Names) > 0 }

// MarshalJSON writes a bool for All or none, else the list.
func (s UpstreamSet) MarshalJSON() ([]byte, error) {
	if s.All || len(s.Names) == 0 {
		return json.Marshal(s.All)
	}
	return json.Marshal(s.Names)
}

// UnmarshalJSON reads a bool or a list of names.
func (s *UpstreamSet) UnmarshalJSON(b []byte) error {
	var all bool
	if err := json.Unmarshal(b, &all); err == nil {
		*s = UpstreamSet{All: all}
		return nil
	}
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return fmt.Errorf("want true, false or a list of upstream names, got %s", b)
	}
	*s = UpstreamSet{Names: names}
	return nil
}

// MarshalYAML writes a bool for All or none, else the list.
func (s UpstreamSet) MarshalYAML() (any, error) {
	if s.All || len(s.Names) == 0 {
		return s.All, nil
	}
	return s.Names, nil
}

// UnmarshalYAML reads a bool or a list of names.
func (s *UpstreamSet) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var all bool
		if err := n.Decode(&all); err != nil {
			return fmt.Errorf("line %d: want true, false or a list of upstream names, got %q", n.Line, n.Value)
		}
		*s = UpstreamSet{All: all}
		return nil
	case yaml.SequenceNode:
		var names []string
		if err := n.Decode(&names); err != nil {
			return fmt.Errorf("line %d: want a list of upstream names: %w", n.Line, err)
		}
		*s = UpstreamSet{Names: names}
		return nil
	default:
		return fmt.Errorf("line %d: want true, false or a list of upstream names", n.Line)
	}
}

// ExpectationResult is the verdict on one expectation: one JUnit test case
// and one row of the report.
type ExpectationResult struct {
	// Name is the expectation's YAML key, e.g. "opens_within".
	Name string `json:"name"`
	// Passed is true exactly when Outcome is Met. An expectation with
	// nothing to observe fails (Outcome NotObservable), and Message says
	// what was missing.
	Passed bool `json:"passed"`
	// Outcome is met, not_met or not_observable.
	Outcome Outcome `json:"outcome"`
	// Observed is the worst observed value, human-readable ("7.2s"), or
	// "not observed".
	Observed string `json:"observed"`
	// Want is the requirement ("<= 10s").
	Want string `json:"want"`
	// Message explains the verdict, naming the episodes that failed.
	Message string `json:"message"`
}

// PlannedFault is a fault of the scenario (run.start's config), as planned.
type PlannedFault struct {
	Name     string            `json:"name,omitempty"`
	Type     string            `json:"type"`
	Upstream string            `json:"upstream"`
	At       rehearse.Duration `json:"at,omitempty"`
}

// Label names the fault: its name, else its type.
func (f PlannedFault) Label() string {
	if f.Name != "" {
		return f.Name
	}
	return f.Type
}

// Outcome is the verdict on one expectation.
type Outcome string

// The three outcomes. Only Met passes; NotObservable counts as a failure
// (exit code 1, a JUnit failure) and its message names what was missing.
const (
	Met           Outcome = "met"
	NotMet        Outcome = "not_met"
	NotObservable Outcome = "not_observable"
)

// Failed returns nil when every result passed, else an error wrapping
// rehearse.ErrExpectations that names the failed expectations.
func Failed(results []ExpectationResult) error {
	var names []string
	for _, r := range results {
		if !r.Passed {
			names = append(names, r.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", rehearse.ErrExpectations, strings.Join(names, ", "))
}

// Settle sets Passed from Outcome: the two always agree.
func (r ExpectationResult) Settle() ExpectationResult {
	r.Passed = r.Outcome == Met
	return r
}
