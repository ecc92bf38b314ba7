package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/halfopen/rehearse/reports/num"

	"github.com/halfopen/rehearse/journal"
)

// okProbeLike reports whether call k is a successful tagged probe or
// health check: live traffic right after one is the breaker closing, not a
// live-traffic probe.
func (c *collector) okProbeLike(k int32) bool {
	if k < 0 {
		return false
	}
	x := &c.calls[k]
	return (x.tagged || x.health) && !x.failed
}

// machine runs the open/close state machine over the upstream's sent
// client requests, each classified blocked, passed or probe (match holds
// the call a request reached).
//
// Open: OpenRunMin consecutive blocked requests. While open, every call a
// request reached is an admission (a probe, or a ramp's share of the
// traffic); forwarding has resumed once CloseRunMin consecutive requests
// passed, and the close itself is placed by closeOf from what the gateway
// did around the last blocked request. A breaker that closed only opens
// again after failures: a request blocked after the close with no failed
// call since means it had not closed (a ramp, a half-open that admits
// several calls), and the cycle goes on; with failures it is a re-trip,
// a new cycle.
func (u *upstreamRun) machine(cls []uint8, match []int32) []*cyc {
	c, sent := u.c, u.sent
	var top int32
	for _, k := range match {
		top = max(top, k)
	}
	u.reqOf = newSeqTable[int32](len(match), uint64(top))
	for j, k := range match {
		if k >= 0 {
			u.reqOf.set(uint64(k), sent[j])
		}
	}
	m := &machineState{u: u, match: match, lastPassed: -1, lastBlocked: -1}
	for j := range sent {
		r := &c.reqs[sent[j]]
		if m.cur == nil {
			m.closed(j, r, cls[j])
		} else {
			m.open(j, r, cls[j])
		}
	}
	for _, cy := range m.out {
		if cy.closeAt < 0 {
			// Never closed: the passes since the last close attempt were
			// admissions of the open breaker.
			for _, i := range cy.sinceClose {
				cy.admitted[i] = true
			}
		}
	}
	u.checksGate(m.out)
	return u.splitExpiry(m.out)
}

// machineState is the black-box state machine's state as it walks the
// client requests in send order: the cycle open now (cur, nil while
// closed), the last one closed, the run of blocked requests that may open
// the next (br from brFirst), the run of passes that may close cur, and
// the last request passed and blocked.
type machineState struct {
	u           *upstreamRun
	match       []int32
	out         []*cyc
	cur, last   *cyc
	br, brFirst int
	run         []int
	lastPassed  int32
	lastBlocked int
}

// block counts request r as turned away by the open cycle.
func (m *machineState) block(r *creq) {
	cur := m.cur
	cur.blocked++
	cur.blockedAt = append(cur.blockedAt, r.sent)
	cur.blockedDone = append(cur.blockedDone, r.done)
	if r.fastFail {
		cur.ff++
	}
}

// closed takes request j (r, class k) while no cycle is open: a block
// right after a close that no failure explains resumes the last cycle,
// OpenRunMin blocks in a row open a new one.
func (m *machineState) closed(j int, r *creq, k uint8) {
	u, c, sent := m.u, m.u.c, m.u.sent
	last := m.last
	switch {
	case k == clsBlocked && last != nil && last.failureDriven && !u.failedKnownBy(last.closeLo, r.sent, max(r.done, r.sent)+closeSlackLate):
		// Blocked again without a failure since the close: the
		// breaker never closed. Resume the cycle; the passes
		// since were admissions.
		m.cur = last
		for _, i := range m.cur.sinceClose {
			m.cur.admitted[i] = true
		}
		m.cur.sinceClose = m.cur.sinceClose[:0]
		m.cur.closeAt, m.cur.closeLo, m.cur.closeBy = -1, -1, -1
		m.block(r)
		m.lastBlocked = j
		m.run = m.run[:0]
		m.br = 0
	case k == clsBlocked:
		if m.br == 0 {
			m.brFirst = j
		}
		m.br++
		if m.br >= OpenRunMin {
			from := time.Duration(0)
			if last != nil {
				from = last.closeLo
			}
			m.last = nil
			fb := &c.reqs[sent[m.brFirst]]
			m.cur = newCycBounded(u.openBounds(fb.sent, fb.done, m.lastPassed))
			m.cur.failureDriven = u.failedBetween(from, m.cur.openAt+1)
			for q := m.brFirst; q <= j; q++ {
				m.block(&c.reqs[sent[q]])
			}
			m.out = append(m.out, m.cur)
			m.lastBlocked = j
			m.run = m.run[:0]
		}
	default:
		m.br = 0
		if k == clsPassed {
			m.lastPassed = u.laterArrival(m.lastPassed, m.match[j])
			if last != nil && len(last.sinceClose) < maxListed {
				last.sinceClose = append(last.sinceClose, m.match[j])
			}
		}
	}
}

