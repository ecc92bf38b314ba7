package analysis

import (
	"time"

	"github.com/halfopen/rehearse/reports/expect"

	"github.com/halfopen/rehearse/journal"
)

// SchemaVersion names the run.json format; it changes only incompatibly.
const SchemaVersion = "rehearse.run/v1"

// Analysis is everything the reports say about one run. Marshalled as JSON
// it is run.json (the contract of docs/contracts.md): snake_case keys,
// units in the names, null for "not applicable / not observed".
type Analysis struct {
	Schema   string        `json:"schema"`
	Run      RunInfo       `json:"run"`
	Platform *PlatformInfo `json:"platform"`
	Replay   ReplayStats   `json:"replay"`
	// Phases are the client-side figures before, during and after the
	// fault windows (see docs/analysis.md); keys "before", "during",
	// "after".
	Phases map[string]*PhaseStats `json:"phases"`
	// Amplification is upstream calls per client request, overall and
	// per phase; null when no client request was sent.
	Amplification AmplificationStats `json:"amplification"`
	// Upstreams holds the per-upstream analysis by upstream name.
	Upstreams map[string]*UpstreamAnalysis `json:"upstreams"`
	// Health summarises the gateway's own health URL samples.
	Health HealthStats `json:"health"`
	// Resilience is the retry, deadline and cost analysis (retries.go).
	Resilience *Resilience `json:"resilience"`
	// Saturation is the evidence on whether the gateway was already
	// saturated before the first fault (saturation.go); null with too few
	// answered requests there.
	Saturation *SaturationFigures `json:"saturation"`
	// Warmup sums up the scenario's warm-up before time zero, which no
	// other figure includes (warmup.go); absent without one.
	Warmup *WarmupStats `json:"warmup,omitempty"`
	// GiveUps are the upstream calls the gateway abandoned and the
	// per-call timeout they show (giveups.go).
	GiveUps *GiveUps `json:"give_ups"`
	// Notes are plain statements about limits of this analysis (no
	// forwarded sequence header, interrupted run, ...).
	Notes []string `json:"notes"`
	// Expectations are the scenario's expectations as read from
	// run.start's config (nil when none) ...
	Expected *expect.Expectations `json:"expected,omitempty"`
	// ... and their verdicts; filled by RenderDir / Evaluate callers.
	Expectations []expect.ExpectationResult `json:"expectations"`

	// Unstarted are the scenario's planned faults that never started
	// because the run ended first (an interrupted run); breaker
	// expectations are not observable for them. Not part of run.json (a
	// note says it).
	Unstarted []expect.PlannedFault `json:"-"`

	// Injected lists every fault window as run: type, parameters,
	// targeting, health checks, requests applied to.
	Injected []InjectedFault `json:"injected"`
	// Coverage lists every episode of every upstream and whether the
	// expectations judged it.
	Coverage []EpisodeCoverage `json:"coverage"`
	// BuiltinGateway holds the built-in gateway's settings when it was the
	// gateway under test.
	BuiltinGateway *GatewaySettings `json:"builtin_gateway,omitempty"`
	// Links are the docs and the scenario's dashboards for the run's
	// window.
	Links []Link `json:"links"`

	// Timeline is the per-second data the timeline renders; it is not
	// part of run.json (rebuild it from the journal).
	Timeline *Timeline `json:"-"`
}

