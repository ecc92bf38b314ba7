package analysis

import (
	"cmp"
	"sort"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// upstreamRun is what the inference of one upstream works on: its records
// (indexes into the collector's calls and requests), its fault windows,
// its metrics state changes and the run's time frame.
type upstreamRun struct {
	c     *collector
	name  string
	calls []int32 // every call to it, in arrival order
	live  []int32 // its non-health calls
	sent  []int32 // the client requests attributed to it that were sent, in send order
	wins  []window
	mpts  []statePoint
	frame frame
	// reqOf maps a call a client request reached (its index in the
	// collector's calls) to that request; see reqOfCall.
	reqOf *seqTable[int32]
	// cls and match are each sent request's class and the call it
	// reached (-1: none), by position in sent; nil without attribution.
	cls   []uint8
	match []int32
	// fwd is the forwarding hop measured on healthy traffic, lag what
	// the model reads from it (forwarding.go).
	fwd *Forwarding
	// trial is what the upstream's cycles show about its trials
	// (trial.go).
	trial trialFacts
	// failEnds and failUnended index the upstream's failed calls for
	// failedEndedIn: their ends, sorted, and the arrivals of those with
	// no recorded end; built on first use (failed.go).
	failEnds, failUnended []time.Duration
	failIndexed           bool
	// lag is the forwarding lag measured on healthy traffic (forwarding).
	lag fwdLag
	// slack and slackLate are closeSlack and closeSlackLate, or the
	// forwarding hop's jitter measured on this run when it is larger
	// (forwarding.go); set before the state machine runs.
	slack, slackLate time.Duration
	// reached: no client request is routed to the upstream, and its
	// requests are those whose sequence numbers its calls carried (see
	// reachedRequests).
	reached bool
}

// reqOfCall returns the client request that reached call i, if one did
// (i < 0: none).
func (u *upstreamRun) reqOfCall(i int32) (int32, bool) {
	if i < 0 || u.reqOf == nil {
		return -1, false
	}
	return u.reqOf.get(uint64(i))
}

// analyse analyses one upstream, given the client requests attributed to
// it: attribution, the open/close state machine, episodes, Retry-After,
// metrics and health cross-checks.
func (u *upstreamRun) analyse(a *Analysis, reqs []int32) *UpstreamAnalysis {
	name := u.name
	ua := &UpstreamAnalysis{Name: name, Faulted: len(u.wins) > 0, Episodes: []*Episode{}, UnprovokedOpens: []*Cycle{},
		MetricsTransitions: []MetricsTransition{}, HealthDisagreements: []Disagreement{}}
	tl := &UpstreamTimeline{}
	a.Timeline.Upstreams[name] = tl
	n := a.Timeline.Seconds
	tl.OK, tl.Failed, tl.HealthOK, tl.HealthFailed = make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)

	u.countCalls(ua, tl, n)
	u.clientFigures(ua, reqs)
	cycles := u.cycles(ua)
	ua.Forwarding = u.fwd
	u.metricsStates(ua, tl)
	opens := u.episodes(ua, tl, cycles, reqs)
	for _, p := range cyclesProbes(ua) {
		if len(tl.Probes) < 5000 {
			tl.Probes = append(tl.Probes, p)
		}
	}
	u.healthDisagreement(ua, opens)
	return ua
}

// countCalls counts the upstream's calls (live and health checks) into ua
// and the timeline's n one-second bins, and keeps the live ones (u.live).
func (u *upstreamRun) countCalls(ua *UpstreamAnalysis, tl *UpstreamTimeline, n int) {
	c := u.c
	u.live = make([]int32, 0, len(u.calls))
	for _, i := range u.calls {
		k := &c.calls[i]
		s := int(k.t / time.Second)
		if k.health {
			ua.HealthChecks++
			if s >= 0 && s < n {
				if k.failed {
					tl.HealthFailed[s]++
				} else {
					tl.HealthOK[s]++
				}
			}
			continue
		}
		u.live = append(u.live, i)
		ua.Calls++
		if k.failed {
			ua.Failed++
		}
		if k.tagged {
			ua.TaggedProbes++
		}
		if s >= 0 && s < n && !k.tagged {
			if k.failed {
				tl.Failed[s]++
			} else {
				tl.OK[s]++
			}
		}
	}
}

