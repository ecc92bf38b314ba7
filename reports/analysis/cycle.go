package analysis

import (
	"sort"
	"time"
)

// cycleFigures computes one cycle's probes, leaks and counts. segStart is
// where failures before the open are counted from; atFault: it is the
// fault's start, and a call that arrived a moment before it but was
// answered by the fault (the fault decides once it has read the request,
// after the call's arrival was stamped) counts too. rep holds the calls
// repeating a client request (true: the client's own re-send).
func (u *upstreamRun) cycleFigures(cy *cyc, segStart time.Duration, atFault bool, rep map[int32]bool) *Cycle {
	c := u.c
	out := &Cycle{OpenedAtS: seconds(cy.openAt), Blocked: cy.blocked, FastFails: cy.ff,
		Probes: []Probe{}, CooldownsS: []float64{}, openAt: cy.openAt, openHi: cy.openAt, closeAt: cy.closeAt, firstProbe: -1, lastProbe: -1}
	// bounded: several failures fit the trip (OpenBoundsS), so every
	// figure measured from the open has bounds too.
	bounded := cy.openHi > cy.openAt+time.Millisecond
	if bounded {
		out.openHi = cy.openHi
	}
	out.refusals(cy)
	end := u.frame.end + 1
	if cy.closeAt >= 0 {
		end = cy.closeAt
	}
	from := segStart
	if atFault {
		from = segStart - time.Second
	}
	cc := u.sortCalls(cy, out, segStart, from, end, rep)
	tagged, health, liveP, leaks := cc.tagged, cc.health, cc.live, cc.leaks
	var trial bool
	out.Shape, out.ShapeEvidence, out.ShapeCandidates, trial = u.shapeOf(cy, tagged, health, liveP)
	if trial {
		// A quick trial the upstream's breaker judges (trial.go) is a
		// probe, and its answer placed the close.
		u.closeOnJudgedTrial(cy, out.Shape == ShapeLiveProbe)
	}
	if cy.closeAt >= 0 {
		out.closeAt = cy.closeAt
		out.ClosedAtS = Ptr(seconds(cy.closeAt))
	}
	var probes []int32
	switch {
	case len(tagged) > 0:
		out.ProbeSource, probes = "tagged", tagged
		leaks += int64(len(liveP)) // a gateway that tags its probes has no untagged ones
	case len(liveP) > 0:
		out.ProbeSource, probes = "live", liveP
	case len(health) > 0 && (out.Shape == ShapeHealthCheck || cy.closeAt < 0):
		out.ProbeSource, probes = "health_check", health
	}
	if trial {
		probes = append(probes, cy.fr)
		out.ProbeSource = "live"
	}
	out.Leaked = leaks
	all := make([]Probe, 0, len(probes))
	for _, i := range probes {
		k := &c.calls[i]
		p := Probe{AtS: seconds(k.t), OK: !k.failed, Kind: out.ProbeSource}
		if k.end > k.t {
			p.DoneS = seconds(k.end)
		}
		if k.tagged {
			p.Tag = k.tag.Value()
		}
		all = append(all, p)
	}
	u.probeFigures(cy, out, probes, len(all), cc.lo, bounded)
	if bounded {
		out.OpenBoundsS = &Bounds{Min: Ptr(seconds(cy.openAt)), Max: Ptr(seconds(cy.openHi))}
		out.setBasis("opened_after_s", u.openBasis(cy, out))
	}
	if cc.maybeFailures > 0 {
		out.FailuresBeforeOpenBounds = countBounds(out.FailuresBeforeOpen, cc.maybeFailures)
		out.FailedRequestsBeforeOpenBounds = countBounds(out.FailedRequestsBeforeOpen, cc.maybeRequests)
		out.setBasis("failures_before_open", countBasis(cy, cc.maybeFailures, "call"))
		out.setBasis("failed_requests_before_open", countBasis(cy, cc.maybeRequests, "client request"))
	}
	if cy.closeAt >= 0 {
		u.closeFigures(cy, out, probes)
	}
	u.closeBasis(cy, out, trial)
	if out.Shape == ShapeRamp {
		for _, i := range liveP {
			if c.calls[i].failed {
				out.RampStartS = nil
				continue
			}
			if out.RampStartS == nil {
				out.RampStartS = Ptr(seconds(c.calls[i].t))
			}
		}
		out.RampEndS = out.ClosedAtS
	}
	if len(all) > maxListed {
		all = all[:maxListed]
	}
	out.Probes = all
	return out
}

