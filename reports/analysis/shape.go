package analysis

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/halfopen/rehearse/reports/num"
)

// Breaker shapes: how a breaker lets traffic through while open and how
// it closes, inferred per cycle from what reached the upstream. Each is
// a hypothesis tested against the cycle's evidence (hypothesis.go, and
// the shape_*.go file that tests it); each has its own rules for the
// figures (docs/analysis.md).
const (
	// ShapeTaggedProbe: probes the gateway marks as such (a header or a
	// User-Agent); it closes on a probe's success.
	ShapeTaggedProbe = "tagged_probe"
	// ShapeHealthCheck: the gateway's health checks decide; it closes on
	// a passing check, or a run of them.
	ShapeHealthCheck = "health_check"
	// ShapeLiveProbe: one live client request at a time is let through
	// as the probe; it closes on that probe's success (a classic
	// one-trial half-open; a failure-count window that lets one call by).
	ShapeLiveProbe = "live_probe"
	// ShapeLiveProbes: a half-open that lets several live requests
	// through at once (a configured number of trial calls, each
	// counted, or permits given back as calls end).
	ShapeLiveProbes = "live_probes"
	// ShapeExpiry: no probes: the failures are forgotten after a period
	// and traffic resumes on that timer (passive health checks that
	// expire failures).
	ShapeExpiry = "expiry"
	// ShapeRamp: a growing share of the traffic is let through over a
	// recovery period.
	ShapeRamp = "ramp"
	// ShapeUnknown: the evidence fits more than one shape (named in
	// Cycle.ShapeCandidates); the figures that differ between them are
	// given as bounds or left null.
	ShapeUnknown = "ambiguous"
)

// rampEvidence finds a ramp: while still open, a request was turned away
// after an admitted call's success had certainly reached the gateway and
// before the next call was let through, with fewer calls in flight than
// the breaker let another call through beside, and that twice or more with
// no failure in between. A breaker that closes on a success would have
// closed; one that reopens on a failure had none to reopen on; a half-open
// that lets a fixed number of calls through
// admits none after turning one away, and one that lets the next call in
// as each ends (permits given back) turns requests away only while as
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
	return at + u.slack
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

// shapeWords names a shape for the statement: the words its hypothesis
// gives (hypothesis.words).
func shapeWords(s string) string {
	for _, h := range hypotheses {
		if h.shape == s {
			return h.words
		}
	}
	return "shape ambiguous"
}

// candidateWords names the shapes still standing, each in its words as
// an alternative, joined as a sentence says them ("a live probe, several
// live probes, or expiring failures"); "" for none.
func candidateWords(cands []string) string {
	w := make([]string, 0, len(cands))
	for _, s := range cands {
		for _, h := range hypotheses {
			if h.shape == s {
				w = append(w, h.alt)
			}
		}
	}
	switch len(w) {
	case 0:
		return ""
	case 1:
		return w[0]
	case 2:
		return w[0] + " or " + w[1]
	}
	return strings.Join(w[:len(w)-1], ", ") + ", or " + w[len(w)-1]
}

// lastShapeWords states the episode's last shape ("Shape: …"): its
// hypothesis's words, or, when the evidence left it ambiguous, the shapes
// still standing.
func lastShapeWords(ep *Episode) string {
	if n := len(ep.Cycles); n > 0 && ep.Cycles[n-1].Shape == ShapeUnknown {
		if w := candidateWords(ep.Cycles[n-1].ShapeCandidates); w != "" {
			return ShapeUnknown + ": " + w
		}
	}
	return shapeWords(lastShape(ep))
}

// shapeCell is the report's shape cell: the episode's shapes, the shapes
// still standing when its last cycle is ambiguous, and the evidence.
func shapeCell(e *Episode) string {
	if e.Shape == "" {
		return "—"
	}
	s := e.Shape
	if n := len(e.Cycles); n > 0 && e.Cycles[n-1].Shape == ShapeUnknown {
		if w := candidateWords(e.Cycles[n-1].ShapeCandidates); w != "" {
			if e.Shape == ShapeUnknown {
				s += ": " + w
			} else {
				s += "; the last cycle ambiguous: " + w
			}
		}
	}
	return s + " (" + e.ShapeEvidence + ")"
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

// openBounds estimates when the breaker opened, given the first blocked
// request and the last call a request reached before it. Breakers trip on
// a failure's response: a failed call that ended before the first blocked
// request and not before the last forwarded request arrived (the breaker
// was still closed then); calls forwarded earlier may still be in flight,
// so it need not be the last passed one. When several did, the earliest
// is the estimate (lo) and the latest the bound (hi; hi == lo when one
// does): the trip is any of them, and calls in flight that fail one after
// another at the request rate (timeouts of calls let through before the
// trip) bring the count to the threshold at the first one after the last
// forwarded request. Without one, the first blocked request. It is the
// one estimator of an open: the gaps-only machine asks it too.
//
// answered is when the gateway answered the first blocked request: it
// decided to turn it away somewhere between the client's send and then (a
// loaded gateway takes a request in late), so a failure that ended before
// that may have tripped it.
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
			if d := c.reqs[ri].done; d > 0 && d-first > u.slack {
				last = max(last, firstBlocked)
			}
		}
		return first, last
	}
	// No failure fits: the breaker was open by the first request it
	// turned away (the last forwarded call, had it failed, would have
	// been found above: it ended after it arrived).
	return firstBlocked, firstBlocked
}
