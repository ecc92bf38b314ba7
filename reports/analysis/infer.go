package analysis

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/halfopen/rehearse/reports/expect"

	"github.com/halfopen/rehearse/reports/num"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/journal"
)

// Tuning of the black-box inference; docs/analysis.md explains each.
const (
	// OpenRunMin consecutive client requests for an upstream that were
	// not forwarded to it mean its breaker is open.
	OpenRunMin = 2
	// CloseRunMin consecutive forwarded requests mean it closed again.
	CloseRunMin = 3
	// GapFactor: without client attribution, a gap in live arrivals longer
	// than GapFactor × the expected interval (and at least MinGap) means
	// the upstream stopped receiving live traffic.
	GapFactor = 4
	// MinGap is the least gap that counts as "stopped", in gaps-only mode.
	MinGap = time.Second
	// RetryAfterSlack forgives a call this much earlier than a 429's
	// Retry-After allowed (clock and rounding noise between processes).
	RetryAfterSlack = 50 * time.Millisecond
	// maxListed caps the per-item lists in run.json (probes, 429s).
	maxListed = 200
	// maxTimelineSeconds bounds the timeline's per-second bins (48 h).
	MaxTimelineSeconds = 48 * 3600
)

// request classes.
const (
	clsBlocked uint8 = iota
	clsPassed
	clsProbe
)

type window struct {
	start, end time.Duration
	names      []string
	types      []string
	endedByRun bool
}

type cyc struct {
	openAt, closeAt time.Duration // closeAt < 0: never closed
	// openHi > openAt: the latest failure that may have tripped it.
	openHi      time.Duration
	blocked, ff int64
	// admitted are the calls the open breaker let through (call indexes):
	// live probes, or a ramp's share of the traffic.
	admitted map[int32]bool
	// closeLo ≤ closeAt ≤ closeHi bound the close and closeAt is the
	// estimate (≤ the first resumed call); closeHi < 0: no latest seen.
	// closeBy is the successful call whose end closed it, -1 when none
	// did (the breaker closed on a timer: failures expired, a ramp
	// ended); closeKind says which evidence placed it (closeOf).
	closeLo, closeHi time.Duration
	closeBy          int32
	closeKind        uint8
	// sinceClose are the passed calls after the (tentative) close.
	sinceClose []int32
	// blockedAt are the send times of the blocked requests, in order;
	// blockedDone when each one's answer came back (0: it never did),
	// blockedFF whether it was a recognised fast-fail.
	blockedAt, blockedDone []time.Duration
	blockedFF              []bool
	// failureDriven: calls failed before the open. Such a breaker opens
	// again only after failures.
	failureDriven bool
	// maybeProbe: the call after which traffic resumed was alone in
	// flight; it may have been a probe.
	maybeProbe bool
	// lb, fr, nx are what closeOf placed the close from (the last blocked
	// request's send, the first resumed call and the one after it): the
	// close window the checks' coincidence and the trial rule read.
	lb     time.Duration
	fr, nx int32
	// th is the third resumed call to arrive (-1: none).
	th int32
	// checkChance ≥ 0: closed on a passing check although the checks
	// passed throughout; the chance that this was coincidence.
	checkChance float64
	// resumed is when the first request of the traffic that resumed
	// after the last one turned away got its successful answer back
	// (-1: none did): what users saw of the recovery (Observed).
	resumed time.Duration
	// early are calls let through with a trial, before its failure
	// (mergeHeldTrials): neither probes nor leaks.
	early map[int32]bool
}

// newCycBounded is a cycle whose open is known to [openAt, openHi].
func newCycBounded(openAt, openHi time.Duration) *cyc {
	return &cyc{openAt: openAt, openHi: openHi, closeAt: -1, closeLo: -1, closeHi: -1, closeBy: -1, admitted: map[int32]bool{}, checkChance: -1, th: -1, fr: -1, nx: -1, resumed: -1}
}