// cycleCalls are the calls of a cycle's segment sorted for its figures:
// from lo (the first that can count before the open), the health checks,
// tagged calls and admitted live calls while open, the leaks, and the
// failures that count before the open only if the trip was as late as
// its max (the counts' upper bounds).
type cycleCalls struct {
	lo                                  int
	tagged, health, live                []int32
	leaks, maybeFailures, maybeRequests int64
}

// sortCalls counts a cycle's failures before the open and re-sent calls
// into out and sorts the calls while open (see cycleFigures).
func (u *upstreamRun) sortCalls(cy *cyc, out *Cycle, segStart, from, end time.Duration, rep map[int32]bool) cycleCalls {
	c := u.c
	cc := cycleCalls{lo: sort.Search(len(u.calls), func(i int) bool { return c.calls[u.calls[i]].t >= from })}
	failedSeqs := map[uint64]bool{}
	// The failures that arrived between the open's min and max count
	// before it if the trip was as late as max: the counts' upper bounds.
	maybeSeqs := map[uint64]bool{}
	for _, i := range u.calls[cc.lo:] {
		k := &c.calls[i]
		if k.t >= end {
			break
		}
		if k.t < segStart && !(k.faulted && k.hasEnd && k.end >= segStart) {
			continue
		}
		own, repeated := rep[i]
		if repeated && !own {
			out.Resent++
		}
		if k.t < cy.openAt {
			if !k.health && k.failed {
				out.FailuresBeforeOpen++
				switch {
				case !k.hasSeq:
					out.FailedRequestsBeforeOpen++
				case !failedSeqs[k.seq]:
					failedSeqs[k.seq] = true
					out.FailedRequestsBeforeOpen++
				}
			}
			continue
		}
		// Let through before the latest the trip can have been: arrived
		// before it, or (a loaded gateway forwards a request it let
		// through late) sent before it by its client.
		mayPrecede := k.t < cy.openHi || u.sentBefore(i, cy.openHi)
		if mayPrecede && !k.health && k.failed && !k.tagged && !cy.admitted[i] {
			// Not a probe (a tagged call or an admission proves the
			// breaker open): it may have reached a closed breaker.
			cc.maybeFailures++
			switch {
			case !k.hasSeq:
				cc.maybeRequests++
			case !failedSeqs[k.seq] && !maybeSeqs[k.seq]:
				maybeSeqs[k.seq] = true
				cc.maybeRequests++
			}
		}
		switch {
		case k.health:
			cc.health = append(cc.health, i)
		case k.tagged:
			cc.tagged = append(cc.tagged, i)
		case repeated:
			// The same request again (a transport's re-send): it was let
			// through once already, not a leak.
		case cy.early[i]:
			// Let through with a trial, before it failed.
		case cy.admitted[i]:
			cc.live = append(cc.live, i)
		case mayPrecede:
			// Before the latest failure that may have tripped it: the
			// breaker may still have been closed.
		default:
			cc.leaks++
		}
	}
	return cc
}

