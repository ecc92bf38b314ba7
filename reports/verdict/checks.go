package verdict

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
	"github.com/halfopen/rehearse/reports/num"
)

// check is one expectation: its YAML key and how to evaluate it when set.
type check struct {
	name string
	eval func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool)
}

// checks are every expectation, in the order of the Expectations fields.
var checks = []check{
	{"opens_within", func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
		if e.OpensWithin == nil {
			return expect.ExpectationResult{}, false
		}
		return judge("opens_within", durAtMost(e.OpensWithin.D()), ev.perEpisode(func(r episodeRef) observation {
			if !r.ep.Opened {
				return breach(r.label(), "did not open")
			}
			return seenBounded(r.label(), *r.ep.OpenedAfterS, r.ep.OpenedAfterBoundsS, TripUnplaced)
		}), noEpisode, "episodes"), true
	}},
	{"failures_before_open_max", func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
		if e.FailuresBeforeOpenMax == nil {
			return expect.ExpectationResult{}, false
		}
		return judge("failures_before_open_max", atMost(float64(*e.FailuresBeforeOpenMax), fmtCount), ev.perEpisode(func(r episodeRef) observation {
			if !r.ep.Opened {
				return breach(r.label(), "did not open")
			}
			why := TripUnplaced
			if r.ep.OpenedAfterBoundsS == nil {
				why = LateForward
			}
			return seenBounded(r.label(), float64(*r.ep.FailuresBeforeOpen), r.ep.FailuresBeforeOpenBounds, why)
		}), noEpisode, "episodes"), true
	}},
	{"cooldown_min", func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
		if e.CooldownMin == nil {
			return expect.ExpectationResult{}, false
		}
		return judge("cooldown_min", durAtLeast(e.CooldownMin.D()), ev.perEpisode(func(r episodeRef) observation {
			switch {
			case !r.ep.Opened:
				return unseen(r.label(), neverOpened)
			case len(r.ep.CooldownsS) == 0:
				return unseen(r.label(), neverProbed)
			}
			return shortestCooldown(r.label(), r.ep)
		}), noEpisode, "episodes"), true
	}},
	{"probe_spacing_min", func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
		if e.ProbeSpacingMin == nil {
			return expect.ExpectationResult{}, false
		}
		return judge("probe_spacing_min", durAtLeast(e.ProbeSpacingMin.D()), ev.perEpisode(func(r episodeRef) observation {
			switch {
			case !r.ep.Opened:
				return unseen(r.label(), neverOpened)
			case r.ep.Probes == 0:
				return unseen(r.label(), neverProbed)
			case r.ep.ProbeIntervalS.Min == nil:
				return unseen(r.label(), "the breaker probed once: no spacing between probes to measure")
			}
			return seenBounded(r.label(), *r.ep.ProbeIntervalS.Min, r.ep.ProbeIntervalMinBoundsS, UncountedProbes)
		}), noEpisode, "episodes"), true
	}},
	{"max_probes_in_flight", func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
		if e.MaxProbesInFlight == nil {
			return expect.ExpectationResult{}, false
		}
		return judge("max_probes_in_flight", atMost(float64(*e.MaxProbesInFlight), fmtCount), ev.perEpisode(func(r episodeRef) observation {
			switch {
			case !r.ep.Opened:
				return unseen(r.label(), neverOpened)
			case r.ep.MaxProbesInFlight == nil:
				return unseen(r.label(), neverProbed)
			}
			return seenBounded(r.label(), float64(*r.ep.MaxProbesInFlight), r.ep.MaxProbesInFlightBounds, UncountedProbes)
		}), noEpisode, "episodes"), true
	}},
	{"honours_retry_after", evalRetryAfter},
	{"healthy_unaffected", evalHealthy},
	{"closes_within", func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
		if e.ClosesWithin == nil {
			return expect.ExpectationResult{}, false
		}
		lim := e.ClosesWithin.D().Seconds()
		return judge("closes_within", durAtMost(e.ClosesWithin.D()), ev.perEpisode(func(r episodeRef) observation {
			ep := r.ep
			switch {
			case !ep.Opened:
				return unseen(r.label(), neverOpened+": no close to time")
			case ep.Observed != nil && ep.Observed.ResumedAfterS != nil:
				return resumedAfterFault(r.label(), ep)
			case ep.Closed:
				return closeAfterFault(r.label(), ep)
			case ev.gone() != "":
				return unseen(r.label(), ev.gone())
			case !ep.EndedByRun && ev.a.Run.DurationS-ep.EndS > lim:
				// Still open longer than the bound after the fault ended:
				// a breach, whenever it would have closed.
				return breach(r.label(), fmt.Sprintf("still open %s after the fault ended (the run ended then)", num.Sec(ev.a.Run.DurationS-ep.EndS)))
			}
			return unseen(r.label(), neverClosed+fmt.Sprintf(", %s after the fault ended", num.Sec(max(ev.a.Run.DurationS-ep.EndS, 0))))
		}), noEpisode, "episodes"), true
	}},
	{"open_time_max", evalOpenTime},
	{"successes_to_close_min", func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
		if e.SuccessesToCloseMin == nil {
			return expect.ExpectationResult{}, false
		}
		return judge("successes_to_close_min", atLeast(float64(*e.SuccessesToCloseMin), fmtCount), ev.perEpisode(func(r episodeRef) observation {
			switch {
			case !r.ep.Opened:
				return unseen(r.label(), neverOpened)
			case !r.ep.Closed:
				return unseen(r.label(), cmp.Or(ev.gone(), neverClosed))
			case r.ep.SuccessesToClose == nil && r.ep.SuccessesToCloseBounds != nil && r.ep.SuccessesToCloseBounds.Min != nil:
				// A range the evidence fixes (a judged trial: at least
				// its success); judged on the whole of it.
				b := r.ep.SuccessesToCloseBounds
				return seenBounded(r.label(), *b.Min, b, "it closed on a trial's success or on a later one, unseen: "+r.ep.ShapeEvidence)
			case r.ep.SuccessesToClose == nil:
				return unseen(r.label(), "it closed, but no count of successes is known: "+r.ep.ShapeEvidence)
			}
			return seen(r.label(), float64(*r.ep.SuccessesToClose))
		}), noEpisode, "episodes"), true
	}},
	{"amplification_max", evalAmplification},
	{"metrics_lag_max", evalMetricsLag},
	{"health_disagreement_max", func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
		if e.HealthDisagreementMax == nil {
			return expect.ExpectationResult{}, false
		}
		var obs []observation
		for _, name := range slices.Sorted(maps.Keys(ev.a.Upstreams)) {
			if m := ev.a.Upstreams[name].HealthDisagreementMaxS; m != nil {
				obs = append(obs, seenNote(name, *m, "health and breaker disagreed for "+num.Sec(*m)))
			}
		}
		res := judge("health_disagreement_max", durAtMost(e.HealthDisagreementMax.D()), obs, "no upstream saw health checks", "upstreams")
		if res.Outcome == expect.Met {
			res.Message = "longest disagreement " + res.Observed
		} else if res.Outcome == expect.NotMet {
			res.Message = strings.TrimPrefix(res.Message, "health_disagreement_max: want "+res.Want+"; ")
		}
		return res, true
	}},
	{"leaked_max", func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
		if e.LeakedMax == nil {
			return expect.ExpectationResult{}, false
		}
		return judge("leaked_max", atMost(float64(*e.LeakedMax), fmtCount), ev.perEpisode(func(r episodeRef) observation {
			if !r.ep.Opened {
				return unseen(r.label(), neverOpened+": nothing could leak through an open breaker")
			}
			return seen(r.label(), float64(r.ep.Leaked))
		}), noEpisode, "episodes"), true
	}},
	{"client_success_min", func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
		if e.ClientSuccessMin == nil {
			return expect.ExpectationResult{}, false
		}
		var ok, n int64
		for _, ps := range ev.a.Phases {
			n += ps.Requests
			ok += ps.Outcomes["ok"]
		}
		var obs []observation
		if n > 0 {
			obs = append(obs, seen("run", float64(ok)/float64(n)))
		}
		b := atLeast(*e.ClientSuccessMin, func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) })
		res := judge("client_success_min", b, obs, "no client request was recorded", "runs")
		if n > 0 {
			res.Message = fmt.Sprintf("%d of %d client requests ok", ok, n)
		}
		return res, true
	}},
	{"replay_lateness_max", func(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
		if e.ReplayLatenessMax == nil {
			return expect.ExpectationResult{}, false
		}
		var obs []observation
		if p := ev.a.Replay.LatenessMs.P99; p != nil {
			obs = append(obs, seen("replay", *p/1000))
		}
		b := durAtMost(e.ReplayLatenessMax.D())
		b.want = "p99 " + b.wantText()
		res := judge("replay_lateness_max", b, obs, "no request was sent", "runs")
		if len(obs) > 0 {
			res.Message = fmt.Sprintf("send lateness p99 %s over %d sends", res.Observed, ev.a.Replay.Sent)
		}
		return res, true
	}},
	// Retries, deadlines and cost (retries_eval.go).
	{"max_attempts", evalMaxAttempts},
	{"no_write_retries", evalNoWriteRetries},
	{"retry_backoff_min", evalRetryBackoffMin},
	{"retry_jitter", evalRetryJitter},
	{"no_lockstep_retries", evalNoLockstep},
	{"orphaned_calls_max", evalOrphanedCalls},
	{"gateway_answers_before_client_deadline", evalDeadlineOrder},
	{"cost_amplification_max", evalCostAmplification},
	// Failover and give-ups (failover_eval.go).
	{"fails_over_within", evalFailsOver},
	{"fails_back_within", evalFailsBack},
	{"call_timeout_max", evalCallTimeout},
}

