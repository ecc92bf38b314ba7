package reports

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// evaluateResilience checks the retry, deadline and cost expectations,
// in the order of their Expectations fields. Nothing to observe is a
// failure that says so.
func evaluateResilience(a *Analysis, e Expectations) []ExpectationResult {
	var out []ExpectationResult
	r := a.Resilience
	if r == nil {
		r = &Resilience{Upstreams: map[string]*RetryFigures{}}
	}
	var names []string
	for _, n := range sortedKeys(r.Upstreams) {
		if len(e.Upstreams) == 0 || slices.Contains(e.Upstreams, n) {
			names = append(names, n)
		}
	}
	noCalls := "no upstream call carried a client's sequence number: attempts cannot be attributed (does the gateway forward X-Rehearse-Seq?)"
	if len(a.Upstreams) > 0 && len(r.Upstreams) > 0 {
		noCalls = "none of the selected upstreams received attributed calls"
	}
	unobservable := func(name, want, why string) ExpectationResult {
		return ExpectationResult{Name: name, Passed: false, Observed: "not observable", Want: want, Message: why}
	}

	if e.MaxAttempts != nil {
		want := fmt.Sprintf("<= %d attempts", *e.MaxAttempts)
		res := ExpectationResult{Name: "max_attempts", Want: want, Passed: true}
		var worst int64
		var fails []string
		for _, n := range names {
			f := r.Upstreams[n]
			worst = max(worst, f.MaxAttempts)
			if f.MaxAttempts > int64(*e.MaxAttempts) {
				var over int64
				for k, c := range f.Distribution {
					var v int64
					fmt.Sscan(k, &v)
					if v > int64(*e.MaxAttempts) {
						over += c
					}
				}
				fails = append(fails, fmt.Sprintf("%s: %d requests took more than %d attempts, up to %d", n, over, *e.MaxAttempts, f.MaxAttempts))
			}
		}
		switch {
		case len(names) == 0 || worst == 0:
			res = unobservable("max_attempts", want, noCalls)
		case len(fails) > 0:
			res.Passed, res.Observed = false, fmt.Sprint(worst)
			res.Message = strings.Join(fails, "; ") + " (" + AttemptsDefinition + ")"
		default:
			res.Observed = fmt.Sprint(worst)
			res.Message = fmt.Sprintf("at most %d attempts per client request on %s (%s)", worst, strings.Join(names, ", "), AttemptsDefinition)
		}
		out = append(out, res)
	}

	if e.NoWriteRetries != nil {
		want := "no write without an idempotency key sent twice"
		if !*e.NoWriteRetries {
			want = "writes without an idempotency key retried (known non-compliant)"
		}
		var blind, chances int64
		var ex []string
		for _, n := range names {
			w := r.Upstreams[n].Writes
			blind += w.PostPatch.WithoutKey + w.PutDelete.WithoutKey + w.PostPatch.InconsistentKey + w.PutDelete.InconsistentKey
			chances += w.FailedWithoutKey
			ex = append(ex, prefixAll(n+": ", w.Examples)...)
		}
		if chances == 0 && blind == 0 {
			out = append(out, unobservable("no_write_retries", want,
				"no write without an idempotency key failed at an upstream: nothing could have been retried blindly"))
		} else {
			res := ExpectationResult{Name: "no_write_retries", Want: want, Observed: fmt.Sprintf("%d retried", blind)}
			res.Passed = (blind == 0) == *e.NoWriteRetries
			if blind > 0 {
				res.Message = fmt.Sprintf("%d writes without a consistent idempotency key reached an upstream more than once: %s", blind, strings.Join(ex, " "))
			} else {
				res.Message = fmt.Sprintf("none of the %d writes without a key whose first attempt failed was sent again", chances)
			}
			out = append(out, res)
		}
	}

	if e.RetryBackoffMin != nil {
		want := "median wait before a retry >= " + e.RetryBackoffMin.String()
		limMs := float64(e.RetryBackoffMin.D()) / float64(time.Millisecond)
		res := ExpectationResult{Name: "retry_backoff_min", Want: want, Passed: true}
		var worst *float64
		var fails, parts []string
		for _, n := range names {
			b := r.Upstreams[n].Backoff
			if b.P50Ms == nil {
				continue
			}
			if worst == nil || *b.P50Ms < *worst {
				worst = b.P50Ms
			}
			parts = append(parts, fmt.Sprintf("%s %s over %d retries", n, fmtMs(*b.P50Ms), b.Retries))
			if *b.P50Ms < limMs {
				fails = append(fails, fmt.Sprintf("%s: median wait %s (min %s) over %d retries", n, fmtMs(*b.P50Ms), fmtMs(*b.MinMs), b.Retries))
			}
		}
		switch {
		case worst == nil:
			res = unobservable("retry_backoff_min", want, "no request was retried on the selected upstreams: no wait to measure")
		case len(fails) > 0:
			res.Passed, res.Observed, res.Message = false, fmtMs(*worst), strings.Join(fails, "; ")
		default:
			res.Observed, res.Message = fmtMs(*worst), "median waits: "+strings.Join(parts, "; ")
		}
		out = append(out, res)
	}

	if e.NoLockstepRetries != nil {
		want := "retries not in lockstep"
		if !*e.NoLockstepRetries {
			want = "retries in lockstep (known non-compliant)"
		}
		var judged, inStep []string
		for _, n := range names {
			l := r.Upstreams[n].Lockstep
			if l.Lockstep == nil {
				continue
			}
			d := fmt.Sprintf("%s: %.0f%% of %d retries within %g ms of another request's retry, %.0f%% expected of independent ones",
				n, *l.CoincidentShare*100, l.Retries, l.WindowMs, *l.IndependentShare*100)
			judged = append(judged, d)
			if *l.Lockstep {
				inStep = append(inStep, d)
			}
		}
		if len(judged) == 0 {
			out = append(out, unobservable("no_lockstep_retries", want,
				fmt.Sprintf("fewer than %d retries on every selected upstream: too few to judge", LockstepMinRetries)))
		} else {
			res := ExpectationResult{Name: "no_lockstep_retries", Want: want}
			res.Passed = (len(inStep) == 0) == *e.NoLockstepRetries
			res.Observed = fmt.Sprintf("%d of %d upstreams in lockstep", len(inStep), len(judged))
			if len(inStep) > 0 {
				res.Message = "retries in lockstep: " + strings.Join(inStep, "; ")
			} else {
				res.Message = strings.Join(judged, "; ")
			}
			out = append(out, res)
		}
	}

	if e.OrphanedCallsMax != nil {
		want := fmt.Sprintf("<= %d orphaned calls", *e.OrphanedCallsMax)
		var total int64
		var parts []string
		for _, n := range names {
			d := r.Upstreams[n].Deadlines
			total += d.OrphanedCalls
			if d.OrphanedCalls > 0 {
				parts = append(parts, fmt.Sprintf("%s: %d, up to %s past the client's end", n, d.OrphanedCalls, fmtMs(*d.PastAnswerMs.Max)))
			}
		}
		if len(names) == 0 {
			out = append(out, unobservable("orphaned_calls_max", want, noCalls))
		} else {
			res := ExpectationResult{Name: "orphaned_calls_max", Want: want, Observed: fmt.Sprint(total), Passed: total <= int64(*e.OrphanedCallsMax)}
			if len(parts) > 0 {
				res.Message = "calls still running after the client's exchange ended: " + strings.Join(parts, "; ")
			} else {
				res.Message = "no upstream call outlived its client request by more than " + OrphanTolerance.String()
			}
			out = append(out, res)
		}
	}

	if e.GatewayAnswersBeforeClientDeadline != nil {
		want := "the gateway answers before the client's deadline"
		if !*e.GatewayAnswersBeforeClientDeadline {
			want = "the client's deadline fires first (known non-compliant)"
		}
		if r.AtRisk == 0 && r.ClientDeadlineFirst == 0 {
			out = append(out, unobservable("gateway_answers_before_client_deadline", want,
				"nobody gave up on any request (no slow or hung upstream call): the deadline order was not tested"))
		} else {
			res := ExpectationResult{Name: "gateway_answers_before_client_deadline", Want: want,
				Observed: fmt.Sprintf("%d client deadlines first", r.ClientDeadlineFirst)}
			res.Passed = (r.ClientDeadlineFirst == 0) == *e.GatewayAnswersBeforeClientDeadline
			if r.ClientDeadlineFirst > 0 {
				res.Message = fmt.Sprintf("%d client requests gave up at their own deadline before the gateway answered", r.ClientDeadlineFirst)
			} else {
				res.Message = fmt.Sprintf("on all %d requests where somebody gave up, the gateway answered before the client's deadline", r.AtRisk)
			}
			out = append(out, res)
		}
	}

	if e.CostAmplificationMax != nil {
		want := fmt.Sprintf("cost per completed request during faults <= %g× before", *e.CostAmplificationMax)
		c := r.Cost
		switch {
		case c.WorkWithoutCompletion:
			out = append(out, ExpectationResult{Name: "cost_amplification_max", Want: want, Observed: "unbounded",
				Message: fmt.Sprintf("during faults the upstreams received %d calls (%d tokens) and no client request completed", c.CallsDuring, c.TokensDuring)})
		case c.CallsAmplification == nil:
			why := "no fault window: nothing to compare"
			if c.CallsPerCompletedBefore == nil && c.CallsPerCompletedDuring != nil {
				why = "no client request completed before the faults: no baseline"
			} else if c.CallsPerCompletedDuring == nil && c.CallsDuring == 0 && c.CompletedDuring == 0 && c.CallsPerCompletedBefore != nil {
				why = "no client request during the faults"
			}
			out = append(out, unobservable("cost_amplification_max", want, why))
		default:
			worst := *c.CallsAmplification
			msg := fmt.Sprintf("%.2f upstream calls per completed request during faults against %.2f before (×%.2f)",
				*c.CallsPerCompletedDuring, *c.CallsPerCompletedBefore, *c.CallsAmplification)
			if c.TokensAmplification != nil {
				worst = max(worst, *c.TokensAmplification)
				msg += fmt.Sprintf("; %.0f tokens against %.0f (×%.2f)", *c.TokensPerCompletedDuring, *c.TokensPerCompletedBefore, *c.TokensAmplification)
			} else if c.TokensDuring > 0 && c.TokensPerCompletedBefore == nil {
				msg += "; tokens have no baseline (nothing completed before)"
			}
			out = append(out, ExpectationResult{Name: "cost_amplification_max", Want: want, Observed: fmt.Sprintf("×%.2f", worst),
				Passed: worst <= *e.CostAmplificationMax, Message: msg})
		}
	}
	return out
}
