package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/halfopen/rehearse/reports/num"
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
// first resumed call, the earliest bound the last blocked request. When
// more than one call the half-open let through succeeded in the window,
// the breaker may have closed on any of them (a half-open counting k of
// the n calls it let through closes on the k-th): closeFirst keeps the
// earliest, and the close is bounded between it and the last. Passing
// health checks keep the last: a check-gated breaker closes on the rise-th
// check in a row, and two checks both in the window (no request sent
// between them) cannot tell a rise of 1 from 2 — a known limit the count
// states as the last (docs/analysis.md).
func (u *upstreamRun) closeOf(cy *cyc, lastBlocked time.Duration, fr, next int32) {
	c, ci := u.c, u.calls
	hi := c.calls[fr].t
	cy.closeLo, cy.closeAt, cy.closeBy, cy.maybeProbe, cy.closeInFlight = lastBlocked, hi, -1, false, false
	cy.pending, cy.pendingEnd, cy.closeFirst = false, -1, -1
	cy.lb, cy.fr, cy.nx = lastBlocked, fr, next
	checksGate := !cy.noChecks
	for i := range cy.admitted {
		if !c.calls[i].tagged {
			checksGate = false
			break
		}
	}
	lo := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= cy.openAt })
	best, first := time.Duration(-1), time.Duration(-1)
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
		// forwarded the next request: slack on both sides. A health
		// check runs on the gateway's own schedule, beside whatever else
		// closes the breaker: one that ended before a request the gateway
		// then turned away, by more than the gateway took to forward a
		// request just then, did not close it (a breaker whose failures
		// expire, with checks passing throughout, has a check end near
		// the expiry by chance, every cycle when the periods are in step).
		early := closeSlack
		if k.health {
			early = min(max(cy.react, time.Millisecond), closeSlack)
		}
		if e := k.end; e > lastBlocked-early && e <= hi+closeSlackLate {
			if !k.health && (first < 0 || e < first) {
				first = e
			}
			if e > best {
				best, cy.closeBy = e, i
			}
		}
	}
	if best >= 0 {
		cy.closeAt = min(best, hi)
		cy.closeLo = cy.closeAt
		if first >= 0 && first < best && !c.calls[cy.closeBy].health {
			cy.closeFirst = min(first, hi)
		}
		u.pendingAt(cy, lo, hi)
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
		return
	}
	// fr and the next were in flight together. Had a half-open let both
	// through as probes, it closed on their successes: if one of them
	// succeeded before the third resumed call arrived, that cannot be told
	// from a timer's close either. Only a breaker that forwarded the third
	// before any had succeeded needed no success.
	if th := cy.th; th >= 0 {
		for _, i := range [2]int32{fr, next} {
			if k := &c.calls[i]; !k.failed && k.hasEnd && k.end <= c.calls[th].t {
				cy.maybeProbe = true
			}
		}
	}
}

// pendingAt marks cy pending when a call the open breaker let through
// (an admission, from ci[lo:]) was still in flight, by the upstream's
// record, when traffic resumed with the call that arrived at hi, although
// a success had ended in the close window. A half-open that needs all the
// calls it let through to succeed turns requests away until the last has
// (gobreaker's MaxRequests), so traffic resuming first means the breaker
// had closed on the success that ended, or was letting the next call in
// on a slot that success gave back (failsafe-go's half-open: several
// executions at once, each giving its permit back as it ends) and closed
// on a later answer — the one still in flight, or a later call's.
// Nothing seen from outside tells these apart. The close lies between the
// success's end and the end of the last call in flight (if all of them
// succeeded: by then every call of that half-open had, so any count it
// needed was met; the answer head may have decided it earlier), and
// successes_to_close is unknown.
func (u *upstreamRun) pendingAt(cy *cyc, lo int, hi time.Duration) {
	c, ci := u.c, u.calls
	latest, known := time.Duration(-1), true
	for _, i := range ci[lo:] {
		k := &c.calls[i]
		if k.t >= hi {
			break
		}
		if !cy.admitted[i] || k.tagged || (k.hasEnd && k.end <= hi+closeSlackLate) {
			continue
		}
		cy.pending = true
		if k.failed || !k.hasEnd {
			known = false
			continue
		}
		latest = max(latest, k.end)
	}
	if cy.pending && known {
		cy.pendingEnd = latest
	}
}