// resumedAfterFault observes how long after the fault's end live traffic
// was forwarded again and answered (the observable layer; an early
// resumption counts as 0): what users saw of the recovery, which
// closes_within judges. The breaker's inferred close (CloseText) stays in
// the message: a half-open that let the traffic through before it closed
// is a fact of the model, not of what the users got.
func resumedAfterFault(subject string, ep *analysis.Episode) observation {
	v := max(*ep.Observed.ResumedAfterS, 0)
	note := "traffic resumed " + analysis.ResumedText(ep)
	if c := analysis.CloseText(ep); c != "" {
		note += "; the breaker closed " + c + " (inferred)"
	}
	return seenNote(subject, v, note)
}

// closeAfterFault observes how long after the fault's end an episode's
// breaker closed (an early close counts as 0). A close the evidence only
// bounds (close_bounds_s: a timer's close between the last request turned
// away and the first resumed call; a ramp's end or a half-open's last
// quick success, unseen from outside, with no latest moment) is judged on
// its whole range, like every other bounded figure: the estimate alone
// (closed_at_s, for a ramp the earliest the close can have been) would
// pass a breaker that may have stayed half-open past the bound.
func closeAfterFault(subject string, ep *analysis.Episode) observation {
	v := max(*ep.ClosedAfterRecoveryS, 0)
	b := ep.CloseBoundsS
	if b == nil {
		return seen(subject, v)
	}
	// The bounds are moments into the run; the figure counts from the
	// fault's end, and a close before it counts as 0.
	rel := &analysis.Bounds{}
	if b.Min != nil {
		rel.Min = analysis.Ptr(max(*b.Min-ep.EndS, 0))
	}
	if b.Max != nil {
		rel.Max = analysis.Ptr(max(*b.Max-ep.EndS, 0))
	}
	why := CloseBounded
	if b.Max == nil {
		why = CloseUnbounded
	}
	return seenBounded(subject, v, rel, why)
}