// RunInfo is the run's metadata.
type RunInfo struct {
	RunID        string `json:"run_id"`
	Scenario     string `json:"scenario"`
	ScenarioFile string `json:"scenario_file,omitempty"`
	// ScenarioDigest identifies the drill (what was done to the gateway);
	// runs with the same digest can be compared like with like.
	ScenarioDigest string    `json:"scenario_digest,omitempty"`
	Seed           int64     `json:"seed"`
	WallStart      time.Time `json:"wall_start"`
	// TimeZone is the harness machine's local zone (an IANA name or a
	// "+hh:mm" offset); reports show wall-clock times in it beside UTC.
	TimeZone string `json:"time_zone,omitempty"`
	// Description is the scenario's description.
	Description   string  `json:"description,omitempty"`
	Version       string  `json:"version,omitempty"`
	Target        string  `json:"target,omitempty"`
	RatePerS      float64 `json:"rate_per_s"`
	PlannedS      float64 `json:"planned_duration_s"`
	DurationS     float64 `json:"duration_s"`
	Partial       bool    `json:"partial"`
	EndReason     string  `json:"end_reason"`
	EndError      string  `json:"end_error,omitempty"`
	TornTail      bool    `json:"torn_tail,omitempty"`
	Events        int64   `json:"events"`
	UnknownEvents int64   `json:"unknown_events,omitempty"`

	// InterruptedAtS is when an interrupted run was interrupted (before
	// anything stopped); CutByInterruption counts the client requests it
	// cut (outcome class cut_by_interruption). Absent for other runs.
	InterruptedAtS    *float64 `json:"interrupted_at_s,omitempty"`
	CutByInterruption int64    `json:"cut_by_interruption,omitempty"`
	// GatewayGone says that the gateway under test stopped answering
	// mid-run (outcome.go); absent otherwise.
	GatewayGone *GatewayGone `json:"gateway_gone,omitempty"`
}

// PlatformInfo is journal.Platform with units in the names.
type PlatformInfo struct {
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Kernel string `json:"kernel,omitempty"`
	CPU    string `json:"cpu,omitempty"`
	NumCPU int    `json:"num_cpu,omitempty"`
	// GOMAXPROCS is journal.Platform's: the Go processors the harness
	// ran on; 0 when the journal does not say.
	GOMAXPROCS   int               `json:"gomaxprocs,omitempty"`
	GoVersion    string            `json:"go_version,omitempty"`
	Hostname     string            `json:"hostname,omitempty"`
	TimerSamples int               `json:"timer_samples,omitempty"`
	TimerP50Ms   *float64          `json:"timer_lateness_p50_ms"`
	TimerP99Ms   *float64          `json:"timer_lateness_p99_ms"`
	TimerMaxMs   *float64          `json:"timer_lateness_max_ms"`
	TCPKeepalive map[string]string `json:"tcp_keepalive,omitempty"`
	// TimerDuringRun and LoadDuringRun summarise the platform samples taken
	// throughout the run (journal platform.sample); nil when none were.
	TimerDuringRun *TimerDuringRun `json:"timer_during_run"`
	LoadDuringRun  *LoadDuringRun  `json:"load_during_run"`
}

// TimerDuringRun summarises the timer bursts of a run: the median over
// bursts of each burst's p50 and p99 lateness, and the largest lateness.
type TimerDuringRun struct {
	Bursts int     `json:"bursts"`
	P50Ms  float64 `json:"lateness_p50_ms"`
	P99Ms  float64 `json:"lateness_p99_ms"`
	MaxMs  float64 `json:"lateness_max_ms"`
}

// LoadDuringRun summarises the one-minute load average through the run.
type LoadDuringRun struct {
	Samples int     `json:"samples"`
	Median  float64 `json:"median"`
	Max     float64 `json:"max"`
}

// Percentiles are summary figures of a distribution; nil when empty.
type Percentiles struct {
	P50 *float64 `json:"p50"`
	P90 *float64 `json:"p90,omitempty"`
	P99 *float64 `json:"p99"`
	Max *float64 `json:"max"`
}

// MinP50Max summarises a small set of intervals.
type MinP50Max struct {
	Min *float64 `json:"min"`
	P50 *float64 `json:"p50"`
	Max *float64 `json:"max"`
}

