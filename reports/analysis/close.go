package analysis

import (
	"math"
	"sort"
	"time"
)

// closeSlack forgives a call's end recorded a little before the request
// the gateway blocked after it (two processes' clocks read a moment
// apart). closeSlackLate forgives an end recorded after the first resumed
// call arrived: the upstream stamps a call's end once its handler has
// returned, which on a loaded machine can be tens of milliseconds after
// the gateway had the answer and forwarded the next request.
const (
	closeSlack     = 5 * time.Millisecond
	closeSlackLate = 50 * time.Millisecond
)

// failedKnownBy reports whether a call of the upstream (live, tagged or
// health check) that arrived in [from, to) had failed by `by`: its end
// came by then (an end the upstream did not record counts). A breaker
// trips on a failure's answer: calls let through after a close that fail
// only later (slow calls timing out) cannot have tripped it before a
// request it turned away meanwhile — a half-open admitting several calls
// that turns the next ones away while they are in flight, not a close and
// a re-trip.
func (u *upstreamRun) failedKnownBy(from, to, by time.Duration) bool {
	c, ci := u.c, u.calls
	lo := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= from })
	for _, i := range ci[lo:] {
		k := &c.calls[i]
		if k.t >= to {
			break
		}
		if k.failed && (!k.hasEnd || k.end <= by) {
			return true
		}
	}
	return false
}

// failedBetween reports whether any call of the upstream (live, tagged or
// health check) that arrived in [from, to) failed.
func (u *upstreamRun) failedBetween(from, to time.Duration) bool {
	return u.failedKnownBy(from, to, math.MaxInt64)
}

// How a cycle's close was placed (cyc.closeKind): the one estimator,
// closeOf, says which evidence placed it, and the figures follow from
// that and closeLo ≤ closeAt ≤ closeHi alone.
const (
	// closeTimer: no success closed it (closeBy < 0): a timer (failures
	// expired, a ramp ended) or a quick probe, which cannot be told
	// apart; known to the window only.
	closeTimer uint8 = iota
	// closeOnSuccess: closeBy's success closed it; exact, or bounded
	// while its answer was in flight by the upstream's record.
	closeOnSuccess
	// closeOnOneOf: several successes ended in the window; it closed on
	// one of them (a half-open counting k of the n calls it lets through
	// closes on the k-th), which one unseen: closeLo is the first's end.
	closeOnOneOf
	// closeOnPending: a success ended in the window, but another call the
	// open breaker let through was still in flight when traffic resumed:
	// closed on that success or a later answer (pendingAt).
	closeOnPending
	// closeOnTrial: traffic resumed on a quick trial (fr) that a breaker
	// judging its trials let through alone; it closed on that trial's
	// success (closeLo == closeHi: its half-open lets one call through
	// at a time) or on a later one (closeHi < 0), closeLo its arrival
	// (closeOnJudgedTrial).
	closeOnTrial
	// closeExpired: no success closed it and the breaker needed none
	// (traffic resumed with calls in flight together after an open
	// breaker that let one live call through at a time and tagged
	// none): a timer closed it by the first resumed call, closeHi that
	// call's arrival.
	closeExpired
	// closeExpiredByOthers: closed as closeExpired, read so because the
	// upstream's other cycles show its failures expiring (splitExpiry);
	// the close alone could not tell a probe from a timer.
	closeExpiredByOthers
)

