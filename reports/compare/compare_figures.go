package compare

import (
	"math"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"

	"github.com/halfopen/rehearse/internal/stats"
)

// Units of compared figures. A unit decides how a value is printed and
// which practical threshold applies by default (DefaultThresholds). The
// figure table's Seconds are compared in ms, Count in calls.
const (
	UnitMs    = "ms"    // a duration, in milliseconds
	UnitCalls = "calls" // a count of calls, probes or requests
	UnitRatio = "ratio" // a fraction or a factor
	UnitWord  = "word"  // text, compared for equality
	// UnitSeconds is a duration in seconds (history trends read run.json's
	// seconds); shown like UnitMs.
	UnitSeconds = "s"
)

// DefaultThresholds are the smallest differences a comparison flags, per
// unit: 2 ms or 0.5 % of A's median for timings (a timer-coalescing effect
// of a few ms is what a platform comparison is for), 1 call for counts,
// 0.02 for ratios. A figure's own threshold (CompareOptions.Thresholds,
// by figure key) replaces its unit's.
var DefaultThresholds = map[string]stats.Threshold{
	UnitMs:    {Abs: 2, Rel: 0.005},
	UnitCalls: {Abs: 1},
	UnitRatio: {Abs: 0.02},
}

// compareFigure is one figure a comparison follows: a key (for
// thresholds and JSON), a label, a unit, and where its samples come from —
// per episode (from the figure table), or per run (send lateness, client
// success, platform samples, which are not episode figures).
type compareFigure struct {
	Key, Label, Unit string
	// Episode returns the figure's samples in one episode (every cycle's,
	// every probe's), in the unit; nil when not observed.
	Episode func(ep *analysis.Episode) []float64
	// Run returns the figure's samples in one run.
	Run func(r *SideRun) []float64
	// Grain returns the resolution of an episode figure in one run, in
	// the unit (stats.Run.Grain); RunGrain that of a run figure, nil for
	// an exact one.
	Grain    func(r *SideRun, u *analysis.UpstreamAnalysis, ep *analysis.Episode) float64
	RunGrain func(r *SideRun) float64
	// Range returns the least and the most the episode's figure can be,
	// in the unit: its bounds (Figure.Bounds) when the evidence leaves it
	// a range, else its one value; ok false when not observed. Nil for a
	// figure without bounds.
	Range func(ep *analysis.Episode) (lo, hi float64, ok bool)
}

// episodeFigures are the breaker figures of the figure table (Figures)
// marked InCompare, as compared figures: every sample an episode holds
// (Figure.Samples, else its one Value), timings in ms.
func episodeFigures() []compareFigure {
	var out []compareFigure
	for _, f := range analysis.Figures {
		if f.In&analysis.InCompare == 0 || f.Unit == analysis.Word {
			continue
		}
		cf := compareFigure{Key: f.Key, Label: f.ComparedAs(), Unit: UnitCalls}
		scale := 1.0
		switch f.Unit {
		case analysis.Seconds:
			cf.Unit, scale = UnitMs, 1000
		case analysis.Ratio:
			cf.Unit = UnitRatio
		}
		cf.Grain = episodeGrain(f, cf.Unit, scale)
		if f.Bounds != nil {
			cf.Range = func(ep *analysis.Episode) (float64, float64, bool) {
				if lo, hi, ok := f.Bounds(ep); ok {
					return lo * scale, hi * scale, true
				}
				if v := f.Value(ep); v != nil {
					return *v * scale, *v * scale, true
				}
				return 0, 0, false
			}
		}
		cf.Episode = func(ep *analysis.Episode) []float64 {
			var v []float64
			if f.Samples != nil {
				v = f.Samples(ep)
			} else if x := f.Value(ep); x != nil {
				v = []float64{*x}
			}
			out := make([]float64, len(v))
			for i, x := range v {
				out[i] = x * scale
			}
			return out
		}
		out = append(out, cf)
	}
	return out
}

// episodeGrain returns the resolution of figure f of an episode in one
// run, in the compared unit: what a value can be off by because of how it
// is observed, combined (root sum of squares: independent roundings add
// their variances) with the width of the figure's bounds when the evidence
// leaves it a range.
//
//   - A moment is seen through client requests (the first one turned
//     away, the probe a request carries), so a timing is known to the
//     upstream's request interval; a metrics lag to the metrics scrape
//     interval; a wait before a retry is timed by the upstream's own
//     clock, exactly.
//   - A count moves in whole calls: one.
//   - A ratio of calls to requests moves in steps of one over the
//     requests, a shedder's peak refused share in steps of one request
//     of its window; other ratios are taken as exact.
func episodeGrain(f analysis.Figure, unit string, scale float64) func(*SideRun, *analysis.UpstreamAnalysis, *analysis.Episode) float64 {
	return func(r *SideRun, u *analysis.UpstreamAnalysis, ep *analysis.Episode) float64 {
		g := 0.0
		switch {
		case f.Key == "retries.backoff.p50_ms":
		case f.Key == "metrics_open_lag_s" || f.Key == "metrics_close_lag_s":
			g = r.configMs("gateway.metrics.interval")
			if g == 0 {
				g = requestIntervalMs(r, u)
			}
		case unit == UnitMs:
			g = requestIntervalMs(r, u)
		case unit == UnitCalls:
			g = 1
		case f.Key == "amplification":
			g = perOne(ep.ClientRequests)
		case f.Key == "retries.retry_amplification_during" && ep.Retries != nil:
			g = perOne(ep.Retries.Requests)
		case f.Key == "shedding.peak_refused_share" && ep.Shedding != nil:
			// A window's share moves by one of its requests.
			if w, ok := ep.Shedding.PeakWindow(); ok {
				g = perOne(w.Requests)
			}
		}
		if f.Bounds != nil {
			if lo, hi, ok := f.Bounds(ep); ok && !math.IsInf(hi-lo, 0) && hi > lo {
				g = math.Hypot(g, (hi-lo)*scale)
			}
		}
		return g
	}
}