func (c *collector) finish() (*Analysis, error) {
	if c.events == 0 {
		return nil, fmt.Errorf("%w: %w", rehearse.ErrInvalid, ErrNoJournal)
	}
	a := &Analysis{
		Schema:       SchemaVersion,
		Phases:       map[string]*PhaseStats{},
		Upstreams:    map[string]*UpstreamAnalysis{},
		Notes:        []string{},
		Expectations: []expect.ExpectationResult{},
	}
	runEnd := c.lastT
	c.runInfo(a, runEnd)

	sortStableNearly(c.calls, func(x, y call) int { return cmp.Compare(x.t, y.t) })
	sortStableNearly(c.reqs, func(x, y creq) int { return cmp.Compare(x.sched, y.sched) })
	c.markAbandoned()
	c.markCut(a)

	wins := c.windows(runEnd)
	fr := frame{end: runEnd, faultStart: -1, faultEnd: -1}
	for _, ws := range wins {
		for _, w := range ws {
			if fr.faultStart < 0 || w.start < fr.faultStart {
				fr.faultStart = w.start
			}
			fr.faultEnd = max(fr.faultEnd, w.end)
		}
	}
	c.replayStats(a)
	c.gatewayGone(a)
	c.phases(a, fr)
	reqUp := c.routeUpstreams(a)

	tl := c.timeline(a, runEnd)
	c.warm.figures(a, runEnd)
	c.analyseUpstreams(a, reqUp, wins, fr)
	a.Resilience = c.resilience(a, wins, int64(fr.faultStart), int64(fr.faultEnd))
	c.failovers(a, wins, fr)
	c.giveUps(a)
	c.healthFigures(a, tl, runEnd)
	if c.start != nil {
		c.plan(a)
	}
	c.annotate(a)
	return a, nil
}

// timeline sets up the run's timeline: its one-second bins (capped, with
// a note), the client outcomes and the fault windows.
func (c *collector) timeline(a *Analysis, runEnd time.Duration) *Timeline {
	secs := runEnd/time.Second + 1
	if secs > MaxTimelineSeconds {
		secs = MaxTimelineSeconds
		a.Notes = append(a.Notes, fmt.Sprintf("the run is longer than %d hours: the timeline shows its first %d hours", MaxTimelineSeconds/3600, MaxTimelineSeconds/3600))
	}
	tl := &Timeline{Seconds: int(secs), Client: map[string][]int32{}, Upstreams: map[string]*UpstreamTimeline{}}
	a.Timeline = tl
	c.clientTimeline(tl)
	for _, f := range c.faults {
		end := f.end
		if end < 0 {
			end = runEnd
			if f.planned > 0 && f.start+f.planned < runEnd {
				end = f.start + f.planned
			}
		}
		tl.Faults = append(tl.Faults, FaultWindow{Name: f.name, Type: f.typ, Upstream: f.upstream, StartS: seconds(f.start), EndS: seconds(end)})
	}

	return tl
}

// analyseUpstreams analyses each upstream that saw calls, client requests, a
// fault or was named by run.start.
func (c *collector) analyseUpstreams(a *Analysis, reqUp []name, wins map[string][]window, fr frame) {
	// Counted first, so that each list is allocated once at its size.
	nCalls, nReqs := map[name]int{}, map[name]int{}
	for i := range c.calls {
		nCalls[c.calls[i].upstream]++
	}
	for i := range c.reqs {
		if u := reqUp[i]; u != noName {
			nReqs[u]++
		}
	}
	callsBy := make(map[string][]int32, len(nCalls))
	for u, n := range nCalls {
		callsBy[u.Value()] = make([]int32, 0, n)
	}
	reqsBy := make(map[string][]int32, len(nReqs))
	for u, n := range nReqs {
		reqsBy[u.Value()] = make([]int32, 0, n)
	}
	for i := range c.calls {
		u := c.calls[i].upstream.Value()
		callsBy[u] = append(callsBy[u], int32(i))
	}
	for i := range c.reqs {
		if u := reqUp[i]; u != noName {
			reqsBy[u.Value()] = append(reqsBy[u.Value()], int32(i))
		}
	}
	reached := c.reachedRequests(reqsBy)
	for _, name := range c.upstreams {
		if len(callsBy[name]) == 0 && len(reqsBy[name]) == 0 && len(wins[name]) == 0 && !c.upNames[name] {
			continue
		}
		u := &upstreamRun{c: c, name: name, calls: callsBy[name], wins: wins[name], mpts: c.metrics[name], frame: fr,
			slack: closeSlack, slackLate: closeSlackLate}
		reqs := reqsBy[name]
		if r, ok := reached[name]; ok {
			reqs, u.reached = r, true
		}
		a.Upstreams[name] = u.analyse(a, reqs)
	}
}