// probeFigures sets a cycle's probe count, concurrency, spacing, first
// probe and cooldowns (with their bounds) from its probes; lo is where
// its segment's calls start (sortCalls).
func (u *upstreamRun) probeFigures(cy *cyc, out *Cycle, probes []int32, n, lo int, bounded bool) {
	c := u.c
	out.ProbeCount = int64(n)
	out.MaxProbesInFlight = c.maxInFlight(probes)
	for i := 1; i < len(probes); i++ {
		out.intervals = append(out.intervals, c.calls[probes[i]].t-c.calls[probes[i-1]].t)
	}
	if len(probes) > 0 {
		// A cooldown ends when the gateway lets the probe through: most
		// likely its arrival less the usual forwarding lag, no later than
		// its arrival less the least (letAt), as early as its client's
		// send when the gateway forwarded it late (letFrom).
		at0, hi0 := u.letAt(probes[0])
		out.firstProbe = at0
		out.lastProbe = c.calls[probes[len(probes)-1]].t
		out.CooldownsS = append(out.CooldownsS, seconds(at0-cy.openAt))
		// One entry per cooldown, null where exact; kept when any is not.
		cb, anyBounds := []*Bounds{nil}, false
		if p0 := probes[0]; bounded || u.letFrom(p0) < at0 || hi0 > at0 {
			// As short as the first probe after the latest open; a probe
			// before it (a health check, which runs whatever the breaker
			// does) leaves it as short as nothing.
			cb[0], anyBounds = &Bounds{Min: Ptr(seconds(max(u.letFrom(p0)-out.openHi, 0))), Max: Ptr(seconds(hi0 - cy.openAt))}, true
			out.setBasis("cooldowns_s[0]", u.firstCooldownBasis(cy, out, p0))
		}
		waits := len(cy.blockedAt) > 0 // requests are attributed: a wait shows
		for i := 0; i+1 < len(probes); i++ {
			k := &c.calls[probes[i]]
			next, nextHi := u.letAt(probes[i+1])
			if !k.failed || (waits && !cy.blockedBetween(k.end, next)) {
				// No refusal after this probe's failure (or it succeeded):
				// the breaker did not reopen on it (a half-open counting
				// more than one failure, or the next probe let through
				// with it). It may have reopened on another failure
				// (reopen.go).
				if b, ok := u.reopenCooldown(cy, out, lo, probes[i], probes[i+1]); ok {
					cb, anyBounds = append(cb, b), anyBounds || b != nil
				} else if u.reopenUnseen(cy, out, lo, probes[i], probes[i+1]) {
					out.unseenWaits++ // unseenreopen.go
				}
				continue
			}
			out.CooldownsS = append(out.CooldownsS, seconds(next-k.end))
			// The breaker reopened on a failure that ended after it let
			// this probe through (a reopen before would have turned it
			// away) and by this probe's end: this one's, or another's —
			// a probe in flight with it, or a call let through before
			// the open that ended then, which a breaker without
			// generations counts against the new state. The cooldown ran from
			// one of those ends.
			var bnd *Bounds
			let := u.letFrom(probes[i+1])
			if e := u.firstFailedEnd(lo, k.t, k.end); e < k.end || let < next || nextHi > next {
				bnd, anyBounds = &Bounds{Min: Ptr(seconds(max(let-k.end, 0))), Max: Ptr(seconds(nextHi - e))}, true
				out.setBasis(cooldownKey(len(cb)), u.laterCooldownBasis(probes[i+1], let, nextHi, k.end, e))
			}
			cb = append(cb, bnd)
		}
		if anyBounds {
			out.CooldownsBoundsS = cb
		}
	}
}

// closeFigures sets how a cycle that closed closed: the bounds of the
// close, the successes it took, and whether the first resumed call may
// have been one more probe.
func (u *upstreamRun) closeFigures(cy *cyc, out *Cycle, probes []int32) {
	c := u.c
	switch {
	case out.Shape == ShapeRamp:
		// A ramp closes at the end of its recovery period, on a timer:
		// after the last request it turned away, unseen from outside
		// how long after; no success count (closeOf placed it so).
		out.CloseBoundsS = &Bounds{Min: Ptr(seconds(cy.closeLo))}
		// The share it let through went on past the first resumed
		// call, unseen: the admissions counted are the least there
		// were.
		out.MaybeProbe = true
	case cy.closeKind == closeOnTrial:
		u.trialCloseFigures(cy, out, probes)
	case cy.closeKind == closeOnPending:
		// A success ended in the window, but a call let through
		// with it was still in flight when traffic resumed: closed on
		// that success or on a later answer (pendingAt). The first
		// resumed call may have been one more probe.
		out.MaybeProbe = true
		out.CloseBoundsS = cy.closeBounds()
	case cy.closeKind == closeOnOneOf:
		// Two or more successes ended in the close window: the
		// breaker closed on one of them, which one unseen (a
		// half-open counting k of n closes on the k-th answer, one
		// needing all on the last). The close is bounded by the
		// earliest and the latest; the successes it took are
		// unknown.
		out.CloseBoundsS = cy.closeBounds()
		if u.resumedOnASlot(cy, out) {
			out.MaybeProbe = true
		}
	case cy.closeBy >= 0:
		// Closed on a success: the successful probes in a row that
		// ended it, up to the one whose end closed it.
		by := c.calls[cy.closeBy].t
		n := 0
		for i := len(probes) - 1; i >= 0; i-- {
			k := &c.calls[probes[i]]
			if k.t > by {
				continue
			}
			if k.failed {
				break
			}
			n++
		}
		out.SuccessesToClose = Ptr(max(n, 1))
		if n >= 2 && u.resumedOnASlot(cy, out) {
			// ProbeCount is the least there were.
			out.MaybeProbe = true
		}
		if cy.closeLo < cy.closeAt || cy.closeHi > cy.closeAt {
			// Its answer came back somewhere in the window, or a
			// timer beside a check that passed throughout would
			// have closed it there (checksGate).
			out.CloseBoundsS = cy.closeBounds()
		}
	default:
		// Closed on a timer, or the evidence cannot tell: known to a
		// window (to the first resumed call when failures expired:
		// closeExpired), and no success count to give.
		out.MaybeProbe = cy.maybeProbe
		out.CloseBoundsS = cy.closeBounds()
	}
}