// ReplayStats is how well the replayer kept its schedule.
type ReplayStats struct {
	Due     int64 `json:"due"`
	Sent    int64 `json:"sent"`
	Dropped int64 `json:"dropped"`
	Late    int64 `json:"late"`
	// LatenessMs is Sent - Scheduled over sent requests, and for a
	// request dropped because the harness was late (a missed slot) the
	// wait until the next send, in ms: a harness that stopped sending is
	// as late as it stopped (collector.lateness).
	LatenessMs Percentiles `json:"lateness_ms"`
	// Missed counts the requests that did not go out on time: dropped
	// while late, or sent when the next one was already due.
	Missed int64 `json:"missed"`
	// Stall is the longest span with requests due and none sent that the
	// analysis cannot see through; absent when the replay kept up.
	Stall *Stall `json:"stall,omitempty"`
	// AskedRatePerS is the rate the scenario asked for (run.start).
	AskedRatePerS float64 `json:"asked_rate_per_s"`
	// ObservedRatePerS is the achieved rate: sent requests over the span
	// of their actual send times (first to last send).
	ObservedRatePerS float64 `json:"observed_rate_per_s"`
	// LongestSendGapMs is the longest time between two consecutive sends
	// (a stall of the replayer or of the machine shows here), and
	// LongestSendGapAtS when it began; null with fewer than two sends.
	LongestSendGapMs  *float64 `json:"longest_send_gap_ms"`
	LongestSendGapAtS *float64 `json:"longest_send_gap_at_s"`
	// SeqForwarded reports whether the gateway forwarded the sequence
	// header to at least one upstream.
	SeqForwarded bool `json:"seq_forwarded"`
}

// PhaseStats are client figures over one phase of the run.
type PhaseStats struct {
	StartS   float64          `json:"start_s"`
	EndS     float64          `json:"end_s"`
	Requests int64            `json:"requests"`
	Outcomes map[string]int64 `json:"outcomes"`
	// SuccessRatio is ok outcomes over requests; null when empty.
	SuccessRatio *float64 `json:"success_ratio"`
	// LatencyMs is Done - Scheduled (what a user waited), in ms.
	LatencyMs     Percentiles `json:"latency_ms"`
	UpstreamCalls int64       `json:"upstream_calls"`
	Amplification *float64    `json:"amplification"`
}

// AmplificationStats is upstream calls (health checks excluded) per client
// request.
type AmplificationStats struct {
	Overall *float64 `json:"overall"`
	Before  *float64 `json:"before"`
	During  *float64 `json:"during"`
	After   *float64 `json:"after"`
}

// HealthStats summarises health.sample events (the gateway's health URL).
type HealthStats struct {
	Samples   int64           `json:"samples"`
	Unhealthy int64           `json:"unhealthy"`
	Intervals []StateInterval `json:"unhealthy_intervals"`
}

// StateInterval is a span of time in one state.
type StateInterval struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	State  string  `json:"state"`
	// EndBounds bounds EndS when the evidence only bounds it (a
	// black-box open band's inferred close); nil when exact.
	EndBounds *Bounds `json:"end_bounds_s,omitempty"`
}