// closeOf places the close of cy, whose forwarding resumed with call fr
// after the last blocked request, sent at lastBlocked; checks: passing
// health checks may be what closed it (false on the state machine's
// second walk, once checksGate found they are not the gate). It is the
// one estimator of a close, for attributed traffic and for gaps alone
// (closeFromGaps): it
// sets closeLo ≤ closeAt ≤ closeHi (closeHi < 0: no latest seen), closeBy
// and closeKind. The breaker closed in (lastBlocked, arrival of fr]: it
// was still open when it blocked that request and closed by the time it
// forwarded fr. A breaker that closes on a success closes when a
// successful probe's response comes back: if one ended in that window (an
// admitted live call, a tagged probe, or a health check when the checks
// are the gate), the close is its end, exact; several: the last (a
// half-open that counts several successes closes on the last one) is the
// estimate, bounded from the first (a half-open counting k of the n calls
// it let through closes on the k-th). If none did, the breaker closed on
// a timer (failures expired, a ramp ended, a quick probe's success cannot
// be told from that) and the close is known to the window only: the
// estimate is the first resumed call, the earliest bound the last blocked
// request. Passing health checks keep the last: a check-gated breaker
// closes on the rise-th check in a row, and two checks both in the window
// (no request sent between them) cannot tell a rise of 1 from 2 — a known
// limit the count states as the last (docs/analysis.md). expired, when
// not closeTimer, is closeExpired or closeExpiredByOthers: the
// upstream's cycles show its failures expiring, and this close had no
// success to close on (splitExpiry): it closed on that timer.
func (u *upstreamRun) closeOf(cy *cyc, lastBlocked time.Duration, fr, next int32, checks bool, expired uint8) {
	c, ci := u.c, u.calls
	hi := c.calls[fr].t
	cy.closeLo, cy.closeAt, cy.closeHi, cy.closeBy, cy.closeKind, cy.maybeProbe = lastBlocked, hi, -1, -1, closeTimer, false
	cy.lb, cy.fr, cy.nx = lastBlocked, fr, next
	if expired != closeTimer {
		cy.closeKind, cy.closeHi = expired, hi
		return
	}
	lo := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= cy.openAt })
	if u.rampAdmissions(cy, lo, hi) {
		// A share of the traffic let through closes on the ramp's
		// timer, not on any of its successes: after the last refusal,
		// by the first resumed call, the latest unseen.
		return
	}
	if best, first, by := u.successesIn(cy, lo, lastBlocked, hi, checks); best >= 0 {
		at := min(best, hi)
		cy.closeBy, cy.closeKind = by, closeOnSuccess
		cy.closeLo, cy.closeAt, cy.closeHi = at, at, at
		if first >= 0 && first < best && !c.calls[by].health {
			cy.closeKind, cy.closeLo = closeOnOneOf, min(first, hi)
		}
		if pending, end := u.pendingAt(cy, lo, hi); pending {
			// Closed on that success or on a later answer: from the
			// success, to the end of the last call still in flight
			// when they all succeeded.
			cy.closeKind, cy.closeLo, cy.closeHi = closeOnPending, at, -1
			if end >= 0 {
				cy.closeHi = max(end, at)
			}
		}
		// A half-open that let several calls through together may
		// have let the first resumed call in on a permit that success
		// gave back, and closed later.
		u.closeOnSlots(cy, hi)
		return
	}
	if by := u.successInFlight(cy, lo, hi); by >= 0 {
		// Closed on that success's answer, somewhere in the window.
		cy.closeBy, cy.closeKind, cy.closeHi = by, closeOnSuccess, hi
		return
	}
	cy.maybeProbe = u.resumedOnProbe(cy, fr, next)
	if !cy.maybeProbe && u.oneLiveAtATime(cy, lo, hi) {
		// It needed no success: failures expired, by the first
		// resumed call. (A half-open letting several calls through,
		// or one tagging its probes, forwards traffic before it has
		// closed, unseen: no latest.)
		cy.closeKind, cy.closeHi = closeExpired, hi
	}
}

// oneLiveAtATime reports whether the breaker, while open until hi (from
// ci[lo:]), tagged no call and let its live calls through one at a time
// (no two in flight together; calls let through with a trial before it
// failed aside).
func (u *upstreamRun) oneLiveAtATime(cy *cyc, lo int, hi time.Duration) bool {
	c := u.c
	var live []int32
	for _, i := range u.calls[lo:] {
		k := &c.calls[i]
		if k.t >= hi {
			break
		}
		if k.tagged {
			return false
		}
		if cy.admitted[i] && !k.health && !cy.early[i] {
			live = append(live, i)
		}
	}
	return c.maxInFlight(live) <= 1
}

