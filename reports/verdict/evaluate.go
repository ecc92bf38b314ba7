package verdict

import (
	"fmt"
	"maps"
	"slices"

	"github.com/halfopen/rehearse/reports/analysis"

	"github.com/halfopen/rehearse/reports/expect"

	"github.com/halfopen/rehearse/reports/num"
)

// Evaluating expectations
//
// Every expectation is judged by one rule (judge): it is met only when
// something was observed for it and every observation keeps the bound. A
// breach is not met; a figure the run could not observe (a breaker that
// never probed, an upstream without client requests, a fault the run was
// interrupted before) is not observable, which fails exactly like a breach
// and says what was missing. No expectation passes for lack of evidence.
//
// Each expectation is one entry of the checks table: how to read its
// observations from the analysis, and its bound (checks.go). Adding an
// expectation is a field in Expectations and one entry there.

// evaluation is what the checks read: the analysis and the episodes the
// breaker expectations cover.
type evaluation struct {
	a   *analysis.Analysis
	eps []episodeRef
	// unstarted are planned faults on the covered upstreams that never
	// started because the run ended first; breaker expectations cannot be
	// observed for them.
	unstarted []expect.PlannedFault
}

// episodeRef is one fault episode of a covered upstream.
type episodeRef struct {
	upstream string
	index    int // 0-based
	ep       *analysis.Episode
}

func (r episodeRef) label() string {
	return fmt.Sprintf("%s episode %d (%s)", r.upstream, r.index+1, r.ep.Fault)
}

// perEpisode reads one observation per covered episode (plus one missing
// observation per planned fault that never started).
func (ev *evaluation) perEpisode(read func(r episodeRef) observation) []observation {
	var out []observation
	for _, r := range ev.eps {
		if sd := r.ep.Shedding; sd != nil {
			// A load shedder has no breaker states: nothing a breaker
			// expectation bounds happened, nor failed to.
			out = append(out, unseen(r.label(), fmt.Sprintf("%s (%s turned away): it has no open, probes, cooldowns or close to judge", shedNoBreaker, num.Plural(sd.TurnedAway, "request"))))
			continue
		}
		out = append(out, read(r))
	}
	return append(out, ev.unstartedObs()...)
}

// unstartedObs are the missing observations of the planned faults that
// never started.
func (ev *evaluation) unstartedObs() []observation {
	var out []observation
	for _, f := range ev.unstarted {
		out = append(out, unseen(f.Upstream+" fault "+f.Label(), fmt.Sprintf("planned at %s, never started: the run ended at %s", f.At, num.Sec(ev.a.Run.DurationS))))
	}
	return out
}

const noEpisode = "no fault episode on the selected upstreams"

// gone says why a breaker still open at the end cannot be judged when
// the gateway under test stopped answering mid-run: its breaker had no
// gateway left to close in, so "never closed" would blame it for that.
// "" when the gateway answered to the end.
func (ev *evaluation) gone() string {
	g := ev.a.Run.GatewayGone
	if g == nil {
		return ""
	}
	return fmt.Sprintf("the gateway stopped answering at T+%s, before the breaker closed: not the breaker's doing", num.Sec(g.AtS))
}

// Reasons an episode's figure is missing, shared by several checks.
const (
	neverOpened = "the breaker never opened"
	neverProbed = "the breaker never probed"
	neverClosed = "the breaker never closed before the run ended"
	// TripUnplaced: a figure measured from an open that several failures
	// fit (open_bounds_s).
	TripUnplaced = "several failures fit the breaker's trip: it opened somewhere between them"
	// LateForward: failed calls whose requests were sent before the trip
	// reached the upstream after it (let through before it, or after).
	LateForward = "calls sent before the trip reached the upstream after it: a loaded gateway forwards late what it let through"
	// cooldownUnplaced: a cooldown is bounded for another reason than the
	// trip: a probe forwarded late, or several failures of a half-open
	// the reopen may have come at.
	// shedNoBreaker: the episode was load shedding (analysis.Shedding).
	shedNoBreaker = "the gateway shed load, a refused share over time, not a breaker"
	// UncountedProbes: the probe spacing measured is the most the
	// shortest can be, the probes in flight the least: a half-open may
	// have let more quick calls through than were counted
	// (probe_interval_min_bounds_s, max_probes_in_flight_bounds).
	UncountedProbes  = "a half-open may have let quick calls through that look like traffic resuming, probes not counted whose spacing and overlap are unseen"
	cooldownUnplaced = "a cooldown is known only to a range: the open's bounds, a probe the gateway may have let through before it reached the upstream, or several failures of a half-open that may have reopened it"
	// cooldownUnseen: a reopen between two probes may have gone unseen
	// (cooldowns_count_bounds), and its wait with it.
	cooldownUnseen = "a reopen between two probes may have gone unseen (cooldowns_count_bounds): its wait, not stated, may be shorter than every cooldown stated"
)

// Evaluate judges the expectations against an analysis: one result per set
// expectation, in the order of the Expectations fields. Every result is
// Met, NotMet or NotObservable; only Met passes.
func Evaluate(a *analysis.Analysis, e expect.Expectations) []expect.ExpectationResult {
	ev := &evaluation{a: a}
	for _, name := range slices.Sorted(maps.Keys(a.Upstreams)) {
		if len(e.Upstreams) > 0 && !slices.Contains(e.Upstreams, name) {
			continue
		}
		for i, ep := range a.Upstreams[name].Episodes {
			ev.eps = append(ev.eps, episodeRef{name, i, ep})
		}
	}
	for _, f := range a.Unstarted {
		if len(e.Upstreams) == 0 || slices.Contains(e.Upstreams, f.Upstream) {
			ev.unstarted = append(ev.unstarted, f)
		}
	}
	out := []expect.ExpectationResult{}
	for _, c := range checks {
		if r, set := c.eval(ev, e); set {
			out = append(out, r)
		}
	}
	return out
}

// AnalyzeDir analyses DIR/journal.jsonl and evaluates the expectations its
// run.start config holds (into Analysis.Expectations), writing nothing.
func AnalyzeDir(dir string) (*analysis.Analysis, error) {
	a, err := analysis.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	JudgeRun(a)
	return a, nil
}

// JudgeRun appends the verdict on the expectations of a's run.start
// config to a.Expectations.
func JudgeRun(a *analysis.Analysis) {
	if a.Expected != nil {
		a.Expectations = append(a.Expectations, Evaluate(a, *a.Expected)...)
	}
}
