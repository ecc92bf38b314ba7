package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/num"
)

// episode fills the figures of one fault episode from its cycles.
func (u *upstreamRun) episode(ep *Episode, w window, spanEnd time.Duration) {
	ep.Fault, ep.FaultTypes = joinNames(w.names), w.types
	ep.StartS, ep.EndS, ep.EndedByRun = seconds(w.start), seconds(w.end), w.endedByRun
	ep.CooldownsS, ep.RetryAfter = []float64{}, []RetryAfter{}
	if ep.Cycles == nil {
		ep.Cycles = []*Cycle{}
	}
	ampEnd := w.end
	if len(ep.Cycles) > 0 {
		ampEnd = cyclesFigures(ep, w, spanEnd)
	}
	ampEnd = min(ampEnd, spanEnd)
	u.retryAfter(ep, w, spanEnd, ampEnd)
	u.metricsLag(ep, w)
	u.observed(ep, w)
	openTime(ep)
	episodeBases(ep)
	ep.Statement = statement(ep)
}

// cyclesFigures sets an episode's figures from its open/close cycles: the
// first open's, the last close's and the sums over all; it returns where
// the episode's amplification is counted to (its last close, or the span's
// end when it never closed).
func cyclesFigures(ep *Episode, w window, spanEnd time.Duration) time.Duration {
	n := len(ep.Cycles)
	first, last := ep.Cycles[0], ep.Cycles[n-1]
	ep.Opened = true
	ep.OpenedAtS = Ptr(first.OpenedAtS)
	ep.OpenedAfterS = Ptr(seconds(first.openAt - w.start))
	if first.OpenBoundsS != nil {
		ep.OpenedAfterBoundsS = &Bounds{Min: ep.OpenedAfterS, Max: Ptr(seconds(first.openHi - w.start))}
	}
	ep.FailuresBeforeOpen = Ptr(first.FailuresBeforeOpen)
	ep.FailedRequestsBeforeOpen = Ptr(first.FailedRequestsBeforeOpen)
	ep.FailuresBeforeOpenBounds = first.FailuresBeforeOpenBounds
	ep.FailedRequestsBeforeOpenBounds = first.FailedRequestsBeforeOpenBounds
	bounded, unseen := false, int64(0)
	ep.Shape, ep.ShapeEvidence = joinShapes(ep.Cycles), last.ShapeEvidence
	var ivs []time.Duration
	mif := 0
	srcs := []string{}
	for _, cy := range ep.Cycles {
		ep.Leaked += cy.Leaked
		ep.Resent += cy.Resent
		ep.Probes += cy.ProbeCount
		ep.FastFails += cy.FastFails
		ivs = append(ivs, cy.intervals...)
		mif = max(mif, cy.MaxProbesInFlight)
		ep.CooldownsS = append(ep.CooldownsS, cy.CooldownsS...)
		// After resumeCooldowns: every wait stated is counted.
		cy.CooldownsCountBounds = countBounds(int64(len(cy.CooldownsS)), cy.unseenWaits)
		unseen += cy.unseenWaits
		if cy.CooldownsBoundsS != nil {
			bounded = true
		}
		if cy.ProbeSource != "" && !slices.Contains(srcs, cy.ProbeSource) {
			srcs = append(srcs, cy.ProbeSource)
		}
		for _, p := range cy.Probes {
			if p.OK {
				ep.ProbeOutcomes.OK++
			} else {
				ep.ProbeOutcomes.Failed++
			}
		}
	}
	ep.CooldownsCountBounds = countBounds(int64(len(ep.CooldownsS)), unseen)
	if bounded {
		// One entry per cooldown, null where it is exact.
		ep.CooldownsBoundsS = make([]*Bounds, 0, len(ep.CooldownsS))
		for _, cy := range ep.Cycles {
			if cy.CooldownsBoundsS != nil {
				ep.CooldownsBoundsS = append(ep.CooldownsBoundsS, cy.CooldownsBoundsS...)
			} else {
				ep.CooldownsBoundsS = append(ep.CooldownsBoundsS, make([]*Bounds, len(cy.CooldownsS))...)
			}
		}
	}
	ep.ProbeSource = strings.Join(srcs, "+")
	ep.ProbeIntervalS = minP50Max(ivs)
	if ep.Probes > 0 {
		ep.MaxProbesInFlight = Ptr(mif)
		if first.firstProbe >= 0 {
			ep.FirstProbeAfterOpen = Ptr(seconds(first.firstProbe - first.openAt))
			if len(first.CooldownsBoundsS) > 0 {
				ep.FirstProbeAfterOpenBoundsS = first.CooldownsBoundsS[0]
			}
		}
	}
	if last.ClosedAtS != nil {
		ep.Closed = true
		ep.ClosedAtS = last.ClosedAtS
		ep.ClosedAfterRecoveryS = Ptr(seconds(last.closeAt - w.end))
		ep.SuccessesToClose = last.SuccessesToClose
		ep.SuccessesToCloseBounds = last.SuccessesToCloseBounds
		ep.CloseBoundsS = last.CloseBoundsS
		return max(w.end, last.closeAt)
	}
	return spanEnd
}