// open takes request j (r, class k) while cur is open: a block extends it,
// CloseRunMin passes in a row close it (closeOf places the close).
func (m *machineState) open(j int, r *creq, k uint8) {
	u, c, sent, cur := m.u, m.u.c, m.u.sent, m.cur
	switch k {
	case clsBlocked:
		m.block(r)
		m.lastBlocked = j
		m.run = m.run[:0]
	case clsProbe:
		// A tagged probe carrying a client request: neither normal
		// traffic nor a block.
	case clsPassed:
		cur.admitted[m.match[j]] = true
		m.run = append(m.run, j)
		if len(m.run) >= CloseRunMin {
			for _, q := range m.run {
				delete(cur.admitted, m.match[q])
			}
			fr, nx, th, react := u.firstArrivals(m.run, m.match)
			cur.react, cur.th = react, th
			u.closeOf(cur, c.reqs[sent[m.lastBlocked]].sent, fr, nx)
			cur.sinceClose = cur.sinceClose[:0]
			for _, q := range m.run {
				cur.sinceClose = append(cur.sinceClose, m.match[q])
			}
			for _, q := range m.run {
				m.lastPassed = u.laterArrival(m.lastPassed, m.match[q])
			}
			m.last = cur
			m.cur, m.br, m.run = nil, 0, m.run[:0]
		}
	}
}

// sentBefore reports whether call i's client request was sent before t
// (false when the call carries no client request).
func (u *upstreamRun) sentBefore(i int32, t time.Duration) bool {
	ri, ok := u.reqOfCall(i)
	if !ok {
		return false
	}
	s := u.c.reqs[ri].sent
	return s > 0 && s < t
}

// laterArrival is whichever of two calls reached the upstream later (a
// < 0: none yet). The last call forwarded before the breaker opened is
// the latest to arrive, not the last request sent: a loaded gateway can
// forward requests out of order.
func (u *upstreamRun) laterArrival(a, b int32) int32 {
	if a < 0 || (b >= 0 && u.c.calls[b].t > u.c.calls[a].t) {
		return b
	}
	return a
}

// firstArrivals returns the three calls of a run of passed requests that
// reached the upstream first (third < 0 without one). The run is in the order the client sent its
// requests; a loaded gateway can forward a later one first (a slow dial),
// and the resumed traffic began with the earliest arrival, not with the
// first request sent: a call that arrived before it would otherwise be
// counted as let through while open. It also returns how long the first
// of them took from the client's send to the upstream: the gateway's
// reaction time just then.
func (u *upstreamRun) firstArrivals(run []int, match []int32) (first, second, third int32, react time.Duration) {
	c := u.c
	byArrival := make([]int, len(run))
	copy(byArrival, run)
	sort.SliceStable(byArrival, func(x, y int) bool { return c.calls[match[byArrival[x]]].t < c.calls[match[byArrival[y]]].t })
	third = -1
	if len(byArrival) > 2 {
		third = match[byArrival[2]]
	}
	qa := byArrival[0]
	return match[qa], match[byArrival[1]], third, c.calls[match[qa]].t - c.reqs[u.sent[qa]].sent
}

// openMoment estimates when the breaker opened. The black-box bounds are
// the end of the last live call that got through and the first request
// that did not (notBefore). Breakers trip on a failure's response, so when
// that last call failed its end is the estimate; otherwise the first
// blocked request is.
func (c *collector) openMoment(firstBlocked time.Duration, lastPassed int32) time.Duration {
	if lastPassed >= 0 {
		k := &c.calls[lastPassed]
		if k.failed && k.end <= firstBlocked {
			return k.end
		}
	}
	return firstBlocked
}

// closeMoment estimates when the breaker closed, given the first two calls
// of the run of resumed traffic. A breaker closes on a probe's successful
// response: the end of the successful tagged probe or health check just
// before the traffic resumed, or of the live-traffic probe that began the
// run; else the resumed traffic's first arrival.
func (u *upstreamRun) closeMoment(cy *cyc, first, second int32) (time.Duration, int32) {
	c := u.c
	if cy.admitted[first] {
		if e := c.calls[first].end; e <= c.calls[second].t {
			return e, first
		}
		return c.calls[second].t, -1
	}
	t := c.calls[first].t
	if p := u.lastCallBefore(t); c.okProbeLike(p) && c.calls[p].t >= cy.openAt && c.calls[p].end <= t {
		return c.calls[p].end, p
	}
	return t, -1
}