// UpstreamAnalysis is the black-box analysis of one upstream.
type UpstreamAnalysis struct {
	Name string `json:"name"`
	// Faulted reports whether any fault window targeted the upstream.
	Faulted bool `json:"faulted"`
	// Routing says how client requests were attributed to the upstream:
	// "seq" (forwarded sequence header), "route_map" (client.request
	// upstream field), "time_match" (arrivals matched in time),
	// "seq_reached" (routed no request; its requests are those whose
	// sequence numbers its calls carried: a fallback's), or "gaps_only"
	// (no client attribution: arrival gaps alone).
	Routing string `json:"routing"`
	// ClientRequests counts client requests routed to the upstream (with
	// routing seq_reached: that reached it).
	ClientRequests int64 `json:"client_requests"`
	// Calls counts non-health calls the upstream received; Failed those
	// that failed; Probes those tagged as probes; HealthChecks the rest.
	Calls        int64 `json:"calls"`
	Failed       int64 `json:"failed"`
	TaggedProbes int64 `json:"tagged_probes"`
	HealthChecks int64 `json:"health_checks"`
	// ExpectedIntervalS is the expected time between live calls at the
	// replay rate; GapThresholdS the gap that counts as "stopped".
	ExpectedIntervalS *float64 `json:"expected_interval_s"`
	// Amplification is Calls / ClientRequests; null without requests.
	Amplification *float64 `json:"amplification"`
	// SuccessRatio is the fraction of its client requests that ended ok,
	// before and during faults (for healthy_unaffected).
	SuccessBefore *float64 `json:"client_success_before"`
	SuccessDuring *float64 `json:"client_success_during"`
	// Forwarding is the gateway's forwarding hop to this upstream,
	// measured on healthy traffic before its first fault (forwarding.go);
	// null with too few matched calls.
	Forwarding *Forwarding `json:"forwarding"`
	// Episodes are the fault windows on this upstream, in time order.
	Episodes []*Episode `json:"episodes"`
	// UnprovokedOpens are open cycles outside any fault episode.
	UnprovokedOpens []*Cycle `json:"unprovoked_opens"`
	// MetricsTransitions are the state changes the gateway's metrics
	// reported for this upstream.
	MetricsTransitions []MetricsTransition `json:"metrics_transitions"`
	// HealthDisagreements are intervals where the upstream's health
	// checks and its breaker state disagree.
	HealthDisagreements    []Disagreement `json:"health_disagreements"`
	HealthDisagreementMaxS *float64       `json:"health_disagreement_max_s"`
	// FallbackFor lists the upstreams this one stood in for: the fault
	// episodes whose failover figure names it (failover.go).
	FallbackFor []string `json:"fallback_for,omitempty"`
}

// MetricsTransition is a state change seen between two metrics samples.
type MetricsTransition struct {
	AtS  float64 `json:"at_s"`
	From string  `json:"from"`
	To   string  `json:"to"`
}

// Disagreement is an interval where health checks and breaker disagree.
type Disagreement struct {
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	// Health is what the health checks said ("up"/"down"); Breaker what
	// the breaker state was ("closed"/"open") and Source where that state
	// came from ("metrics" or "black_box").
	Health  string `json:"health"`
	Breaker string `json:"breaker"`
	Source  string `json:"source"`
}