// closeOnJudgedTrial places the close of cy, which closeOf left to the
// window (no success in it; the first resumed call fr alone in flight:
// maybeProbe), once the upstream's cycles show that its breaker judges
// its trials (shapeFacts.trial: facts of every cycle, later ones too, so
// not known while the state machine walks). The breaker closed on the
// trial's success or, if its half-open lets several calls through, on a
// later one: the close is estimated at the trial's end, no earlier than
// its arrival (a breaker may judge a streamed answer's head), its latest
// unseen. When the trial was answered whole before the next call came
// and the upstream's half-open lets one call through at a time (single),
// the trial's end is the close, exact.
func (u *upstreamRun) closeOnJudgedTrial(cy *cyc, single bool) {
	k := &u.c.calls[cy.fr]
	cy.closeKind, cy.closeAt, cy.closeLo, cy.closeHi = closeOnTrial, k.end, k.t, -1
	if single {
		cy.closeLo, cy.closeHi = k.end, k.end
	}
}

// reaction is how long call fr, the first resumed, took from its
// client's send to the upstream: the gateway's reaction time around the
// close (0 when it carries no client request).
func (u *upstreamRun) reaction(fr int32) time.Duration {
	if r, ok := u.reqOfCall(fr); ok {
		if s := u.c.reqs[r].sent; s > 0 {
			return u.c.calls[fr].t - s
		}
	}
	return 0
}

// rampAdmissions reports whether the live calls cy let through while open
// (untagged admissions, in arrival order) show a ramp (rampEvidence), in
// a breaker that tagged no probe from ci[lo:] until hi (one that tags its
// probes is read by them: shapeOf).
func (u *upstreamRun) rampAdmissions(cy *cyc, lo int, hi time.Duration) bool {
	c := u.c
	for _, i := range u.calls[lo:] {
		if k := &c.calls[i]; k.t >= hi {
			break
		} else if k.tagged {
			return false
		}
	}
	var live []int32
	for _, i := range u.admittedByArrival(cy) {
		if k := &c.calls[i]; !k.tagged && !k.health {
			live = append(live, i)
		}
	}
	ramp, _ := u.rampEvidence(cy, live)
	return ramp
}

// successesIn finds the successful calls that may have closed cy: those
// the open breaker let through (admitted live calls, tagged probes, and
// health checks when the checks are the gate) that ended in the close
// window (lastBlocked, hi], with slack. It gives the last end (best, -1
// for none) and its call (by), and the first end of a call that is not
// a health check (first, -1 for none).
func (u *upstreamRun) successesIn(cy *cyc, lo int, lastBlocked, hi time.Duration, checks bool) (best, first time.Duration, by int32) {
	c := u.c
	checksGate := checks
	for i := range cy.admitted {
		if !c.calls[i].tagged {
			checksGate = false
			break
		}
	}
	best, first, by = -1, -1, -1
	for _, i := range u.calls[lo:] {
		k := &c.calls[i]
		if k.t >= hi {
			break
		}
		if k.failed || !k.hasEnd {
			continue
		}
		if !cy.admitted[i] && !k.tagged && !(k.health && checksGate) {
			continue
		}
		// The upstream stamps a call's end once its handler returns,
		// which can be a moment after the gateway got the answer and
		// forwarded the next request: slack on both sides. A health
		// check runs on the gateway's own schedule, beside whatever else
		// closes the breaker: one that ended before a request the gateway
		// then turned away, by more than the gateway took to forward a
		// request just then, did not close it (a breaker whose failures
		// expire, with checks passing throughout, has a check end near
		// the expiry by chance, every cycle when the periods are in step).
		early := u.slack
		if k.health {
			early = min(max(u.reaction(cy.fr), time.Millisecond), u.slack)
		}
		if e := k.end; e > lastBlocked-early && e <= hi+u.slackLate {
			if !k.health && (first < 0 || e < first) {
				first = e
			}
			if e > best {
				best, by = e, i
			}
		}
	}
	return best, first, by
}