// gapMachine infers open intervals from gaps in untagged live arrivals
// alone, when no client request can be attributed to the upstream. It
// returns the expected interval it used.
func (u *upstreamRun) gapMachine() (time.Duration, []*cyc) {
	c, live, wins := u.c, u.live, u.wins
	var arr []int32
	for _, i := range live {
		if !c.calls[i].tagged {
			arr = append(arr, i)
		}
	}
	if len(arr) < 3 {
		return 0, nil
	}
	firstFault := time.Duration(1<<63 - 1)
	if len(wins) > 0 {
		firstFault = wins[0].start
	}
	var before, all []time.Duration
	for i := 1; i < len(arr); i++ {
		d := c.calls[arr[i]].t - c.calls[arr[i-1]].t
		all = append(all, d)
		if c.calls[arr[i]].t < firstFault {
			before = append(before, d)
		}
	}
	base := all
	if len(before) >= 5 {
		base = before
	}
	exp := num.Median(base)
	gap := max(GapFactor*exp, MinGap)
	var out []*cyc
	var cur *cyc
	var run []int32
	for i := 1; i < len(arr); i++ {
		prevT, t := c.calls[arr[i-1]].t, c.calls[arr[i]].t
		big := t-prevT > gap
		if cur == nil {
			if !big {
				continue
			}
			cur = newCyc(c.openMoment(prevT+exp, arr[i-1]))
			out = append(out, cur)
			run = run[:0]
		}
		if big {
			if !c.okProbeLike(u.lastCallBefore(t)) {
				cur.admitted[arr[i]] = true
			}
			run = append(run[:0], arr[i])
			continue
		}
		run = append(run, arr[i])
		if len(run) >= CloseRunMin {
			cur.closeAt, cur.closeBy = u.closeMoment(cur, run[0], run[1])
			cur.closeLo = cur.closeAt
			cur, run = nil, run[:0]
		}
	}
	// Traffic that stopped for good while clients kept sending.
	if cur == nil && len(c.reqs) > 0 {
		last := c.calls[arr[len(arr)-1]].t
		if c.reqs[len(c.reqs)-1].sched-last > gap {
			out = append(out, newCyc(c.openMoment(last+exp, arr[len(arr)-1])))
		}
	}
	return exp, out
}