// healthFigures sets the gateway's health over the run and its unhealthy
// intervals.
func (c *collector) healthFigures(a *Analysis, tl *Timeline, runEnd time.Duration) {
	for _, h := range healthIntervals(c.health, runEnd) {
		tl.Health = append(tl.Health, h)
		if h.State == "unhealthy" {
			a.Health.Intervals = append(a.Health.Intervals, h)
		}
	}
	if a.Health.Intervals == nil {
		a.Health.Intervals = []StateInterval{}
	}
	a.Health.Samples, a.Health.Unhealthy = c.healthN, c.healthBad

}

// plan reads what run.start planned: the expectations (an unreadable
// section is a failed expectation and a note) and the faults that never
// started.
func (c *collector) plan(a *Analysis) {
	exp, err := c.expectations()
	if err != nil {
		a.Notes = append(a.Notes, "the expectations in run.start's config cannot be read: "+err.Error())
		a.Expectations = append(a.Expectations, expect.ExpectationResult{Name: "expectations", Passed: false,
			Observed: "unreadable", Want: "valid expectations", Message: err.Error()})
	}
	a.Expected = exp
	a.Unstarted = c.unstarted()
	if len(a.Unstarted) > 0 {
		names := make([]string, len(a.Unstarted))
		for i, f := range a.Unstarted {
			names[i] = fmt.Sprintf("%s on %s at %s", f.Label(), f.Upstream, f.At)
		}
		a.Notes = append(a.Notes, fmt.Sprintf("%d planned faults never started (the run ended first): %s", len(names), strings.Join(names, ", ")))
	}
}

// unstarted returns the faults run.start's config planned that have no
// fault.start in the journal: per upstream, the planned faults beyond the
// number that started, latest first to go.
func (c *collector) unstarted() []expect.PlannedFault {
	if c.cfg == nil {
		return nil
	}
	var planned []expect.PlannedFault
	for _, f := range c.cfg.Faults {
		pf := expect.PlannedFault{Name: f.Name, Type: f.Type, Upstream: f.Upstream}
		if len(f.At) > 0 && json.Unmarshal(f.At, &pf.At) != nil {
			return nil
		}
		planned = append(planned, pf)
	}
	started := map[string]int{}
	for _, f := range c.faults {
		started[f.upstream]++
	}
	by := map[string][]expect.PlannedFault{}
	for _, f := range planned {
		by[f.Upstream] = append(by[f.Upstream], f)
	}
	var out []expect.PlannedFault
	for _, u := range slices.Sorted(maps.Keys(by)) {
		fs := by[u]
		slices.SortStableFunc(fs, func(x, y expect.PlannedFault) int { return cmp.Compare(x.At, y.At) })
		if n := started[u]; n < len(fs) {
			out = append(out, fs[n:]...)
		}
	}
	return out
}

// frame is the run's time frame: its end, and the span from the first
// fault's start to the last one's end (-1 without faults).
type frame struct {
	end                  time.Duration
	faultStart, faultEnd time.Duration
}

