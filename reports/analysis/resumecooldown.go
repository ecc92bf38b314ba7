package analysis

import (
	"sort"
	"time"
)

// The cooldown that ends where traffic resumes. In a cycle whose probes
// may have gone uncounted (MaybeProbe), the last wait — from the last
// (re)open to the moment the breaker let calls through again — ends at
// the first call let through after the last refusal (fr): the trial of a
// half-open, counted as a probe when the breaker is seen to judge its
// trials (trialCounts), else not counted, and then no cooldown was
// stated for it at all. Either way where the wait ended is not fixed:
//   - a half-open entered when the first call after the delay asks (a
//     lazy state check) began as fr was let through: no later than fr's
//     arrival (letAt's most), no earlier than its client's send;
//   - one entered on a timer, or a close on a timer with no half-open,
//     came at any moment after the breaker turned away its last request
//     (it was still open then: a half-open refuses only past its limit,
//     and it had let nothing through yet) and before fr was let through.
// (When the trial is the cycle's first probe the wait is the first probe
// after the open, a probe's moment, which fr's admission fixes: left as
// stated.) So the wait lies between the last refusal's send less the latest the
// (re)open can have been, and fr's arrival less the earliest it can have
// been: bounds that hold every one of those hypotheses. The estimate is
// the first's (fr's admission, as for every counted probe).

// resumeCooldowns bounds, on each cycle of ep, the cooldown ending where
// traffic resumed, adding it when it was not stated. It runs before the
// episode gathers its cycles' cooldowns.
func (u *upstreamRun) resumeCooldowns(ep *Episode) {
	for _, cy := range ep.Cycles {
		u.resumeCooldown(cy)
	}
}

func (u *upstreamRun) resumeCooldown(cy *Cycle) {
	switch {
	case !cy.MaybeProbe || cy.ClosedAtS == nil || cy.refuseUntil < 0:
		return
	case cy.Shape == ShapeTaggedProbe || cy.Shape == ShapeRamp || cy.Shape == ShapeExpiry:
		// Every probe tagged; a ramp's recovery; failures expiring: no
		// half-open whose trial may be uncounted.
		return
	case int64(len(cy.Probes)) != cy.ProbeCount:
		return // probes capped: which cooldown is which is not listed
	case cy.MaxProbesInFlight > 1:
		// Probes in flight together: which failure reopened it, and
		// which half-open the resumed call came in, is not shown.
		return
	}
	for _, p := range cy.Probes {
		if p.AtS < seconds(cy.refuseUntil) && (p.DoneS == 0 || time.Duration(p.DoneS*float64(time.Second)) > cy.refuseUntil+time.Millisecond) {
			// A probe still in flight at the last refusal: a half-open
			// at its limit may have turned it away, no reopen shown.
			return
		}
	}
	fr := u.resumedCall(cy.refuseUntil)
	if fr < 0 {
		return
	}
	c := u.c
	frAt, frHi := u.letAt(fr)
	n := len(cy.Probes)
	counted := n > 0 && cy.lastProbe >= 0 && cy.lastProbe >= c.calls[fr].t
	// The probe whose failure began the wait (prev), or the open.
	prev := n - 1
	if counted {
		prev = n - 2
	}
	idx := -1 // the wait's entry in CooldownsS; -1: not stated
	reLo, reHi := cy.openAt, cy.openHi
	if prev >= 0 {
		p := cy.Probes[prev]
		k := u.probeCall(p)
		if p.OK || k < 0 || !c.calls[k].hasEnd || c.calls[k].end > cy.refuseUntil {
			// A success before it, or no refusal after the failure:
			// the resumed call came in the same half-open, no new wait.
			return
		}
		// The reopen came at a failure that ended in that half-open:
		// the probe's, or any call's, one let through before the open
		// too (a breaker that counts an answer in the state it arrives
		// in reopens on it: reopen.go), so searched from the first call.
		reLo, reHi = u.firstFailedEnd(0, c.calls[k].t, c.calls[k].end), c.calls[k].end
		if counted {
			idx = len(cy.CooldownsS) - 1
		}
	} else if counted {
		// The trial is the first probe: the first cooldown is the first
		// probe after the open, whose moment fr's admission fixes.
		return
	}
	lo := seconds(max(cy.refuseUntil-reHi, 0))
	hi := seconds(frHi - reLo)
	basis := resumeCooldownBasis(cy.refuseUntil, reHi, frHi, reLo, prev >= 0)
	if idx < 0 {
		cy.CooldownsS = append(cy.CooldownsS, seconds(frAt-reLo))
		if cy.CooldownsBoundsS == nil {
			cy.CooldownsBoundsS = make([]*Bounds, len(cy.CooldownsS)-1)
		}
		cy.CooldownsBoundsS = append(cy.CooldownsBoundsS, &Bounds{Min: Ptr(lo), Max: Ptr(max(hi, lo))})
		cy.setBasis(cooldownKey(len(cy.CooldownsS)-1), basis)
		return
	}
	if idx >= len(cy.CooldownsS) {
		return
	}
	if cy.CooldownsBoundsS == nil {
		cy.CooldownsBoundsS = make([]*Bounds, len(cy.CooldownsS))
	}
	// Widen what was stated to hold every hypothesis: never narrower
	// than the bounds the probe's own timing gave.
	v := cy.CooldownsS[idx]
	b := cy.CooldownsBoundsS[idx]
	if b == nil {
		b = &Bounds{Min: Ptr(v), Max: Ptr(v)}
	}
	// Each end's basis is the observation that set it, the wider one.
	was := cy.bases[cooldownKey(idx)]
	if was == nil {
		was = &Basis{}
	}
	if b.Min != nil && (lo < *b.Min || was.Min == nil) {
		was.Min = basis.Min
		b.Min = Ptr(min(*b.Min, lo))
	}
	if b.Max != nil && (hi > *b.Max || was.Max == nil) {
		was.Max = basis.Max
		b.Max = Ptr(max(*b.Max, hi))
	}
	cy.setBasis(cooldownKey(idx), was)
	cy.CooldownsBoundsS[idx] = b
}

// resumedCall is the first call let through for the requests sent after
// at (the last refusal): of the first CloseRunMin requests forwarded
// after it, the call that arrived first; -1 with none.
func (u *upstreamRun) resumedCall(at time.Duration) int32 {
	c := u.c
	first := int32(-1)
	j := sort.Search(len(u.sent), func(j int) bool { return c.reqs[u.sent[j]].sent > at })
	for n := 0; j < len(u.sent) && n < CloseRunMin; j++ {
		m := u.match[j]
		if u.cls[j] == clsBlocked || m < 0 {
			continue
		}
		n++
		if first < 0 || c.calls[m].t < c.calls[first].t {
			first = m
		}
	}
	return first
}

// probeCall is the call of a counted probe (its arrival, to the
// millisecond it is written in), -1 when none matches.
func (u *upstreamRun) probeCall(p Probe) int32 {
	c := u.c
	at := time.Duration(p.AtS * float64(time.Second))
	i := sort.Search(len(u.calls), func(i int) bool { return c.calls[u.calls[i]].t >= at-time.Millisecond })
	for ; i < len(u.calls) && c.calls[u.calls[i]].t <= at+time.Millisecond; i++ {
		k := &c.calls[u.calls[i]]
		if seconds(k.t) == p.AtS && k.failed != p.OK && k.health == (p.Kind == "health_check") {
			return u.calls[i]
		}
	}
	return -1
}
