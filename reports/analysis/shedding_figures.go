package analysis

import (
	"fmt"

	"github.com/halfopen/rehearse/reports/num"
)

// The figures of a load shedder (shedding.go) in the figure table: what a
// reader of the report and a comparison of runs follow where a breaker
// has its open, probes and close. They are the client's view (requests
// sent and turned away), so each is exact to its resolution: a moment to
// the request interval, a count to one request, the peak share to one
// request of its window (compare's grains). They apply to a shedding
// episode only: on a breaker's the report has no row for them, and
// compare, finding them on no run, none either.

// sheddingFigures are appended to Figures.
var sheddingFigures = []Figure{
	{Key: "shedding.first_refused_after_s", Label: "first request turned away after fault start", Unit: Seconds,
		Value: shedFig(func(s *Shedding) float64 { return s.FirstRefusedAfterS }), Applies: isShedding,
		In: InReport | InCompare, CompareLabel: "shedding: first refusal after fault start"},
	{Key: "shedding.began_after_s", Label: "first sustained refusal after fault start", Unit: Seconds,
		Value: shedFig(func(s *Shedding) float64 { return s.BeganAfterS }), Applies: isShedding,
		Cell: func(e *Episode) string {
			s := e.Shedding
			if s == nil {
				return "—"
			}
			return fmt.Sprintf("%s (the first of %d in a row)", num.Sec(s.BeganAfterS), OpenRunMin)
		}, In: InReport | InCompare, CompareLabel: "shedding: first sustained refusal after fault start"},
	{Key: "shedding.ended_after_recovery_s", Label: "last request turned away", Unit: Seconds,
		Value: shedFig(func(s *Shedding) float64 { return s.EndedAfterRecoveryS }), Applies: isShedding,
		Cell: func(e *Episode) string {
			if e.Shedding == nil {
				return "—"
			}
			return endedWords(e.Shedding) + " the fault ended"
		}, In: InReport | InCompare, CompareLabel: "shedding: last refusal after fault end"},
	{Key: "shedding.turned_away", Label: "requests turned away (shedding)", Unit: Count,
		Value: shedFig(func(s *Shedding) float64 { return float64(s.TurnedAway) }), Applies: isShedding,
		Cell: func(e *Episode) string {
			s := e.Shedding
			if s == nil {
				return "—"
			}
			return fmt.Sprintf("%d (%d with the gateway's fast-fail)", s.TurnedAway, s.FastFails)
		}, In: InReport | InCompare, CompareLabel: "shedding: requests turned away"},
	{Key: "shedding.forwarded", Label: "requests forwarded between the first and last refusal", Unit: Count,
		Value: shedFig(func(s *Shedding) float64 { return float64(s.Forwarded) }), Applies: isShedding,
		In: InReport | InCompare, CompareLabel: "shedding: forwarded between refusals"},
	{Key: "shedding.peak_refused_share", Label: "peak refused share of a window", Unit: Ratio,
		Value: shedFig(func(s *Shedding) float64 { return s.PeakRefusedShare }), Applies: isShedding,
		Cell: peakShareCell, In: InReport | InCompare, CompareLabel: "shedding: peak refused share of a window"},
}

// breakerOnly are the figures of a breaker's states (its open, probes,
// cooldowns, close): a shedder has none of them, and its report table
// lists none (the statement says so) rather than a column of dashes.
var breakerOnly = map[string]bool{
	"opened_after_s": true, "failures_before_open": true, "failed_requests_before_open": true,
	"fast_fails": true, "probes": true, "first_probe_after_open_s": true, "cooldowns_s": true,
	"probe_interval_s.min": true, "probe_interval_s.p50": true, "probe_interval_s.max": true,
	"max_probes_in_flight": true, "leaked": true, "observed.resumed_after_s": true,
	"closed_after_recovery_s": true, "open_time_s": true, "close_bounds_s": true,
	"successes_to_close": true, "metrics_open_lag_s": true, "metrics_close_lag_s": true, "cycles": true,
}

// AppliesTo reports whether f is a figure of episode e: its Applies
// when set; else every figure but a breaker's states on a shedder's.
func (f Figure) AppliesTo(e *Episode) bool {
	if f.Applies != nil {
		return f.Applies(e)
	}
	return e.Shedding == nil || !breakerOnly[f.Key]
}

// isShedding: the episode was read as load shedding.
func isShedding(e *Episode) bool { return e.Shedding != nil }

// shedFig reads a figure of the episode's shedding; nil for a breaker's.
func shedFig(f func(*Shedding) float64) func(*Episode) *float64 {
	return func(e *Episode) *float64 {
		if e.Shedding == nil {
			return nil
		}
		return Ptr(f(e.Shedding))
	}
}

// endedWords is when the last refusal came, from the fault's end: "3.26 s
// after", "0.5 s before".
func endedWords(s *Shedding) string {
	if d := s.EndedAfterRecoveryS; d < 0 {
		return num.Sec(-d) + " before"
	}
	return num.Sec(s.EndedAfterRecoveryS) + " after"
}

// PeakWindow is the window whose refused share is the peak (of those, the
// one with the fewest requests: its share moves in the largest steps);
// ok is false without windows.
func (s *Shedding) PeakWindow() (w ShedWindow, ok bool) {
	for _, x := range s.Windows {
		if x.Requests == 0 || num.Round3(float64(x.Refused)/float64(x.Requests)) != s.PeakRefusedShare {
			continue
		}
		if !ok || x.Requests < w.Requests {
			w, ok = x, true
		}
	}
	return w, ok
}

// peakShareCell gives the peak share with the window it was in: "85 %
// (17 of 20 requests in the 1 s window from 2 s after the fault started)".
func peakShareCell(e *Episode) string {
	s := e.Shedding
	if s == nil {
		return "—"
	}
	w, ok := s.PeakWindow()
	if !ok {
		return fmt.Sprintf("%.0f %%", 100*s.PeakRefusedShare)
	}
	rel, d := "after", w.StartS-e.StartS
	if d < 0 {
		rel, d = "before", -d
	}
	return fmt.Sprintf("%.0f %% (%d of %s in the %s window from %s %s the fault started)", 100*s.PeakRefusedShare, w.Refused,
		num.Plural(w.Requests, "request"), num.Sec(s.WindowS), num.Sec(d), rel)
}

// shedSummary is a shedding episode's part of its one-line summary: "the
// gateway shed load, no breaker: 83 requests turned away from 1.42 s
// after the fault started to 3.26 s after it ended".
func shedSummary(s *Shedding) string {
	return fmt.Sprintf("the gateway shed load, no breaker: %s turned away from %s after the fault started to %s it ended",
		num.Plural(s.TurnedAway, "request"), num.Sec(s.FirstRefusedAfterS), endedWords(s))
}