// Why a close is a range (closes_within's not-observable message).
const (
	CloseBounded   = "no success pins the close down: the breaker closed somewhere in close_bounds_s"
	CloseUnbounded = "no success pins the close down: the breaker forwarded everything from the earliest it can have closed, and a ramp's end, or a half-open letting several quick calls through, closes later, unseen from outside"
)

// shortestCooldown observes an episode's shortest cooldown. With bounded
// cooldowns (an open several failures fit) it is bounded too: at least the
// shortest of their least, at most the shortest of their most.
func shortestCooldown(subject string, ep *analysis.Episode) observation {
	v := slices.Min(ep.CooldownsS)
	o := seen(subject, v)
	lo, hi := v, v
	if len(ep.CooldownsBoundsS) == len(ep.CooldownsS) {
		o.unplaced = TripUnplaced
		if ep.OpenedAfterBoundsS == nil {
			o.unplaced = cooldownUnplaced
		}
		lo, hi = math.Inf(1), math.Inf(1)
		for i, c := range ep.CooldownsS {
			cl, ch := analysis.BoundsSpan(c, ep.CooldownsBoundsS[i])
			lo, hi = min(lo, cl), min(hi, ch)
		}
	}
	if b := ep.CooldownsCountBounds; b != nil && b.Max != nil && b.Min != nil && *b.Max > *b.Min {
		// A wait no figure states may have been shorter than every
		// one stated: the shortest is at most the stated one's most,
		// as short as nothing.
		lo, o.unplaced = 0, cooldownUnseen
	}
	if lo < hi {
		o.within = &[2]float64{lo, hi}
	}
	return o
}

