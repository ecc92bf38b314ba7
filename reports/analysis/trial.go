package analysis

import (
	"slices"
	"sort"
	"time"
)

// The trial: the first call a breaker lets through after a run of
// refusals. When it is answered quickly and traffic flows on at once,
// three readings fit one cycle alone — a half-open that judged that one
// call and closed on its success; a half-open that lets several calls
// through and closed on a later success, unseen; or failures that
// expired, the breaker closed before the call and needing no success.
// The upstream's other cycles can rule readings out, as one breaker has
// one shape (trialFacts): they are facts of the shape reading
// (shapeFacts.trial, single, quick), and the close on a judged trial is
// placed from them (closeOnJudgedTrial). Nothing here is tied to a gateway: only to what each
// reading predicts about refusals and trials.

// trialFacts are what an upstream's cycles show about how its breaker
// treats a trial.
type trialFacts struct {
	// judged: a trial alone in flight failed, the breaker refused the next
	// request, it had needed two or more failures to trip, and it let the
	// next call through only later than the trip's failures were spread.
	// A breaker whose failures expire all at once would have needed as
	// many failures again to reopen; one that forgets them one by one
	// would have let the next call through as soon as the next remembered
	// failure went (within that spread). It has a half-open that judges
	// the trial: its success is what closes it.
	judged bool
	// single: a request was refused while one trial, alone, was in
	// flight (let through, not yet answered by the upstream): the
	// half-open lets one call through at a time.
	single bool
}

// trialFacts reads the upstream's cycles (after splitExpiry) for them.
func (u *upstreamRun) trialFacts(cycles []*cyc) trialFacts {
	var f trialFacts
	ends := u.failureEnds()
	segStart := time.Duration(0)
	for _, cy := range cycles {
		adm := u.admittedByArrival(cy)
		if ramp, _ := u.rampEvidence(cy, adm); ramp {
			// A breaker admitting a share of the traffic refuses
			// requests beside a lone call and reopens on a failure
			// without judging anything: no trial facts from its cycles.
			return trialFacts{}
		}
		for j, i := range adm {
			if !u.alone(cy, adm, i) {
				continue
			}
			if u.refusedDuring(cy, i) {
				f.single = true
			}
			next := u.nextLet(cy, adm, j)
			if u.judgedTrial(cy, i, next, segStart, ends) || u.heldPastWindow(cy, adm, i, next, ends) {
				f.judged = true
			}
		}
		if cy.closeAt >= 0 {
			segStart = cy.closeAt
		}
	}
	return f
}

// judgedTrial reports whether the failed trial i of cy rules out a
// breaker whose failures expire. Say the breaker needs m failures within
// a window W. One that forgets all its failures at once (m ≥ 2: it took
// two or more to trip) refuses nothing after a lone trial's failure
// until m more; one that forgets them one by one let the trial through
// (at L) as a failure e0 expired, and lets the next call through when
// the next one, e ≥ e0, does: at e+W = (e0+W) + (e−e0) ≤ L + gap, gap
// the widest between consecutive failure ends before L. So a request
// refused after both the trial's answer and L+gap, before the next call
// was let through, with no failure (of any call, checks included) but
// the trial's since L, fits neither. Failures before the segment's start
// (an earlier episode) are taken as forgotten: a documented limit.
func (u *upstreamRun) judgedTrial(cy *cyc, i int32, next, segStart time.Duration, ends []time.Duration) bool {
	k := &u.c.calls[i]
	if !k.failed || !k.hasEnd {
		return false
	}
	if n, _ := u.tripFailures(cy); n < 2 {
		return false
	}
	from, latest := u.letFrom(i), k.t
	gap := time.Duration(0)
	lo := sort.Search(len(ends), func(j int) bool { return ends[j] >= segStart })
	for j := lo + 1; j < len(ends) && ends[j] <= from; j++ {
		gap = max(gap, ends[j]-ends[j-1])
	}
	after := max(latest+gap, k.end) + u.slack
	j := sort.Search(len(cy.blockedAt), func(j int) bool { return cy.blockedAt[j] > after })
	if j == len(cy.blockedAt) || cy.blockedAt[j] >= next {
		return false
	}
	refused := cy.blockedAt[j]
	// No other failure since the trial was let through: the count the
	// refusal rests on is the trial's alone.
	a := sort.Search(len(ends), func(j int) bool { return ends[j] >= from })
	for ; a < len(ends) && ends[a] <= refused; a++ {
		if ends[a] != k.end {
			return false
		}
	}
	return true
}