// cycleFigures computes one cycle's probes, leaks and counts. segStart is
// where failures before the open are counted from; atFault: it is the
// fault's start, and a call that arrived a moment before it but was
// answered by the fault (the fault decides once it has read the request,
// after the call's arrival was stamped) counts too. rep holds the calls
// repeating a client request (true: the client's own re-send).
func (u *upstreamRun) cycleFigures(cy *cyc, segStart time.Duration, atFault bool, rep map[int32]bool) *Cycle {
	c := u.c
	out := &Cycle{OpenedAtS: seconds(cy.openAt), Blocked: cy.blocked, FastFails: cy.ff,
		Probes: []Probe{}, CooldownsS: []float64{}, openAt: cy.openAt, openHi: cy.openAt, closeAt: cy.closeAt, firstProbe: -1}
	// bounded: several failures fit the trip (OpenBoundsS), so every
	// figure measured from the open has bounds too.
	bounded := cy.openHi > cy.openAt+time.Millisecond
	if bounded {
		out.openHi = cy.openHi
	}
	end := u.frame.end + 1
	if cy.closeAt >= 0 {
		out.ClosedAtS = Ptr(seconds(cy.closeAt))
		end = cy.closeAt
	}
	from := segStart
	if atFault {
		from = segStart - time.Second
	}
	cc := u.sortCalls(cy, out, segStart, from, end, rep)
	tagged, health, liveP, leaks := cc.tagged, cc.health, cc.live, cc.leaks
	out.Shape, out.ShapeEvidence = u.shapeOf(cy, tagged, health, liveP)
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
	}
	if cc.maybeFailures > 0 {
		out.FailuresBeforeOpenBounds = countBounds(out.FailuresBeforeOpen, cc.maybeFailures)
		out.FailedRequestsBeforeOpenBounds = countBounds(out.FailedRequestsBeforeOpen, cc.maybeRequests)
	}
	if cy.closeAt >= 0 {
		u.closeFigures(cy, out, probes)
	}
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
		out.firstProbe = c.calls[probes[0]].t
		out.CooldownsS = append(out.CooldownsS, seconds(c.calls[probes[0]].t-cy.openAt))
		// One entry per cooldown, null where exact; kept when any is not.
		cb, anyBounds := []*Bounds{nil}, false
		// A cooldown ends when the gateway lets the probe through: at its
		// arrival, or as early as its client's send when the gateway
		// forwarded it late (letFrom).
		if p0 := probes[0]; bounded || u.letFrom(p0) < c.calls[p0].t {
			// As short as the first probe after the latest open; a probe
			// before it (a health check, which runs whatever the breaker
			// does) leaves it as short as nothing.
			cb[0], anyBounds = &Bounds{Min: Ptr(seconds(max(u.letFrom(p0)-out.openHi, 0))), Max: Ptr(out.CooldownsS[0])}, true
		}
		waits := len(cy.blockedAt) > 0 // requests are attributed: a wait shows
		for i := 0; i+1 < len(probes); i++ {
			k := &c.calls[probes[i]]
			next := c.calls[probes[i+1]].t
			if !k.failed {
				continue
			}
			if waits && !cy.blockedBetween(k.end, next) {
				// Nobody was turned away between the failure and the next
				// probe: the breaker did not reopen on it (a half-open
				// counting more than one failure, or the next probe let
				// through with it): no cooldown began there.
				continue
			}
			out.CooldownsS = append(out.CooldownsS, seconds(next-k.end))
			// The breaker reopened on a failure that ended after it let
			// this probe through (a reopen before would have turned it
			// away) and by this probe's end: this one's, or another's —
			// a probe in flight with it, or a call let through before
			// the open that ended then, which a breaker without
			// generations counts (failsafe-go). The cooldown ran from
			// one of those ends.
			var bnd *Bounds
			let := u.letFrom(probes[i+1])
			if e := u.firstFailedEnd(lo, k.t, k.end); e < k.end || let < next {
				bnd, anyBounds = &Bounds{Min: Ptr(seconds(max(let-k.end, 0))), Max: Ptr(seconds(next - e))}, true
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
		// how long after; no success count.
		out.CloseBoundsS = &Bounds{Min: Ptr(seconds(cy.closeLo))}
		// The share it let through went on past the first resumed
		// call, unseen: the admissions counted are the least there
		// were.
		out.MaybeProbe = true
		if cy.closeBy >= 0 {
			// The success that ended in the window was a ramp's
			// admission, not a closing probe: the estimate is the
			// first resumed call.
			out.ClosedAtS = Ptr(seconds(c.calls[cy.fr].t))
			out.closeAt = c.calls[cy.fr].t
		}
	case cy.closeBy >= 0 && cy.pending:
		// A success ended in the window, but a call let through
		// with it was still in flight when traffic resumed: closed on
		// that success or on a later answer (pendingAt). The first
		// resumed call may have been one more probe.
		out.MaybeProbe = true
		out.CloseBoundsS = &Bounds{Min: Ptr(seconds(cy.closeAt))}
		if cy.pendingEnd >= 0 {
			out.CloseBoundsS.Max = Ptr(seconds(max(cy.pendingEnd, cy.closeAt)))
		}
	case cy.closeBy >= 0 && cy.closeFirst >= 0:
		// Two or more successes ended in the close window: the
		// breaker closed on one of them, which one unseen (a
		// half-open counting k of n closes on the k-th answer, one
		// needing all on the last). The close is bounded by the
		// earliest and the latest; the successes it took are
		// unknown.
		out.CloseBoundsS = &Bounds{Min: Ptr(seconds(cy.closeFirst)), Max: Ptr(seconds(cy.closeAt))}
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
		switch {
		case cy.closeInFlight:
			out.CloseBoundsS = &Bounds{Min: Ptr(seconds(cy.closeLo)), Max: out.ClosedAtS}
		case cy.checkChance >= 0:
			// Checks that passed throughout: the close is also known
			// to the window between the requests either side.
			out.CloseBoundsS = &Bounds{Min: Ptr(seconds(min(cy.lb, cy.closeAt))), Max: Ptr(seconds(max(c.calls[cy.fr].t, cy.closeAt)))}
		}
	default:
		// Closed on a timer, or the evidence cannot tell: known to a
		// window, and no success count to give.
		out.MaybeProbe = cy.maybeProbe
		out.CloseBoundsS = &Bounds{Min: Ptr(seconds(cy.closeLo))}
		if out.Shape == ShapeExpiry {
			// Failures expired: closed before the first resumed call.
			out.CloseBoundsS.Max = out.ClosedAtS
		}
	}
}