// Episode is one fault window on an upstream (overlapping windows merged)
// and what the breaker did during it and until the next episode. The flat
// fields summarise the first open (opened_*) and the last close (closed_*);
// Cycles has every open/close cycle (flapping).
type Episode struct {
	Fault      string   `json:"fault"`
	FaultTypes []string `json:"fault_types"`
	StartS     float64  `json:"start_s"`
	EndS       float64  `json:"end_s"`
	// StartWall and EndWall are StartS and EndS as UTC wall-clock times.
	StartWall time.Time `json:"start_wall,omitzero"`
	EndWall   time.Time `json:"end_wall,omitzero"`
	// EndedByRun reports that the fault was still active when the run
	// ended.
	EndedByRun bool `json:"ended_by_run,omitempty"`

	Opened             bool     `json:"opened"`
	OpenedAtS          *float64 `json:"opened_at_s"`
	OpenedAfterS       *float64 `json:"opened_after_s"`
	FailuresBeforeOpen *int64   `json:"failures_before_open"`
	// The figures measured from the first open carry its bounds when
	// several failures fit the trip (cycles[0].open_bounds_s): each
	// {min, max} beside its figure, the figure being the earliest-open
	// estimate; absent when the figure is exact. OpenedAfterBoundsS runs
	// from OpenedAfterS to the open's max; FailuresBeforeOpenBounds and
	// FailedRequestsBeforeOpenBounds are the first cycle's (Cycle);
	// FirstProbeAfterOpenBoundsS is its first cooldown's; CooldownsBoundsS
	// has one entry per CooldownsS (null where exact), every cycle's;
	// MetricsOpenLagBoundsS is the metrics' open sample less the open's
	// max and min.
	OpenedAfterBoundsS             *Bounds   `json:"opened_after_bounds_s,omitempty"`
	FailuresBeforeOpenBounds       *Bounds   `json:"failures_before_open_bounds,omitempty"`
	FailedRequestsBeforeOpenBounds *Bounds   `json:"failed_requests_before_open_bounds,omitempty"`
	FirstProbeAfterOpenBoundsS     *Bounds   `json:"first_probe_after_open_bounds_s,omitempty"`
	CooldownsBoundsS               []*Bounds `json:"cooldowns_bounds_s,omitempty"`
	MetricsOpenLagBoundsS          *Bounds   `json:"metrics_open_lag_bounds_s,omitempty"`

	// CooldownsCountBounds sums the cycles' (Cycle): cooldowns_s is the
	// least there were when it is present.
	CooldownsCountBounds *Bounds `json:"cooldowns_count_bounds,omitempty"`
	// FastFails counts client fast-fails for the upstream's routes while
	// open (confirmation of the black-box open).
	FastFails int64 `json:"fast_fails"`

	Leaked         int64     `json:"leaked"`
	Probes         int64     `json:"probes"`
	ProbeSource    string    `json:"probe_source,omitempty"`
	ProbeOutcomes  ProbeMix  `json:"probe_outcomes"`
	ProbeIntervalS MinP50Max `json:"probe_interval_s"`
	// ProbeIntervalMinBoundsS bounds probe_interval_s.min when a cycle
	// may have had probes it did not count (maybe_probe): min the
	// closest two calls that may have been consecutive probes came, max
	// the spacing measured (probespacing.go). Absent when it is exact.
	ProbeIntervalMinBoundsS *Bounds `json:"probe_interval_min_bounds_s,omitempty"`
	MaxProbesInFlight       *int    `json:"max_probes_in_flight"`
	// MaxProbesInFlightBounds bounds it when a cycle may have had probes
	// it did not count: min the figure, max the most live calls in flight
	// at once from the open to the latest close (probespacing.go). Absent
	// when it is exact.
	MaxProbesInFlightBounds *Bounds  `json:"max_probes_in_flight_bounds,omitempty"`
	FirstProbeAfterOpen     *float64 `json:"first_probe_after_open_s"`
	// CooldownsS is the cooldown progression: for each probe after a
	// failed one after which requests were turned away (or the open), the
	// wait before it; and for each probe after a refusal with no answer
	// between (the breaker reopened on an older call's failure: reopen.go),
	// the wait from that failure's end.
	CooldownsS []float64 `json:"cooldowns_s"`

	// FailedRequestsBeforeOpen is FailuresBeforeOpen counted as distinct
	// client requests; Resent the calls a gateway's transport sent again
	// over the episode.
	FailedRequestsBeforeOpen *int64 `json:"failed_requests_before_open"`
	Resent                   int64  `json:"resent"`
	// Shape is the breaker shape inferred (the cycles' shapes joined by
	// "+"), ShapeEvidence the last cycle's reason.
	Shape         string `json:"shape,omitempty"`
	ShapeEvidence string `json:"shape_evidence,omitempty"`
	// CloseBoundsS bounds the last close when no success pins it down.
	CloseBoundsS *Bounds `json:"close_bounds_s"`

	Closed               bool     `json:"closed"`
	ClosedAtS            *float64 `json:"closed_at_s"`
	ClosedAfterRecoveryS *float64 `json:"closed_after_recovery_s"`
	SuccessesToClose     *int     `json:"successes_to_close"`
	// SuccessesToCloseBounds bounds successes_to_close when the evidence
	// fixes a range but not the count (a quick closing trial: at least
	// the trial's success); absent when the count is exact or unknown.
	SuccessesToCloseBounds *Bounds `json:"successes_to_close_bounds,omitempty"`
	// OpenTimeS is how long the breaker turned live traffic away over
	// the episode, every cycle summed; null when a cycle never closed.
	// OpenTimeBoundsS bounds it when a cycle's open or close is bounded
	// (a null max: no latest close seen from outside). See openTime.
	OpenTimeS       *float64 `json:"open_time_s"`
	OpenTimeBoundsS *Bounds  `json:"open_time_bounds_s,omitempty"`
	// Bases says, for each inferred figure that is bounded or unknown,
	// which evidence set each end (or why it is null), keyed by the
	// figure's key in Figures ("cooldowns_s[i]" per bounded cooldown);
	// absent when every figure is exact (basis.go).
	Bases map[string]*Basis `json:"bases,omitempty"`

	RetryAfterHonoured   *bool        `json:"retry_after_honoured"`
	RetryAfter           []RetryAfter `json:"retry_after"`
	RetryAfterViolations int64        `json:"retry_after_violations"`
	// RetryAfterAfterRecovery counts the calls inside an announced pause
	// that came after the fault had ended (ordinary traffic after
	// recovery); RetryAfterViolations only those while it stood.
	RetryAfterAfterRecovery int64 `json:"retry_after_after_recovery"`

	UpstreamCalls  int64    `json:"upstream_calls"`
	ClientRequests int64    `json:"client_requests"`
	Amplification  *float64 `json:"amplification"`

	MetricsOpenLagS  *float64 `json:"metrics_open_lag_s"`
	MetricsCloseLagS *float64 `json:"metrics_close_lag_s"`

	// Retries are the upstream's retry, write-retry and deadline figures
	// over the client requests sent during the episode (retries.go); null
	// when no call carried a client's sequence number. Cost is upstream
	// work per completed client request during the episode against before
	// any fault, over every upstream.
	Retries *RetryFigures `json:"retries"`
	Cost    *CostFigures  `json:"cost"`
	// Failover is whether and when the gateway moved the upstream's
	// client requests to another upstream and back (failover.go); null
	// when the analysis did not run it.
	Failover *Failover `json:"failover"`

	Cycles []*Cycle `json:"cycles"`
	// Shedding is what a load shedder did (shape "shedding": no breaker
	// states, so no cycles, probes or cooldowns); absent for a breaker.
	// The report shows it through the shape, its evidence and the
	// statement.
	Shedding *Shedding `json:"shedding,omitempty"`
	// Observed is what the clients and the upstream saw, with no
	// inference (observed.go); null when the episode never opened.
	Observed *Observed `json:"observed"`
	// Statement is the episode in one plain sentence.
	Statement string `json:"statement"`
}