// retryAfter sets an episode's Retry-After compliance (each 429's pause
// and the calls inside one) over its span, and its amplification up to
// ampEnd.
func (u *upstreamRun) retryAfter(ep *Episode, w window, spanEnd, ampEnd time.Duration) {
	c, live, sent := u.c, u.live, u.sent
	type pause struct{ from, until time.Duration }
	var pauses []pause
	for _, i := range live {
		k := &c.calls[i]
		if k.t < w.start || k.t >= spanEnd {
			continue
		}
		if k.t < ampEnd {
			ep.UpstreamCalls++
		}
		if k.status == 429 && k.retryAfter > 0 {
			pauses = append(pauses, pause{k.end, k.end + k.retryAfter})
		}
	}
	for _, i := range sent {
		if s := c.reqs[i].sent; s >= w.start && s < ampEnd {
			ep.ClientRequests++
		}
	}
	ep.Amplification = ratio(ep.UpstreamCalls, ep.ClientRequests)
	if len(pauses) > 0 {
		slices.SortFunc(pauses, func(x, y pause) int { return cmp.Compare(x.from, y.from) })
		lo := sort.Search(len(live), func(j int) bool { return c.calls[live[j]].t >= w.start })
		// Per 429: the next non-health call after its response.
		for _, p := range pauses {
			if len(ep.RetryAfter) >= maxListed {
				break
			}
			ra := RetryAfter{AtS: seconds(p.from), RetryAfterS: seconds(p.until - p.from), Honoured: true}
			j := sort.Search(len(live), func(j int) bool { return c.calls[live[j]].t > p.from })
			if j < len(live) {
				nt := c.calls[live[j]].t
				ra.NextCallS = Ptr(seconds(nt - p.from))
				early := nt < p.until-RetryAfterSlack
				ra.Honoured = !early || !faultStood(w, nt)
				ra.AfterRecovery = early && !faultStood(w, nt)
			}
			ep.RetryAfter = append(ep.RetryAfter, ra)
		}
		// Calls inside any pause that began before them: violations while
		// the fault stood, ordinary traffic after it ended.
		pi := 0
		var until time.Duration = -1
		for _, i := range live[lo:] {
			k := &c.calls[i]
			if k.t >= spanEnd {
				break
			}
			for pi < len(pauses) && pauses[pi].from < k.t {
				until = max(until, pauses[pi].until)
				pi++
			}
			if k.t < until-RetryAfterSlack {
				if faultStood(w, k.t) {
					ep.RetryAfterViolations++
				} else {
					ep.RetryAfterAfterRecovery++
				}
			}
		}
		ep.RetryAfterHonoured = Ptr(ep.RetryAfterViolations == 0)
	}

}

// metricsLag sets how late the gateway's metrics showed the episode's
// black-box open and close.
func (u *upstreamRun) metricsLag(ep *Episode, w window) {
	mpts := u.mpts
	if ep.Opened {
		openAt, openHi := ep.Cycles[0].openAt, ep.Cycles[0].openHi
		from := sort.Search(len(mpts), func(i int) bool { return mpts[i].t >= w.start })
		already := from > 0 && mpts[from-1].state != journal.StateClosed
		if !already {
			for i := from; i < len(mpts); i++ {
				if mpts[i].state == journal.StateClosed {
					continue
				}
				ep.MetricsOpenLagS = Ptr(seconds(mpts[i].t - openAt))
				if openHi > openAt {
					ep.MetricsOpenLagBoundsS = &Bounds{Min: Ptr(seconds(mpts[i].t - openHi)), Max: ep.MetricsOpenLagS}
					ep.setBasis("metrics_open_lag_s", metricsLagBasis(mpts[i].t, openAt, openHi))
				}
				if ep.Closed {
					// The close the metrics show is the first closed
					// point after the last open one at or before the
					// black-box close: with several open/close cycles in
					// the episode (a flapping gateway), earlier cycles'
					// closes are not this one.
					closeAt := ep.Cycles[len(ep.Cycles)-1].closeAt
					lastOpen := i
					for j := i + 1; j < len(mpts) && mpts[j].t <= closeAt; j++ {
						if mpts[j].state != journal.StateClosed {
							lastOpen = j
						}
					}
					for j := lastOpen + 1; j < len(mpts); j++ {
						if mpts[j].state == journal.StateClosed {
							if mpts[j].t >= closeAt-30*time.Second {
								ep.MetricsCloseLagS = Ptr(seconds(mpts[j].t - closeAt))
							}
							break
						}
					}
				}
				break
			}
		}
	}
}

