package reports

import (
	"slices"
	"sort"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// upstream analyses one upstream: attribution, the open/close state
// machine, episodes, Retry-After, metrics and health cross-checks.
func (c *collector) upstream(a *Analysis, name string, u uint16, ci, ri []int32, wins []window, runEnd, durStart, durEnd int64) *UpstreamAnalysis {
	ua := &UpstreamAnalysis{Name: name, Faulted: len(wins) > 0, Episodes: []*Episode{}, UnprovokedOpens: []*Cycle{},
		MetricsTransitions: []MetricsTransition{}, HealthDisagreements: []Disagreement{}}
	tl := &UpstreamTimeline{}
	a.Timeline.Upstreams[name] = tl
	n := a.Timeline.Seconds
	tl.OK, tl.Failed, tl.HealthOK, tl.HealthFailed = make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)

	var live []int32 // non-health calls
	for _, i := range ci {
		k := &c.calls[i]
		s := int(k.t / int64(time.Second))
		if k.health() {
			ua.HealthChecks++
			if s >= 0 && s < n {
				if k.failed() {
					tl.HealthFailed[s]++
				} else {
					tl.HealthOK[s]++
				}
			}
			continue
		}
		live = append(live, i)
		ua.Calls++
		if k.failed() {
			ua.Failed++
		}
		if k.tagged() {
			ua.TaggedProbes++
		}
		if s >= 0 && s < n && !k.tagged() {
			if k.failed() {
				tl.Failed[s]++
			} else {
				tl.OK[s]++
			}
		}
	}
	// Client requests that were sent, in send order.
	var sent []int32
	for _, i := range ri {
		if c.reqs[i].sent() > 0 {
			sent = append(sent, i)
		}
	}
	slices.SortStableFunc(sent, func(x, y int32) int { return cmp64(c.reqs[x].sent(), c.reqs[y].sent()) })
	ua.ClientRequests = int64(len(sent))
	ua.Amplification = ratio(ua.Calls, ua.ClientRequests)

	okID := c.outcomes.ids[string(journal.OutcomeOK)]
	var okB, nB, okD, nD int64
	for _, i := range sent {
		r := &c.reqs[i]
		ok := okID != 0 && r.outcome == okID
		switch {
		case durStart < 0 || r.sched < durStart:
			nB++
			if ok {
				okB++
			}
		case r.sched < durEnd:
			nD++
			if ok {
				okD++
			}
		}
	}
	ua.SuccessBefore, ua.SuccessDuring = ratio(okB, nB), ratio(okD, nD)

	// Expected interval between live calls at the replay rate.
	if len(sent) > 1 {
		span := c.reqs[sent[len(sent)-1]].sent() - c.reqs[sent[0]].sent()
		ua.ExpectedIntervalS = ptr(round3(seconds(time.Duration(span)) / float64(len(sent)-1)))
	}

	var cycles []*cyc
	hasSeq := false
	for _, i := range live {
		if c.calls[i].hasSeq() {
			hasSeq = true
			break
		}
	}
	switch {
	case len(sent) > 0 && hasSeq:
		ua.Routing = "seq"
		cls, match := c.classifySeq(sent, live)
		cycles = c.machine(cls, match, sent, ci)
	case len(sent) > 0:
		ua.Routing = "time_match"
		cls, match := c.classifyTime(sent, live)
		cycles = c.machine(cls, match, sent, ci)
	default:
		ua.Routing = "gaps_only"
		var exp int64
		exp, cycles = c.gapMachine(live, ci, wins)
		if exp > 0 {
			ua.ExpectedIntervalS = ptr(round3(seconds(time.Duration(exp))))
		}
		// Without client attribution a quiet upstream (a fallback that only
		// gets traffic while the primary is open, a route the capture
		// rarely uses) looks like an open one: keep only gaps that begin
		// inside a fault episode.
		kept := cycles[:0]
		for _, cy := range cycles {
			for _, w := range wins {
				if cy.openAt >= w.start && cy.openAt < w.end {
					kept = append(kept, cy)
					break
				}
			}
		}
		cycles = kept
	}

	// Metrics transitions.
	mpts := c.metrics[name]
	for i := 1; i < len(mpts) && len(ua.MetricsTransitions) < maxListed; i++ {
		ua.MetricsTransitions = append(ua.MetricsTransitions, MetricsTransition{AtS: seconds(time.Duration(mpts[i].t)), From: mpts[i-1].state, To: mpts[i].state})
	}
	for i, p := range mpts {
		end := runEnd
		if i+1 < len(mpts) {
			end = mpts[i+1].t
		}
		tl.Metrics = append(tl.Metrics, StateInterval{StartS: seconds(time.Duration(p.t)), EndS: seconds(time.Duration(end)), State: p.state})
	}

	// Cycles to episodes.
	var prevClose int64
	for ci2, cy := range cycles {
		segStart := prevClose
		epi := -1
		for j := len(wins) - 1; j >= 0; j-- {
			if cy.openAt >= wins[j].start {
				epi = j
				break
			}
		}
		if epi >= 0 && wins[epi].start > segStart {
			segStart = wins[epi].start
		}
		out := c.cycleFigures(cy, segStart, ci, runEnd)
		closeAt := runEnd
		if cy.closeAt >= 0 {
			closeAt = cy.closeAt
			prevClose = cy.closeAt
		}
		tl.Open = append(tl.Open, StateInterval{StartS: out.OpenedAtS, EndS: seconds(time.Duration(closeAt)), State: journal.StateOpen})
		_ = ci2
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
		spanEnd := runEnd + 1
		if j+1 < len(wins) {
			spanEnd = wins[j+1].start
		}
		c.episode(ua.Episodes[j], w, spanEnd, live, sent, mpts, runEnd)
	}
	for _, p := range cyclesProbes(ua) {
		if len(tl.Probes) < 5000 {
			tl.Probes = append(tl.Probes, p)
		}
	}
	c.healthDisagreement(ua, ci, mpts, tl.Open, runEnd)
	return ua
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

// classifySeq marks each sent request blocked, passed or probe by its
// forwarded sequence number: the first non-health call carrying it.
func (c *collector) classifySeq(sent, live []int32) ([]uint8, []int32) {
	first := make(map[uint64]int32, len(live))
	for _, i := range live {
		k := &c.calls[i]
		if k.hasSeq() {
			if _, ok := first[k.seq]; !ok {
				first[k.seq] = i
			}
		}
	}
	cls := make([]uint8, len(sent))
	match := make([]int32, len(sent))
	for j, ri := range sent {
		match[j] = -1
		if k, ok := first[c.reqs[ri].seq]; ok {
			match[j] = k
			cls[j] = clsPassed
			if c.calls[k].tagged() {
				cls[j] = clsProbe
			}
		}
	}
	return cls, match
}

// classifyTime matches requests to non-health calls greedily in time: a
// request is forwarded if an unmatched call arrived between its send and
// its end.
func (c *collector) classifyTime(sent, live []int32) ([]uint8, []int32) {
	cls := make([]uint8, len(sent))
	match := make([]int32, len(sent))
	p := 0
	for j, ri := range sent {
		r := &c.reqs[ri]
		match[j] = -1
		end := r.done()
		if end <= r.sent() {
			end = r.sent() + int64(30*time.Second)
		}
		for p < len(live) && c.calls[live[p]].t < r.sent() {
			p++
		}
		if p < len(live) && c.calls[live[p]].t <= end {
			k := live[p]
			match[j] = k
			cls[j] = clsPassed
			if c.calls[k].tagged() {
				cls[j] = clsProbe
			}
			p++
		}
	}
	return cls, match
}

// lastCallBefore returns the last call of ci (any kind) that arrived
// before t, or -1.
func (c *collector) lastCallBefore(ci []int32, t int64) int32 {
	j := sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= t })
	if j == 0 {
		return -1
	}
	return ci[j-1]
}
