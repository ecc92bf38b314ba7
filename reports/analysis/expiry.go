package analysis

import (
	"sort"
	"time"

	"github.com/halfopen/rehearse/reports/num"
)

// splitExpiry: in a cycle whose close was evidenced as a timer's (traffic
// resumed with calls in flight together, no success to close on), the
// breaker forgets failures after a period; each lone call it let through
// while "open" was in fact the breaker closing when a failure expired, and
// that call's failure tripping it again. Every re-trip is its own cycle:
// the cycle is split at each run of admitted calls, closing when the run's
// first call arrived (bounded below by the request blocked before it) and
// opening again when its last failed. Every close it reads again is
// placed by closeOf, as failures expiring (closeExpired, or
// closeExpiredByOthers when the upstream's other cycles showed it).
//
// A breaker has one shape: once any cycle of the upstream shows that its
// failures expire, the cycles whose close alone could not tell (the call
// after which traffic resumed was alone in flight) are read the same way.
// Besides a timer's close, a re-admission shows it (quickReadmission):
// after an admitted call failed and requests were turned away again, the
// next one was let through within the widest gap between the failures
// before it, and sooner than the first was after the open. A breaker that
// probes waits at least its cooldown again after a failed probe; one whose
// failures expire lets a call through whenever the next remembered
// failure is forgotten, which can be moments later.
func (u *upstreamRun) splitExpiry(cycles []*cyc) []*cyc {
	c := u.c
	expires := false
	ends := u.failureEnds()
	segStart := time.Duration(0)
	for _, cy := range cycles {
		if adm, ok := u.expiryCandidate(cy); ok && (!cy.maybeProbe || u.quickReadmission(cy, adm, segStart, ends)) {
			expires = true
			break
		}
		if cy.closeAt >= 0 {
			segStart = cy.closeAt
		}
	}
	var out []*cyc
	for _, cy := range cycles {
		adm, ok := u.expiryCandidate(cy)
		if ok && cy.maybeProbe && expires {
			// Read as the upstream's other cycles show: the failures
			// expired, and the close came before the first resumed call.
			u.closeOf(cy, cy.lb, cy.fr, cy.nx, false, closeExpiredByOthers)
		}
		if !ok || len(adm) == 0 || cy.maybeProbe {
			out = append(out, cy)
			continue
		}
		cur := cy
		final := *cy
		// Each segment is read as the whole cycle was: failures that
		// expired, seen in this close or in the upstream's others.
		kind := closeExpired
		if final.closeKind == closeExpiredByOthers {
			kind = closeExpiredByOthers
		}
		for g := 0; g < len(adm); {
			// A run: admitted calls with no blocked request between them.
			h := g + 1
			for h < len(adm) && !cy.blockedBetween(c.calls[adm[h-1]].t, c.calls[adm[h]].t) {
				h++
			}
			first, last := adm[g], adm[h-1]
			ft := c.calls[first].t
			// Close the current segment at the run's first arrival.
			lb := time.Duration(-1)
			for _, b := range cy.blockedAt {
				if b < ft {
					lb = b
				}
			}
			nb := cy.nextBlocked(c.calls[last].t)
			next := newCycBounded(u.openBounds(nb, nb, last))
			next.failureDriven = cy.failureDriven
			nx := int32(-1)
			if h > g+1 {
				nx = adm[g+1]
			}
			u.closeOf(cur, max(lb, cur.openAt), first, nx, false, kind)
			cur.resumed = -1 // refused again: what users saw resumed only at the end
			cur.admitted = map[int32]bool{}
			out = append(out, cur)
			cur = next
			g = h
		}
		// The last segment ends as the whole cycle did: on the failures'
		// timer, by the first resumed call.
		u.closeOf(cur, final.lb, final.fr, final.nx, false, kind)
		cur.sinceClose, cur.resumed, cur.th = final.sinceClose, final.resumed, final.th
		out = append(out, cur)
		// Blocked requests to the segment they fell in.
		redistributeBlocked(out[len(out)-countRuns(cy, adm, c)-1:], cy)
	}
	return out
}

// expiryCandidate reports whether cy may be a passive-expiry cycle (it
// closed with no success to close on, its admissions untagged and no
// ramp among them) and returns its admitted calls in arrival order.
func (u *upstreamRun) expiryCandidate(cy *cyc) ([]int32, bool) {
	c := u.c
	if cy.closeAt < 0 || cy.closeBy >= 0 {
		return nil, false
	}
	adm := make([]int32, 0, len(cy.admitted))
	for i := range cy.admitted {
		if c.calls[i].tagged {
			return nil, false
		}
		adm = append(adm, i)
	}
	sort.Slice(adm, func(a, b int) bool { return c.calls[adm[a]].t < c.calls[adm[b]].t })
	if ramp, _ := u.rampEvidence(cy, adm); ramp {
		// Successes let through while still turning requests away: a
		// ramp, not expiries.
		return nil, false
	}
	return adm, true
}