// resumedOnASlot reports whether the first resumed call of cy, which
// closed on the success closeBy, may have been one more probe: it arrived
// before the upstream stamped that success's end, or a moment after (a
// gateway forwards what it let through a little late), in a half-open
// that let several calls through at once, so it may have been let in on
// the slot an earlier success gave back (failsafe-go's permits) rather
// than after the close. Callers check that there was an earlier success.
func (u *upstreamRun) resumedOnASlot(cy *cyc, out *Cycle) bool {
	fr, c := cy.fr, u.c
	return len(cy.blockedAt) > 0 && fr >= 0 && out.MaxProbesInFlight > 1 && c.calls[fr].t < c.calls[cy.closeBy].end+closeSlack
}

// letFrom is the earliest the gateway can have let call i through: its
// client request's send when the call carries one sent more than
// closeSlack before the call arrived (a loaded gateway forwards what it
// let through tens of milliseconds late), else its arrival.
func (u *upstreamRun) letFrom(i int32) time.Duration {
	k := &u.c.calls[i]
	if r, ok := u.reqOfCall(i); ok {
		if s := u.c.reqs[r].sent; s > 0 && s < k.t-closeSlack {
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

// episode fills the figures of one fault episode from its cycles.
func (u *upstreamRun) episode(ep *Episode, w window, spanEnd time.Duration) {
	ep.Fault, ep.FaultTypes = joinNames(w.names), w.types
	ep.StartS, ep.EndS, ep.EndedByRun = seconds(w.start), seconds(w.end), w.endedByRun
	ep.CooldownsS, ep.RetryAfter = []float64{}, []RetryAfter{}
	if ep.Cycles == nil {
		ep.Cycles = []*Cycle{}
	}
	ampEnd := w.end
	if len(ep.Cycles) > 0 {
		ampEnd = cyclesFigures(ep, w, spanEnd)
	}
	ampEnd = min(ampEnd, spanEnd)
	u.retryAfter(ep, w, spanEnd, ampEnd)
	u.metricsLag(ep, w)
	openTime(ep)
	ep.Statement = statement(ep)
}

// cyclesFigures sets an episode's figures from its open/close cycles: the
// first open's, the last close's and the sums over all; it returns where
// the episode's amplification is counted to (its last close, or the span's
// end when it never closed).
func cyclesFigures(ep *Episode, w window, spanEnd time.Duration) time.Duration {
	n := len(ep.Cycles)
	first, last := ep.Cycles[0], ep.Cycles[n-1]
	ep.Opened = true
	ep.OpenedAtS = Ptr(first.OpenedAtS)
	ep.OpenedAfterS = Ptr(seconds(first.openAt - w.start))
	if first.OpenBoundsS != nil {
		ep.OpenedAfterBoundsS = &Bounds{Min: ep.OpenedAfterS, Max: Ptr(seconds(first.openHi - w.start))}
	}
	ep.FailuresBeforeOpen = Ptr(first.FailuresBeforeOpen)
	ep.FailedRequestsBeforeOpen = Ptr(first.FailedRequestsBeforeOpen)
	ep.FailuresBeforeOpenBounds = first.FailuresBeforeOpenBounds
	ep.FailedRequestsBeforeOpenBounds = first.FailedRequestsBeforeOpenBounds
	bounded := false
	ep.Shape, ep.ShapeEvidence = joinShapes(ep.Cycles), last.ShapeEvidence
	var ivs []time.Duration
	mif := 0
	srcs := []string{}
	for _, cy := range ep.Cycles {
		ep.Leaked += cy.Leaked
		ep.Resent += cy.Resent
		ep.Probes += cy.ProbeCount
		ep.FastFails += cy.FastFails
		ivs = append(ivs, cy.intervals...)
		mif = max(mif, cy.MaxProbesInFlight)
		ep.CooldownsS = append(ep.CooldownsS, cy.CooldownsS...)
		if cy.CooldownsBoundsS != nil {
			bounded = true
		}
		if cy.ProbeSource != "" && !slices.Contains(srcs, cy.ProbeSource) {
			srcs = append(srcs, cy.ProbeSource)
		}
		for _, p := range cy.Probes {
			if p.OK {
				ep.ProbeOutcomes.OK++
			} else {
				ep.ProbeOutcomes.Failed++
			}
		}
	}
	if bounded {
		// One entry per cooldown, null where it is exact.
		ep.CooldownsBoundsS = make([]*Bounds, 0, len(ep.CooldownsS))
		for _, cy := range ep.Cycles {
			if cy.CooldownsBoundsS != nil {
				ep.CooldownsBoundsS = append(ep.CooldownsBoundsS, cy.CooldownsBoundsS...)
			} else {
				ep.CooldownsBoundsS = append(ep.CooldownsBoundsS, make([]*Bounds, len(cy.CooldownsS))...)
			}
		}
	}
	ep.ProbeSource = strings.Join(srcs, "+")
	ep.ProbeIntervalS = minP50Max(ivs)
	if ep.Probes > 0 {
		ep.MaxProbesInFlight = Ptr(mif)
		if first.firstProbe >= 0 {
			ep.FirstProbeAfterOpen = Ptr(seconds(first.firstProbe - first.openAt))
			if len(first.CooldownsBoundsS) > 0 {
				ep.FirstProbeAfterOpenBoundsS = first.CooldownsBoundsS[0]
			}
		}
	}
	if last.ClosedAtS != nil {
		ep.Closed = true
		ep.ClosedAtS = last.ClosedAtS
		ep.ClosedAfterRecoveryS = Ptr(seconds(last.closeAt - w.end))
		ep.SuccessesToClose = last.SuccessesToClose
		ep.CloseBoundsS = last.CloseBoundsS
		return max(w.end, last.closeAt)
	}
	return spanEnd
}

// retryAfter sets an episode's Retry-After compliance (each 429's pause
// and the calls inside one) over its span, and its amplification up to
// ampEnd.
func (u *upstreamRun) retryAfter(ep *Episode, w window, spanEnd, ampEnd time.Duration) {
	c, live, sent := u.c, u.live, u.sent
	type pause struct{ from, until time.Duration }
	var pauses []pause
	for _, i := range live {
		k := &c.calls[i]
		if k.t < w.start || k.t >= spanEnd {
			continue
		}
		if k.t < ampEnd {
			ep.UpstreamCalls++
		}
		if k.status == 429 && k.retryAfter > 0 {
			pauses = append(pauses, pause{k.end, k.end + k.retryAfter})
		}
	}
	for _, i := range sent {
		if s := c.reqs[i].sent; s >= w.start && s < ampEnd {
			ep.ClientRequests++
		}
	}
	ep.Amplification = ratio(ep.UpstreamCalls, ep.ClientRequests)
	if len(pauses) > 0 {
		slices.SortFunc(pauses, func(x, y pause) int { return cmp.Compare(x.from, y.from) })
		lo := sort.Search(len(live), func(j int) bool { return c.calls[live[j]].t >= w.start })
		// Per 429: the next non-health call after its response.
		for _, p := range pauses {
			if len(ep.RetryAfter) >= maxListed {
				break
			}
			ra := RetryAfter{AtS: seconds(p.from), RetryAfterS: seconds(p.until - p.from), Honoured: true}
			j := sort.Search(len(live), func(j int) bool { return c.calls[live[j]].t > p.from })
			if j < len(live) {
				nt := c.calls[live[j]].t
				ra.NextCallS = Ptr(seconds(nt - p.from))
				ra.Honoured = nt >= p.until-RetryAfterSlack
			}
			ep.RetryAfter = append(ep.RetryAfter, ra)
		}
		// Violations: calls inside any pause that began before them.
		pi := 0
		var until time.Duration = -1
		for _, i := range live[lo:] {
			k := &c.calls[i]
			if k.t >= spanEnd {
				break
			}
			for pi < len(pauses) && pauses[pi].from < k.t {
				until = max(until, pauses[pi].until)
				pi++
			}
			if k.t < until-RetryAfterSlack {
				ep.RetryAfterViolations++
			}
		}
		ep.RetryAfterHonoured = Ptr(ep.RetryAfterViolations == 0)
	}

}

// metricsLag sets how late the gateway's metrics showed the episode's
// black-box open and close.
func (u *upstreamRun) metricsLag(ep *Episode, w window) {
	mpts := u.mpts
	if ep.Opened {
		openAt, openHi := ep.Cycles[0].openAt, ep.Cycles[0].openHi
		from := sort.Search(len(mpts), func(i int) bool { return mpts[i].t >= w.start })
		already := from > 0 && mpts[from-1].state != journal.StateClosed
		if !already {
			for i := from; i < len(mpts); i++ {
				if mpts[i].state == journal.StateClosed {
					continue
				}
				ep.MetricsOpenLagS = Ptr(seconds(mpts[i].t - openAt))
				if openHi > openAt {
					ep.MetricsOpenLagBoundsS = &Bounds{Min: Ptr(seconds(mpts[i].t - openHi)), Max: ep.MetricsOpenLagS}
				}
				if ep.Closed {
					// The close the metrics show is the first closed
					// point after the last open one at or before the
					// black-box close: with several open/close cycles in
					// the episode (a flapping gateway), earlier cycles'
					// closes are not this one.
					closeAt := ep.Cycles[len(ep.Cycles)-1].closeAt
					lastOpen := i
					for j := i + 1; j < len(mpts) && mpts[j].t <= closeAt; j++ {
						if mpts[j].state != journal.StateClosed {
							lastOpen = j
						}
					}
					for j := lastOpen + 1; j < len(mpts); j++ {
						if mpts[j].state == journal.StateClosed {
							if mpts[j].t >= closeAt-30*time.Second {
								ep.MetricsCloseLagS = Ptr(seconds(mpts[j].t - closeAt))
							}
							break
						}
					}
				}
				break
			}
		}
	}
}

// countBounds bounds a count measured before the open's min that grows
// by up to more if the open was as late as its max; nil when it cannot.
func countBounds(n, more int64) *Bounds {
	if more == 0 {
		return nil
	}
	return &Bounds{Min: Ptr(float64(n)), Max: Ptr(float64(n + more))}
}

// minP50Max summarises durations in seconds (the JSON boundary).
func minP50Max(v []time.Duration) MinP50Max {
	if len(v) == 0 {
		return MinP50Max{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return MinP50Max{Min: Ptr(seconds(s[0])), P50: Ptr(seconds(num.Median(s))), Max: Ptr(seconds(s[len(s)-1]))}
}

// statement says what happened in one plain sentence.
func statement(ep *Episode) string {
	if !ep.Opened {
		s := fmt.Sprintf("Did not open: %d upstream calls during the fault, for %d client requests.", ep.UpstreamCalls, ep.ClientRequests)
		if ep.RetryAfterHonoured != nil && !*ep.RetryAfterHonoured {
			s += fmt.Sprintf(" %s ignored a 429's Retry-After.", num.Plural(ep.RetryAfterViolations, "call"))
		}
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Opened %s after the fault started (%s before", num.Sec(*ep.OpenedAfterS), num.Plural(*ep.FailuresBeforeOpen, "failed call"))
	if r := ep.FailedRequestsBeforeOpen; r != nil && *r != *ep.FailuresBeforeOpen {
		fmt.Fprintf(&b, ", %s", num.Plural(*r, "distinct client request"))
	}
	b.WriteString(")")
	if ob := ep.OpenedAfterBoundsS; ob != nil && ob.Max != nil {
		fmt.Fprintf(&b, ", or as late as %s after (several failed calls, or a gateway slow to pass the failure on, leave the trip unplaced between", num.Sec(*ob.Max))
		if fb := ep.FailuresBeforeOpenBounds; fb != nil && fb.Max != nil {
			fmt.Fprintf(&b, "; then %s before", num.Plural(int64(*fb.Max), "failed call"))
			if rb := ep.FailedRequestsBeforeOpenBounds; rb != nil && rb.Max != nil && *rb.Max != *fb.Max {
				fmt.Fprintf(&b, ", %s", num.Plural(int64(*rb.Max), "distinct client request"))
			}
		}
		b.WriteString(")")
	} else if fb := ep.FailuresBeforeOpenBounds; fb != nil && fb.Max != nil {
		fmt.Fprintf(&b, ", or as many as %s (calls sent before the trip reached the upstream after it: a loaded gateway forwards late what it let through)", num.Plural(int64(*fb.Max), "failed call"))
	}
	b.WriteString(".")
	if ep.Shape != "" {
		fmt.Fprintf(&b, " Shape: %s.", shapeWords(lastShape(ep)))
	}
	if ep.Resent > 0 {
		fmt.Fprintf(&b, " The gateway's transport re-sent %s.", num.Plural(ep.Resent, "call"))
	}
	switch {
	case ep.Probes > 0 && ep.FirstProbeAfterOpen != nil:
		fmt.Fprintf(&b, " Probed %s (%s), first %s after opening", num.Plural(ep.Probes, "time"), ep.ProbeSource, num.Sec(*ep.FirstProbeAfterOpen))
		if pb := ep.FirstProbeAfterOpenBoundsS; pb != nil && pb.Min != nil {
			if ep.OpenedAfterBoundsS != nil {
				fmt.Fprintf(&b, " (as little as %s after an open as late as it may have been)", num.Sec(*pb.Min))
			} else {
				fmt.Fprintf(&b, " (as little as %s: the gateway forwarded it late, and may have let it through as its client sent it)", num.Sec(*pb.Min))
			}
		}
		b.WriteString(".")
	case ep.Probes > 0:
		// The first open cycle had no probe; a later one did.
		fmt.Fprintf(&b, " Probed %s (%s), none in the first open cycle.", num.Plural(ep.Probes, "time"), ep.ProbeSource)
	default:
		b.WriteString(" No probes seen.")
	}
	if ep.Leaked > 0 {
		fmt.Fprintf(&b, " %s leaked through while open.", num.Plural(ep.Leaked, "call"))
	}
	if n := len(ep.Cycles); n > 1 {
		fmt.Fprintf(&b, " Flapped: %d open/close cycles.", n)
	}
	if ep.RetryAfterHonoured != nil {
		if *ep.RetryAfterHonoured {
			b.WriteString(" Retry-After honoured.")
		} else {
			fmt.Fprintf(&b, " Retry-After violated by %s.", num.Plural(ep.RetryAfterViolations, "call"))
		}
	}
	if ep.Closed {
		rel := "after"
		d := *ep.ClosedAfterRecoveryS
		if d < 0 {
			rel, d = "before", -d
		}
		fmt.Fprintf(&b, " Closed %s %s the fault ended", num.Sec(d), rel)
		switch b0 := ep.CloseBoundsS; {
		case ep.SuccessesToClose != nil:
			fmt.Fprintf(&b, ", after %s", num.Plural(int64(*ep.SuccessesToClose), "successful probe"))
		case b0 != nil && b0.Min != nil && b0.Max != nil:
			fmt.Fprintf(&b, " (between %s and %s into the run: no success pins it down)", num.Sec(*b0.Min), num.Sec(*b0.Max))
		case b0 != nil:
			b.WriteString(" at the earliest (the breaker forwarded everything from then on; a ramp's end, or a half-open letting several quick calls through, closes later, unseen from outside)")
		}
		b.WriteString(".")
	} else {
		b.WriteString(" Did not close before the run ended.")
	}
	return b.String()
}

// healthDisagreement finds intervals where the upstream's health checks
// and its breaker (metrics when the gateway reports them, else black-box)
// disagree.
func (u *upstreamRun) healthDisagreement(ua *UpstreamAnalysis, opens [][2]time.Duration) {
	c, ci, mpts, runEnd := u.c, u.calls, u.mpts, u.frame.end
	type ev struct {
		t      time.Duration
		canary string // "" = no change
		brk    string
	}
	var evs []ev
	last := ""
	for _, i := range ci {
		k := &c.calls[i]
		if !k.health {
			continue
		}
		s := "up"
		if k.failed {
			s = "down"
		}
		if s != last {
			evs = append(evs, ev{t: k.t, canary: s})
			last = s
		}
	}
	if len(evs) == 0 {
		return
	}
	src := "metrics"
	if len(mpts) > 0 {
		for _, p := range mpts {
			s := "closed"
			if p.state != journal.StateClosed {
				s = "open"
			}
			evs = append(evs, ev{t: p.t, brk: s})
		}
	} else {
		src = "black_box"
		evs = append(evs, ev{t: 0, brk: "closed"})
		for _, o := range opens {
			evs = append(evs, ev{t: o[0], brk: "open"}, ev{t: o[1], brk: "closed"})
		}
	}
	slices.SortStableFunc(evs, func(x, y ev) int { return cmp.Compare(x.t, y.t) })
	canary, brk := "", ""
	var cur *Disagreement
	var maxD, curStart time.Duration
	flush := func(t time.Duration) {
		if cur != nil {
			cur.EndS = seconds(t)
			maxD = max(maxD, t-curStart)
			if len(ua.HealthDisagreements) < maxListed {
				ua.HealthDisagreements = append(ua.HealthDisagreements, *cur)
			}
			cur = nil
		}
	}
	for _, e := range evs {
		if e.canary != "" {
			canary = e.canary
		}
		if e.brk != "" {
			brk = e.brk
		}
		dis := (canary == "up" && brk == "open") || (canary == "down" && brk == "closed")
		switch {
		case dis && cur != nil && cur.Health == canary && cur.Breaker == brk:
		case dis:
			flush(e.t)
			cur, curStart = &Disagreement{StartS: seconds(e.t), Health: canary, Breaker: brk, Source: src}, e.t
		default:
			flush(e.t)
		}
	}
	flush(runEnd)
	ua.HealthDisagreementMaxS = Ptr(seconds(maxD))
}