func (c *collector) runInfo(a *Analysis, runEnd time.Duration) {
	ri := &a.Run
	ri.Events, ri.UnknownEvents, ri.TornTail = c.events, c.unknown, c.torn
	ri.DurationS = seconds(runEnd)
	if s := c.start; s != nil {
		ri.RunID, ri.Scenario, ri.ScenarioFile, ri.Seed = s.RunID, s.Scenario, s.ScenarioFile, s.Seed
		ri.ScenarioDigest = s.ScenarioDigest
		ri.WallStart, ri.Version, ri.Target, ri.RatePerS = s.WallStart, s.Version, redact.URL(s.Target), s.Rate
		ri.PlannedS = seconds(s.Duration)
		ri.TimeZone = s.TimeZone
		if p := s.Platform; p != nil {
			pi := &PlatformInfo{OS: p.OS, Arch: p.Arch, Kernel: p.Kernel, CPU: p.CPU, NumCPU: p.NumCPU,
				GOMAXPROCS: p.GOMAXPROCS, GoVersion: p.GoVersion, Hostname: p.Hostname, TCPKeepalive: p.TCPKeepalive}
			if tg := p.TimerGranularity; tg != nil {
				pi.TimerSamples = tg.Samples
				pi.TimerP50Ms, pi.TimerP99Ms, pi.TimerMaxMs = Ptr(ms(tg.P50)), Ptr(ms(tg.P99)), Ptr(ms(tg.Max))
			}
			pi.TimerDuringRun, pi.LoadDuringRun = duringRun(c.platform)
			a.Platform = pi
		}
	} else {
		a.Notes = append(a.Notes, "the journal has no run.start event: run metadata and expectations are unknown")
	}
	switch e := c.end; {
	case e == nil:
		ri.Partial, ri.EndReason = true, "missing"
		a.Notes = append(a.Notes, "the journal has no run.end event: the run died or is still running; figures cover what was recorded")
	default:
		ri.EndReason, ri.EndError = e.Reason, e.Error
		ri.Partial = e.Partial || e.Reason != journal.EndCompleted
		if ri.Partial {
			a.Notes = append(a.Notes, fmt.Sprintf("the run ended early (%s): figures cover what was recorded", e.Reason))
		}
	}
	if c.torn {
		a.Notes = append(a.Notes, "the journal's last line was torn (written when the run was killed) and was skipped")
	}
}

// ms converts to float milliseconds rounded to the microsecond.
func ms(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)) / float64(time.Millisecond)
}

// windows merges each upstream's fault windows; a fault without fault.end
// lasts its planned length or to the run's end.
func (c *collector) windows(runEnd time.Duration) map[string][]window {
	by := map[string][]faultRec{}
	for _, f := range c.faults {
		by[f.upstream] = append(by[f.upstream], f)
	}
	out := map[string][]window{}
	for u, fs := range by {
		slices.SortStableFunc(fs, func(x, y faultRec) int { return cmp.Compare(x.start, y.start) })
		var ws []window
		for _, f := range fs {
			end, byRun := f.end, false
			if end < 0 {
				end, byRun = runEnd, true
				if f.planned > 0 && f.start+f.planned < runEnd {
					end, byRun = f.start+f.planned, false
				}
			}
			end = max(end, f.start)
			if n := len(ws); n > 0 && f.start <= ws[n-1].end {
				w := &ws[n-1]
				w.end = max(w.end, end)
				w.endedByRun = w.endedByRun || byRun
				w.names = append(w.names, f.name)
				if !slices.Contains(w.types, f.typ) {
					w.types = append(w.types, f.typ)
				}
				continue
			}
			ws = append(ws, window{start: f.start, end: end, names: []string{f.name}, types: []string{f.typ}, endedByRun: byRun})
		}
		out[u] = ws
	}
	return out
}

func ratio(n, d int64) *float64 {
	if d == 0 {
		return nil
	}
	return Ptr(num.Round3(float64(n) / float64(d)))
}