// trialCloseFigures: closed on a judged trial's success (closeOnTrial).
// Exact (a half-open letting one call through at a time): the trial and
// the successful probes in a row before it closed it. Else closed on it
// or on a later success, unseen: the close is bounded from the trial's
// arrival, the first resumed call may have been one more probe, and at
// least one success closed it.
func (u *upstreamRun) trialCloseFigures(cy *cyc, out *Cycle, probes []int32) {
	if cy.closeHi >= 0 {
		n := 0
		for i := len(probes) - 1; i >= 0 && !u.c.calls[probes[i]].failed; i-- {
			n++
		}
		out.SuccessesToClose = Ptr(max(n, 1))
		return
	}
	out.MaybeProbe = true
	out.CloseBoundsS = cy.closeBounds()
	out.SuccessesToCloseBounds = &Bounds{Min: Ptr(1.0)}
}

// closeBounds is the close's bounds as closeOf (or checksGate) placed
// them: from closeLo, to closeHi when one is known.
func (cy *cyc) closeBounds() *Bounds {
	b := &Bounds{Min: Ptr(seconds(cy.closeLo))}
	if cy.closeHi >= 0 {
		b.Max = Ptr(seconds(cy.closeHi))
	}
	return b
}

// resumedOnASlot reports whether the first resumed call of cy, which
// closed on the success closeBy, may have been one more probe: it arrived
// before the upstream stamped that success's end, or a moment after (a
// gateway forwards what it let through a little late), in a half-open
// that let several calls through at once, so it may have been let in on
// the slot an earlier success gave back (permits returned as calls end) rather
// than after the close. Callers check that there was an earlier success.
func (u *upstreamRun) resumedOnASlot(cy *cyc, out *Cycle) bool {
	fr, c := cy.fr, u.c
	return len(cy.blockedAt) > 0 && fr >= 0 && out.MaxProbesInFlight > 1 && c.calls[fr].t < c.calls[cy.closeBy].end+u.slack
}

// letFrom is the earliest the gateway can have let call i through: its
// client request's send when the call carries one sent more than
// closeSlack before the call arrived (a loaded gateway forwards what it
// let through tens of milliseconds late), else its arrival.
func (u *upstreamRun) letFrom(i int32) time.Duration {
	k := &u.c.calls[i]
	if r, ok := u.reqOfCall(i); ok {
		if s := u.c.reqs[r].sent; s > 0 && s < k.t-u.slack {
			return s
		}
	}
	return k.t
}

// firstFailedEnd is the earliest end, in [from, by], of a failed
// non-health call of the upstream among ci[lo:] that arrived before by;
// by when none ended earlier.
func (u *upstreamRun) firstFailedEnd(lo int, from, by time.Duration) time.Duration {
	c, ci := u.c, u.calls
	first := by
	for _, i := range ci[lo:] {
		k := &c.calls[i]
		if k.t >= by {
			break
		}
		if k.failed && !k.health && k.hasEnd && k.end >= from && k.end < first {
			first = k.end
		}
	}
	return first
}

// countBounds bounds a count measured before the open's min that grows
// by up to more if the open was as late as its max; nil when it cannot.
func countBounds(n, more int64) *Bounds {
	if more == 0 {
		return nil
	}
	return &Bounds{Min: Ptr(float64(n)), Max: Ptr(float64(n + more))}
}
