package reports

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Breaker shapes: how a breaker lets traffic through while open and how
// it closes, inferred per cycle from what reached the upstream. Each
// shape has its own rules for the figures (docs/analysis.md).
const (
	// ShapeTaggedProbe: probes the gateway marks as such (a header or a
	// User-Agent); it closes on a probe's success.
	ShapeTaggedProbe = "tagged_probe"
	// ShapeHealthCheck: the gateway's health checks decide; it closes on
	// a passing check (HAProxy's rise).
	ShapeHealthCheck = "health_check"
	// ShapeLiveProbe: one live client request at a time is let through
	// as the probe; it closes on that probe's success (nginx's
	// max_fails/fail_timeout, Hystrix, resilience4j with one call).
	ShapeLiveProbe = "live_probe"
	// ShapeLiveProbes: a half-open that lets several live requests
	// through at once (gobreaker's MaxRequests, resilience4j's
	// permittedNumberOfCallsInHalfOpenState).
	ShapeLiveProbes = "live_probes"
	// ShapeExpiry: no probes: the failures are forgotten after a period
	// and traffic resumes on that timer (Caddy's passive health checks).
	ShapeExpiry = "expiry"
	// ShapeRamp: a growing share of the traffic is let through over a
	// recovery period (Traefik's CircuitBreaker).
	ShapeRamp = "ramp"
	// ShapeUnknown: the evidence fits more than one shape; the figures
	// that differ between them are given as bounds or left null.
	ShapeUnknown = "ambiguous"
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

// failedBetween reports whether any call of the upstream (live, tagged or
// health check) that arrived in [from, to) failed.
func (u *upstreamRun) failedBetween(from, to time.Duration) bool {
	c, ci := u.c, u.calls
	lo := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= from })
	for _, i := range ci[lo:] {
		k := &c.calls[i]
		if k.t >= to {
			break
		}
		if k.failed {
			return true
		}
	}
	return false
}

// closeOf places the close of cy, whose forwarding resumed with call fr
// after the last blocked request, sent at lastBlocked. The breaker closed
// in (lastBlocked, arrival of fr]: it was still open when it blocked that
// request and closed by the time it forwarded fr. A breaker that closes on
// a success closes when a successful probe's response comes back: if one
// ended in that window (an admitted live call, a tagged probe, or a health
// check when the checks are the gate), the close is its end, exact;
// several: the last (a half-open that counts several successes closes on
// the last one). If none did, the breaker closed on a timer (failures
// expired, a ramp ended, a quick probe's success cannot be told from
// that) and the close is known to the window only: the estimate is the
// first resumed call, the earliest bound the last blocked request.
func (u *upstreamRun) closeOf(cy *cyc, lastBlocked time.Duration, fr, next int32) {
	c, ci := u.c, u.calls
	hi := c.calls[fr].t
	cy.closeLo, cy.closeAt, cy.closeBy, cy.maybeProbe, cy.closeInFlight = lastBlocked, hi, -1, false, false
	cy.lb, cy.fr, cy.nx = lastBlocked, fr, next
	checksGate := !cy.noChecks
	for i := range cy.admitted {
		if !c.calls[i].tagged {
			checksGate = false
			break
		}
	}
	lo := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= cy.openAt })
	best := time.Duration(-1)
	for _, i := range ci[lo:] {
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
		// forwarded the next request: slack on both sides.
		if e := k.end; e > lastBlocked-closeSlack && e <= hi+closeSlackLate && e > best {
			best, cy.closeBy = e, i
		}
	}
	if best >= 0 {
		cy.closeAt = min(best, hi)
		cy.closeLo = cy.closeAt
		return
	}
	// A successful call the open breaker let through was still in flight
	// by the upstream's record when traffic resumed: the gateway had its
	// answer already (the upstream stamps an end once its handler has
	// returned, which a loaded machine can delay by far more than
	// closeSlackLate). The breaker closed on that answer, somewhere in
	// the window: the success counts, the moment is bounded.
	for _, i := range ci[lo:] {
		k := &c.calls[i]
		if k.t >= hi {
			break
		}
		if cy.admitted[i] && !k.tagged && !k.failed && k.hasEnd && k.end > hi {
			cy.closeBy, cy.closeInFlight = i, true
		}
	}
	if cy.closeBy >= 0 {
		return
	}
	// No success in the window. If fr itself was alone in flight (it
	// ended before the next call came), it may have been the probe after
	// which the breaker closed (on its success, or on a failure the
	// gateway does not count) or the first call after a timer closed it:
	// the bounds cover both.
	if k := &c.calls[fr]; next < 0 || k.end <= c.calls[next].t {
		cy.maybeProbe = true
	}
}

