package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/halfopen/rehearse/internal/stats"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/num"
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(24*time.Hour/time.Microsecond), 3)
}

func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := max(int64(d/time.Microsecond), 0)
	_ = h.RecordValue(min(us, h.HighestTrackableValue()))
}

// percentiles reads a µs histogram as milliseconds.
func percentiles(h *hdrhistogram.Histogram, p90 bool) Percentiles {
	if h.TotalCount() == 0 {
		return Percentiles{}
	}
	f := func(q float64) *float64 { return Ptr(num.Round3(float64(h.ValueAtQuantile(q)) / 1000)) }
	p := Percentiles{P50: f(50), P99: f(99), Max: Ptr(num.Round3(float64(h.Max()) / 1000))}
	if p90 {
		p.P90 = f(90)
	}
	return p
}

func (c *collector) replayStats(a *Analysis) {
	rs := &a.Replay
	rs.AskedRatePerS = a.Run.RatePerS
	sends := make([]time.Duration, 0, len(c.reqs)) // grown by appends, 5× its size in garbage
	for i := range c.reqs {
		r := &c.reqs[i]
		rs.Due++
		if r.late {
			rs.Late++
		}
		if c.missed(i) {
			rs.Missed++
		}
		if r.outcome == outDropped || r.sent == 0 {
			rs.Dropped++
			continue
		}
		rs.Sent++
		sends = append(sends, r.sent)
	}
	// The achieved rate and the gaps come from when requests actually
	// went out, not from the schedule: a stalled replayer sends late, not
	// less, and only the send times show it.
	slices.Sort(sends)
	h := newHist()
	c.lateness(h, sends)
	rs.LatenessMs = percentiles(h, false)
	if n := len(sends); n > 1 && sends[n-1] > sends[0] {
		rs.ObservedRatePerS = num.Round3(float64(n-1) / (float64(sends[n-1]-sends[0]) / float64(time.Second)))
		var gap, at time.Duration
		for i := 1; i < n; i++ {
			if d := sends[i] - sends[i-1]; d > gap {
				gap, at = d, sends[i-1]
			}
		}
		rs.LongestSendGapMs = Ptr(ms(gap))
		rs.LongestSendGapAtS = Ptr(seconds(at))
	}
	for i := range c.calls {
		if c.calls[i].hasSeq {
			rs.SeqForwarded = true
			break
		}
	}
	if note := c.replayStall(sends, rs); note != "" {
		a.Notes = append(a.Notes, note)
	}
}

// NoteReplayStalled begins the note of a run whose replay sent nothing for
// longer than the analysis can see through (replayStall).
const NoteReplayStalled = "the replay stalled"

// replayStall says, as a note, when requests were due and none went out
// for longer than max(GapFactor × the schedule's interval, MinGap): a
// stalled replayer or machine (or a full in-flight cap). That is the span
// the analysis itself reads as a breaker turning traffic away when it has
// nothing else to go on, so an open or a close inside it goes unseen, and
// the breaker figures around it are only as good as the few requests
// either side. It sets rs.Stall to the longest such span. sends are the
// send times, sorted; c.reqs are in schedule order. Empty when the replay
// kept up.
func (c *collector) replayStall(sends []time.Duration, rs *ReplayStats) string {
	if len(c.reqs) < 2 {
		return ""
	}
	iv := c.sendInterval(rs.AskedRatePerS)
	if iv <= 0 {
		return ""
	}
	limit := blindSpan(iv)
	// The longest a due request waited for the next send at or after its
	// due time: a request late itself, or dropped while nothing went out.
	// A stall is one such wait per next send (the requests due before the
	// same send waited in the same stall), from the first of them.
	type span struct{ from, to time.Duration }
	var spans []span
	var hole, from time.Duration
	last := -1
	for i := range c.reqs {
		due := c.reqs[i].sched
		j, _ := slices.BinarySearch(sends, due)
		if j == len(sends) {
			break // nothing sent after it: the replay's end, not a stall
		}
		d := sends[j] - due
		if d <= limit {
			continue
		}
		if j != last {
			spans, last = append(spans, span{due, sends[j]}), j
		}
		if d > hole {
			hole, from = d, due
		}
	}
	if len(spans) == 0 {
		return ""
	}
	// The harness's stall (rs.Stall, a harness failure) is the longest
	// span in which it missed sends; a span of requests dropped on time
	// (a full in-flight cap: the gateway holding every connection) is
	// the gateway's doing, noted but not the harness's failure.
	var longest time.Duration
	for _, sp := range spans {
		var missed int64
		lo := sort.Search(len(c.reqs), func(i int) bool { return c.reqs[i].sched >= sp.from })
		for i := lo; i < len(c.reqs) && c.reqs[i].sched < sp.to; i++ {
			if c.missed(i) {
				missed++
			}
		}
		if missed == 0 {
			continue
		}
		if rs.Stall == nil {
			rs.Stall = &Stall{}
		}
		rs.Stall.Stalls++
		if d := sp.to - sp.from; d > longest {
			longest = d
			rs.Stall.FromS, rs.Stall.ToS, rs.Stall.Missed = seconds(sp.from), seconds(sp.to), missed
		}
	}
	times := "once"
	if len(spans) > 1 {
		times = fmt.Sprintf("%d times, the longest", len(spans))
	}
	return fmt.Sprintf("%s: requests were due and none was sent for longer than %s (%d × the %s between requests, at least %s) %s for %s from %s into the run (%d of %d requests dropped); the analysis cannot see through that: an open or a close of a breaker in such a span is unseen, and the breaker figures around it rest on the few requests either side",
		NoteReplayStalled, num.Sec(seconds(limit)), GapFactor, num.Sec(seconds(iv)), num.Sec(seconds(MinGap)), times, num.Sec(seconds(hole)), num.Sec(seconds(from)), rs.Dropped, rs.Due)
}