// ProbeMix counts probe outcomes.
type ProbeMix struct {
	OK     int64 `json:"ok"`
	Failed int64 `json:"failed"`
}

// Cycle is one black-box open interval: live traffic stopped at OpenedAtS
// and resumed at ClosedAtS (null if it never resumed).
type Cycle struct {
	OpenedAtS          float64  `json:"opened_at_s"`
	ClosedAtS          *float64 `json:"closed_at_s"`
	FailuresBeforeOpen int64    `json:"failures_before_open"`
	Blocked            int64    `json:"blocked_requests"`
	FastFails          int64    `json:"fast_fails"`
	ProbeCount         int64    `json:"probe_count"`
	Probes             []Probe  `json:"probes"`
	Leaked             int64    `json:"leaked"`
	SuccessesToClose   *int     `json:"successes_to_close"`
	// SuccessesToCloseBounds bounds the count when the evidence fixes a
	// range but not the count (trial.go); absent otherwise.
	SuccessesToCloseBounds *Bounds   `json:"successes_to_close_bounds,omitempty"`
	ProbeSource            string    `json:"probe_source,omitempty"`
	MaxProbesInFlight      int       `json:"max_probes_in_flight"`
	CooldownsS             []float64 `json:"cooldowns_s"`
	// FailedRequestsBeforeOpen counts the distinct client requests (by
	// sequence number) among FailuresBeforeOpen: calls re-sent by a
	// transport count once, so it reads beside a breaker's threshold.
	FailedRequestsBeforeOpen int64 `json:"failed_requests_before_open"`
	// Resent counts calls that repeated a client request the gateway had
	// already sent (its HTTP transport re-sending on a new connection),
	// beyond the replayer's own re-sends (client.request resent).
	Resent int64 `json:"resent"`
	// Shape is the breaker shape inferred for the cycle (tagged_probe,
	// health_check, live_probe, live_probes, expiry, ramp, ambiguous) and
	// ShapeEvidence why, in words.
	Shape         string `json:"shape"`
	ShapeEvidence string `json:"shape_evidence"`
	// ShapeCandidates names the shapes the evidence still fits when it
	// fits more than one (Shape is then ambiguous); absent otherwise.
	ShapeCandidates []string `json:"shape_candidates,omitempty"`
	// CloseBoundsS bounds a close no success pins down: it came after
	// the breaker blocked its last request (min); for a breaker whose
	// failures expire, before it forwarded the first resumed call (max,
	// which ClosedAtS then is); for a ramp or an ambiguous shape max is
	// null: a ramp near its end, or a half-open that lets several quick
	// calls through, forwards everything before it is closed, unseen
	// from outside, and ClosedAtS is the earliest the close can have
	// been. Null when the close is exact (the end of the success that
	// closed it).
	CloseBoundsS *Bounds `json:"close_bounds_s"`
	// OpenBoundsS bounds the open when several failed calls ended between
	// the last request forwarded and the first turned away (calls in
	// flight that failed after the one that tripped it): any of them may
	// have been the trip. OpenedAtS is then the earliest (the one right
	// after the last forwarded request: failures at the request rate trip
	// a breaker on the first one the count needs), max the latest. When
	// the gateway passed the tripping failure on to its client well after
	// the upstream answered (a gateway slow to act just then), max is the
	// first request it turned away. Null when the open is exact.
	OpenBoundsS *Bounds `json:"open_bounds_s,omitempty"`
	// FailuresBeforeOpenBounds and FailedRequestsBeforeOpenBounds bound
	// the counts when the open is bounded and failed calls arrived
	// between its min and max: they count before an open as late as max
	// (min is the count, max that count and theirs). Absent when the
	// count is exact. Calls that were probes (tagged, or admitted by a
	// breaker already open) never count.
	FailuresBeforeOpenBounds       *Bounds `json:"failures_before_open_bounds,omitempty"`
	FailedRequestsBeforeOpenBounds *Bounds `json:"failed_requests_before_open_bounds,omitempty"`
	// CooldownsBoundsS has one entry per CooldownsS when one of them is
	// bounded: the first cooldown (first probe − open), when the open is,
	// is as short as the first probe after the open's max (never below
	// 0) and as long as CooldownsS[0]; the others are measured from a
	// failed probe's end, exact (null) unless another failure ended
	// earlier in the same half-open (the reopen may have come at it: up
	// to the next probe − that end), or, for a reopen on an older call's
	// failure, from the first of the failures it can have reopened on,
	// bounded by the last. Absent when all are exact.
	CooldownsBoundsS []*Bounds `json:"cooldowns_bounds_s,omitempty"`
	// CooldownsCountBounds bounds how many waits there were before the
	// probes counted when a reopen between two of them may have gone
	// unseen (unseenreopen.go): min is len(CooldownsS), max adds one per
	// such gap. CooldownsS is then the least there were, and an unseen
	// wait, of a length not stated, may be shorter than every one of
	// them. Absent when the count is exact.
	CooldownsCountBounds *Bounds `json:"cooldowns_count_bounds,omitempty"`
	// RampStartS and RampEndS are a ramp's first successful admission in
	// the recovery that ended it, and its end (the earliest: see
	// CloseBoundsS); absent for other shapes.
	RampStartS *float64 `json:"ramp_start_s,omitempty"`
	RampEndS   *float64 `json:"ramp_end_s,omitempty"`
	// MaybeProbe: the first call after the last blocked request answered
	// before the next request came, so it may have been one more probe
	// (the one whose success closed the breaker), or the first of several
	// a half-open lets through, or the first call after the breaker closed
	// on a timer; or, in a half-open that let several calls through at
	// once and closed on a later success, it came as that success's
	// answer did or while another was in flight (a slot an earlier
	// success gave back). Those calls are not in Probes: ProbeCount is
	// then the least there were.
	MaybeProbe bool `json:"maybe_probe,omitempty"`
	// ResumedAtS is when live traffic was forwarded again after the
	// cycle's last refusal and answered (Observed); absent when it never
	// was.
	ResumedAtS *float64 `json:"resumed_at_s,omitempty"`

	intervals []time.Duration // probe spacing, all of it (Probes may be capped)
	// unseenWaits counts the gaps between probes where a reopen may
	// have gone unseen (CooldownsCountBounds).
	unseenWaits int64
	// openAt and closeAt (< 0: never closed) are the cycle's open and
	// close moments, firstProbe its first probe's arrival (< 0: none):
	// the figures are computed from these, never from the rounded
	// seconds above.
	openAt, closeAt, firstProbe time.Duration
	// lastProbe is its last probe's arrival (< 0: none).
	lastProbe time.Duration
	// openHi is the latest the open can have been (OpenBoundsS.Max);
	// openAt when the open is exact.
	openHi time.Duration
	// refuseFrom and refuseUntil are the sends of the first and last
	// requests the cycle turned away, refuseDone the last one's answer;
	// resumedAt when traffic resumed (ResumedAtS); -1 when none.
	refuseFrom, refuseUntil, refuseDone, resumedAt time.Duration
	// bases says which evidence bound the cycle's bounded figures, by
	// figure key (basis.go); the episode gathers them into Bases.
	bases map[string]*Basis
}