// routeUpstreams attributes each client request to an upstream: the
// request's own upstream field, else the upstream its route reaches most
// often by forwarded sequence numbers. It returns one interned upstream per
// request (0 = unknown).
func (c *collector) routeUpstreams(a *Analysis) []name {
	out := make([]name, len(c.reqs))
	routeUp := map[name]name{}
	direct := false
	for i := range c.reqs {
		if c.reqs[i].upstream != noName {
			direct = true
			routeUp[c.reqs[i].route] = c.reqs[i].upstream
		}
	}
	if a.Replay.SeqForwarded {
		bySeq := c.seqIndex()
		type vote struct{ route, upstream name }
		votes := map[vote]int{}
		seen := make([]bool, len(c.reqs)) // by the first request of a number: the number's first call votes
		for i := range c.calls {
			k := &c.calls[i]
			if !k.hasSeq || k.health {
				continue
			}
			if ri, ok := bySeq(k.seq); ok && !seen[ri] {
				seen[ri] = true
				votes[vote{c.reqs[ri].route, k.upstream}]++
			}
		}
		best := map[name]int{}
		for v, n := range votes {
			if _, ok := routeUp[v.route]; ok && direct {
				continue
			}
			// Ties go to the upstream mentioned first in the journal.
			if cur, ok := routeUp[v.route]; !ok || n > best[v.route] || (n == best[v.route] && c.upOrder[v.upstream.Value()] < c.upOrder[cur.Value()]) {
				best[v.route] = n
				routeUp[v.route] = v.upstream
			}
		}
	}
	known := 0
	for i := range c.reqs {
		u := c.reqs[i].upstream
		if u == noName {
			if r, ok := routeUp[c.reqs[i].route]; ok {
				u = r
			}
		}
		out[i] = u
		if u != noName {
			known++
		}
	}
	if len(c.reqs) > 0 && known == 0 {
		a.Notes = append(a.Notes, "client requests could not be attributed to upstreams (no upstream in client.request, no forwarded sequence header): breakers are inferred from gaps in upstream arrivals alone, which is less certain")
	}
	if len(c.reqs) > 0 && !a.Replay.SeqForwarded {
		a.Notes = append(a.Notes, "the gateway did not forward the sequence header: upstream calls were matched to client requests by time")
	}
	return out
}

// markAbandoned marks as failed the upstream calls that the gateway gave up
// on although the upstream recorded them as complete: a call carrying a
// client request's sequence number that the upstream finished only after
// the gateway had already answered that client request with a 5xx of its
// own (not a recognised fast-fail). The upstream cannot always see a
// gateway hang up: one that times out (a read timeout on the upstream
// connection) closes a connection the upstream only notices if a
// write fails, and a delayed handler that has not read the request body
// gets no cancellation. The gateway's answer to the client tells.
func (c *collector) markAbandoned() {
	bySeq := c.seqIndex()
	for i := range c.calls {
		k := &c.calls[i]
		if k.failed || !k.hasSeq || !k.hasEnd {
			continue
		}
		ri, ok := bySeq(k.seq)
		if !ok {
			continue
		}
		r := &c.reqs[ri]
		if r.outcome == outHTTP5xx && !r.fastFail && r.done > 0 && r.done < k.end {
			k.failed = true
		}
	}
}

// seqIndex returns a lookup from sequence number to the first request of
// that number.
func (c *collector) seqIndex() func(uint64) (int, bool) {
	ix := newSeqIndex(len(c.reqs), func(i int) uint64 { return c.reqs[i].seq })
	return func(s uint64) (int, bool) {
		i, ok := ix.first(s)
		return int(i), ok
	}
}

func healthIntervals(pts []statePoint, runEnd time.Duration) []StateInterval {
	var out []StateInterval
	for i, p := range pts {
		end := runEnd
		if i+1 < len(pts) {
			end = pts[i+1].t
		}
		out = append(out, StateInterval{StartS: seconds(p.t), EndS: seconds(end), State: p.state})
	}
	return out
}

// endHeap is a min-heap of end times, for probe concurrency.
type endHeap []time.Duration

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *endHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// maxInFlight is the most calls (probes, in arrival order) whose
// [arrival, end) intervals overlap; a call with an unknown end counts at
// its arrival only.
func (c *collector) maxInFlight(probes []int32) int {
	h := &endHeap{}
	best := 0
	for _, i := range probes {
		k := &c.calls[i]
		for h.Len() > 0 && (*h)[0] <= k.t {
			heap.Pop(h)
		}
		end := k.end
		if end <= k.t {
			end = k.t + 1
		}
		heap.Push(h, end)
		best = max(best, h.Len())
	}
	return best
}

func joinNames(ns []string) string { return strings.Join(ns, "+") }