// failureEnds are the ends of the upstream's failed calls (every kind,
// health checks included; an unrecorded end counts at the arrival), in
// order.
func (u *upstreamRun) failureEnds() []time.Duration {
	var out []time.Duration
	for _, i := range u.calls {
		if k := &u.c.calls[i]; k.failed {
			out = append(out, k.end)
		}
	}
	slices.Sort(out)
	return out
}

// admittedByArrival is cy's admitted calls in arrival order.
func (u *upstreamRun) admittedByArrival(cy *cyc) []int32 {
	adm := make([]int32, 0, len(cy.admitted))
	for i := range cy.admitted {
		adm = append(adm, i)
	}
	sort.Slice(adm, func(a, b int) bool { return u.c.calls[adm[a]].t < u.c.calls[adm[b]].t })
	return adm
}

// alone reports whether no other call cy admitted was in flight while i
// was (from the earliest it can have been let through until the gateway
// certainly had its answer).
func (u *upstreamRun) alone(cy *cyc, adm []int32, i int32) bool {
	from, to := u.letFrom(i), u.answerHeld(i)
	for _, x := range adm {
		if x != i && u.letFrom(x) < to && u.answerHeld(x) > from {
			return false
		}
	}
	return true
}

// refusedDuring reports whether cy refused a request wholly while call i
// was in flight: sent after i reached the upstream and answered before
// the upstream released i's answer.
func (u *upstreamRun) refusedDuring(cy *cyc, i int32) bool {
	k := &u.c.calls[i]
	if !k.hasEnd {
		return false
	}
	j := sort.Search(len(cy.blockedAt), func(j int) bool { return cy.blockedAt[j] >= k.t })
	for ; j < len(cy.blockedAt) && cy.blockedAt[j] < k.end; j++ {
		if d := cy.blockedDone[j]; d > 0 && d < k.end {
			return true
		}
	}
	return false
}

// nextLet is when the call after adm[j] was let through: the next
// admission, or the first resumed call; the run's end when none.
func (u *upstreamRun) nextLet(cy *cyc, adm []int32, j int) time.Duration {
	if j+1 < len(adm) {
		return u.c.calls[adm[j+1]].t
	}
	if cy.closeAt >= 0 && cy.fr >= 0 {
		return u.c.calls[cy.fr].t
	}
	return u.frame.end
}

// tripFailures counts the failures in a row (by their ends) that came
// back up to cy's open, and how far apart the first and the open were.
func (u *upstreamRun) tripFailures(cy *cyc) (int, time.Duration) {
	c := u.c
	type end struct {
		at     time.Duration
		failed bool
	}
	var ends []end
	top := sort.Search(len(u.live), func(i int) bool { return c.calls[u.live[i]].t > cy.openAt })
	for j := top - 1; j >= 0; j-- {
		k := &c.calls[u.live[j]]
		if k.t < cy.openAt-time.Minute {
			break
		}
		if k.hasEnd && k.end <= cy.openAt && !k.tagged {
			ends = append(ends, end{k.end, k.failed})
		}
	}
	sort.Slice(ends, func(a, b int) bool { return ends[a].at > ends[b].at })
	n, first := 0, cy.openAt
	for _, e := range ends {
		if !e.failed {
			break
		}
		n++
		first = e.at
	}
	return n, cy.openAt - first
}

// trialCounts reports whether cy's first resumed call was a trial the
// model counts as a probe: the close alone could not tell (maybeProbe),
// the call succeeded, and the upstream's cycles rule out failures
// expiring (u.trial.judged). Such a breaker lets the first call after
// its cooldown through as a trial, whether or not the trial was still
// answering when the next call was let through (trialQuick): that
// places the close, not the probe.
func (u *upstreamRun) trialCounts(cy *cyc) bool {
	if !u.trial.judged || !cy.maybeProbe || cy.closeAt < 0 || cy.closeBy >= 0 || cy.fr < 0 {
		return false
	}
	k := &u.c.calls[cy.fr]
	return !k.failed && k.hasEnd
}

// trialQuick reports whether cy's trial (cy.fr) was answered whole before
// the next call can have been let through. A trial still in flight then
// (a slow body after a quick head, which a breaker may judge on) leaves
// its answer's moment — and so the close — unplaced between its head and
// its end. The upstream stamps the end once its handler has returned,
// which can be a moment after the gateway had the answer (slackLate): an
// answer streamed for the whole spacing of the requests ends that moment
// after the next one's send.
func (u *upstreamRun) trialQuick(cy *cyc) bool {
	return cy.nx < 0 || u.c.calls[cy.fr].end <= u.letFrom(cy.nx)+u.slackLate
}