// minP50Max summarises durations in seconds (the JSON boundary).
func minP50Max(v []time.Duration) MinP50Max {
	if len(v) == 0 {
		return MinP50Max{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return MinP50Max{Min: Ptr(seconds(s[0])), P50: Ptr(seconds(num.Median(s))), Max: Ptr(seconds(s[len(s)-1]))}
}

// statement says what happened in one plain sentence.
func statement(ep *Episode) string {
	if !ep.Opened {
		s := fmt.Sprintf("Did not open: %d upstream calls during the fault, for %d client requests.", ep.UpstreamCalls, ep.ClientRequests)
		if ep.RetryAfterHonoured != nil && !*ep.RetryAfterHonoured {
			s += fmt.Sprintf(" %s ignored a 429's Retry-After.", num.Plural(ep.RetryAfterViolations, "call"))
		}
		return s + afterRecoveryText(ep)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Opened %s after the fault started (%s before", num.Sec(*ep.OpenedAfterS), num.Plural(*ep.FailuresBeforeOpen, "failed call"))
	if r := ep.FailedRequestsBeforeOpen; r != nil && *r != *ep.FailuresBeforeOpen {
		fmt.Fprintf(&b, ", %s", num.Plural(*r, "distinct client request"))
	}
	b.WriteString(")")
	if ob := ep.OpenedAfterBoundsS; ob != nil && ob.Max != nil {
		fmt.Fprintf(&b, ", or as late as %s after (several failed calls, or a gateway slow to pass the failure on, leave the trip unplaced between", num.Sec(*ob.Max))
		if fb := ep.FailuresBeforeOpenBounds; fb != nil && fb.Max != nil {
			fmt.Fprintf(&b, "; then %s before", num.Plural(int64(*fb.Max), "failed call"))
			if rb := ep.FailedRequestsBeforeOpenBounds; rb != nil && rb.Max != nil && *rb.Max != *fb.Max {
				fmt.Fprintf(&b, ", %s", num.Plural(int64(*rb.Max), "distinct client request"))
			}
		}
		b.WriteString(")")
	} else if fb := ep.FailuresBeforeOpenBounds; fb != nil && fb.Max != nil {
		fmt.Fprintf(&b, ", or as many as %s (calls sent before the trip reached the upstream after it: a loaded gateway forwards late what it let through)", num.Plural(int64(*fb.Max), "failed call"))
	}
	b.WriteString(".")
	if ep.Shape != "" {
		fmt.Fprintf(&b, " Shape: %s.", lastShapeWords(ep))
	}
	if ep.Resent > 0 {
		fmt.Fprintf(&b, " The gateway's transport re-sent %s.", num.Plural(ep.Resent, "call"))
	}
	switch {
	case ep.Probes > 0 && ep.FirstProbeAfterOpen != nil:
		fmt.Fprintf(&b, " Probed %s%s (%s), first %s after opening", atLeastWord(ep), num.Plural(ep.Probes, "time"), ep.ProbeSource, num.Sec(*ep.FirstProbeAfterOpen))
		if pb := ep.FirstProbeAfterOpenBoundsS; pb != nil && pb.Min != nil && *pb.Min < *ep.FirstProbeAfterOpen-0.0005 {
			if ep.OpenedAfterBoundsS != nil {
				fmt.Fprintf(&b, " (as little as %s after an open as late as it may have been)", num.Sec(*pb.Min))
			} else {
				fmt.Fprintf(&b, " (as little as %s: the gateway forwarded it late, and may have let it through as its client sent it)", num.Sec(*pb.Min))
			}
		}
		b.WriteString(".")
	case ep.Probes > 0:
		// The first open cycle had no probe; a later one did.
		fmt.Fprintf(&b, " Probed %s%s (%s), none in the first open cycle.", atLeastWord(ep), num.Plural(ep.Probes, "time"), ep.ProbeSource)
	default:
		b.WriteString(" No probes seen.")
	}
	if ep.Leaked > 0 {
		fmt.Fprintf(&b, " %s leaked through while open.", num.Plural(ep.Leaked, "call"))
	}
	if n := len(ep.Cycles); n > 1 {
		fmt.Fprintf(&b, " Flapped: %d open/close cycles.", n)
	}
	if ep.RetryAfterHonoured != nil {
		if *ep.RetryAfterHonoured {
			b.WriteString(" Retry-After honoured.")
		} else {
			fmt.Fprintf(&b, " Retry-After violated by %s.", num.Plural(ep.RetryAfterViolations, "call"))
		}
		b.WriteString(afterRecoveryText(ep))
	}
	if ep.Closed {
		// What users saw first, then the breaker's close as inferred, in
		// the one text every output gives it (CloseText).
		fmt.Fprintf(&b, " Closed %s", CloseText(ep))
		switch b0 := ep.CloseBoundsS; {
		case ep.SuccessesToClose != nil:
			fmt.Fprintf(&b, ", after %s", num.Plural(int64(*ep.SuccessesToClose), "successful probe"))
		case ep.SuccessesToCloseBounds != nil && ep.SuccessesToCloseBounds.Min != nil && ep.SuccessesToCloseBounds.Max == nil:
			fmt.Fprintf(&b, ", after at least %s (the trial's, or a later one: unseen)", num.Plural(int64(*ep.SuccessesToCloseBounds.Min), "successful probe"))
		case b0 != nil && b0.Min != nil && b0.Max != nil:
			b.WriteString(" (no success pins it down)")
		case b0 != nil:
			b.WriteString(" (the breaker forwarded everything from then on; a ramp's end, or a half-open letting several quick calls through, closes later, unseen from outside)")
		}
		b.WriteString(".")
		if r := ResumedText(ep); r != "" {
			fmt.Fprintf(&b, " Traffic resumed %s.", r)
		}
	} else {
		b.WriteString(" Did not close before the run ended.")
	}
	return b.String()
}

// atLeastWord is "at least " when more calls may have been probes than
// counted (a cycle's maybe_probe), else "".
func atLeastWord(ep *Episode) string {
	if ep.probesBounds() != nil {
		return "at least "
	}
	return ""
}

// healthDisagreement finds intervals where the upstream's health checks
// and its breaker (metrics when the gateway reports them, else black-box)
// disagree.
func (u *upstreamRun) healthDisagreement(ua *UpstreamAnalysis, opens [][2]time.Duration) {
	c, ci, mpts, runEnd := u.c, u.calls, u.mpts, u.frame.end
	type ev struct {
		t      time.Duration
		canary string // "" = no change
		brk    string
	}
	var evs []ev
	last := ""
	for _, i := range ci {
		k := &c.calls[i]
		if !k.health {
			continue
		}
		s := "up"
		if k.failed {
			s = "down"
		}
		if s != last {
			evs = append(evs, ev{t: k.t, canary: s})
			last = s
		}
	}
	if len(evs) == 0 {
		return
	}
	src := "metrics"
	if len(mpts) > 0 {
		for _, p := range mpts {
			s := "closed"
			if p.state != journal.StateClosed {
				s = "open"
			}
			evs = append(evs, ev{t: p.t, brk: s})
		}
	} else {
		src = "black_box"
		evs = append(evs, ev{t: 0, brk: "closed"})
		for _, o := range opens {
			evs = append(evs, ev{t: o[0], brk: "open"}, ev{t: o[1], brk: "closed"})
		}
	}
	slices.SortStableFunc(evs, func(x, y ev) int { return cmp.Compare(x.t, y.t) })
	canary, brk := "", ""
	var cur *Disagreement
	var maxD, curStart time.Duration
	flush := func(t time.Duration) {
		if cur != nil {
			cur.EndS = seconds(t)
			maxD = max(maxD, t-curStart)
			if len(ua.HealthDisagreements) < maxListed {
				ua.HealthDisagreements = append(ua.HealthDisagreements, *cur)
			}
			cur = nil
		}
	}
	for _, e := range evs {
		if e.canary != "" {
			canary = e.canary
		}
		if e.brk != "" {
			brk = e.brk
		}
		dis := (canary == "up" && brk == "open") || (canary == "down" && brk == "closed")
		switch {
		case dis && cur != nil && cur.Health == canary && cur.Breaker == brk:
		case dis:
			flush(e.t)
			cur, curStart = &Disagreement{StartS: seconds(e.t), Health: canary, Breaker: brk, Source: src}, e.t
		default:
			flush(e.t)
		}
	}
	flush(runEnd)
	ua.HealthDisagreementMaxS = Ptr(seconds(maxD))
}

// faultStood reports whether the episode's fault still stood at t: a
// call before an announced Retry-After elapsed is an early probe of the
// faulted upstream only then. After the fault ended the upstream answers
// again, and the calls that come then, inside a pause announced long
// before (Retry-After 120 s against a 30 s cooldown), are the gateway's
// ordinary traffic after recovery: counted apart, not as violations
// (issue 28, item 9).
func faultStood(w window, t time.Duration) bool { return t >= w.start && t < w.end }

// afterRecoveryText says how many calls came inside an announced pause
// after the fault had ended; "" when none did.
func afterRecoveryText(ep *Episode) string {
	if ep.RetryAfterAfterRecovery == 0 {
		return ""
	}
	return fmt.Sprintf(" %s came before an announced Retry-After elapsed but after the fault had ended (traffic after recovery, not counted as violations).",
		num.Plural(ep.RetryAfterAfterRecovery, "call"))
}
