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

// mergeHeldTrials reads again a close that was a failed trial. The state
// machine closes a cycle once CloseRunMin requests in a row reached the
// upstream; a gateway that admits several requests before a trial's
// answer (it decides each some time before its call) lets them through
// with the trial, and when the trial fails they fail too and the breaker
// turns requests away again: the machine reads a close and a re-trip.
// Two readings fit: failures that expired (a timer's close) and tripped
// it again, or a trial that failed, with calls admitted before its
// answer. When the resumed traffic began with a failure and nothing
// succeeded before the re-trip, and the breaker then held the upstream
// out past any window of expiring failures that fits the first cooldown
// (heldPastWindow), only the second fits: the cycles are one, the first
// resumed call a failed trial, the calls let through with it admitted
// before it failed (neither probes nor leaks).
func (u *upstreamRun) mergeHeldTrials(cycles []*cyc) []*cyc {
	if len(cycles) < 2 {
		return cycles
	}
	out := []*cyc{cycles[0]}
	ends := u.failureEnds()
	for _, b := range cycles[1:] {
		a := out[len(out)-1]
		if m := u.heldTrial(a, b, ends); m != nil {
			out[len(out)-1] = m
			continue
		}
		out = append(out, b)
	}
	return out
}

// heldTrial is a and b as one cycle when a's close was a failed trial
// (see mergeHeldTrials), nil otherwise.
func (u *upstreamRun) heldTrial(a, b *cyc, ends []time.Duration) *cyc {
	c := u.c
	if a.closeAt < 0 || a.closeBy >= 0 || a.fr < 0 || b.openAt < a.closeAt {
		return nil
	}
	tr := &c.calls[a.fr]
	if !tr.failed || !tr.hasEnd || a.admitted[a.fr] {
		return nil
	}
	// Nothing the upstream answered between the trial and the re-trip
	// succeeded: the breaker had no success to close on.
	lo := sort.Search(len(u.calls), func(i int) bool { return c.calls[u.calls[i]].t >= tr.t })
	for _, i := range u.calls[lo:] {
		k := &c.calls[i]
		if k.t > b.openAt {
			break
		}
		if !k.health && !k.failed {
			return nil
		}
	}
	m := *b
	m.openAt, m.openHi, m.failureDriven = a.openAt, a.openHi, a.failureDriven
	m.blocked, m.ff = a.blocked+b.blocked, a.ff+b.ff
	m.blockedAt = append(append([]time.Duration{}, a.blockedAt...), b.blockedAt...)
	m.blockedDone = append(append([]time.Duration{}, a.blockedDone...), b.blockedDone...)
	m.blockedFF = append(append([]bool{}, a.blockedFF...), b.blockedFF...)
	m.admitted = map[int32]bool{a.fr: true}
	for i := range a.admitted {
		m.admitted[i] = true
	}
	for i := range b.admitted {
		m.admitted[i] = true
	}
	m.early = map[int32]bool{}
	for _, i := range a.sinceClose {
		if i != a.fr && !m.admitted[i] {
			m.early[i] = true
		}
	}
	// The hold after the trial, to the next call let through.
	next := u.frame.end
	if b.closeAt >= 0 && b.fr >= 0 {
		next = c.calls[b.fr].t
	}
	for i := range b.admitted {
		next = min(next, c.calls[i].t)
	}
	adm := u.admittedByArrival(&m)
	if !u.heldPastWindow(&m, adm, a.fr, next, ends) {
		return nil
	}
	return &m
}
