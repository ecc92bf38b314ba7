package verdict

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/halfopen/rehearse/reports/analysis"

	"github.com/halfopen/rehearse/reports/expect"

	"github.com/halfopen/rehearse/reports/num"
)

// The retry, deadline and cost expectations, as entries of the checks
// table. The per-upstream ones cover Expectations.Upstreams (every upstream
// that received attributed calls when empty).

// retryUpstreams returns the covered upstreams' figures, by name, and the
// reason there are none.
func (ev *evaluation) retryUpstreams(e expect.Expectations) ([]string, string) {
	r := ev.a.Resilience
	if r == nil || len(r.Upstreams) == 0 {
		return nil, "no upstream call carried a client's sequence number: attempts cannot be attributed (does the gateway forward X-Rehearse-Seq?)"
	}
	var names []string
	for _, n := range slices.Sorted(maps.Keys(r.Upstreams)) {
		if len(e.Upstreams) == 0 || slices.Contains(e.Upstreams, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, "none of the selected upstreams received attributed calls"
	}
	return names, ""
}

// boolResult judges a true/false expectation whose observation is a
// count of offences: true wants none, false wants some (documenting a
// known non-compliant gateway).
func boolResult(name string, want bool, offences int64, observed, msg string) expect.ExpectationResult {
	res := expect.ExpectationResult{Name: name, Want: fmt.Sprint(want), Observed: observed, Message: msg, Outcome: expect.NotMet}
	if (offences == 0) == want {
		res.Outcome = expect.Met
	}
	return res.Settle()
}

func notObservable(name, want, why string) expect.ExpectationResult {
	return expect.ExpectationResult{Name: name, Want: want, Outcome: expect.NotObservable, Observed: "not observed", Message: "not observable: " + why}.Settle()
}

func evalMaxAttempts(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.MaxAttempts == nil {
		return expect.ExpectationResult{}, false
	}
	names, none := ev.retryUpstreams(e)
	lim := int64(*e.MaxAttempts)
	var obs []observation
	for _, n := range names {
		f := ev.a.Resilience.Upstreams[n]
		if f.Attempts == 0 {
			obs = append(obs, unseen(n, "no client request reached it"))
			continue
		}
		var over int64
		for k, c := range f.Distribution {
			if v, _ := strconv.ParseInt(k, 10, 64); v > lim {
				over += c
			}
		}
		obs = append(obs, seenNote(n, float64(f.MaxAttempts), fmt.Sprintf("%d client requests took more than %d attempts, up to %d", over, lim, f.MaxAttempts)))
	}
	res := judge("max_attempts", atMost(float64(lim), fmtCount), obs, none, "upstreams")
	res.Message += " (" + analysis.AttemptsDefinition + ")"
	return res, true
}

func evalNoWriteRetries(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.NoWriteRetries == nil {
		return expect.ExpectationResult{}, false
	}
	want := fmt.Sprint(*e.NoWriteRetries)
	names, none := ev.retryUpstreams(e)
	if none != "" {
		return notObservable("no_write_retries", want, none), true
	}
	var blind, chances int64
	var ex []string
	for _, n := range names {
		w := ev.a.Resilience.Upstreams[n].Writes
		blind += w.PostPatch.WithoutKey + w.PutDelete.WithoutKey + w.PostPatch.InconsistentKey + w.PutDelete.InconsistentKey
		chances += w.FailedWithoutKey
		ex = append(ex, analysis.PrefixAll(n+": ", w.Examples)...)
	}
	if chances == 0 && blind == 0 {
		return notObservable("no_write_retries", want, "no write without an idempotency key failed at an upstream: nothing could have been retried blindly"), true
	}
	msg := fmt.Sprintf("none of the %d writes without a key whose first attempt failed was sent again", chances)
	if blind > 0 {
		msg = fmt.Sprintf("%d writes without a consistent idempotency key reached an upstream more than once: %s", blind, strings.Join(ex, " "))
	}
	return boolResult("no_write_retries", *e.NoWriteRetries, blind, fmt.Sprintf("%d writes retried without a key", blind), msg), true
}

func evalRetryBackoffMin(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.RetryBackoffMin == nil {
		return expect.ExpectationResult{}, false
	}
	names, none := ev.retryUpstreams(e)
	var obs []observation
	for _, n := range names {
		b := ev.a.Resilience.Upstreams[n].Backoff
		if b.P50Ms == nil {
			obs = append(obs, unseen(n, "no request was retried: no wait to measure"))
			continue
		}
		obs = append(obs, seenNote(n, *b.P50Ms/1000, fmt.Sprintf("median wait %s (min %s) over %d retries", num.Ms(*b.P50Ms), num.Ms(*b.MinMs), b.Retries)))
	}
	bd := durAtLeast(e.RetryBackoffMin.D())
	bd.want = "median wait before a retry " + bd.wantText()
	return judge("retry_backoff_min", bd, obs, none, "upstreams"), true
}

func evalRetryJitter(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.RetryJitter == nil {
		return expect.ExpectationResult{}, false
	}
	res := expect.ExpectationResult{Name: "retry_jitter", Want: "full jitter at every retry position", Outcome: expect.NotMet}
	names, none := ev.retryUpstreams(e)
	if none != "" {
		return notObservable("retry_jitter", res.Want, none), true
	}
	var passed, rejected, missing []string
	var tested int
	for _, n := range names {
		j := ev.a.Resilience.Upstreams[n].Backoff.Jitter
		if j.Full == nil {
			missing = append(missing, fmt.Sprintf("%s: fewer than %d waits before every retry position (without Retry-After): too few to test", n, analysis.JitterMinWaits))
			continue
		}
		for _, t := range j.Tests {
			tested++
			d := fmt.Sprintf("%s retry %d: %d waits up to %s, Kolmogorov–Smirnov distance %.3f (at most %.3f for full jitter, α = 0.001)", n, t.Retry, t.Waits, num.Ms(t.MaxMs), t.D, t.Critical)
			if t.Full {
				passed = append(passed, d)
			} else {
				rejected = append(rejected, d)
			}
		}
	}
	switch {
	case len(rejected) > 0:
		res.Observed = fmt.Sprintf("%d of %d retry positions not full jitter", len(rejected), tested)
		res.Message = "waits not drawn uniformly between zero and a cap: " + strings.Join(rejected, "; ")
		if len(missing) > 0 {
			res.Message += "; not observable: " + strings.Join(missing, "; ")
		}
	case len(missing) > 0:
		res.Outcome, res.Observed = expect.NotObservable, "not observed"
		res.Message = "not observable: " + strings.Join(missing, "; ")
	default:
		res.Outcome = expect.Met
		res.Observed = fmt.Sprintf("%d of %d retry positions full jitter", len(passed), tested)
		res.Message = strings.Join(passed, "; ")
	}
	return res.Settle(), true
}

func evalNoLockstep(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.NoLockstepRetries == nil {
		return expect.ExpectationResult{}, false
	}
	want := fmt.Sprint(*e.NoLockstepRetries)
	names, none := ev.retryUpstreams(e)
	if none != "" {
		return notObservable("no_lockstep_retries", want, none), true
	}
	var judged, inStep []string
	for _, n := range names {
		l := ev.a.Resilience.Upstreams[n].Lockstep
		if l.Lockstep == nil {
			continue
		}
		d := fmt.Sprintf("%s: %.0f%% of %d retries within %s of another request's retry, %.0f%% expected of independent ones",
			n, *l.CoincidentShare*100, l.Retries, num.Ms(l.WindowMs), *l.IndependentShare*100)
		if l.Basis == "schedule" {
			// Judged against the replay's own send times: say what they
			// gave, the figure the verdict compared with.
			d = fmt.Sprintf("%s: %.0f%% of %d retries within %s of another request's retry, %.0f%% from the replay's send schedule alone",
				n, *l.CoincidentShare*100, l.Retries, num.Ms(l.WindowMs), *l.ScheduleShare*100)
		}
		judged = append(judged, d)
		if *l.Lockstep {
			inStep = append(inStep, d)
		}
	}
	if len(judged) == 0 {
		return notObservable("no_lockstep_retries", want, fmt.Sprintf("fewer than %d retries on every selected upstream: too few to judge", analysis.LockstepMinRetries)), true
	}
	msg := strings.Join(judged, "; ")
	if len(inStep) > 0 {
		msg = "retries in lockstep: " + strings.Join(inStep, "; ")
	}
	return boolResult("no_lockstep_retries", *e.NoLockstepRetries, int64(len(inStep)),
		fmt.Sprintf("%d of %d upstreams in lockstep", len(inStep), len(judged)), msg), true
}

func evalOrphanedCalls(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.OrphanedCallsMax == nil {
		return expect.ExpectationResult{}, false
	}
	names, none := ev.retryUpstreams(e)
	var obs []observation
	for _, n := range names {
		d := ev.a.Resilience.Upstreams[n].Deadlines
		note := ""
		if d.OrphanedCalls > 0 {
			note = fmt.Sprintf("%d calls still running after the client's exchange ended, up to %s past it", d.OrphanedCalls, num.Ms(*d.PastAnswerMs.Max))
		}
		obs = append(obs, seenNote(n, float64(d.OrphanedCalls), note))
	}
	return judge("orphaned_calls_max", atMost(float64(*e.OrphanedCallsMax), fmtCount), obs, none, "upstreams"), true
}

func evalDeadlineOrder(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.GatewayAnswersBeforeClientDeadline == nil {
		return expect.ExpectationResult{}, false
	}
	want := fmt.Sprint(*e.GatewayAnswersBeforeClientDeadline)
	r := ev.a.Resilience
	// A give-up after which the request still succeeded (another attempt,
	// the fallback) tested the order too: the gateway's timeout fired
	// first. "Nobody gave up" only when nobody did.
	var gaveUp int64
	if g := ev.a.GiveUps; g != nil {
		gaveUp = g.Count
	}
	if r == nil || (r.AtRisk == 0 && r.ClientDeadlineFirst == 0 && gaveUp == 0) {
		return notObservable("gateway_answers_before_client_deadline", want,
			"nobody gave up on any request (no slow or hung upstream call): the deadline order was not tested"), true
	}
	msg := fmt.Sprintf("on all %d requests where the gateway or the client gave up, the gateway answered before the client's deadline", r.AtRisk)
	if r.AtRisk == 0 {
		msg = fmt.Sprintf("the gateway gave up on %d upstream calls and answered every client before its deadline", gaveUp)
	}
	if r.ClientDeadlineFirst > 0 {
		msg = fmt.Sprintf("%d client requests gave up at their own deadline before the gateway answered: the gateway's deadline is longer than the client's", r.ClientDeadlineFirst)
	}
	return boolResult("gateway_answers_before_client_deadline", *e.GatewayAnswersBeforeClientDeadline, r.ClientDeadlineFirst,
		fmt.Sprintf("%d client deadlines first", r.ClientDeadlineFirst), msg), true
}

func evalCostAmplification(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.CostAmplificationMax == nil {
		return expect.ExpectationResult{}, false
	}
	fmtX := func(v float64) string { return fmt.Sprintf("×%.2f", v) }
	b := atMost(*e.CostAmplificationMax, fmtX)
	b.want = "cost per completed request during faults " + b.wantText() + " before"
	r := ev.a.Resilience
	if r == nil {
		return judge("cost_amplification_max", b, nil, "no upstream call was recorded", "figures"), true
	}
	// Over all the fault windows together, and over each covered episode's
	// window on its own: a costly window must not be averaged away by a
	// cheap one (a storm of retries followed by a slow spell).
	obs := costObservations(nil, &r.Cost, "during faults")
	for _, ref := range ev.eps {
		if ref.ep.Cost != nil {
			obs = append(obs, costObservations(&ref, ref.ep.Cost, "during "+ref.ep.Fault)...)
		}
	}
	return judge("cost_amplification_max", b, obs, "no fault window, or no traffic during one: nothing to compare", "figures"), true
}

// costObservations reads the cost figures of all the fault windows (ref
// nil) or of one episode's window.
func costObservations(ref *episodeRef, c *analysis.CostFigures, during string) []observation {
	subject := func(what string) string {
		if ref == nil {
			return what
		}
		return ref.label() + " " + what
	}
	var obs []observation
	switch {
	case c.WorkWithoutCompletion:
		obs = append(obs, breach(subject("calls"), fmt.Sprintf("%s the upstreams received %d calls (%d tokens) and no client request completed", during, c.CallsDuring, c.TokensDuring)))
	case c.CallsAmplification != nil:
		obs = append(obs, seenNote(subject("calls"), *c.CallsAmplification, fmt.Sprintf("%.2f upstream calls per completed request %s against %.2f before (×%.2f)",
			*c.CallsPerCompletedDuring, during, *c.CallsPerCompletedBefore, *c.CallsAmplification)))
		if c.TokensAmplification != nil {
			obs = append(obs, seenNote(subject("tokens"), *c.TokensAmplification, fmt.Sprintf("%.0f tokens per completed request %s against %.0f before (×%.2f)",
				*c.TokensPerCompletedDuring, during, *c.TokensPerCompletedBefore, *c.TokensAmplification)))
		}
	case c.CompletedDuring == 0 && c.CallsDuring == 0 && c.CallsPerCompletedBefore != nil:
		// No fault window, or no traffic during it.
	case c.CallsPerCompletedBefore == nil && ref == nil:
		obs = append(obs, unseen("calls", "no client request completed before the faults: no baseline"))
	}
	return obs
}