// evalRetryAfter: true asserts every episode that served a 429 with
// Retry-After saw no call before it elapsed; false asserts some call came
// too early (documenting a known non-compliant gateway).
func evalRetryAfter(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.HonoursRetryAfter == nil {
		return expect.ExpectationResult{}, false
	}
	want := *e.HonoursRetryAfter
	res := expect.ExpectationResult{Name: "honours_retry_after", Want: fmt.Sprint(want)}
	var checked int
	var viol int64
	var bad []string
	for _, r := range ev.eps {
		if r.ep.RetryAfterHonoured == nil {
			continue
		}
		checked++
		viol += r.ep.RetryAfterViolations
		if !*r.ep.RetryAfterHonoured {
			bad = append(bad, fmt.Sprintf("%s: %d calls before Retry-After elapsed", r.label(), r.ep.RetryAfterViolations))
		}
	}
	if checked == 0 {
		res.Outcome, res.Observed = expect.NotObservable, "no 429 with Retry-After served"
		res.Message = "not observable: no upstream served a 429 with Retry-After"
		return res.Settle(), true
	}
	honoured := viol == 0
	res.Observed = fmt.Sprint(honoured)
	res.Outcome = expect.NotMet
	if honoured == want {
		res.Outcome = expect.Met
	}
	if len(bad) > 0 {
		res.Message = strings.Join(bad, "; ")
	} else {
		res.Message = fmt.Sprintf("no call before Retry-After elapsed, over %d episodes with 429s", checked)
	}
	if want && len(ev.unstarted) > 0 && res.Outcome == expect.Met {
		res.Outcome = expect.NotObservable
		res.Message += "; not observable: " + ev.unstartedText()
	}
	return res.Settle(), true
}

func (ev *evaluation) unstartedText() string {
	parts := make([]string, len(ev.unstarted))
	for i, f := range ev.unstarted {
		parts[i] = fmt.Sprintf("%s fault %s: planned at %s, never started", f.Upstream, f.Label(), f.At)
	}
	return strings.Join(parts, "; ")
}

