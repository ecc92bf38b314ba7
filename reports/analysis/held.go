package analysis

import (
	"sort"
	"time"
)

// A breaker that holds an upstream out longer after a failed trial than
// its failures could have been remembered: its cooldown grew. Gateways
// that fail over (the open state routes the upstream's requests to
// another upstream instead of refusing them) commonly back their
// cooldown off on each failed trial (doubling it), and trip on a single
// failure, where judgedTrial's argument (it took two or more failures to
// trip) cannot be made. Whatever a breaker of expiring failures
// remembers, it forgets each failure a fixed window W after it: it let
// the cycle's first trial through no earlier than the oldest failure of
// the trip expired, so W is at most from that failure's end to the
// latest the first trial can have been let through. After a lone trial
// failed at e, it has forgotten everything by e+W (or a window after the
// last failure since, when calls admitted before the trip or the trial
// reached the upstream late and failed) and refuses nothing more until a
// new failure. A request refused later than that, before the next call
// was let through, fits no breaker of expiring failures: the breaker
// held the upstream out on its own judgement of the trial, and the next
// call it let through is a trial too. Nothing here is tied to a gateway:
// only to what each reading predicts about refusals.

// heldPastWindow reports whether the failed trial i of cy (alone in
// flight) was followed by a refusal later than any window of expiring
// failures that fits the cycle's first cooldown, before next (when the
// call after it was let through). ends are the upstream's failure ends
// in order (failureEnds).
func (u *upstreamRun) heldPastWindow(cy *cyc, adm []int32, i int32, next time.Duration, ends []time.Duration) bool {
	k := &u.c.calls[i]
	if !k.failed || !k.hasEnd || len(adm) == 0 {
		return false
	}
	n, spread := u.tripFailures(cy)
	if n == 0 {
		return false
	}
	// The longest window that fits: from the oldest failure of the trip
	// to the latest the first trial can have been let through.
	_, firstHi := u.letAt(adm[0])
	window := firstHi - (cy.openAt - spread)
	if window <= 0 {
		return false
	}
	// A refusal is read at its client's send (the earliest the gateway
	// can have decided it), a failure at its recorded end plus the
	// clocks' noise. Every failure counts, the trial's and any other
	// that ended since (a call admitted before the trip or the trial
	// that reached the upstream late and failed: a breaker of expiring
	// failures remembers it a window from its end too).
	from := u.letFrom(i)
	a := sort.Search(len(ends), func(j int) bool { return ends[j] >= from })
	last := k.end
	j := sort.Search(len(cy.blockedAt), func(j int) bool { return cy.blockedAt[j] > k.end })
	for ; j < len(cy.blockedAt) && cy.blockedAt[j] < next; j++ {
		b := cy.blockedAt[j]
		for ; a < len(ends) && ends[a] <= b; a++ {
			last = max(last, ends[a])
		}
		if b > last+window+u.slackLate {
			return true
		}
	}
	return false
}
