package analysis

import "time"

// heldSeveralAtOnce reports whether cy, before hi, let several calls
// through together and then turned a request away while every one of
// them was still in flight (none answered, by the upstream's record): a
// half-open that admits a number of probes at once and refuses the rest
// until they answer (or reopens on some other failure meanwhile). Such a
// breaker, in its next half-open, lets as many calls through together
// before any has answered: calls in flight together with no success yet
// may be its probes, not traffic a timer let back. How many it admits
// is not seen (a half-open can reopen before it has let them all
// through), so any count of calls in flight together fits it.
func (u *upstreamRun) heldSeveralAtOnce(cy *cyc, hi time.Duration) bool {
	c := u.c
	adm := u.admittedByArrival(cy)
	for g := 0; g < len(adm); {
		// A run: admitted calls with no request turned away between.
		h := g + 1
		for h < len(adm) && c.calls[adm[h]].t < hi && !cy.blockedBetween(c.calls[adm[h-1]].t, c.calls[adm[h]].t) {
			h++
		}
		if c.calls[adm[g]].t >= hi {
			break
		}
		if h-g >= 2 {
			// The first answer of the run, by the upstream's record (a
			// call with no end was in flight to the last).
			firstEnd := time.Duration(1<<63 - 1)
			for _, i := range adm[g:h] {
				if k := &c.calls[i]; k.hasEnd {
					firstEnd = min(firstEnd, k.end)
				}
			}
			if last := c.calls[adm[h-1]].t; cy.blockedBetween(last, min(firstEnd, hi)) {
				return true
			}
		}
		g = h
	}
	return false
}