// evalHealthy: the selected unfaulted upstreams never opened and kept at
// least 99 % of their before-phase client success during the faults. An
// upstream without client requests before or during the faults cannot
// show either.
func evalHealthy(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	hu := e.HealthyUnaffected
	if hu == nil || !hu.Enabled() {
		return expect.ExpectationResult{}, false
	}
	a := ev.a
	var obs []observation
	var checked []string
	for _, name := range slices.Sorted(maps.Keys(a.Upstreams)) {
		ua := a.Upstreams[name]
		if hu.All && ua.Faulted || !hu.Has(name) {
			continue
		}
		checked = append(checked, name)
		opens := len(ua.UnprovokedOpens)
		for _, ep := range ua.Episodes {
			opens += len(ep.Cycles)
		}
		switch {
		case opens > 0:
			obs = append(obs, breach(name, fmt.Sprintf("breaker opened %d times", opens)))
		case ua.ClientRequests == 0:
			obs = append(obs, unseen(name, "no client request was sent"))
		case a.Phases["during"] == nil:
			obs = append(obs, unseen(name, "no fault window in the run: nothing to be unaffected by"))
		case ua.SuccessBefore == nil:
			obs = append(obs, unseen(name, "no client request before the faults"))
		case ua.SuccessDuring == nil:
			obs = append(obs, unseen(name, "no client request during the faults"))
		case *ua.SuccessBefore == 0:
			obs = append(obs, unseen(name, "no client request succeeded before the faults: no success to keep"))
		default:
			obs = append(obs, seenNote(name, *ua.SuccessDuring / *ua.SuccessBefore,
				fmt.Sprintf("client success %.1f%% during faults vs %.1f%% before", 100**ua.SuccessDuring, 100**ua.SuccessBefore)))
		}
	}
	for _, n := range hu.Names {
		if _, ok := a.Upstreams[n]; !ok {
			obs = append(obs, unseen(n, "no such upstream in the run"))
		}
	}
	b := atLeast(0.99, func(v float64) string { return fmt.Sprintf("success kept %.1f%%", 100*v) })
	b.want = "no open, client success kept (>= 99% of before)"
	none := "no upstream without faults"
	if !hu.All {
		none = "none of the listed upstreams is in the run"
	}
	res := judge("healthy_unaffected", b, obs, none, "upstreams")
	switch res.Outcome {
	case expect.Met:
		res.Message = "unaffected: " + strings.Join(checked, ", ")
	case expect.NotMet:
		res.Message = strings.TrimPrefix(res.Message, "healthy_unaffected: want "+res.Want+"; ")
	}
	return res, true
}

// evalAmplification: each upstream's calls per client request over the
// run stay within the bound. An upstream that received calls but had no
// client request attributed to it has no ratio to show.
func evalAmplification(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.AmplificationMax == nil {
		return expect.ExpectationResult{}, false
	}
	a := ev.a
	var obs []observation
	if a.Amplification.Overall != nil {
		for _, name := range slices.Sorted(maps.Keys(a.Upstreams)) {
			ua := a.Upstreams[name]
			switch {
			case ua.Amplification != nil:
				obs = append(obs, seen(name, *ua.Amplification))
			case ua.Calls > 0:
				obs = append(obs, unseen(name, fmt.Sprintf("%d calls but no client request attributed to it", ua.Calls)))
			}
		}
	}
	b := atMost(*e.AmplificationMax, func(v float64) string { return fmt.Sprintf("%.2f", v) })
	res := judge("amplification_max", b, obs, "no client request was sent", "upstreams")
	switch res.Outcome {
	case expect.Met:
		res.Message = fmt.Sprintf("worst upstream %s, overall %.2f", res.Observed, *a.Amplification.Overall)
	case expect.NotMet:
		res.Message = "upstream calls per client request: " + strings.TrimPrefix(res.Message, "amplification_max: want "+res.Want+"; ")
	}
	return res, true
}

