package compare

import (
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

func phaseRatio(ph string) func(r *SideRun) []float64 {
	return func(r *SideRun) []float64 {
		if p := r.A.Phases[ph]; p != nil && p.SuccessRatio != nil {
			return []float64{*p.SuccessRatio}
		}
		return nil
	}
}

// RunFigures are compared once per run.
var RunFigures = []compareFigure{
	{Key: "send_lateness", Label: "send lateness (every request)", Unit: UnitMs,
		Run: func(r *SideRun) []float64 { return r.Lateness }},
	{Key: "sent", Label: "requests sent", Unit: UnitCalls,
		Run: func(r *SideRun) []float64 { return []float64{float64(r.A.Replay.Sent)} }},
	{Key: "client_success_before", Label: "client success before faults", Unit: UnitRatio, Run: phaseRatio("before")},
	{Key: "client_success_during", Label: "client success during faults", Unit: UnitRatio, Run: phaseRatio("during")},
	{Key: "client_success_after", Label: "client success after faults", Unit: UnitRatio, Run: phaseRatio("after")},
	{Key: "amplification_overall", Label: "amplification overall", Unit: UnitRatio,
		Run: func(r *SideRun) []float64 {
			if r.A.Amplification.Overall == nil {
				return nil
			}
			return []float64{*r.A.Amplification.Overall}
		}},
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
