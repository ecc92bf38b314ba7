package analysis

import (
	"container/heap"
	"time"
)

// heldRun is a run of calls a half-open let through together (no request
// turned away between them) before it turned a request away while every
// one of them was still in flight.
type heldRun struct {
	// first is the run's first arrival, n how many calls it let through.
	first time.Duration
	n     int
	calls []int32
	// clean: no call of the upstream failed, by the gateway's knowledge,
	// from the run's first arrival to the refusal. The refusal then came
	// from the half-open's own limit (it admits n calls at once), not from
	// a reopen on some other failure.
	clean bool
}

// heldRuns are cy's runs of admitted calls, before hi, that it let
// through together and then turned a request away while all of them were
// still in flight (none answered, by the upstream's record), in arrival
// order: a half-open admitting a number of probes at once and refusing
// the rest until they answer (or reopening on another failure meanwhile).
func (u *upstreamRun) heldRuns(cy *cyc, hi time.Duration) []heldRun {
	c := u.c
	adm := u.admittedByArrival(cy)
	var out []heldRun
	for g := 0; g < len(adm) && c.calls[adm[g]].t < hi; {
		h := g + 1
		for h < len(adm) && c.calls[adm[h]].t < hi && !cy.blockedBetween(c.calls[adm[h-1]].t, c.calls[adm[h]].t) {
			h++
		}
		if h-g >= 2 {
			// The run's first answer by the upstream's record (a call
			// with no end was in flight to the last).
			firstEnd := time.Duration(1<<63 - 1)
			for _, i := range adm[g:h] {
				if k := &c.calls[i]; k.hasEnd {
					firstEnd = min(firstEnd, k.end)
				}
			}
			last := c.calls[adm[h-1]].t
			if cy.blockedBetween(last, min(firstEnd, hi)) {
				ft := c.calls[adm[g]].t
				refused := cy.nextBlocked(last)
				out = append(out, heldRun{first: ft, n: h - g, calls: adm[g:h:h], clean: !u.failedEndedIn(ft-u.slack, refused+u.slackLate)})
			}
		}
		g = h
	}
	return out
}

// heldSeveralAtOnce reports whether cy, before hi, let several calls
// through together and turned a request away while they were all in
// flight (heldRuns). Such a half-open, in its next half-open, lets as
// many calls through together before any has answered: calls in flight
// together with no success yet may be its probes, not traffic a timer let
// back. How many it admits is not seen (a half-open can reopen on another
// failure before it has let them all through), so any count of calls in
// flight together fits it.
func (u *upstreamRun) heldSeveralAtOnce(cy *cyc, hi time.Duration) bool {
	return len(u.heldRuns(cy, hi)) > 0
}

// slotsClose bounds, for cy, whose traffic resumed at hi after a success
// of calls its half-open let through together, the latest its close can
// have been if that half-open gives a permit back as each call ends and
// lets the next one in on it (a success threshold of k counted over
// every call it admits). Such a half-open looks closed while the traffic
// keeps no more calls in flight than its permits: until its k-th success
// the calls admitted one by one look like resumed traffic. Its permits
// are seen when it turned a request away, with no failure to reopen on,
// while n calls it let through were in flight: it admits n at once.
// Once more than n calls of the upstream (from its last such run on)
// were in flight together, by the gateway's knowledge, it had closed:
// that arrival is the bound. It returns -1 when no run shows the
// half-open's permits (none held, or the last one refused on a failure)
// or when the traffic never exceeded them: the latest unseen. ok is
// false when no half-open of cy let several calls through together: a
// half-open that admits one call at a time is read as closing on its
// success (closeOf).
func (u *upstreamRun) slotsClose(cy *cyc, hi time.Duration) (bound time.Duration, ok bool) {
	runs := u.heldRuns(cy, hi)
	if len(runs) == 0 {
		return -1, false
	}
	r := runs[len(runs)-1]
	if !r.clean {
		return -1, true
	}
	if u.permitsKept(cy, r, hi) {
		// A fixed number of calls, not permits given back: closeOf's
		// reading stands.
		return -1, false
	}
	c := u.c
	h := &endHeap{}
	for _, i := range u.calls {
		k := &c.calls[i]
		if k.t < r.first || k.health || k.tagged {
			continue
		}
		// A permit is held until the gateway has the answer; the
		// upstream stamps an end up to slackLate after that: a call
		// ending by then may have given its permit back already.
		for h.Len() > 0 && (*h)[0] <= k.t+u.slackLate {
			heap.Pop(h)
		}
		end := time.Duration(1<<63 - 1)
		if k.hasEnd {
			end = k.end
		}
		heap.Push(h, end)
		if k.t >= hi && h.Len() > r.n {
			return k.t, true
		}
	}
	return -1, true
}

// permitsKept reports whether r's half-open turned a request away after
// the gateway certainly had a successful answer of one of r's calls (and
// before traffic resumed at hi), with no failure of the upstream since r
// began: a half-open that gives a permit back as a call ends would have
// let that request through on it. This one admits a fixed number of
// calls, so it closed on the successes of the calls it let through (the
// reading closeOf gave), and the permit-returning bound does not apply.
func (u *upstreamRun) permitsKept(cy *cyc, r heldRun, hi time.Duration) bool {
	earliest := time.Duration(1<<63 - 1)
	for _, i := range r.calls {
		if k := &u.c.calls[i]; k.hasEnd && !k.failed {
			earliest = min(earliest, u.answerHeld(i))
		}
	}
	if earliest >= hi {
		return false
	}
	t := cy.nextBlocked(earliest)
	if t <= earliest || t >= hi {
		return false
	}
	return !u.failedEndedIn(r.first-u.slack, t+u.slackLate)
}

// closeOnSlots widens the close closeOf placed on a success of cy's
// half-open, traffic resumed at hi, to what a half-open giving permits
// back allows (slotsClose): closed on that success or a later one, by
// the bound, or unseen (closeOnOneOf stays: several successes ended in
// the window, and a later one may have closed it). Both readings stay: a half-open admitting a fixed
// number of calls closed by the success (or the pending call's end,
// closeOnPending), one giving permits back by the bound.
func (u *upstreamRun) closeOnSlots(cy *cyc, hi time.Duration) {
	if cy.closeBy >= 0 && u.c.calls[cy.closeBy].health {
		return
	}
	bound, ok := u.slotsClose(cy, hi)
	if !ok {
		return
	}
	if cy.closeKind == closeOnSuccess {
		// Closed on that success or on a later answer, unseen.
		cy.closeKind = closeOnPending
	}
	if bound < 0 || cy.closeHi < 0 {
		cy.closeHi = -1
		return
	}
	cy.closeHi = max(cy.closeHi, bound)
}

// slotsOpen reports whether a half-open giving permits back is what
// leaves cy's close with no latest moment (slotsClose found no bound).
func (u *upstreamRun) slotsOpen(cy *cyc) bool {
	if cy.fr < 0 {
		return false
	}
	b, ok := u.slotsClose(cy, u.c.calls[cy.fr].t)
	return ok && b < 0
}