// evalMetricsLag: the gateway's metrics showed every black-box open and
// close of the covered episodes, each within the bound.
func evalMetricsLag(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.MetricsLagMax == nil {
		return expect.ExpectationResult{}, false
	}
	var obs []observation
	for _, r := range ev.eps {
		ep, l := r.ep, r.label()
		sampled := ev.metricsSampled(r.upstream)
		switch {
		case !ep.Opened:
			obs = append(obs, unseen(l, neverOpened+": no open for the metrics to show"))
			continue
		case !sampled:
			obs = append(obs, unseen(l, "no metrics sample named this upstream"))
			continue
		case ep.MetricsOpenLagS == nil:
			obs = append(obs, breach(l, "metrics never showed the breaker open"))
		default:
			obs = append(obs, seenBounded(l+" open", *ep.MetricsOpenLagS, ep.MetricsOpenLagBoundsS, TripUnplaced))
		}
		switch {
		case !ep.Closed:
			obs = append(obs, unseen(l+" close", cmp.Or(ev.gone(), neverClosed)))
		case ep.MetricsCloseLagS == nil:
			obs = append(obs, breach(l, "metrics never showed the breaker closed"))
		default:
			obs = append(obs, seen(l+" close", *ep.MetricsCloseLagS))
		}
	}
	obs = append(obs, ev.unstartedObs()...)
	res := judge("metrics_lag_max", durAtMost(e.MetricsLagMax.D()), obs, noEpisode, "episodes")
	switch res.Outcome {
	case expect.Met:
		res.Message = "worst lag " + res.Observed
	case expect.NotMet:
		res.Message = strings.TrimPrefix(res.Message, "metrics_lag_max: want "+res.Want+"; ")
	}
	return res, true
}

// metricsSampled reports whether any metrics sample gave the upstream's
// state (the timeline keeps one interval per state change). An analysis
// read back from run.json has no timeline: the lags alone tell.
func (ev *evaluation) metricsSampled(upstream string) bool {
	tl := ev.a.Timeline
	if tl == nil {
		return true
	}
	u := tl.Upstreams[upstream]
	return u != nil && len(u.Metrics) > 0
}

// evalOpenTime judges open_time_max: each episode's time open, every
// cycle summed, on its bounds when the evidence only bounds it. An
// episode still open at the run's end has been open at least from its
// last cycle's latest open: past the cap that is a breach, whenever it
// would have closed.
func evalOpenTime(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.OpenTimeMax == nil {
		return expect.ExpectationResult{}, false
	}
	lim := e.OpenTimeMax.D().Seconds()
	return judge("open_time_max", durAtMost(e.OpenTimeMax.D()), ev.perEpisode(func(r episodeRef) observation {
		ep := r.ep
		switch {
		case !ep.Opened:
			return unseen(r.label(), neverOpened+": no time open to measure")
		case ep.OpenTimeS != nil:
			return seenBounded(r.label(), *ep.OpenTimeS, ep.OpenTimeBoundsS, "a cycle's open or close is only bounded")
		case ev.gone() != "":
			return unseen(r.label(), ev.gone())
		}
		least := openAtLeast(ep, ev.a.Run.DurationS)
		if least > lim {
			return breach(r.label(), fmt.Sprintf("open at least %s and still open when the run ended", num.Sec(least)))
		}
		return unseen(r.label(), neverClosed+fmt.Sprintf(" (open at least %s when the run ended)", num.Sec(least)))
	}), noEpisode, "episodes"), true
}

// openAtLeast is the least time an episode with a cycle that never closed
// was open: the closed cycles from their latest open to their earliest
// close, the open one from its latest open to the run's end.
func openAtLeast(ep *analysis.Episode, runEnd float64) float64 {
	var least float64
	for _, c := range ep.Cycles {
		openHi := c.OpenedAtS
		if b := c.OpenBoundsS; b != nil && b.Max != nil {
			openHi = *b.Max
		}
		closeLo := runEnd
		if c.ClosedAtS != nil {
			closeLo = *c.ClosedAtS
			if b := c.CloseBoundsS; b != nil && b.Min != nil {
				closeLo = *b.Min
			}
		}
		least += max(closeLo-openHi, 0)
	}
	return least
}
