package analysis

import (
	"slices"
	"sort"
	"time"

	"github.com/halfopen/rehearse/reports/num"
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
	sent := u.sent
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
	u.fwd = u.forwarding()
	out := u.walk(cls, match, true)
	if !u.checksGate(out) {
		// Its health checks are not what closes the breaker: walk
		// again, every close placed without them.
		out = u.walk(cls, match, false)
	}
	return u.splitExpiry(out)
}

// walk runs the state machine once over the sent requests; checks: a
// passing health check may be what closed a cycle (closeOf).
func (u *upstreamRun) walk(cls []uint8, match []int32, checks bool) []*cyc {
	c, sent := u.c, u.sent
	m := &machineState{u: u, match: match, lastPassed: -1, lastBlocked: -1, checks: checks}
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
	return u.mergeHeldTrials(m.out)
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
	// checks: passing health checks may close a cycle (closeOf).
	checks bool
}

// block counts request r as turned away by the open cycle.
func (m *machineState) block(r *creq) {
	cur := m.cur
	cur.blocked++
	cur.blockedAt = append(cur.blockedAt, r.sent)
	cur.blockedDone = append(cur.blockedDone, r.done)
	cur.blockedFF = append(cur.blockedFF, r.fastFail)
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
	case k == clsBlocked && last != nil && last.failureDriven && !u.failedKnownBy(last.closeLo, r.sent, max(r.done, r.sent)+u.slackLate):
		// Blocked again without a failure since the close: the
		// breaker never closed. Resume the cycle; the passes
		// since were admissions.
		m.cur = last
		for _, i := range m.cur.sinceClose {
			m.cur.admitted[i] = true
		}
		m.cur.sinceClose = m.cur.sinceClose[:0]
		m.cur.closeAt, m.cur.closeLo, m.cur.closeHi, m.cur.closeBy, m.cur.resumed = -1, -1, -1, -1, -1
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
			fr, nx, th := u.firstArrivals(m.run, m.match)
			cur.th = th
			u.closeOf(cur, c.reqs[sent[m.lastBlocked]].sent, fr, nx, m.checks, closeTimer)
			cur.resumed = u.resumedAt(m.run)
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
// counted as let through while open.
func (u *upstreamRun) firstArrivals(run []int, match []int32) (first, second, third int32) {
	c := u.c
	byArrival := make([]int, len(run))
	copy(byArrival, run)
	sort.SliceStable(byArrival, func(x, y int) bool { return c.calls[match[byArrival[x]]].t < c.calls[match[byArrival[y]]].t })
	third = -1
	if len(byArrival) > 2 {
		third = match[byArrival[2]]
	}
	qa := byArrival[0]
	return match[qa], match[byArrival[1]], third
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
	var closed []gapRun
	for i := 1; i < len(arr); i++ {
		prevT, t := c.calls[arr[i-1]].t, c.calls[arr[i]].t
		big := t-prevT > gap
		if cur == nil {
			if !big {
				continue
			}
			cur = newCycBounded(u.openBounds(prevT+exp, prevT+exp, arr[i-1]))
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
			closed = append(closed, gapRun{cur, slices.Clone(run)})
			if k := &c.calls[run[0]]; !k.failed && k.hasEnd {
				// No client attribution: the upstream's answer is the
				// nearest sight of the recovery.
				cur.resumed = k.end
			}
			cur, run = nil, run[:0]
		}
	}
	u.gapCloses(closed, exp)
	// Traffic that stopped for good while clients kept sending.
	if cur == nil && len(c.reqs) > 0 {
		last := c.calls[arr[len(arr)-1]].t
		if c.reqs[len(c.reqs)-1].sched-last > gap {
			out = append(out, newCycBounded(u.openBounds(last+exp, last+exp, arr[len(arr)-1])))
		}
	}
	return exp, out
}

// gapRun is a gaps-only cycle and the run of arrivals that closed it.
type gapRun struct {
	cy  *cyc
	run []int32
}

// gapCloses places the closes of the gaps-only cycles. The call that
// ended a gap, let through alone, is read as the trial whose success
// closed the breaker — unless the upstream's cycles show a breaker that
// does not judge such a call: one that failed and was followed by
// traffic at the usual spacing, not by another gap (a breaker that
// judges its trial reopens on its failure; one whose failures expire
// lets the next call through when the next one goes, and a half-open
// admitting several calls lets them through). Then no call after a gap
// is taken for the closing trial: each is the first of the resumed
// traffic, and the close is bounded as a timer's or a quick probe's
// (closeOf). Placed after the walk: one breaker has one shape, and the
// gaps machine's walk never reads a close.
func (u *upstreamRun) gapCloses(closed []gapRun, exp time.Duration) {
	judged := true
	for _, g := range closed {
		if f := g.run[0]; g.cy.admitted[f] && u.c.calls[f].failed {
			judged = false
		}
	}
	for _, g := range closed {
		if !judged {
			delete(g.cy.admitted, g.run[0])
		}
		u.closeFromGaps(g.cy, g.run, exp)
	}
}

// closeFromGaps places the close of cy, whose traffic resumed with the
// run of arrivals run (CloseRunMin of them at the usual spacing exp), by
// the one estimator of a close, closeOf. Without client attribution no
// refusal is seen: the last request the breaker turned away is taken as
// the last arrival the gap is missing, one usual spacing before the run
// began (as the open takes the first missing one after the gap began,
// openBounds). A run that began with a call let through alone after the
// gap (an admission: not right after a passing tagged probe or health
// check) began with the trial: the resumed traffic is the calls after it,
// and the trial's success in the window is what closed the breaker.
func (u *upstreamRun) closeFromGaps(cy *cyc, run []int32, exp time.Duration) {
	c := u.c
	resumed := run
	if cy.admitted[run[0]] {
		resumed = run[1:]
	}
	cy.th = -1
	if len(resumed) > 2 {
		cy.th = resumed[2]
	}
	nx := int32(-1)
	if len(resumed) > 1 {
		nx = resumed[1]
	}
	u.closeOf(cy, c.calls[run[0]].t-exp, resumed[0], nx, true, closeTimer)
}