// clientFigures keeps the client requests that were sent, in send order
// (u.sent), and sets the client figures: requests, amplification,
// success before and during the faults, the expected interval.
func (u *upstreamRun) clientFigures(ua *UpstreamAnalysis, reqs []int32) {
	c := u.c
	// Client requests that were sent, in send order.
	u.sent = make([]int32, 0, len(reqs))
	for _, i := range reqs {
		if c.reqs[i].sent > 0 {
			u.sent = append(u.sent, i)
		}
	}
	sent := u.sent
	sortStableNearly(sent, func(x, y int32) int { return cmp.Compare(c.reqs[x].sent, c.reqs[y].sent) })
	ua.ClientRequests = int64(len(sent))
	ua.Amplification = ratio(ua.Calls, ua.ClientRequests)

	var okB, nB, okD, nD int64
	for _, i := range sent {
		r := &c.reqs[i]
		ok := r.outcome == outOK
		switch {
		case u.frame.faultStart < 0 || r.sched < u.frame.faultStart:
			nB++
			if ok {
				okB++
			}
		case r.sched < u.frame.faultEnd:
			nD++
			if ok {
				okD++
			}
		}
	}
	ua.SuccessBefore, ua.SuccessDuring = ratio(okB, nB), ratio(okD, nD)

	// Expected interval between live calls at the replay rate.
	if len(sent) > 1 {
		span := c.reqs[sent[len(sent)-1]].sent - c.reqs[sent[0]].sent
		ua.ExpectedIntervalS = Ptr(seconds(span / time.Duration(len(sent)-1)))
	}

}

// cycles finds the upstream's black-box open/close cycles by the best
// attribution the journal allows (sequence numbers, time matching, or
// gaps in the calls alone), and sets ua.Routing to which.
func (u *upstreamRun) cycles(ua *UpstreamAnalysis) []*cyc {
	c, sent := u.c, u.sent
	var cycles []*cyc
	hasSeq := false
	for _, i := range u.live {
		if c.calls[i].hasSeq {
			hasSeq = true
			break
		}
	}
	switch {
	case u.reached:
		// Its requests reached it by construction: that one did not
		// says nothing of a breaker (the gateway sent it only the
		// requests that failed elsewhere), so open and close are read
		// from gaps in its calls, as without attribution.
		ua.Routing = "seq_reached"
		cycles = u.gapCycles(ua)
	case len(sent) > 0 && hasSeq:
		ua.Routing = "seq"
		u.cls, u.match = u.classifySeq()
		cycles = u.machine(u.cls, u.match)
	case len(sent) > 0:
		ua.Routing = "time_match"
		u.cls, u.match = u.classifyTime()
		cycles = u.machine(u.cls, u.match)
	default:
		ua.Routing = "gaps_only"
		cycles = u.gapCycles(ua)
	}
	return cycles
}

// gapCycles finds open/close cycles in the gaps of the upstream's calls
// alone, keeping those that begin inside one of its fault windows.
func (u *upstreamRun) gapCycles(ua *UpstreamAnalysis) []*cyc {
	exp, cycles := u.gapMachine()
	if exp > 0 {
		ua.ExpectedIntervalS = Ptr(seconds(exp))
	}
	// Without client attribution a quiet upstream (a fallback that only
	// gets traffic while the primary is open, a route the capture
	// rarely uses) looks like an open one: keep only gaps that begin
	// inside a fault episode.
	kept := cycles[:0]
	for _, cy := range cycles {
		for _, w := range u.wins {
			if cy.openAt >= w.start && cy.openAt < w.end {
				kept = append(kept, cy)
				break
			}
		}
	}
	return kept
}

