package analysis

import (
	"slices"
	"sort"
	"time"

	"github.com/halfopen/rehearse/reports/num"
)

// checksGate decides, over one upstream's cycles, whether its health
// checks are what closes its breaker. A breaker gated by checks closes on
// a passing check every time, after the same number of them in a row (a
// rise count). When some cycle closed with no check to close on, or the
// runs differ, the checks that happened to end just before traffic
// resumed were coincidence (a breaker whose failures expire, with checks
// passing throughout): it reports false when a cycle closed on a check
// that is not the gate, and the machine walks again without them.
func (u *upstreamRun) checksGate(cycles []*cyc) bool {
	c := u.c
	byCheck := func(cy *cyc) bool { return cy.closeBy >= 0 && c.calls[cy.closeBy].health }
	consistent, rise := true, -1
	for _, cy := range cycles {
		if cy.closeAt < 0 {
			continue
		}
		if !byCheck(cy) {
			if u.checksWhileOpen(cy) {
				consistent = false
			}
			continue
		}
		n := u.passingRun(cy)
		if rise >= 0 && n != rise {
			consistent = false
		}
		rise = n
	}
	if consistent && rise >= 0 && !u.checksFailedNear(cycles) && !u.checksTrackState(cycles) {
		// The checks passed throughout: the gateway may close on them
		// (a run of passing checks) or on a timer of its own beside
		// which a check happened to end, each time. Only a chance of
		// that too small to credit keeps the checks as the gate.
		chance := u.coincidence(cycles, byCheck)
		if chance > CoincidenceMax {
			consistent = false
		} else {
			for _, cy := range cycles {
				if cy.closeAt >= 0 && byCheck(cy) {
					// A timer beside the check would have closed it
					// between the requests either side: the close is
					// known to that window too.
					cy.checkChance = chance
					cy.closeLo = min(cy.lb, cy.closeAt)
					cy.closeHi = max(c.calls[cy.fr].t, cy.closeAt)
				}
			}
		}
	}
	return consistent || rise < 0
}

// CoincidenceMax is the largest chance that, with a breaker that ignores
// its health checks, a passing check ended beside every close by accident,
// for which checks that passed throughout are still taken as the gate.
const CoincidenceMax = 0.01

// checksFailedNear reports whether a health check of the upstream failed
// while its cycles were open or just before the first (two check
// intervals): checks that see the fault are plausibly what the gateway
// acts on.
func (u *upstreamRun) checksFailedNear(cycles []*cyc) bool {
	c, ci := u.c, u.calls
	if len(cycles) == 0 {
		return false
	}
	from, to := cycles[0].openAt-2*u.checkSpacing(cycles), u.frame.end
	if last := cycles[len(cycles)-1]; last.closeAt >= 0 {
		to = last.closeAt
	}
	lo := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= from })
	for _, i := range ci[lo:] {
		k := &c.calls[i]
		if k.t > to {
			break
		}
		if k.health && k.failed {
			return true
		}
	}
	return false
}

// coincidence is the chance that, were the checks not the gate, a passing
// check would have ended in every close window by accident. A window runs
// from the last blocked request (less the run's slack) to the first
// resumed call, or to the check's end when that came later; a check lands
// in it with probability its width over the checks' spacing,
// independently per cycle, unless the check sat at the same place in
// every window, its offset from the last blocked request the same within
// the run's slack (the clients' and the checks' periods in step, and a
// timer that keeps step too): then the cycles are one trial, not several.
func (u *upstreamRun) coincidence(cycles []*cyc, byCheck func(*cyc) bool) float64 {
	c := u.c
	iv := u.checkSpacing(cycles)
	if iv <= 0 {
		return 1
	}
	product, most := 1.0, 0.0
	var offs []time.Duration
	for _, cy := range cycles {
		if cy.closeAt < 0 || !byCheck(cy) {
			continue
		}
		hi := c.calls[cy.fr].t
		e := c.calls[cy.closeBy].end
		w := hi - cy.lb + u.slack
		if e > hi {
			w += e - hi
		}
		p := min(1, float64(w)/float64(iv))
		product *= p
		most = max(most, p)
		offs = append(offs, e-cy.lb)
	}
	// Offsets that differ by no more than the run's slack (how far apart
	// two processes' stamps of one moment can be on this run: the
	// clocks' noise, plus the gateway's usual relay delay when it has
	// one) are one moment, read through that noise: the check sat at
	// the same place in every window.
	if len(offs) > 1 && slices.Max(offs)-slices.Min(offs) <= u.slack {
		return most
	}
	return product
}

// checkSpacing is the median spacing of the upstream's health checks while
// its cycles were open (all its checks when those are too few), 0 without.
func (u *upstreamRun) checkSpacing(cycles []*cyc) time.Duration {
	in, _, all := u.checkSpacings(cycles)
	s := in
	if len(s) < 3 {
		s = all
	}
	return num.Median(s)
}

// checksTrackState reports whether the gateway checks at another pace
// while its breaker is open than while it is closed (a faster or slower
// check interval while a target is down): checks tied to the
// breaker's state are what it acts on.
func (u *upstreamRun) checksTrackState(cycles []*cyc) bool {
	in, out, _ := u.checkSpacings(cycles)
	if len(in) < 2 || len(out) < 2 {
		return false
	}
	a, b := num.Median(in), num.Median(out)
	return 4*max(a, b) > 5*min(a, b)
}

// checkSpacings are the spacings between consecutive health checks of the
// upstream: both while a cycle was open, both while none was, and all.
func (u *upstreamRun) checkSpacings(cycles []*cyc) (in, out, all []time.Duration) {
	c, ci := u.c, u.calls
	prev, prevOpen := time.Duration(-1), false
	for _, i := range ci {
		k := &c.calls[i]
		if !k.health {
			continue
		}
		open := false
		for _, cy := range cycles {
			if k.t >= cy.openAt && (cy.closeAt < 0 || k.t <= cy.closeAt) {
				open = true
				break
			}
		}
		if prev >= 0 {
			d := k.t - prev
			all = append(all, d)
			switch {
			case open && prevOpen:
				in = append(in, d)
			case !open && !prevOpen:
				out = append(out, d)
			}
		}
		prev, prevOpen = k.t, open
	}
	return in, out, all
}

// checksWhileOpen reports whether any health check arrived while cy was
// open (before its last blocked request).
func (u *upstreamRun) checksWhileOpen(cy *cyc) bool {
	c, ci := u.c, u.calls
	lo := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= cy.openAt })
	for _, i := range ci[lo:] {
		if c.calls[i].t > cy.lb {
			break
		}
		if c.calls[i].health {
			return true
		}
	}
	return false
}

// passingRun counts the passing health checks in a row that ended with
// the one that closed cy.
func (u *upstreamRun) passingRun(cy *cyc) int {
	c, ci := u.c, u.calls
	n := 0
	by := c.calls[cy.closeBy].t
	hi := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t > by })
	for j := hi - 1; j >= 0 && c.calls[ci[j]].t >= cy.openAt; j-- {
		k := &c.calls[ci[j]]
		if !k.health {
			continue
		}
		if k.failed {
			break
		}
		n++
	}
	return n
}
