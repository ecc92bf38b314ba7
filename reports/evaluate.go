package reports

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
)

// Evaluate checks the expectations against an analysis: one result per
// set expectation, in the order of the Expectations fields. An expectation
// that has nothing to be checked against (no episode, no 429) fails and
// says so, rather than passing vacuously.
func Evaluate(a *Analysis, e Expectations) []ExpectationResult {
	out := []ExpectationResult{}
	type epRef struct {
		up string
		i  int
		ep *Episode
	}
	var eps []epRef
	for _, name := range sortedKeys(a.Upstreams) {
		if len(e.Upstreams) > 0 && !slices.Contains(e.Upstreams, name) {
			continue
		}
		for i, ep := range a.Upstreams[name].Episodes {
			eps = append(eps, epRef{name, i, ep})
		}
	}
	label := func(r epRef) string { return fmt.Sprintf("%s episode %d (%s)", r.up, r.i+1, r.ep.Fault) }
	noEpisodes := func(name, want string) ExpectationResult {
		return ExpectationResult{Name: name, Passed: false, Observed: "no fault episode", Want: want,
			Message: "no fault episode on the selected upstreams: nothing to check"}
	}

	// durMax checks a per-episode duration figure against an upper bound.
	durCheck := func(name string, lim *rehearse.Duration, upper bool, get func(*Episode) (*float64, string)) {
		if lim == nil {
			return
		}
		limS := lim.D().Seconds()
		want := "<= " + lim.String()
		if !upper {
			want = ">= " + lim.String()
		}
		if len(eps) == 0 {
			out = append(out, noEpisodes(name, want))
			return
		}
		res := ExpectationResult{Name: name, Passed: true, Want: want}
		var worst *float64
		var fails []string
		for _, r := range eps {
			v, why := get(r.ep)
			if v == nil {
				if why != "" {
					res.Passed = false
					fails = append(fails, label(r)+": "+why)
				}
				continue
			}
			if worst == nil || (upper && *v > *worst) || (!upper && *v < *worst) {
				worst = v
			}
			if (upper && *v > limS) || (!upper && *v < limS) {
				res.Passed = false
				fails = append(fails, fmt.Sprintf("%s: %s", label(r), fmtDur(*v)))
			}
		}
		res.Observed = "n/a"
		if worst != nil {
			res.Observed = fmtDur(*worst)
		}
		if len(fails) > 0 {
			res.Message = fmt.Sprintf("%s: want %s; %s", name, want, strings.Join(fails, "; "))
		} else if worst == nil {
			res.Message = "nothing observed to check"
		} else {
			res.Message = fmt.Sprintf("worst %s, want %s, over %d episodes", res.Observed, want, len(eps))
		}
		out = append(out, res)
	}
	// intCheck checks a per-episode count against a bound.
	intCheck := func(name string, lim *int, upper bool, get func(*Episode) (*int64, string)) {
		if lim == nil {
			return
		}
		want := fmt.Sprintf("<= %d", *lim)
		if !upper {
			want = fmt.Sprintf(">= %d", *lim)
		}
		if len(eps) == 0 {
			out = append(out, noEpisodes(name, want))
			return
		}
		res := ExpectationResult{Name: name, Passed: true, Want: want, Observed: "n/a"}
		var worst *int64
		var fails []string
		for _, r := range eps {
			v, why := get(r.ep)
			if v == nil {
				if why != "" {
					res.Passed = false
					fails = append(fails, label(r)+": "+why)
				}
				continue
			}
			if worst == nil || (upper && *v > *worst) || (!upper && *v < *worst) {
				worst = v
			}
			if (upper && *v > int64(*lim)) || (!upper && *v < int64(*lim)) {
				res.Passed = false
				fails = append(fails, fmt.Sprintf("%s: %d", label(r), *v))
			}
		}
		if worst != nil {
			res.Observed = fmt.Sprint(*worst)
		}
		if len(fails) > 0 {
			res.Message = fmt.Sprintf("%s: want %s; %s", name, want, strings.Join(fails, "; "))
		} else if worst == nil {
			res.Message = "nothing observed to check"
		} else {
			res.Message = fmt.Sprintf("worst %s, want %s, over %d episodes", res.Observed, want, len(eps))
		}
		out = append(out, res)
	}
	i64 := func(p *int) *int64 {
		if p == nil {
			return nil
		}
		return ptr(int64(*p))
	}

	durCheck("opens_within", e.OpensWithin, true, func(ep *Episode) (*float64, string) {
		if !ep.Opened {
			return nil, "did not open"
		}
		return ep.OpenedAfterS, ""
	})
	intCheck("failures_before_open_max", e.FailuresBeforeOpenMax, true, func(ep *Episode) (*int64, string) {
		if !ep.Opened {
			return nil, "did not open"
		}
		return ep.FailuresBeforeOpen, ""
	})
	durCheck("cooldown_min", e.CooldownMin, false, func(ep *Episode) (*float64, string) {
		if !ep.Opened {
			return nil, "did not open"
		}
		if len(ep.CooldownsS) == 0 {
			return nil, ""
		}
		return ptr(slices.Min(ep.CooldownsS)), ""
	})
	durCheck("probe_spacing_min", e.ProbeSpacingMin, false, func(ep *Episode) (*float64, string) {
		return ep.ProbeIntervalS.Min, ""
	})
	intCheck("max_probes_in_flight", e.MaxProbesInFlight, true, func(ep *Episode) (*int64, string) {
		return i64(ep.MaxProbesInFlight), ""
	})
	if e.HonoursRetryAfter != nil {
		want := fmt.Sprint(*e.HonoursRetryAfter)
		res := ExpectationResult{Name: "honours_retry_after", Want: want, Passed: true}
		var checked int
		var viol int64
		var bad []string
		for _, r := range eps {
			if r.ep.RetryAfterHonoured == nil {
				continue
			}
			checked++
			viol += r.ep.RetryAfterViolations
			if !*r.ep.RetryAfterHonoured {
				bad = append(bad, fmt.Sprintf("%s: %d calls before Retry-After elapsed", label(r), r.ep.RetryAfterViolations))
			}
		}
		switch {
		case checked == 0:
			res.Passed, res.Observed = false, "no 429 with Retry-After served"
			res.Message = "no upstream served a 429 with Retry-After: nothing to check"
		default:
			honoured := viol == 0
			res.Observed = fmt.Sprint(honoured)
			res.Passed = honoured == *e.HonoursRetryAfter
			if len(bad) > 0 {
				res.Message = strings.Join(bad, "; ")
			} else {
				res.Message = fmt.Sprintf("no call before Retry-After elapsed, over %d episodes with 429s", checked)
			}
		}
		out = append(out, res)
	}
	if hu := e.HealthyUnaffected; hu != nil && hu.Enabled() {
		res := ExpectationResult{Name: "healthy_unaffected", Passed: true, Want: "no open, client success kept (>= 99% of before)"}
		var checked []string
		var bad []string
		worst := 1.0
		for _, name := range sortedKeys(a.Upstreams) {
			ua := a.Upstreams[name]
			if hu.All && ua.Faulted || !hu.Has(name) {
				continue
			}
			checked = append(checked, name)
			opens := len(ua.UnprovokedOpens)
			for _, ep := range ua.Episodes {
				opens += len(ep.Cycles)
			}
			if opens > 0 {
				bad = append(bad, fmt.Sprintf("%s: breaker opened %d times", name, opens))
			}
			if ua.SuccessBefore != nil && ua.SuccessDuring != nil && *ua.SuccessBefore > 0 {
				rel := *ua.SuccessDuring / *ua.SuccessBefore
				worst = min(worst, rel)
				if rel < 0.99 {
					bad = append(bad, fmt.Sprintf("%s: client success %.1f%% during faults vs %.1f%% before", name, 100**ua.SuccessDuring, 100**ua.SuccessBefore))
				}
			}
		}
		for _, n := range hu.Names {
			if _, ok := a.Upstreams[n]; !ok {
				bad = append(bad, n+": no such upstream in the run")
			}
		}
		res.Observed = fmt.Sprintf("success kept %.1f%%", 100*worst)
		switch {
		case len(checked) == 0 && len(bad) == 0:
			res.Passed, res.Observed = false, "no healthy upstream"
			res.Message = "no upstream without faults to check"
		case len(bad) > 0:
			res.Passed = false
			res.Message = strings.Join(bad, "; ")
		default:
			res.Message = "unaffected: " + strings.Join(checked, ", ")
		}
		out = append(out, res)
	}
	durCheck("closes_within", e.ClosesWithin, true, func(ep *Episode) (*float64, string) {
		if !ep.Opened {
			return nil, ""
		}
		if !ep.Closed {
			return nil, "did not close before the run ended"
		}
		return ptr(max(*ep.ClosedAfterRecoveryS, 0)), ""
	})
	intCheck("successes_to_close_min", e.SuccessesToCloseMin, false, func(ep *Episode) (*int64, string) {
		if !ep.Closed {
			return nil, ""
		}
		return i64(ep.SuccessesToClose), ""
	})
	if e.AmplificationMax != nil {
		res := ExpectationResult{Name: "amplification_max", Passed: true, Want: fmt.Sprintf("<= %.2f", *e.AmplificationMax), Observed: "n/a"}
		var worst float64
		var bad []string
		for _, name := range sortedKeys(a.Upstreams) {
			if amp := a.Upstreams[name].Amplification; amp != nil {
				worst = max(worst, *amp)
				if *amp > *e.AmplificationMax {
					bad = append(bad, fmt.Sprintf("%s: %.2f", name, *amp))
				}
			}
		}
		if a.Amplification.Overall != nil {
			res.Observed = fmt.Sprintf("%.2f", worst)
			res.Message = fmt.Sprintf("worst upstream %.2f, overall %.2f", worst, *a.Amplification.Overall)
		} else {
			res.Passed, res.Message = false, "no client request was sent: nothing to check"
		}
		if len(bad) > 0 {
			res.Passed = false
			res.Message = "upstream calls per client request: " + strings.Join(bad, "; ")
		}
		out = append(out, res)
	}
	if e.MetricsLagMax != nil {
		lim := e.MetricsLagMax.D().Seconds()
		res := ExpectationResult{Name: "metrics_lag_max", Passed: true, Want: "<= " + e.MetricsLagMax.String(), Observed: "n/a"}
		var worst float64
		var seen bool
		var bad []string
		for _, r := range eps {
			if !r.ep.Opened {
				continue
			}
			for _, lag := range []*float64{r.ep.MetricsOpenLagS, r.ep.MetricsCloseLagS} {
				if lag == nil {
					continue
				}
				seen = true
				worst = max(worst, *lag)
			}
			if r.ep.MetricsOpenLagS == nil {
				bad = append(bad, label(r)+": metrics never showed the breaker open")
			} else if *r.ep.MetricsOpenLagS > lim {
				bad = append(bad, fmt.Sprintf("%s: open visible after %s", label(r), fmtDur(*r.ep.MetricsOpenLagS)))
			}
			if r.ep.Closed {
				if r.ep.MetricsCloseLagS == nil {
					bad = append(bad, label(r)+": metrics never showed the breaker closed")
				} else if *r.ep.MetricsCloseLagS > lim {
					bad = append(bad, fmt.Sprintf("%s: close visible after %s", label(r), fmtDur(*r.ep.MetricsCloseLagS)))
				}
			}
		}
		if seen {
			res.Observed = fmtDur(worst)
		}
		switch {
		case len(bad) > 0:
			res.Passed, res.Message = false, strings.Join(bad, "; ")
		case !seen:
			res.Passed, res.Message = false, "no black-box open to compare the metrics with"
		default:
			res.Message = "worst lag " + res.Observed
		}
		out = append(out, res)
	}
	if e.HealthDisagreementMax != nil {
		lim := e.HealthDisagreementMax.D().Seconds()
		res := ExpectationResult{Name: "health_disagreement_max", Passed: true, Want: "<= " + e.HealthDisagreementMax.String(), Observed: "n/a"}
		var worst float64
		seen := false
		var bad []string
		for _, name := range sortedKeys(a.Upstreams) {
			m := a.Upstreams[name].HealthDisagreementMaxS
			if m == nil {
				continue
			}
			seen = true
			worst = max(worst, *m)
			if *m > lim {
				bad = append(bad, fmt.Sprintf("%s: health and breaker disagreed for %s", name, fmtDur(*m)))
			}
		}
		if seen {
			res.Observed = fmtDur(worst)
			res.Message = "longest disagreement " + res.Observed
		} else {
			res.Passed, res.Message = false, "no upstream saw health checks: nothing to check"
		}
		if len(bad) > 0 {
			res.Passed, res.Message = false, strings.Join(bad, "; ")
		}
		out = append(out, res)
	}
	intCheck("leaked_max", e.LeakedMax, true, func(ep *Episode) (*int64, string) {
		if !ep.Opened {
			return nil, ""
		}
		return ptr(ep.Leaked), ""
	})
	if e.ClientSuccessMin != nil {
		var ok, n int64
		for _, ps := range a.Phases {
			n += ps.Requests
			ok += ps.Outcomes["ok"]
		}
		res := ExpectationResult{Name: "client_success_min", Want: fmt.Sprintf(">= %.1f%%", 100**e.ClientSuccessMin)}
		if n == 0 {
			res.Observed, res.Message = "no client requests", "no client request was recorded"
		} else {
			r := float64(ok) / float64(n)
			res.Observed = fmt.Sprintf("%.1f%%", 100*r)
			res.Passed = r >= *e.ClientSuccessMin
			res.Message = fmt.Sprintf("%d of %d client requests ok", ok, n)
		}
		out = append(out, res)
	}
	if e.ReplayLatenessMax != nil {
		res := ExpectationResult{Name: "replay_lateness_max", Want: "p99 <= " + e.ReplayLatenessMax.String(), Observed: "n/a"}
		if p := a.Replay.LatenessMs.P99; p != nil {
			res.Observed = fmtDur(*p / 1000)
			res.Passed = *p <= float64(e.ReplayLatenessMax.D())/float64(time.Millisecond)
			res.Message = fmt.Sprintf("send lateness p99 %s over %d sends", res.Observed, a.Replay.Sent)
		} else {
			res.Message = "nothing was sent"
		}
		out = append(out, res)
	}
	return out
}

// fmtDur formats seconds as a Go-style duration string rounded to the ms.
func fmtDur(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