// phases computes client figures before, during and after the faults.
func (c *collector) phases(a *Analysis, fr frame) {
	type span struct {
		name       string
		start, end time.Duration
	}
	runEnd := fr.end
	zero := c.warm.origin() // after a warm-up, "before" starts at time zero
	spans := []span{{"before", zero, runEnd + 1}}
	if fr.faultStart >= 0 {
		spans = []span{{"before", zero, fr.faultStart}, {"during", fr.faultStart, fr.faultEnd}, {"after", fr.faultEnd, runEnd + 1}}
	}
	var totalCalls, totalReqs int64
	for _, sp := range spans {
		ps := &PhaseStats{StartS: seconds(sp.start), EndS: seconds(min(sp.end, runEnd)), Outcomes: map[string]int64{}}
		h := newHist()
		var ok, sent int64
		lo := sort.Search(len(c.reqs), func(i int) bool { return c.reqs[i].sched >= sp.start })
		for i := lo; i < len(c.reqs) && c.reqs[i].sched < sp.end; i++ {
			r := &c.reqs[i]
			ps.Requests++
			ps.Outcomes[r.outcome.Value()]++
			if r.outcome == outOK {
				ok++
			}
			if r.sent > 0 {
				sent++
			}
			if r.done > 0 {
				record(h, r.lat())
			}
		}
		lo = sort.Search(len(c.calls), func(i int) bool { return c.calls[i].t >= sp.start })
		for i := lo; i < len(c.calls) && c.calls[i].t < sp.end; i++ {
			if !c.calls[i].health {
				ps.UpstreamCalls++
			}
		}
		ps.SuccessRatio = ratio(ok, ps.Requests)
		ps.LatencyMs = percentiles(h, true)
		ps.Amplification = ratio(ps.UpstreamCalls, sent)
		a.Phases[sp.name] = ps
		totalCalls += ps.UpstreamCalls
		totalReqs += sent
		switch sp.name {
		case "before":
			a.Amplification.Before = ps.Amplification
		case "during":
			a.Amplification.During = ps.Amplification
		case "after":
			a.Amplification.After = ps.Amplification
		}
	}
	a.Amplification.Overall = ratio(totalCalls, totalReqs)
	to := runEnd + 1
	if fr.faultStart >= 0 {
		to = fr.faultStart
	}
	if a.Saturation = c.saturation(zero, to); a.Saturation != nil && a.Saturation.Saturated {
		a.Notes = append(a.Notes, saturationNote(a.Saturation, fr.faultStart >= 0))
	}
}

// clientGroup maps an outcome to a timeline lane group.
func clientGroup(o string) string {
	switch journal.Outcome(o) {
	case journal.OutcomeOK:
		return "ok"
	case journal.OutcomeFastFail:
		return "fast_fail"
	case journal.OutcomeHTTP5xx:
		return "http_5xx"
	case journal.OutcomeHTTP4xx:
		return "http_4xx"
	case journal.OutcomeDropped:
		return "dropped"
	case OutcomeCut:
		return "interrupted"
	default:
		return "transport"
	}
}

// ClientGroups are the client outcome groups of the timeline, bottom up.
var ClientGroups = []string{"ok", "fast_fail", "http_4xx", "http_5xx", "transport", "interrupted", "dropped"}

func (c *collector) clientTimeline(tl *Timeline) {
	for _, g := range ClientGroups {
		tl.Client[g] = make([]int32, tl.Seconds)
	}
	for i := range c.reqs {
		r := &c.reqs[i]
		// Binned by when the request went out, so that a stall and the
		// burst after it show; a request never sent is binned when due.
		t := r.sent
		if t == 0 {
			t = r.sched
		}
		s := int(t / time.Second)
		if s < 0 || s >= tl.Seconds {
			continue
		}
		g := clientGroup(r.outcome.Value())
		if r.fastFail {
			g = "fast_fail"
		}
		tl.Client[g][s]++
	}
}

// duringRun summarises the platform samples taken through the run.
func duringRun(samples []*journal.PlatformSample) (*TimerDuringRun, *LoadDuringRun) {
	var p50, p99, load []float64
	maxMs := 0.0
	for _, s := range samples {
		if t := s.Timer; t != nil {
			p50, p99 = append(p50, ms(t.P50)), append(p99, ms(t.P99))
			maxMs = math.Max(maxMs, ms(t.Max))
		}
		if s.Load1 != nil {
			load = append(load, *s.Load1)
		}
	}
	var tr *TimerDuringRun
	var lr *LoadDuringRun
	if len(p50) > 0 {
		tr = &TimerDuringRun{Bursts: len(p50), P50Ms: num.Round3(stats.Summarize([][]float64{p50}).Median),
			P99Ms: num.Round3(stats.Summarize([][]float64{p99}).Median), MaxMs: num.Round3(maxMs)}
	}
	if len(load) > 0 {
		ls := stats.Summarize([][]float64{load})
		lr = &LoadDuringRun{Samples: len(load), Median: num.Round3(ls.Median), Max: num.Round3(slices.Max(load))}
	}
	return tr, lr
}
