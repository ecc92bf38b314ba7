package reports

import (
	"time"

	"github.com/halfopen/rehearse/internal/stats"
)

// Units of compared figures. A unit decides how a value is printed and
// which practical threshold applies by default (DefaultThresholds).
const (
	UnitMs    = "ms"    // a duration, in milliseconds
	UnitCalls = "calls" // a count of calls, probes or requests
	UnitRatio = "ratio" // a fraction or a factor
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

// compareFigure is one figure a comparison and a history follow: a key
// (for thresholds and JSON), a label, a unit, and where its samples come
// from — per episode, or per run.
type compareFigure struct {
	Key, Label, Unit string
	// Episode returns the figure's samples in one episode (every cycle's,
	// every probe's), in the unit; nil when not observed.
	Episode func(ep *Episode) []float64
	// Run returns the figure's samples in one run.
	Run func(r *sideRun) []float64
}

func secMs(s float64) float64 { return s * 1000 }

func ptrMs(p *float64) []float64 {
	if p == nil {
		return nil
	}
	return []float64{secMs(*p)}
}

func perCycle(ep *Episode, f func(cy *Cycle) (float64, bool)) []float64 {
	var out []float64
	for _, cy := range ep.Cycles {
		if v, ok := f(cy); ok {
			out = append(out, v)
		}
	}
	return out
}

// episodeFigures are the breaker figures compared per episode, each with
// every sample the episode holds.
var episodeFigures = []compareFigure{
	{Key: "opened_after", Label: "opened after fault start", Unit: UnitMs,
		Episode: func(ep *Episode) []float64 { return ptrMs(ep.OpenedAfterS) }},
	{Key: "failures_before_open", Label: "failed calls before open", Unit: UnitCalls,
		Episode: func(ep *Episode) []float64 {
			return perCycle(ep, func(cy *Cycle) (float64, bool) { return float64(cy.FailuresBeforeOpen), true })
		}},
	{Key: "first_probe_after_open", Label: "first probe after open", Unit: UnitMs,
		Episode: func(ep *Episode) []float64 {
			return perCycle(ep, func(cy *Cycle) (float64, bool) {
				if len(cy.CooldownsS) == 0 {
					return 0, false
				}
				return secMs(cy.CooldownsS[0]), true
			})
		}},
	{Key: "cooldowns", Label: "cooldowns (every wait before a probe)", Unit: UnitMs,
		Episode: func(ep *Episode) []float64 {
			var out []float64
			for _, c := range ep.CooldownsS {
				out = append(out, secMs(c))
			}
			return out
		}},
	{Key: "probe_spacing", Label: "probe spacing", Unit: UnitMs,
		Episode: func(ep *Episode) []float64 {
			var out []float64
			for _, cy := range ep.Cycles {
				for _, iv := range cy.intervals {
					out = append(out, secMs(iv.Seconds()))
				}
			}
			return out
		}},
	{Key: "max_probes_in_flight", Label: "max probes in flight", Unit: UnitCalls,
		Episode: func(ep *Episode) []float64 {
			return perCycle(ep, func(cy *Cycle) (float64, bool) {
				return float64(cy.MaxProbesInFlight), cy.ProbeCount > 0
			})
		}},
	{Key: "probes", Label: "probes", Unit: UnitCalls,
		Episode: func(ep *Episode) []float64 {
			if !ep.Opened {
				return nil
			}
			return []float64{float64(ep.Probes)}
		}},
	{Key: "leaked", Label: "leaked calls while open", Unit: UnitCalls,
		Episode: func(ep *Episode) []float64 {
			if !ep.Opened {
				return nil
			}
			return []float64{float64(ep.Leaked)}
		}},
	{Key: "closed_after_fault_end", Label: "closed after fault end", Unit: UnitMs,
		Episode: func(ep *Episode) []float64 { return ptrMs(ep.ClosedAfterRecoveryS) }},
	{Key: "successes_to_close", Label: "successes to close", Unit: UnitCalls,
		Episode: func(ep *Episode) []float64 {
			return perCycle(ep, func(cy *Cycle) (float64, bool) {
				if cy.SuccessesToClose == nil {
					return 0, false
				}
				return float64(*cy.SuccessesToClose), true
			})
		}},
	{Key: "retry_after_violations", Label: "calls inside a Retry-After pause", Unit: UnitCalls,
		Episode: func(ep *Episode) []float64 {
			if ep.RetryAfterHonoured == nil {
				return nil
			}
			return []float64{float64(ep.RetryAfterViolations)}
		}},
	{Key: "amplification", Label: "amplification (calls per request)", Unit: UnitRatio,
		Episode: func(ep *Episode) []float64 {
			if ep.Amplification == nil {
				return nil
			}
			return []float64{*ep.Amplification}
		}},
	{Key: "metrics_open_lag", Label: "metrics lag behind the open", Unit: UnitMs,
		Episode: func(ep *Episode) []float64 { return ptrMs(ep.MetricsOpenLagS) }},
	{Key: "metrics_close_lag", Label: "metrics lag behind the close", Unit: UnitMs,
		Episode: func(ep *Episode) []float64 { return ptrMs(ep.MetricsCloseLagS) }},
}

func phaseRatio(ph string) func(r *sideRun) []float64 {
	return func(r *sideRun) []float64 {
		if p := r.A.Phases[ph]; p != nil && p.SuccessRatio != nil {
			return []float64{*p.SuccessRatio}
		}
		return nil
	}
}

// runFigures are compared once per run.
var runFigures = []compareFigure{
	{Key: "send_lateness", Label: "send lateness (every request)", Unit: UnitMs,
		Run: func(r *sideRun) []float64 { return r.Lateness }},
	{Key: "sent", Label: "requests sent", Unit: UnitCalls,
		Run: func(r *sideRun) []float64 { return []float64{float64(r.A.Replay.Sent)} }},
	{Key: "client_success_before", Label: "client success before faults", Unit: UnitRatio, Run: phaseRatio("before")},
	{Key: "client_success_during", Label: "client success during faults", Unit: UnitRatio, Run: phaseRatio("during")},
	{Key: "client_success_after", Label: "client success after faults", Unit: UnitRatio, Run: phaseRatio("after")},
	{Key: "amplification_overall", Label: "amplification overall", Unit: UnitRatio,
		Run: func(r *sideRun) []float64 {
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
		Run: func(r *sideRun) []float64 { return r.TimerP50 }},
	{Key: "timer_lateness_p99", Label: "timer lateness during the run (p99 of each burst)", Unit: UnitMs,
		Run: func(r *sideRun) []float64 { return r.TimerP99 }},
	{Key: "load", Label: "load average during the run", Unit: UnitRatio,
		Run: func(r *sideRun) []float64 { return r.Load }},
}

// FigureKeys lists the keys of every compared figure, for threshold
// flags and documentation.
func FigureKeys() []string {
	var out []string
	for _, l := range [][]compareFigure{episodeFigures, runFigures} {
		for _, f := range l {
			out = append(out, f.Key)
		}
	}
	return out
}

// FigureUnit returns the unit of the figure with key k, or "".
func FigureUnit(k string) string {
	for _, l := range [][]compareFigure{episodeFigures, runFigures, platformFigures} {
		for _, f := range l {
			if f.Key == k {
				return f.Unit
			}
		}
	}
	return ""
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