// requestIntervalMs is the time between client requests to upstream u in
// run r (its expected interval at the replay rate), else between the
// run's requests.
func requestIntervalMs(r *SideRun, u *analysis.UpstreamAnalysis) float64 {
	if u != nil && u.ExpectedIntervalS != nil && *u.ExpectedIntervalS > 0 {
		return *u.ExpectedIntervalS * 1000
	}
	if rate := r.A.Replay.AskedRatePerS; rate > 0 {
		return 1000 / rate
	}
	return 0
}

// perOne is the step of a ratio over n: 1/n, 0 without any.
func perOne(n int64) float64 {
	if n <= 0 {
		return 0
	}
	return 1 / float64(n)
}

// configMs reads a duration setting of the run's scenario in ms, 0 when
// absent or not a duration.
func (r *SideRun) configMs(key string) float64 {
	d, err := time.ParseDuration(r.Config[key])
	if err != nil || d <= 0 {
		return 0
	}
	return durMs(d)
}

// wordFigures are the table's Word figures marked InCompare.
func wordFigures() []analysis.Figure {
	var out []analysis.Figure
	for _, f := range analysis.Figures {
		if f.In&analysis.InCompare != 0 && f.Unit == analysis.Word {
			out = append(out, f)
		}
	}
	return out
}

// phaseGrain is the step of a phase's success ratio: one request.
func phaseGrain(ph string) func(r *SideRun) float64 {
	return func(r *SideRun) float64 {
		if p := r.A.Phases[ph]; p != nil {
			return perOne(p.Requests)
		}
		return 0
	}
}

func phaseRatio(ph string) func(r *SideRun) []float64 {
	return func(r *SideRun) []float64 {
		if p := r.A.Phases[ph]; p != nil && p.SuccessRatio != nil {
			return []float64{*p.SuccessRatio}
		}
		return nil
	}
}

// RunFigures are compared once per run. Send lateness is timed by the
// harness's clock, exactly; a count moves in whole requests, a ratio over
// requests in steps of one request.
var RunFigures = []compareFigure{
	{Key: "send_lateness", Label: "send lateness (every request)", Unit: UnitMs,
		Run: func(r *SideRun) []float64 { return r.Lateness }},
	{Key: "sent", Label: "requests sent", Unit: UnitCalls,
		Run:      func(r *SideRun) []float64 { return []float64{float64(r.A.Replay.Sent)} },
		RunGrain: func(*SideRun) float64 { return 1 }},
	{Key: "client_success_before", Label: "client success before faults", Unit: UnitRatio, Run: phaseRatio("before"), RunGrain: phaseGrain("before")},
	{Key: "client_success_during", Label: "client success during faults", Unit: UnitRatio, Run: phaseRatio("during"), RunGrain: phaseGrain("during")},
	{Key: "client_success_after", Label: "client success after faults", Unit: UnitRatio, Run: phaseRatio("after"), RunGrain: phaseGrain("after")},
	{Key: "amplification_overall", Label: "amplification overall", Unit: UnitRatio,
		Run: func(r *SideRun) []float64 {
			if r.A.Amplification.Overall == nil {
				return nil
			}
			return []float64{*r.A.Amplification.Overall}
		},
		RunGrain: func(r *SideRun) float64 { return perOne(r.A.Replay.Sent) }},
}

// platformFigures describe the machine during the run; compared with the
// same statistics, shown as explanations, never flagged.
var platformFigures = []compareFigure{
	{Key: "timer_lateness", Label: "timer lateness during the run (p50 of each burst)", Unit: UnitMs,
		Run: func(r *SideRun) []float64 { return r.TimerP50 }},
	{Key: "timer_lateness_p99", Label: "timer lateness during the run (p99 of each burst)", Unit: UnitMs,
		Run: func(r *SideRun) []float64 { return r.TimerP99 }},
	{Key: "load", Label: "load average during the run", Unit: UnitRatio,
		Run: func(r *SideRun) []float64 { return r.Load }},
}

// FigureKeys lists the keys of every compared figure, for threshold
// flags and documentation.
func FigureKeys() []string {
	var out []string
	for _, l := range [][]compareFigure{episodeFigures(), RunFigures} {
		for _, f := range l {
			out = append(out, f.Key)
		}
	}
	return out
}

// FigureUnit returns the unit of the figure with key k, or "".
func FigureUnit(k string) string {
	for _, l := range [][]compareFigure{episodeFigures(), RunFigures, platformFigures} {
		for _, f := range l {
			if f.Key == k {
				return f.Unit
			}
		}
	}
	return ""
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