// reachedRequests returns, for each upstream that no client request is
// routed to (routed, by name) but whose live calls carry sequence
// numbers, the client requests of those numbers in log order: the
// requests a fallback, a mirror or a hedge target served. Without them
// such an upstream had no client requests, and its calls, though each
// names its request, were read as gaps alone.
func (c *collector) reachedRequests(routed map[string][]int32) map[string][]int32 {
	var bySeq func(uint64) (int, bool)
	seen := map[string][]bool{} // by upstream, by request: linear, and in log order below
	isRouted := map[name]bool{} // by handle: no string hashed per call
	for i := range c.calls {
		k := &c.calls[i]
		if !k.hasSeq || k.health {
			continue
		}
		r, ok := isRouted[k.upstream]
		if !ok {
			r = len(routed[k.upstream.Value()]) > 0
			isRouted[k.upstream] = r
		}
		if r {
			continue
		}
		name := k.upstream.Value()
		if bySeq == nil {
			bySeq = c.seqIndex() // built only when some upstream needs it
		}
		ri, ok := bySeq(k.seq)
		if !ok {
			continue
		}
		if seen[name] == nil {
			seen[name] = make([]bool, len(c.reqs))
		}
		seen[name][ri] = true
	}
	out := make(map[string][]int32, len(seen))
	for name, set := range seen {
		var reqs []int32
		for ri, ok := range set {
			if ok {
				reqs = append(reqs, int32(ri))
			}
		}
		out[name] = reqs
	}
	return out
}

// metricsStates lists the breaker transitions the gateway's metrics
// reported and the states they held, for the timeline.
func (u *upstreamRun) metricsStates(ua *UpstreamAnalysis, tl *UpstreamTimeline) {
	runEnd := u.frame.end
	// Metrics transitions.
	mpts := u.mpts
	for i := 1; i < len(mpts) && len(ua.MetricsTransitions) < maxListed; i++ {
		ua.MetricsTransitions = append(ua.MetricsTransitions, MetricsTransition{AtS: seconds(mpts[i].t), From: mpts[i-1].state, To: mpts[i].state})
	}
	for i, p := range mpts {
		end := runEnd
		if i+1 < len(mpts) {
			end = mpts[i+1].t
		}
		tl.Metrics = append(tl.Metrics, StateInterval{StartS: seconds(p.t), EndS: seconds(end), State: p.state})
	}

}

// episodes turns the cycles into the upstream's fault episodes (a cycle
// opened outside every fault window is an unprovoked open), computes each
// episode's figures, and returns the black-box open intervals.
func (u *upstreamRun) episodes(ua *UpstreamAnalysis, tl *UpstreamTimeline, cycles []*cyc, reqs []int32) [][2]time.Duration {
	c, wins, runEnd := u.c, u.wins, u.frame.end
	var opens [][2]time.Duration // black-box open intervals, for health
	// Calls repeating a client request: the replayer's re-sends (from
	// client.request resent) or the gateway transport's.
	sends := map[uint64]int{}
	for _, i := range reqs {
		if n := c.reqs[i].sends; n > 1 {
			sends[c.reqs[i].seq] = n
		}
	}
	rep := u.repeats(sends)
	u.trial = u.trialFacts(cycles)

	// Episodes a load shedder turned requests away in have no cycles
	// (shedding.go).
	shed := make([]string, len(wins))
	for j, w := range wins {
		if ok, why := u.shedding(w, u.spanEnd(j)); ok {
			shed[j] = why
		}
	}
	// Cycles to episodes.
	var prevClose time.Duration
	for _, cy := range cycles {
		segStart := prevClose
		epi := -1
		for j := len(wins) - 1; j >= 0; j-- {
			if cy.openAt >= wins[j].start {
				epi = j
				break
			}
		}
		if epi >= 0 && shed[epi] != "" {
			continue
		}
		if epi >= 0 && wins[epi].start > segStart {
			segStart = wins[epi].start
		}
		out := u.cycleFigures(cy, segStart, epi >= 0 && segStart == wins[epi].start, rep)
		closeAt := runEnd
		if cy.closeAt >= 0 {
			closeAt = cy.closeAt
			prevClose = cy.closeAt
		}
		tl.Open = append(tl.Open, StateInterval{StartS: out.OpenedAtS, EndS: seconds(closeAt), State: journal.StateOpen, EndBounds: out.CloseBoundsS})
		opens = append(opens, [2]time.Duration{cy.openAt, closeAt})
		if epi < 0 {
			ua.UnprovokedOpens = append(ua.UnprovokedOpens, out)
			continue
		}
		for len(ua.Episodes) <= epi {
			ua.Episodes = append(ua.Episodes, nil)
		}
		if ua.Episodes[epi] == nil {
			ua.Episodes[epi] = &Episode{}
		}
		ua.Episodes[epi].Cycles = append(ua.Episodes[epi].Cycles, out)
	}
	for len(ua.Episodes) < len(wins) {
		ua.Episodes = append(ua.Episodes, nil)
	}
	for j, w := range wins {
		if ua.Episodes[j] == nil {
			ua.Episodes[j] = &Episode{}
		}
		u.resumeCooldowns(ua.Episodes[j])
		u.episode(ua.Episodes[j], w, u.spanEnd(j))
		u.probeSpacingBounds(ua.Episodes[j], u.spanEnd(j))
		if shed[j] != "" {
			u.sheddingFigures(ua.Episodes[j], w, u.spanEnd(j), shed[j])
		}
	}
	return opens
}

