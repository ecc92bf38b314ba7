package analysis

import (
	"sort"
	"time"
)

// A reopen no failed probe shows. probeFigures counts a cooldown after a
// probe that failed and was followed by refusals: the breaker reopened
// on that failure. A breaker that counts every answer against the state
// it arrives in (no generations: a call let through while closed, or in
// an earlier half-open, that ends in this one) also reopens on a failure
// that is not the last probe's: the half-open that let probe a through
// reopens on an older call's failure while a is still in flight, or on
// the failure of a probe let through before a. The next probe b then
// comes after a full cooldown, though a itself failed later or succeeded.
//
// What shows it is a refusal between a and b after which no answer came
// back before b was let through. Whatever the half-open admits (one call,
// N at once with permits given back as calls end, N in all), a half-open
// that turned r away was at its limit and lets nothing more through until
// an answer frees a slot; b was let through with no answer between, so
// the breaker was not in the half-open that admitted b when it refused
// r: it was open, having reopened after it let a through. A reopen is
// the gateway learning a failure: one that ended between a's admission
// and r's refusal, unseen which (the first, where any answer counts in
// the state it arrives in; a later one, where the half-open ignores an
// older state's answers or tolerates some failures). The cooldown ran
// from that end to b's admission, as for a failed probe's.
//
// Where an answer came back after every refusal between a and b, it may
// have freed the slot b took in the same half-open, and no reopen is
// claimed here; the breaker may still have reopened (a half-open that
// admitted b's successors while a's answer was pending shows it only
// across several probes), so the cooldowns stated are then the least
// there were.
//
// The moments are the upstream's stamps, read in the order it stamped
// them (as probeFigures reads a failed probe's end and the next probe):
// an answer is before the refusal when it ended a slack before the
// refusal was sent, after b's admission when it ended after b arrived.

// reopenBetween looks for a reopen between the consecutive probes a and
// b of cy (call indexes; lo is where the segment's calls start): the
// earliest and the latest end of the failures the breaker can have
// reopened on, and whether the evidence shows one.
func (u *upstreamRun) reopenBetween(cy *cyc, lo int, a, b int32) (first, last time.Duration, ok bool) {
	c := u.c
	at, bt := c.calls[a].t, c.calls[b].t
	// quiet: the latest answer of any call (health checks and calls of
	// earlier states too: each can free a slot) that ended before b
	// arrived; refusals a slack after it saw no answer until b.
	quiet := at
	for _, i := range u.calls {
		k := &c.calls[i]
		if k.t >= bt {
			break
		}
		switch {
		case i == b:
		case !k.hasEnd:
			// Its end unseen: it may have freed a slot any time.
			quiet = max(quiet, bt)
		case k.end < bt:
			quiet = max(quiet, k.end)
		}
	}
	from := u.letFrom(b) // the refusal must precede every moment b can have been let through
	j := sort.Search(len(cy.blockedAt), func(j int) bool {
		return cy.blockedAt[j] > at && cy.blockedAt[j] >= quiet+u.slack
	})
	if j == len(cy.blockedAt) || cy.blockedDone[j] <= 0 || cy.blockedDone[j] > from {
		// No refusal that certainly came before b was let through.
		return 0, 0, false
	}
	refused := cy.blockedDone[j] // r was turned away by then
	// The failures the gateway can have learned between a's admission
	// and r's refusal.
	since := u.letFrom(a) - u.slack
	first, last = -1, -1
	for _, i := range u.calls[lo:] {
		k := &c.calls[i]
		if k.t > refused+u.slack {
			break
		}
		if !k.failed || k.health || !k.hasEnd || k.end <= since || k.end > refused+u.slack {
			continue
		}
		if first < 0 || k.end < first {
			first = k.end
		}
		last = max(last, k.end)
	}
	if first < 0 {
		// No failure to reopen on: a breaker outside the family; no
		// cooldown is claimed.
		return 0, 0, false
	}
	return first, last, true
}

// reopenCooldown appends to out's cooldowns the one that ended at probe b
// when reopenBetween shows the breaker reopened after probe a, and
// returns its bounds (nil: exact). Only where live calls are the probes
// of a half-open: a ramp's share, failures expiring, health checks or
// tagged probes are read their own way.
func (u *upstreamRun) reopenCooldown(cy *cyc, out *Cycle, lo int, a, b int32) (*Bounds, bool) {
	switch {
	case out.ProbeSource != "live":
		return nil, false
	case out.Shape != ShapeLiveProbe && out.Shape != ShapeLiveProbes && out.Shape != ShapeUnknown:
		return nil, false
	}
	first, last, ok := u.reopenBetween(cy, lo, a, b)
	if !ok {
		return nil, false
	}
	next, nextHi := u.letAt(b)
	let := u.letFrom(b)
	out.CooldownsS = append(out.CooldownsS, seconds(next-first))
	if first == last && let == next && nextHi == next {
		return nil, true
	}
	// From the latest failure to b's earliest admission, to the first
	// failure from b's latest.
	return &Bounds{Min: Ptr(seconds(max(let-last, 0))), Max: Ptr(seconds(nextHi - first))}, true
}