// Bounds are the least and the most a figure can be; nil: unbounded.
type Bounds struct {
	Min *float64 `json:"min"`
	Max *float64 `json:"max"`
}

// Probe is one call through an open breaker.
type Probe struct {
	AtS   float64 `json:"at_s"`
	DoneS float64 `json:"done_s,omitempty"`
	// Kind is "tagged", "health_check" or "live".
	Kind string `json:"kind"`
	Tag  string `json:"tag,omitempty"`
	OK   bool   `json:"ok"`
}

// RetryAfter is one 429 with Retry-After served by an upstream and what
// the gateway did next.
type RetryAfter struct {
	AtS         float64  `json:"at_s"`
	RetryAfterS float64  `json:"retry_after_s"`
	NextCallS   *float64 `json:"next_call_after_s"`
	Honoured    bool     `json:"honoured"`
	// AfterRecovery: the next call came before the Retry-After elapsed,
	// but after the fault had ended (not a violation).
	AfterRecovery bool `json:"after_recovery,omitempty"`
}

// Timeline is per-second data for the timeline renderer.
type Timeline struct {
	// Seconds is the number of one-second bins.
	Seconds int
	// Client counts client requests per second by outcome group.
	Client map[string][]int32
	// Upstreams per upstream: live ok/failed calls per second, probe and
	// health marks, black-box open intervals, metrics states.
	Upstreams map[string]*UpstreamTimeline
	// Faults are the fault windows, per upstream.
	Faults []FaultWindow
	// Health are the gateway health intervals (healthy/unhealthy).
	Health []StateInterval
	// Warmup is the warm-up's span, drawn greyed (not scored); nil
	// without one.
	Warmup *WarmupWindow
}

// UpstreamTimeline is one upstream's lanes.
type UpstreamTimeline struct {
	OK, Failed []int32
	Probes     []Probe
	// GiveUps are the moments (run seconds) the gateway was seen hanging
	// up on a call to the upstream (giveups.go), at most MaxGiveUpMarks.
	GiveUps []float64
	// Health holds health-check counts per second (ok, failed).
	HealthOK, HealthFailed []int32
	Open                   []StateInterval
	Metrics                []StateInterval
}

// FaultWindow is one fault as scheduled.
type FaultWindow struct {
	Name     string
	Type     string
	Upstream string
	StartS   float64
	EndS     float64
}

// seconds converts a run time to float seconds rounded to the millisecond,
// so that figures are stable across float formatting.
func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// Ptr is a pointer to a copy of v: the optional figures of run.json.
func Ptr[T any](v T) *T { return &v }

var _ = journal.KindRunStart