// shapeOf infers the shape of one cycle from its admissions and its close
// and says why, in words for the statement.
func (u *upstreamRun) shapeOf(cy *cyc, tagged, health, live []int32) (shape, evidence string) {
	c := u.c
	switch {
	case len(tagged) > 0:
		return ShapeTaggedProbe, fmt.Sprintf("%s marked as probes", plural(int64(len(tagged)), "call"))
	case len(live) == 0 && len(health) > 0 && cy.closeBy >= 0 && c.calls[cy.closeBy].health:
		return ShapeHealthCheck, "traffic resumed right after a passing health check, and no live call got through while open"
	}
	if ramp, why := u.rampEvidence(cy, live); ramp {
		return ShapeRamp, why
	}
	several := c.maxInFlight(live) > 1
	switch {
	case len(live) == 0 && cy.closeAt >= 0 && cy.closeBy < 0 && cy.maybeProbe:
		return ShapeUnknown, "no call got through while open; the call after which traffic resumed was alone in flight, so it may have been a probe (whose answer closed the breaker) or the first call after the failures expired"
	case len(live) == 0 && cy.closeAt >= 0 && cy.closeBy < 0:
		return ShapeExpiry, "no call got through while open, and traffic resumed with calls in flight together and no success to close on: the failures expired"
	case len(live) == 0:
		return ShapeUnknown, "no call got through while open"
	case cy.closeAt >= 0 && cy.closeBy >= 0 && several:
		return ShapeLiveProbes, "several live calls were let through at once while open, and requests were turned away until they had succeeded"
	case cy.closeAt >= 0 && cy.closeBy >= 0:
		return ShapeLiveProbe, "one live call at a time got through while open; requests were turned away until its success"
	case several:
		return ShapeLiveProbes, "several live calls were let through at once while open"
	case cy.closeAt >= 0 && cy.maybeProbe:
		return ShapeUnknown, "one live call at a time got through while open; the call after which traffic resumed was alone in flight, so whether its answer closed the breaker (a live probe) or the breaker had already closed (failures expired, or a half-open that admits several calls) cannot be told from outside"
	case cy.closeAt >= 0:
		return ShapeExpiry, "single calls got through while open and failed; traffic resumed with calls in flight together and no success to close on: failures expire, and each expiry let one call through"
	}
	return ShapeLiveProbe, "one live call at a time got through while open"
}

// rampEvidence finds a ramp: while still open, a call was let through
// after an earlier admitted call had succeeded and requests had been
// turned away since, with no failure in between. A breaker that closes on
// a success would have closed; one that reopens on a failure had none to
// reopen on: it was admitting a share of the traffic.
func (u *upstreamRun) rampEvidence(cy *cyc, live []int32) (bool, string) {
	c := u.c
	if len(live) < 3 {
		return false, ""
	}
	okSeen := int32(-1)
	n := 0
	for _, i := range live {
		k := &c.calls[i]
		if k.failed {
			okSeen, n = -1, 0
			continue
		}
		if okSeen >= 0 && k.t > c.calls[okSeen].end && cy.blockedBetween(c.calls[okSeen].end, k.t) {
			n++
		}
		okSeen = i
	}
	if n >= 2 {
		return true, fmt.Sprintf("while open, %s got through after earlier ones had succeeded, with requests still turned away between them and no failure", plural(int64(n+1), "successful call"))
	}
	return false, ""
}

// blockedBetween reports whether the cycle blocked a request sent in
// (from, to).
func (cy *cyc) blockedBetween(from, to time.Duration) bool {
	i := sort.Search(len(cy.blockedAt), func(i int) bool { return cy.blockedAt[i] > from })
	return i < len(cy.blockedAt) && cy.blockedAt[i] < to
}

// repeats finds the calls that carry a sequence number an earlier call of
// the upstream already carried: the same client request sent again, by
// the replayer's transport (journaled as client.request resent) or by the
// gateway's (a re-send its HTTP client made on a new connection). They
// are never leaks: the request was let through once. It returns the
// repeated calls and, per call, whether the client's own re-sends account
// for it.
func (u *upstreamRun) repeats(sends map[uint64]int) map[int32]bool {
	c := u.c
	seen := map[uint64]int{}
	out := map[int32]bool{}
	for _, i := range u.live {
		k := &c.calls[i]
		if !k.hasSeq {
			continue
		}
		n := seen[k.seq]
		seen[k.seq] = n + 1
		if n == 0 {
			continue
		}
		out[i] = n < max(sends[k.seq], 1) // client re-send, else the gateway's
	}
	return out
}

// shapeWords names a shape for the statement.
func shapeWords(s string) string {
	switch s {
	case ShapeTaggedProbe:
		return "tagged probes"
	case ShapeHealthCheck:
		return "health checks decide"
	case ShapeLiveProbe:
		return "one live probe per half-open"
	case ShapeLiveProbes:
		return "several live probes per half-open"
	case ShapeExpiry:
		return "no probes, failures expire"
	case ShapeRamp:
		return "ramp recovery"
	}
	return "shape ambiguous"
}