// quickReadmission reports whether, after an admitted call k of cy failed
// and a request was turned away, the next admission n came as only a
// breaker whose failures expire one by one lets a call through. Such a
// breaker let k through as the oldest failure of the trip, e0, expired,
// and lets the next through when the next one, e1, does: within the
// widest gap between consecutive failure ends before k of k's let-through
// (trial.go's judgedTrial reads the same gap the other way). A breaker
// that probes reopened on k's answer and waits its cooldown again; its
// first wait, from the latest the open can have been to the first
// admission, was that cooldown plus at most one request's spacing (a call
// is let through only when a request comes), so a wait after k's answer
// shorter than the first less that spacing is none of its. Both must
// hold: the failures' gaps are the evidence, and the first wait keeps a
// probing breaker whose trip failures were spread wider than its
// cooldown.
func (u *upstreamRun) quickReadmission(cy *cyc, adm []int32, segStart time.Duration, ends []time.Duration) bool {
	c := u.c
	if len(adm) < 2 {
		return false
	}
	first := c.calls[adm[0]].t - cy.openHi - cy.requestSpacing()
	for i := 0; i+1 < len(adm); i++ {
		k, n := &c.calls[adm[i]], &c.calls[adm[i+1]]
		if !k.failed || !k.hasEnd || n.t <= k.end || !cy.blockedBetween(k.end, n.t) {
			continue
		}
		from := u.letFrom(adm[i])
		gap := time.Duration(0)
		lo := sort.Search(len(ends), func(j int) bool { return ends[j] >= segStart })
		for j := lo + 1; j < len(ends) && ends[j] <= from; j++ {
			gap = max(gap, ends[j]-ends[j-1])
		}
		if n.t <= k.t+gap+u.slack && n.t-k.end < first {
			return true
		}
	}
	return false
}

// requestSpacing is the median spacing of the requests cy turned away
// (0 with fewer than two): how long a breaker that could let a call
// through waited for a request to let through.
func (cy *cyc) requestSpacing() time.Duration {
	if len(cy.blockedAt) < 2 {
		return 0
	}
	d := make([]time.Duration, 0, len(cy.blockedAt)-1)
	for i := 1; i < len(cy.blockedAt); i++ {
		d = append(d, cy.blockedAt[i]-cy.blockedAt[i-1])
	}
	return num.Median(d)
}

// nextBlocked is the first request the cycle blocked after t.
func (cy *cyc) nextBlocked(t time.Duration) time.Duration {
	i := sort.Search(len(cy.blockedAt), func(i int) bool { return cy.blockedAt[i] > t })
	if i < len(cy.blockedAt) {
		return cy.blockedAt[i]
	}
	return t
}

// countRuns counts the runs of admitted calls splitExpiry split at.
func countRuns(cy *cyc, adm []int32, c *collector) int {
	n := 0
	for g := 0; g < len(adm); {
		h := g + 1
		for h < len(adm) && !cy.blockedBetween(c.calls[adm[h-1]].t, c.calls[adm[h]].t) {
			h++
		}
		n++
		g = h
	}
	return n
}

// redistributeBlocked gives each segment of a split cycle the blocked
// requests sent while it was open, each with its own answer and whether
// it was a fast-fail: a segment's counts are its requests', never a share
// of the whole's.
func redistributeBlocked(segs []*cyc, whole *cyc) {
	all, allDone, allFF := whole.blockedAt, whole.blockedDone, whole.blockedFF
	for _, s := range segs {
		s.blockedAt, s.blockedDone, s.blockedFF, s.blocked, s.ff = nil, nil, nil, 0, 0
	}
	for j, b := range all {
		for _, s := range segs {
			end := s.closeAt
			if end < 0 {
				end = 1<<63 - 1
			}
			if b >= s.openAt-closeSlack && b < end {
				s.blockedAt = append(s.blockedAt, b)
				s.blockedDone = append(s.blockedDone, allDone[j])
				s.blockedFF = append(s.blockedFF, allFF[j])
				s.blocked++
				if allFF[j] {
					s.ff++
				}
				break
			}
		}
	}
}