// spanEnd is where episode j's figures end: the next episode's start, or
// past the run's end.
func (u *upstreamRun) spanEnd(j int) time.Duration {
	if j+1 < len(u.wins) {
		return u.wins[j+1].start
	}
	return u.frame.end + 1
}

func cyclesProbes(ua *UpstreamAnalysis) []Probe {
	var out []Probe
	for _, e := range ua.Episodes {
		for _, cy := range e.Cycles {
			out = append(out, cy.Probes...)
		}
	}
	for _, cy := range ua.UnprovokedOpens {
		out = append(out, cy.Probes...)
	}
	return out
}

// liveSeqTable returns an empty table for the sequence numbers of the
// upstream's live calls.
func (u *upstreamRun) liveSeqTable() *seqTable[int32] {
	var top uint64
	n := 0
	for _, i := range u.live {
		if k := &u.c.calls[i]; k.hasSeq {
			top = max(top, k.seq)
			n++
		}
	}
	return newSeqTable[int32](n, top)
}

// classifySeq marks each sent request blocked, passed or probe by its
// forwarded sequence number: the first non-health call carrying it.
func (u *upstreamRun) classifySeq() ([]uint8, []int32) {
	c, sent, live := u.c, u.sent, u.live
	first := u.liveSeqTable()
	for _, i := range live {
		k := &c.calls[i]
		if k.hasSeq {
			if _, ok := first.get(k.seq); !ok {
				first.set(k.seq, i)
			}
		}
	}
	cls := make([]uint8, len(sent))
	match := make([]int32, len(sent))
	for j, ri := range sent {
		match[j] = -1
		if k, ok := first.get(c.reqs[ri].seq); ok {
			match[j] = k
			cls[j] = clsPassed
			if c.calls[k].tagged {
				cls[j] = clsProbe
			}
		}
	}
	return cls, match
}

// classifyTime matches requests to non-health calls greedily in time: a
// request is forwarded if an unmatched call arrived between its send and
// its end.
func (u *upstreamRun) classifyTime() ([]uint8, []int32) {
	c, sent, live := u.c, u.sent, u.live
	cls := make([]uint8, len(sent))
	match := make([]int32, len(sent))
	p := 0
	for j, ri := range sent {
		r := &c.reqs[ri]
		match[j] = -1
		end := r.done
		if end <= r.sent {
			end = r.sent + 30*time.Second
		}
		for p < len(live) && c.calls[live[p]].t < r.sent {
			p++
		}
		if p < len(live) && c.calls[live[p]].t <= end {
			k := live[p]
			match[j] = k
			cls[j] = clsPassed
			if c.calls[k].tagged {
				cls[j] = clsProbe
			}
			p++
		}
	}
	return cls, match
}

// lastCallBefore returns the last call to the upstream (any kind) that
// arrived before t, or -1.
func (u *upstreamRun) lastCallBefore(t time.Duration) int32 {
	ci := u.calls
	j := sort.Search(len(ci), func(i int) bool { return u.c.calls[ci[i]].t >= t })
	if j == 0 {
		return -1
	}
	return ci[j-1]
}
