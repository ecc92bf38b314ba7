package analysis

import (
	"sort"
	"time"
)

// Probe spacing and concurrency when the probes counted are the least
// there were. A cycle
// whose last calls let through may have been more probes (MaybeProbe: a
// half-open letting several quick calls through looks, from outside, like
// traffic resuming) has probes the analysis did not count, and their
// spacing is not among the intervals measured: probe_interval_s.min is
// then only the most the shortest spacing can be. The least is the
// closest two calls that may have been consecutive probes came: the last
// probe counted (or the open) and every live call up to the latest the
// breaker can have closed (close_bounds_s max; with none, the next cycle
// or the episode's end). Probes are some of those calls, so two
// consecutive probes are never closer than two consecutive calls. For the
// same reason no more probes were in flight at once than of the live
// calls from the open to that latest close: max_probes_in_flight is the
// least, that the most.

// probeSpacingBounds sets ep.ProbeIntervalMinBoundsS when a cycle of the
// episode may have had probes it did not count; spanEnd is where the
// episode's calls end.
func (u *upstreamRun) probeSpacingBounds(ep *Episode, spanEnd time.Duration) {
	u.probesInFlightBounds(ep, spanEnd)
	if ep.ProbeIntervalS.Min == nil {
		return
	}
	measured := *ep.ProbeIntervalS.Min
	least, leastAt := time.Duration(-1), time.Duration(-1)
	for n, cy := range ep.Cycles {
		if !cy.MaybeProbe || cy.Shape == ShapeTaggedProbe {
			// A gateway that tags its probes tags every one: an
			// untagged call is none, so no probe went uncounted.
			continue
		}
		from := cy.openAt
		if cy.lastProbe >= 0 {
			from = cy.lastProbe
		}
		upto := cycleEnd(ep, n, spanEnd)
		upto = cy.latestClose(upto)
		upto = u.closedBefore(ep, from, upto)
		if g, at := u.closestCalls(from, cy.lastProbe >= 0, upto); g >= 0 && (least < 0 || g < least) {
			least, leastAt = g, at
		}
	}
	if least >= 0 && seconds(least) < measured {
		ep.ProbeIntervalMinBoundsS = &Bounds{Min: Ptr(seconds(least)), Max: Ptr(measured)}
		ep.setBasis("probe_interval_s.min", spacingBasis(leastAt-least, leastAt, measured))
	}
}

// closedBefore is the latest the half-open after from can have let a
// probe through, no later than upto, when a failure shows the breaker
// closed. A breaker seen to judge its trials (u.trial.judged: one failed
// trial reopened it) reopens on a failed probe and turns the next
// request away unless its cooldown has already passed; so a live call
// that failed, with the next request after its answer forwarded sooner
// than the least cooldown the episode shows, was let through by a closed
// breaker. The half-open had ended before it: no call from it on was a
// probe. upto when no failure shows it (a close with no latest moment and
// healthy traffic after it leaves every later call a possible probe: a
// half-open admitting that many calls, or closing on a timer that long,
// fits the evidence, and the bound stays what those calls allow).
func (u *upstreamRun) closedBefore(ep *Episode, from, upto time.Duration) time.Duration {
	if !u.trial.judged || u.cls == nil || unseenWait(ep.CooldownsCountBounds) {
		// (An unseen wait may be shorter than every one stated.)
		return upto
	}
	cool := time.Duration(-1) // the least cooldown the episode allows
	for i, v := range ep.CooldownsS {
		if i < len(ep.CooldownsBoundsS) && ep.CooldownsBoundsS[i] != nil && ep.CooldownsBoundsS[i].Min != nil {
			v = *ep.CooldownsBoundsS[i].Min
		}
		if d := time.Duration(v * float64(time.Second)); cool < 0 || d < cool {
			cool = d
		}
	}
	if cool <= 0 {
		return upto
	}
	c, live := u.c, u.live
	for j := sort.Search(len(live), func(i int) bool { return c.calls[live[i]].t > from }); j < len(live); j++ {
		i := live[j]
		k := &c.calls[i]
		if k.t > upto {
			break
		}
		if !k.failed || !k.hasEnd {
			continue
		}
		held := u.answerHeld(i)
		q := sort.Search(len(u.sent), func(q int) bool { return c.reqs[u.sent[q]].sent > held })
		if q < len(u.sent) && u.cls[q] != clsBlocked && u.match[q] >= 0 && c.reqs[u.sent[q]].sent < held+cool {
			return k.t - 1
		}
	}
	return upto
}

// closestCalls is the least spacing of two consecutive live calls of the
// upstream arriving in [from, upto] (from itself a call when isCall:
// the last probe counted), or -1 with fewer than two, and the later
// call's arrival (the spacing's basis).
func (u *upstreamRun) closestCalls(from time.Duration, isCall bool, upto time.Duration) (least, at time.Duration) {
	c, live := u.c, u.live
	j := sort.Search(len(live), func(i int) bool { return c.calls[live[i]].t >= from })
	prev := time.Duration(-1)
	least, at = -1, -1
	if isCall {
		prev = from
		if j < len(live) && c.calls[live[j]].t == from {
			j++
		}
	}
	for ; j < len(live) && c.calls[live[j]].t <= upto; j++ {
		t := c.calls[live[j]].t
		if prev >= 0 && (least < 0 || t-prev < least) {
			least, at = t-prev, t
		}
		prev = t
	}
	return least, at
}

// cycleEnd is where cycle n of ep's calls can end: the next cycle's open,
// or the episode's end.
func cycleEnd(ep *Episode, n int, spanEnd time.Duration) time.Duration {
	if n+1 < len(ep.Cycles) {
		return ep.Cycles[n+1].openAt
	}
	return spanEnd
}

// latestClose is the latest the cycle can have closed, no later than upto:
// close_bounds_s max (to the millisecond it is written in, and one more),
// else upto.
func (cy *Cycle) latestClose(upto time.Duration) time.Duration {
	if b := cy.CloseBoundsS; b != nil && b.Max != nil {
		return min(upto, time.Duration(*b.Max*float64(time.Second))+time.Millisecond)
	}
	return upto
}

// probesInFlightBounds sets ep.MaxProbesInFlightBounds when a cycle may
// have had probes it did not count: at most as many were in flight at
// once as of the live calls from its open to the latest it can have
// closed.
func (u *upstreamRun) probesInFlightBounds(ep *Episode, spanEnd time.Duration) {
	if ep.MaxProbesInFlight == nil {
		return
	}
	most, mostCy := *ep.MaxProbesInFlight, -1
	for n, cy := range ep.Cycles {
		if !cy.MaybeProbe || cy.Shape == ShapeTaggedProbe {
			continue // every probe tagged: none uncounted
		}
		c, live := u.c, u.live
		upto := cy.latestClose(cycleEnd(ep, n, spanEnd))
		j := sort.Search(len(live), func(i int) bool { return c.calls[live[i]].t >= cy.openAt })
		k := sort.Search(len(live), func(i int) bool { return c.calls[live[i]].t > upto })
		if m := c.maxInFlight(live[j:k]); m > most {
			most, mostCy = m, n
		}
	}
	if most > *ep.MaxProbesInFlight {
		ep.MaxProbesInFlightBounds = &Bounds{Min: Ptr(float64(*ep.MaxProbesInFlight)), Max: Ptr(float64(most))}
		cy := ep.Cycles[mostCy]
		ep.setBasis("max_probes_in_flight", inFlightBasis(*ep.MaxProbesInFlight, most, cy.openAt, cy.latestClose(cycleEnd(ep, mostCy, spanEnd))))
	}
}