// successInFlight is the last successful call the open breaker let
// through that was still in flight by the upstream's record when traffic
// resumed at hi, or -1. The gateway had its answer already (the upstream
// stamps an end once its handler has returned, which a loaded machine
// can delay by far more than closeSlackLate). The breaker closed on that
// answer, somewhere in the window: the success counts, the moment is
// bounded.
func (u *upstreamRun) successInFlight(cy *cyc, lo int, hi time.Duration) int32 {
	c, by := u.c, int32(-1)
	for _, i := range u.calls[lo:] {
		k := &c.calls[i]
		if k.t >= hi {
			break
		}
		if cy.admitted[i] && !k.tagged && !k.failed && k.hasEnd && k.end > hi {
			by = i
		}
	}
	return by
}

// resumedOnProbe says, when no success fell in the close window, whether
// the first resumed call fr may have been the probe the breaker closed
// after rather than the first call after a timer closed it.
func (u *upstreamRun) resumedOnProbe(cy *cyc, fr, next int32) bool {
	c := u.c
	// If fr was alone in flight (it ended before the next call came), it
	// may have been the probe after which the breaker closed (on its
	// success, or on a failure the gateway does not count) or the first
	// call after a timer closed it: the bounds cover both.
	if k := &c.calls[fr]; next < 0 || k.end <= c.calls[next].t {
		return true
	}
	// fr and the next were in flight together. Had a half-open let both
	// through as probes, it closed on their successes: if one of them
	// succeeded before the third resumed call arrived, that cannot be told
	// from a timer's close either. Only a breaker that forwarded the third
	// before any had succeeded needed no success.
	if th := cy.th; th >= 0 {
		for _, i := range [2]int32{fr, next} {
			if k := &c.calls[i]; !k.failed && k.hasEnd && k.end <= c.calls[th].t {
				return true
			}
		}
	}
	// A half-open this cycle showed letting several calls through
	// together, refusing the rest while they were in flight, may have
	// let the third through as a probe too: how many it admits is not
	// seen, so calls in flight together are no evidence of a timer.
	return u.heldSeveralAtOnce(cy, c.calls[fr].t)
}

// pendingAt reports whether a call the open breaker let through (an
// admission, from ci[lo:]) was still in flight, by the upstream's record,
// when traffic resumed with the call that arrived at hi, although a
// success had ended in the close window, and the latest end among those
// (-1: one of them failed or never ended). A half-open that needs all the
// calls it let through to succeed turns requests away until the last has
// (a fixed admission count), so traffic resuming first means the breaker
// had closed on the success that ended, or was letting the next call in
// on a slot that success gave back (a half-open admitting several
// calls at once, each giving its permit back as it ends) and closed
// on a later answer — the one still in flight, or a later call's.
// Nothing seen from outside tells these apart. The close lies between the
// success's end and the end of the last call in flight (if all of them
// succeeded: by then every call of that half-open had, so any count it
// needed was met; the answer head may have decided it earlier), and
// successes_to_close is unknown.
func (u *upstreamRun) pendingAt(cy *cyc, lo int, hi time.Duration) (pending bool, end time.Duration) {
	c, ci := u.c, u.calls
	latest, known := time.Duration(-1), true
	for _, i := range ci[lo:] {
		k := &c.calls[i]
		if k.t >= hi {
			break
		}
		if !cy.admitted[i] || k.tagged || (k.hasEnd && k.end <= hi+u.slackLate) {
			continue
		}
		pending = true
		if k.failed || !k.hasEnd {
			known = false
			continue
		}
		latest = max(latest, k.end)
	}
	if !known {
		latest = -1
	}
	return pending, latest
}