// joinShapes is the distinct shapes of an episode's cycles, in order.
func joinShapes(cs []*Cycle) string {
	var out []string
	for _, cy := range cs {
		if cy.Shape != "" && !containsStr(out, cy.Shape) {
			out = append(out, cy.Shape)
		}
	}
	return strings.Join(out, "+")
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// lastShape is the shape of the episode's last cycle (the one that
// closed it, or is still open).
func lastShape(ep *Episode) string {
	if n := len(ep.Cycles); n > 0 {
		return ep.Cycles[n-1].Shape
	}
	return ""
}

// openAt estimates when the breaker opened, given the first blocked
// request and the last call a request reached before it. Breakers trip on
// a failure's response: the latest failed call that ended before the first
// blocked request (and not before the last forwarded request arrived: the
// breaker was still closed then) is the estimate; calls forwarded earlier
// may still be in flight, so it need not be the last passed one. Without
// one, the first blocked request.
func (u *upstreamRun) openAt(firstBlocked time.Duration, lastPassed int32) time.Duration {
	c, ci := u.c, u.calls
	floor := time.Duration(-1)
	if lastPassed >= 0 {
		floor = c.calls[lastPassed].t
	}
	best := time.Duration(-1)
	hi := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= firstBlocked })
	for j := hi - 1; j >= 0; j-- {
		k := &c.calls[ci[j]]
		if k.t < floor-time.Minute {
			break // nothing in flight that long
		}
		if k.health || !k.failed {
			continue
		}
		if e := k.end; e <= firstBlocked && e >= floor && e > best {
			best = e
		}
	}
	if best >= 0 {
		return best
	}
	return c.openMoment(firstBlocked, lastPassed)
}

// splitExpiry: in a cycle whose close was evidenced as a timer's (traffic
// resumed with calls in flight together, no success to close on), the
// breaker forgets failures after a period; each lone call it let through
// while "open" was in fact the breaker closing when a failure expired, and
// that call's failure tripping it again. Every re-trip is its own cycle:
// the cycle is split at each run of admitted calls, closing when the run's
// first call arrived (bounded below by the request blocked before it) and
// opening again when its last failed.
func (u *upstreamRun) splitExpiry(cycles []*cyc) []*cyc {
	c := u.c
	var out []*cyc
	for _, cy := range cycles {
		if cy.closeAt < 0 || cy.closeBy >= 0 || cy.maybeProbe || len(cy.admitted) == 0 {
			out = append(out, cy)
			continue
		}
		adm := make([]int32, 0, len(cy.admitted))
		for i := range cy.admitted {
			if !c.calls[i].tagged {
				adm = append(adm, i)
			}
		}
		if len(adm) != len(cy.admitted) {
			out = append(out, cy)
			continue
		}
		sort.Slice(adm, func(a, b int) bool { return c.calls[adm[a]].t < c.calls[adm[b]].t })
		if ramp, _ := u.rampEvidence(cy, adm); ramp {
			// Successes let through while still turning requests away:
			// a ramp, not expiries.
			out = append(out, cy)
			continue
		}
		cur := cy
		final := *cy
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
			next := newCyc(u.openAt(cy.nextBlocked(c.calls[last].t), last))
			next.failureDriven = cy.failureDriven
			cur.closeAt, cur.closeLo, cur.closeBy = ft, max(lb, cur.openAt), -1
			cur.admitted = map[int32]bool{}
			out = append(out, cur)
			cur = next
			g = h
		}
		// The last segment ends as the whole cycle did.
		cur.closeAt, cur.closeLo, cur.closeBy, cur.maybeProbe = final.closeAt, final.closeLo, final.closeBy, final.maybeProbe
		cur.sinceClose = final.sinceClose
		out = append(out, cur)
		// Blocked requests to the segment they fell in.
		redistributeBlocked(out[len(out)-countRuns(cy, adm, c)-1:], cy)
	}
	return out
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
// requests sent while it was open.
func redistributeBlocked(segs []*cyc, whole *cyc) {
	all, ffRatio := whole.blockedAt, whole.ff
	for _, s := range segs {
		s.blockedAt, s.blocked = nil, 0
	}
	for _, b := range all {
		for _, s := range segs {
			end := s.closeAt
			if end < 0 {
				end = 1<<63 - 1
			}
			if b >= s.openAt-closeSlack && b < end {
				s.blockedAt = append(s.blockedAt, b)
				s.blocked++
				break
			}
		}
	}
	// Fast-fails are not kept per request: share them in proportion.
	if n := int64(len(all)); n > 0 {
		left := ffRatio
		for i, s := range segs {
			if i == len(segs)-1 {
				s.ff = left
				break
			}
			s.ff = ffRatio * s.blocked / n
			left -= s.ff
		}
	}
}

// checksGate decides, over one upstream's cycles, whether its health
// checks are what closes its breaker. A breaker gated by checks closes on
// a passing check every time, after the same number of them in a row (a
// rise count). When some cycle closed with no check to close on, or the
// runs differ, the checks that happened to end just before traffic
// resumed were coincidence (a breaker whose failures expire, with checks
// passing throughout): those cycles' closes are placed again without
// them.
func (u *upstreamRun) checksGate(cycles []*cyc) {
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
	if consistent {
		return
	}
	for _, cy := range cycles {
		if cy.closeAt >= 0 && byCheck(cy) {
			cy.noChecks = true
			u.closeOf(cy, cy.lb, cy.fr, cy.nx)
		}
	}
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