// shapeOf infers the shape of one cycle from its admissions and its close
// and says why, in words for the statement.
func (u *upstreamRun) shapeOf(cy *cyc, tagged, health, live []int32) (shape, evidence string) {
	c := u.c
	switch {
	case len(tagged) > 0:
		return ShapeTaggedProbe, fmt.Sprintf("%s marked as probes", num.Plural(int64(len(tagged)), "call"))
	case len(live) == 0 && len(health) > 0 && cy.closeBy >= 0 && c.calls[cy.closeBy].health && cy.checkChance >= 0:
		return ShapeHealthCheck, fmt.Sprintf("traffic resumed right after a passing health check, and no live call got through while open; the checks passed throughout, so a timer of the gateway's own could look the same, but only by a coincidence at every close (chance %.2g %%): the close is also bounded by the requests either side", 100*cy.checkChance)
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
	case len(live) == 0 && cy.closeAt >= 0 && cy.closeBy < 0 && cy.expiryByOthers:
		return ShapeExpiry, "no call got through while open and no success closed it; the call after which traffic resumed was alone in flight, and the upstream's other cycles show its failures expiring (traffic resumed with no success to close on, or a call let through again soon after an admitted one failed): read the same way"
	case len(live) == 0 && cy.closeAt >= 0 && cy.closeBy < 0:
		return ShapeExpiry, "no call got through while open, and traffic resumed with calls in flight together and no success to close on: the failures expired"
	case len(live) == 0:
		return ShapeUnknown, "no call got through while open"
	case cy.closeAt >= 0 && cy.closeBy >= 0 && several && cy.pending:
		return ShapeLiveProbes, "several live calls were let through at once while open; traffic resumed after one had succeeded while another was still in flight, so the breaker closed on that success or on a later answer (a half-open that lets the next call in as one ends): the close is bounded, the successes it took unknown"
	case cy.closeAt >= 0 && cy.closeBy >= 0 && cy.closeFirst >= 0:
		shape := ShapeLiveProbe
		if several {
			shape = ShapeLiveProbes
		}
		return shape, "live calls were let through while open, and more than one of them succeeded between the last request turned away and the first resumed: the breaker closed on one of those answers (a half-open counting some of the calls it let through closes before the last), which one unseen, so the close is bounded and the successes it took unknown"
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

// rampEvidence finds a ramp: while still open, a request was turned away
// after an admitted call's success had certainly reached the gateway and
// before the next call was let through, with fewer calls in flight than
// the breaker let another call through beside, and that twice or more with
// no failure in between. A breaker that closes on a success would have
// closed; one that reopens on a failure had none to reopen on; a half-open
// that lets a fixed number of calls through (gobreaker's MaxRequests)
// admits none after turning one away, and one that lets the next call in
// as each ends (failsafe-go's permits) turns requests away only while as
// many calls are in flight as it ever admits beside. Only a breaker
// admitting a share of the traffic turns a request away with fewer in
// flight. Refusals that may have come before the gateway read the
// success's answer are no evidence: a loaded gateway reads answers late.
func (u *upstreamRun) rampEvidence(cy *cyc, live []int32) (bool, string) {
	c := u.c
	if len(live) < 3 {
		return false, ""
	}
	// beside: the most calls certainly in flight (let through, not yet
	// answered by the upstream's record) when another was let through.
	beside := 0
	for _, b := range live {
		kb := &c.calls[b]
		sent := u.letFrom(b)
		n := 0
		for _, x := range live {
			if kx := &c.calls[x]; x != b && kx.t <= sent && kx.hasEnd && kx.end >= kb.t {
				n++
			}
		}
		beside = max(beside, n)
	}
	okSeen := int32(-1)
	n := 0
	for _, i := range live {
		k := &c.calls[i]
		if k.failed {
			okSeen, n = -1, 0
			continue
		}
		if okSeen >= 0 && k.t > c.calls[okSeen].end && u.refusedBelow(cy, live, u.answerHeld(okSeen), u.letFrom(i), beside) {
			n++
		}
		okSeen = i
	}
	if n >= 2 {
		return true, fmt.Sprintf("while open, %s got through after earlier ones had succeeded, with requests turned away between them while fewer calls were in flight than it let another through beside, and no failure", num.Plural(int64(n+1), "successful call"))
	}
	return false, ""
}

// answerHeld is by when the gateway certainly had call i's answer: when
// its client request's answer came back (the gateway had read the
// upstream's first), else the upstream's end, and closeSlack more for the
// gateway to act on it (a breaker may count the answer just after it has
// relayed it).
func (u *upstreamRun) answerHeld(i int32) time.Duration {
	k := &u.c.calls[i]
	at := k.end
	if r, ok := u.reqOfCall(i); ok {
		if d := u.c.reqs[r].done; d > at {
			at = d
		}
	}
	return at + closeSlack
}

// refusedBelow reports whether the cycle turned away a request wholly
// within (from, to) — sent after from, answered before to — while at most
// beside admitted live calls can have been in flight (let through no
// later than its answer came back, held until answerHeld).
func (u *upstreamRun) refusedBelow(cy *cyc, live []int32, from, to time.Duration, beside int) bool {
	if to <= from {
		return false
	}
	j := sort.Search(len(cy.blockedAt), func(j int) bool { return cy.blockedAt[j] > from })
	for ; j < len(cy.blockedAt) && cy.blockedAt[j] < to; j++ {
		sent, done := cy.blockedAt[j], cy.blockedDone[j]
		if done <= 0 || done >= to {
			continue
		}
		inFlight := 0
		for _, i := range live {
			if u.letFrom(i) <= done && u.answerHeld(i) >= sent {
				inFlight++
			}
		}
		if inFlight == 0 || inFlight <= beside {
			return true
		}
	}
	return false
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
	seen := u.liveSeqTable() // calls carrying each number so far
	out := map[int32]bool{}
	for _, i := range u.live {
		k := &c.calls[i]
		if !k.hasSeq {
			continue
		}
		n, _ := seen.get(k.seq)
		seen.set(k.seq, n+1)
		if n == 0 {
			continue
		}
		out[i] = int(n) < max(sends[k.seq], 1) // client re-send, else the gateway's
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
// a failure's response: a failed call that ended before the first blocked
// request and not before the last forwarded request arrived (the breaker
// was still closed then); calls forwarded earlier may still be in flight,
// so it need not be the last passed one. When several did, the earliest
// is the estimate and the latest the bound (openBounds): the trip is any
// of them, and calls in flight that fail one after another at the request
// rate (timeouts of calls let through before the trip) bring the count to
// the threshold at the first one after the last forwarded request. Without
// one, the first blocked request.
func (u *upstreamRun) openAt(firstBlocked time.Duration, lastPassed int32) time.Duration {
	lo, _ := u.openBounds(firstBlocked, firstBlocked, lastPassed)
	return lo
}

// openBounds is openAt with the latest failure that fits (hi == lo when
// one does). answered is when the gateway answered the first blocked
// request: it decided to turn it away somewhere between the client's send
// and then (a loaded gateway takes a request in late), so a failure that
// ended before that may have tripped it.
func (u *upstreamRun) openBounds(firstBlocked, answered time.Duration, lastPassed int32) (lo, hi time.Duration) {
	answered = max(answered, firstBlocked)
	c, ci := u.c, u.calls
	floor := time.Duration(-1)
	if lastPassed >= 0 {
		floor = c.calls[lastPassed].t
		// The breaker let that call through somewhere between the
		// client's send and the upstream's arrival: a loaded gateway
		// forwards a request it let through late (tens of ms), and a
		// failure that ended in between may have tripped it right
		// after.
		if ri, ok := u.reqOfCall(lastPassed); ok {
			if s := c.reqs[ri].sent; s > 0 && s < floor {
				floor = s
			}
		}
	}
	first, last := time.Duration(-1), time.Duration(-1)
	trip := int32(-1)
	top := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= answered })
	for j := top - 1; j >= 0; j-- {
		k := &c.calls[ci[j]]
		if k.t < floor-time.Minute {
			break // nothing in flight that long
		}
		if k.health || !k.failed {
			continue
		}
		if e := k.end; e <= answered && e >= floor {
			if e > last {
				last = e
			}
			if first < 0 || e < first {
				first, trip = e, ci[j]
			}
		}
	}
	if first >= 0 {
		// A gateway slow to act on answers just then (a loaded machine:
		// it passed the tripping failure on to its client well after the
		// upstream answered) may have tripped any time until it turned a
		// request away.
		if ri, ok := u.reqOfCall(trip); ok {
			if d := c.reqs[ri].done; d > 0 && d-first > closeSlack {
				last = max(last, firstBlocked)
			}
		}
		return first, last
	}
	m := c.openMoment(firstBlocked, lastPassed)
	return m, m
}

// splitExpiry: in a cycle whose close was evidenced as a timer's (traffic
// resumed with calls in flight together, no success to close on), the
// breaker forgets failures after a period; each lone call it let through
// while "open" was in fact the breaker closing when a failure expired, and
// that call's failure tripping it again. Every re-trip is its own cycle:
// the cycle is split at each run of admitted calls, closing when the run's
// first call arrived (bounded below by the request blocked before it) and
// opening again when its last failed.
//
// A breaker has one shape: once any cycle of the upstream shows that its
// failures expire, the cycles whose close alone could not tell (the call
// after which traffic resumed was alone in flight) are read the same way.
// Besides a timer's close, a re-admission shows it: after an admitted call
// failed and requests were turned away again, the next one was let
// through far sooner than the first was after the open. A breaker that
// probes waits at least its cooldown again after a failed probe; one whose
// failures expire lets a call through whenever the next remembered
// failure is forgotten, which can be moments later.
func (u *upstreamRun) splitExpiry(cycles []*cyc) []*cyc {
	c := u.c
	expires := false
	for _, cy := range cycles {
		if adm, ok := u.expiryCandidate(cy); ok && (!cy.maybeProbe || u.quickReadmission(cy, adm)) {
			expires = true
			break
		}
	}
	var out []*cyc
	for _, cy := range cycles {
		adm, ok := u.expiryCandidate(cy)
		if ok && cy.maybeProbe && expires {
			// Read as the upstream's other cycles show: the failures
			// expired, and the close came before the first resumed call.
			cy.maybeProbe, cy.expiryByOthers = false, true
		}
		if !ok || len(adm) == 0 || cy.maybeProbe {
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
			nb := cy.nextBlocked(c.calls[last].t)
			next := newCycBounded(u.openBounds(nb, nb, last))
			next.failureDriven, next.expiryByOthers = cy.failureDriven, cy.expiryByOthers
			cur.closeAt, cur.closeLo, cur.closeBy, cur.maybeProbe = ft, max(lb, cur.openAt), -1, false
			cur.admitted = map[int32]bool{}
			out = append(out, cur)
			cur = next
			g = h
		}
		// The last segment ends as the whole cycle did.
		cur.closeAt, cur.closeLo, cur.closeBy, cur.maybeProbe = final.closeAt, final.closeLo, final.closeBy, final.maybeProbe
		cur.sinceClose = final.sinceClose
		cur.lb, cur.fr, cur.nx, cur.react, cur.th = final.lb, final.fr, final.nx, final.react, final.th
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

// quickReadmission reports whether, after an admitted call of cy failed
// and a request was turned away, the next admission came sooner than half
// the wait from the open to the first one.
func (u *upstreamRun) quickReadmission(cy *cyc, adm []int32) bool {
	c := u.c
	if len(adm) < 2 {
		return false
	}
	first := c.calls[adm[0]].t - cy.openAt
	for i := 0; i+1 < len(adm); i++ {
		k, n := &c.calls[adm[i]], &c.calls[adm[i+1]]
		if !k.failed || !k.hasEnd || n.t <= k.end || !cy.blockedBetween(k.end, n.t) {
			continue
		}
		if 2*(n.t-k.end) < first {
			return true
		}
	}
	return false
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
	all, allDone, ffRatio := whole.blockedAt, whole.blockedDone, whole.ff
	for _, s := range segs {
		s.blockedAt, s.blockedDone, s.blocked = nil, nil, 0
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
	if consistent && rise >= 0 && !u.checksFailedNear(cycles) && !u.checksTrackState(cycles) {
		// The checks passed throughout: the gateway may close on them
		// (HAProxy's observe with rise) or on a timer of its own beside
		// which a check happened to end, each time. Only a chance of
		// that too small to credit keeps the checks as the gate.
		chance := u.coincidence(cycles, byCheck)
		if chance > CoincidenceMax {
			consistent = false
		} else {
			for _, cy := range cycles {
				if cy.closeAt >= 0 && byCheck(cy) {
					cy.checkChance = chance
				}
			}
		}
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

// CoincidenceMax is the largest chance that, with a breaker that ignores
// its health checks, a passing check ended beside every close by accident,
// for which checks that passed throughout are still taken as the gate.
const CoincidenceMax = 0.01

// checksFailedNear reports whether a health check of the upstream failed
// while its cycles were open or just before the first (two check
// intervals): checks that see the fault are plausibly what the gateway
// acts on.
func (u *upstreamRun) checksFailedNear(cycles []*cyc) bool {
	c, ci := u.c, u.calls
	if len(cycles) == 0 {
		return false
	}
	from, to := cycles[0].openAt-2*u.checkSpacing(cycles), u.frame.end
	if last := cycles[len(cycles)-1]; last.closeAt >= 0 {
		to = last.closeAt
	}
	lo := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= from })
	for _, i := range ci[lo:] {
		k := &c.calls[i]
		if k.t > to {
			break
		}
		if k.health && k.failed {
			return true
		}
	}
	return false
}

// coincidence is the chance that, were the checks not the gate, a passing
// check would have ended in every close window by accident. A window runs
// from the last blocked request (less closeSlack) to the first resumed
// call, or to the check's end when that came later; a check lands in it
// with probability its width over the checks' spacing, independently per
// cycle, unless the check sat at the same place in every window (the
// clients' and the checks' periods in step, and a timer that keeps step
// too): then the cycles are one trial, not several.
func (u *upstreamRun) coincidence(cycles []*cyc, byCheck func(*cyc) bool) float64 {
	c := u.c
	iv := u.checkSpacing(cycles)
	if iv <= 0 {
		return 1
	}
	product, most := 1.0, 0.0
	var offs []time.Duration
	for _, cy := range cycles {
		if cy.closeAt < 0 || !byCheck(cy) {
			continue
		}
		hi := c.calls[cy.fr].t
		e := c.calls[cy.closeBy].end
		w := hi - cy.lb + closeSlack
		if e > hi {
			w += e - hi
		}
		p := min(1, float64(w)/float64(iv))
		product *= p
		most = max(most, p)
		offs = append(offs, e-cy.lb)
	}
	if len(offs) > 1 && slices.Max(offs)-slices.Min(offs) <= 3*time.Millisecond {
		return most
	}
	return product
}

// checkSpacing is the median spacing of the upstream's health checks while
// its cycles were open (all its checks when those are too few), 0 without.
func (u *upstreamRun) checkSpacing(cycles []*cyc) time.Duration {
	in, _, all := u.checkSpacings(cycles)
	s := in
	if len(s) < 3 {
		s = all
	}
	return num.Median(s)
}

// checksTrackState reports whether the gateway checks at another pace
// while its breaker is open than while it is closed (HAProxy's fastinter
// and downinter, Envoy's unhealthy_interval): checks tied to the
// breaker's state are what it acts on.
func (u *upstreamRun) checksTrackState(cycles []*cyc) bool {
	in, out, _ := u.checkSpacings(cycles)
	if len(in) < 2 || len(out) < 2 {
		return false
	}
	a, b := num.Median(in), num.Median(out)
	return 4*max(a, b) > 5*min(a, b)
}

// checkSpacings are the spacings between consecutive health checks of the
// upstream: both while a cycle was open, both while none was, and all.
func (u *upstreamRun) checkSpacings(cycles []*cyc) (in, out, all []time.Duration) {
	c, ci := u.c, u.calls
	prev, prevOpen := time.Duration(-1), false
	for _, i := range ci {
		k := &c.calls[i]
		if !k.health {
			continue
		}
		open := false
		for _, cy := range cycles {
			if k.t >= cy.openAt && (cy.closeAt < 0 || k.t <= cy.closeAt) {
				open = true
				break
			}
		}
		if prev >= 0 {
			d := k.t - prev
			all = append(all, d)
			switch {
			case open && prevOpen:
				in = append(in, d)
			case !open && !prevOpen:
				out = append(out, d)
			}
		}
		prev, prevOpen = k.t, open
	}
	return in, out, all
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
