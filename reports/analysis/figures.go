package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"github.com/halfopen/rehearse/reports/num"
)

// The breaker figures of an episode are declared once, in Figures: the
// episode objects of run.json, the episode tables of report.html and
// report.md, report compare and report history all iterate it. Adding a
// figure is a field of Episode (with its json tag), its computation (in
// upstreamRun.episode) and one row here; docs/analysis.md says how.

// Unit says how a figure is written and compared.
type Unit int

const (
	// Seconds are float seconds, shown "4.2 s" or "350 ms".
	Seconds Unit = iota
	// Count is a whole number.
	Count
	// Ratio is a fraction or a multiple, shown to two decimals.
	Ratio
	// Word is text (a name, yes/no), compared for equality.
	Word
)

// Shown says where a figure appears besides run.json (every figure is in
// run.json).
type Shown uint8

const (
	// InReport: a row of each episode's table in report.html and report.md.
	InReport Shown = 1 << iota
	// InCompare: a row per episode pair in report compare.
	InCompare
	// InHistory: a column of report history (each upstream's first
	// episode), followed as a trend.
	InHistory
	// Everywhere is every output.
	Everywhere = InReport | InCompare | InHistory
)

// Figure is one breaker figure of a fault episode.
type Figure struct {
	// Key is where run.json holds the figure in an episode object: a json
	// key of Episode, or a dotted path into one ("probe_interval_s.min").
	// A key that is not one of Episode's is written from Value.
	Key string
	// Label names the figure in the report's episode table, and elsewhere
	// unless CompareLabel or HistoryLabel say otherwise.
	Label string
	Unit  Unit
	// Value reads the figure from an episode; nil when it was not
	// observed. Every figure but a Word has one. It must be a function of
	// the episode's run.json fields, so that a run.json read back gives
	// the same figure.
	Value func(*Episode) *float64
	// Samples, when set, reads every sample of the figure the episode
	// holds (each cycle's, each probe interval's), in the figure's unit:
	// report compare compares the samples, not the one Value. Unlike Value
	// it may use what only the journal has (all probe intervals), so a
	// comparison analyses journals; nil means the one Value.
	Samples func(*Episode) []float64
	// Word reads a Word figure (compared for equality).
	Word func(*Episode) string
	// Bounds, when set, reads the least and the most Value can be when
	// the evidence leaves it a range (its *_bounds key in run.json; an
	// end the evidence leaves open is an infinity); ok is false when the
	// figure is exact. report compare does not call a difference that
	// lies within the runs' bounds a change.
	Bounds func(*Episode) (lo, hi float64, ok bool)
	// Cell, when set, is the report's cell (a figure with its context:
	// "4 (tagged; 1 ok, 3 failed)"); else Value formatted in Unit.
	Cell func(*Episode) string
	// In says where the figure appears.
	In Shown
	// Applies, when set, says which episodes the figure belongs to (the
	// shedding figures to a shedder's): the report's episode table has no
	// row for it on the others. Nil: every episode but, for a breaker's
	// states, a shedder's (AppliesTo).
	Applies func(*Episode) bool
	// CompareLabel and HistoryLabel rename the figure in report compare
	// and report history.
	CompareLabel, HistoryLabel string
}

// Figures are the breaker figures of an episode, in report order, then
// the load shedder's (shedding_figures.go).
var Figures = append([]Figure{
	{Key: "fault", Label: "fault", Unit: Word, Word: func(e *Episode) string { return e.Fault }, In: InCompare},
	{Key: "opened", Label: "opened", Unit: Word, Word: func(e *Episode) string { return fmt.Sprint(e.Opened) }, In: InCompare},
	{Key: "opened_after_s", Label: "opened after fault start", Unit: Seconds,
		Value:  func(e *Episode) *float64 { return e.OpenedAfterS },
		Bounds: func(e *Episode) (float64, float64, bool) { return rangeOf(e.OpenedAfterS, e.OpenedAfterBoundsS) },
		Cell:   func(e *Episode) string { return bounded(e.OpenedAfterS, e.OpenedAfterBoundsS, Seconds) }, In: Everywhere},
	{Key: "shape", Label: "breaker shape", Unit: Word, Word: func(e *Episode) string { return num.OrDash(e.Shape) },
		Cell: shapeCell, In: InReport | InCompare},
	{Key: "failures_before_open", Label: "failed calls before open", Unit: Count,
		Value:   func(e *Episode) *float64 { return i64f(e.FailuresBeforeOpen) },
		Samples: perCycle(func(c *Cycle) (float64, bool) { return float64(c.FailuresBeforeOpen), true }),
		Bounds: func(e *Episode) (float64, float64, bool) {
			return rangeOf(i64f(e.FailuresBeforeOpen), e.FailuresBeforeOpenBounds)
		},
		Cell: func(e *Episode) string { return bounded(i64f(e.FailuresBeforeOpen), e.FailuresBeforeOpenBounds, Count) },
		In:   InReport | InCompare},
	{Key: "failed_requests_before_open", Label: "failed client requests before open", Unit: Count,
		Value: func(e *Episode) *float64 { return i64f(e.FailedRequestsBeforeOpen) },
		Bounds: func(e *Episode) (float64, float64, bool) {
			return rangeOf(i64f(e.FailedRequestsBeforeOpen), e.FailedRequestsBeforeOpenBounds)
		},
		Cell: func(e *Episode) string {
			return bounded(i64f(e.FailedRequestsBeforeOpen), e.FailedRequestsBeforeOpenBounds, Count)
		}, In: InReport | InCompare},
	{Key: "resent", Label: "calls re-sent by the gateway's transport", Unit: Count,
		Value: func(e *Episode) *float64 { return Ptr(float64(e.Resent)) }, In: InReport},
	{Key: "fast_fails", Label: "client fast-fails while open", Unit: Count,
		Value: func(e *Episode) *float64 { return Ptr(float64(e.FastFails)) }, In: InReport},
	{Key: "probes", Label: "probes", Unit: Count, Value: func(e *Episode) *float64 { return Ptr(float64(e.Probes)) },
		Cell: func(e *Episode) string {
			least := ""
			if e.probesBounds() != nil {
				least = "at least " // more calls may have been probes (maybe_probe)
			}
			return fmt.Sprintf("%s%d (%s; %d ok, %d failed)", least, e.Probes, num.OrDash(e.ProbeSource), e.ProbeOutcomes.OK, e.ProbeOutcomes.Failed)
		}, In: InReport | InCompare},
	{Key: "first_probe_after_open_s", Label: "first probe after open", Unit: Seconds,
		Value: func(e *Episode) *float64 { return e.FirstProbeAfterOpen },
		Bounds: func(e *Episode) (float64, float64, bool) {
			return rangeOf(e.FirstProbeAfterOpen, e.FirstProbeAfterOpenBoundsS)
		},
		Cell: func(e *Episode) string { return bounded(e.FirstProbeAfterOpen, e.FirstProbeAfterOpenBoundsS, Seconds) }, In: Everywhere,
		Samples: perCycle(func(c *Cycle) (float64, bool) {
			if len(c.CooldownsS) == 0 {
				return 0, false
			}
			return c.CooldownsS[0], true
		}),
		CompareLabel: "first probe after open (cooldown, every cycle)"},
	{Key: "cooldowns_s", Label: "cooldown progression", Unit: Word, Word: func(e *Episode) string {
		return progression(e.CooldownsS)
	}, Cell: func(e *Episode) string {
		s := progression(e.CooldownsS)
		if len(e.CooldownsBoundsS) > 0 && e.CooldownsBoundsS[0] != nil {
			// Only the first is measured from the open.
			s += fmt.Sprintf(" (the first %s)", boundsText(e.CooldownsBoundsS[0], Seconds))
		}
		if b := e.CooldownsCountBounds; unseenWait(b) {
			s += fmt.Sprintf("; %g to %g waits: a reopen between probes may be unseen", *b.Min, *b.Max)
		}
		return s
	}, In: InReport},
	{Key: "probe_interval_s.min", Label: "probe interval min / p50 / max", Unit: Seconds,
		Value: func(e *Episode) *float64 { return e.ProbeIntervalS.Min },
		Bounds: func(e *Episode) (float64, float64, bool) {
			return rangeOf(e.ProbeIntervalS.Min, e.ProbeIntervalMinBoundsS)
		},
		Cell: func(e *Episode) string {
			s := fmt.Sprintf("%s / %s / %s", num.SecP(e.ProbeIntervalS.Min), num.SecP(e.ProbeIntervalS.P50), num.SecP(e.ProbeIntervalS.Max))
			if b := e.ProbeIntervalMinBoundsS; b != nil {
				// Probes may have gone uncounted: the spacings measured
				// are not all there were.
				s += " (min " + boundsText(b, Seconds) + ": probes may have gone uncounted)"
			}
			return s
		}, In: InReport | InCompare, CompareLabel: "probe interval min"},
	{Key: "probe_interval_s.p50", Label: "probe interval p50", Unit: Seconds,
		Value: func(e *Episode) *float64 { return e.ProbeIntervalS.P50 }, In: InCompare | InHistory,
		Samples: func(e *Episode) []float64 {
			var out []float64
			for _, c := range e.Cycles {
				for _, iv := range c.intervals {
					out = append(out, iv.Seconds())
				}
			}
			return out
		}, CompareLabel: "probe spacing (every interval)"},
	{Key: "probe_interval_s.max", Label: "probe interval max", Unit: Seconds,
		Value: func(e *Episode) *float64 { return e.ProbeIntervalS.Max }},
	{Key: "max_probes_in_flight", Label: "max probes in flight", Unit: Count,
		Value: func(e *Episode) *float64 { return intf(e.MaxProbesInFlight) }, In: InReport | InCompare,
		Bounds: func(e *Episode) (float64, float64, bool) {
			return rangeOf(intf(e.MaxProbesInFlight), e.MaxProbesInFlightBounds)
		},
		Cell:    func(e *Episode) string { return bounded(intf(e.MaxProbesInFlight), e.MaxProbesInFlightBounds, Count) },
		Samples: perCycle(func(c *Cycle) (float64, bool) { return float64(c.MaxProbesInFlight), c.ProbeCount > 0 })},
	{Key: "leaked", Label: "calls leaked while open", Unit: Count,
		Value: func(e *Episode) *float64 { return Ptr(float64(e.Leaked)) }, In: Everywhere, CompareLabel: "leaked", HistoryLabel: "leaked"},
	{Key: "observed.resumed_after_s", Label: "traffic resumed after fault end (observed)", Unit: Seconds,
		Value: func(e *Episode) *float64 {
			if e.Observed == nil {
				return nil
			}
			return e.Observed.ResumedAfterS
		}, In: InReport | InCompare, CompareLabel: "traffic resumed after fault end"},
	{Key: "closed_after_recovery_s", Label: "breaker closed (inferred)", Unit: Seconds,
		Value: func(e *Episode) *float64 { return e.ClosedAfterRecoveryS },
		Cell: func(e *Episode) string {
			if t := CloseText(e); t != "" {
				return t
			}
			return "—"
		},
		Bounds: func(e *Episode) (float64, float64, bool) {
			// close_bounds_s are moments into the run; the figure counts
			// from the fault's end.
			b := e.CloseBoundsS
			if e.ClosedAfterRecoveryS == nil || b == nil {
				return 0, 0, false
			}
			lo, hi := BoundsSpan(*e.ClosedAfterRecoveryS, b)
			return lo - e.EndS, hi - e.EndS, lo < hi
		}, In: Everywhere},
	{Key: "open_time_s", Label: "time open (all cycles)", Unit: Seconds,
		Value:  func(e *Episode) *float64 { return e.OpenTimeS },
		Bounds: func(e *Episode) (float64, float64, bool) { return rangeOf(e.OpenTimeS, e.OpenTimeBoundsS) },
		Cell:   func(e *Episode) string { return bounded(e.OpenTimeS, e.OpenTimeBoundsS, Seconds) }, In: Everywhere},
	// The close's bounds are in the close's one text (CloseText, the row
	// above): a second row would give the page two figures for one close.
	{Key: "close_bounds_s", Label: "close between", Unit: Word, Word: func(e *Episode) string {
		if b := e.CloseBoundsS; b != nil && b.Min != nil {
			return boundsText(b, Seconds)
		}
		return "—"
	}},
	{Key: "successes_to_close", Label: "successes to close", Unit: Count,
		Value: func(e *Episode) *float64 { return intf(e.SuccessesToClose) }, In: InReport | InCompare,
		Bounds: func(e *Episode) (float64, float64, bool) {
			if e.SuccessesToClose != nil || e.SuccessesToCloseBounds == nil {
				return 0, 0, false
			}
			lo, hi := BoundsSpan(0, e.SuccessesToCloseBounds)
			return lo, hi, lo < hi
		},
		Cell: func(e *Episode) string {
			if b := e.SuccessesToCloseBounds; e.SuccessesToClose == nil && b != nil {
				return atLeastText(b, Count)
			}
			return formatUnit(intf(e.SuccessesToClose), Count)
		},
		Samples: perCycle(func(c *Cycle) (float64, bool) {
			if c.SuccessesToClose == nil {
				return 0, false
			}
			return float64(*c.SuccessesToClose), true
		})},
	{Key: "retry_after_honoured", Label: "Retry-After honoured", Unit: Word, Word: func(e *Episode) string {
		if e.RetryAfterHonoured == nil {
			return "—"
		}
		return fmt.Sprint(*e.RetryAfterHonoured)
	}, Cell: func(e *Episode) string {
		s := num.Tri(e.RetryAfterHonoured, "yes", fmt.Sprintf("no (%d calls too early while the fault stood)", e.RetryAfterViolations))
		if e.RetryAfterHonoured != nil && e.RetryAfterAfterRecovery > 0 {
			s += fmt.Sprintf("; %d early after recovery", e.RetryAfterAfterRecovery)
		}
		return s
	}, In: InReport | InCompare},
	{Key: "amplification", Label: "amplification (calls / request)", Unit: Ratio,
		Value: func(e *Episode) *float64 { return e.Amplification },
		Cell: func(e *Episode) string {
			return fmt.Sprintf("%s (%d / %d)", num.NumP(e.Amplification, "%.2f"), e.UpstreamCalls, e.ClientRequests)
		}, In: InReport | InCompare, CompareLabel: "amplification"},
	{Key: "metrics_open_lag_s", Label: "metrics lag open / close", Unit: Seconds,
		Value: func(e *Episode) *float64 { return e.MetricsOpenLagS },
		Cell: func(e *Episode) string {
			return fmt.Sprintf("%s / %s", bounded(e.MetricsOpenLagS, e.MetricsOpenLagBoundsS, Seconds), num.SecP(e.MetricsCloseLagS))
		}, In: InReport | InCompare, CompareLabel: "metrics lag (open)"},
	{Key: "metrics_close_lag_s", Label: "metrics lag (close)", Unit: Seconds,
		Value: func(e *Episode) *float64 { return e.MetricsCloseLagS }, In: InCompare},
	{Key: "cycles", Label: "open/close cycles", Unit: Count,
		Value: func(e *Episode) *float64 { return Ptr(float64(len(e.Cycles))) }, In: InReport},
	// Retries, deadlines and cost of the requests sent during the episode
	// (retries.go; docs/analysis.md).
	{Key: "retries.max_attempts", Label: "max attempts per request", Unit: Count,
		Value: retryFig(func(r *RetryFigures) *float64 { return Ptr(float64(r.MaxAttempts)) }),
		Samples: func(e *Episode) []float64 {
			return retrySamples(e, func(r *RetryFigures) []float64 { return r.attemptSamples })
		},
		Cell: retryCell(func(r *RetryFigures) string {
			return fmt.Sprintf("%d (%s retried)", r.MaxAttempts, num.NumP(scale(r.RetriedShare, 100), "%.0f%%"))
		}), In: Everywhere, CompareLabel: "attempts per request", HistoryLabel: "max attempts"},
	{Key: "retries.retry_amplification_during", Label: "retry amplification (attempts / request)", Unit: Ratio,
		Value: retryFig(func(r *RetryFigures) *float64 { return r.AmplificationDuring }),
		Cell: retryCell(func(r *RetryFigures) string {
			return fmt.Sprintf("%s (%d / %d)", num.NumP(r.AmplificationDuring, "%.2f"), r.Attempts, r.Requests)
		}), In: InReport | InCompare, CompareLabel: "retry amplification"},
	{Key: "retries.backoff.p50_ms", Label: "wait before a retry min / p50 / max", Unit: Seconds,
		Value: retryFig(func(r *RetryFigures) *float64 { return scale(r.Backoff.P50Ms, 0.001) }),
		Samples: func(e *Episode) []float64 {
			return retrySamples(e, func(r *RetryFigures) []float64 { return r.waitSamples })
		},
		Cell: retryCell(func(r *RetryFigures) string {
			b := r.Backoff
			s := fmt.Sprintf("%s / %s / %s", num.SecP(scale(b.MinMs, 0.001)), num.SecP(scale(b.P50Ms, 0.001)), num.SecP(scale(b.MaxMs, 0.001)))
			var notes []string
			if b.Grows != nil {
				notes = append(notes, map[bool]string{true: "growing", false: "not growing"}[*b.Grows])
			}
			if j := b.Jitter.Full; j != nil {
				notes = append(notes, map[bool]string{true: "full jitter", false: "not full jitter"}[*j])
			}
			if len(notes) > 0 {
				s += " (" + strings.Join(notes, "; ") + ")"
			}
			return s
		}), In: InReport | InCompare, CompareLabel: "wait before a retry"},
	{Key: "retries.lockstep.coincident_share", Label: "retries in lockstep", Unit: Ratio,
		Value: retryFig(func(r *RetryFigures) *float64 { return r.Lockstep.CoincidentShare }),
		Cell: retryCell(func(r *RetryFigures) string {
			l := r.Lockstep
			if l.CoincidentShare == nil {
				return "—"
			}
			verdict := "too few retries to judge"
			if l.Lockstep != nil {
				verdict = map[bool]string{true: "yes", false: "no"}[*l.Lockstep]
			}
			if l.Basis == "schedule" {
				return fmt.Sprintf("%s (%.0f%% within %s; %.0f%% from the send schedule alone, %.0f%% if independent)", verdict, *l.CoincidentShare*100, num.Ms(l.WindowMs), *l.ScheduleShare*100, *l.IndependentShare*100)
			}
			return fmt.Sprintf("%s (%.0f%% within %s; %.0f%% if independent)", verdict, *l.CoincidentShare*100, num.Ms(l.WindowMs), *l.IndependentShare*100)
		}), In: InReport | InCompare, CompareLabel: "retries within 10 ms of another's"},
	{Key: "retries.write_retries.post_patch.without_key", Label: "writes sent again without a key", Unit: Count,
		Value: retryFig(func(r *RetryFigures) *float64 { return Ptr(float64(r.Writes.PostPatch.WithoutKey)) }),
		Cell: retryCell(func(r *RetryFigures) string {
			w := r.Writes
			return fmt.Sprintf("%d POST/PATCH, %d PUT/DELETE (%d with the same key, %d with differing keys)", w.PostPatch.WithoutKey, w.PutDelete.WithoutKey,
				w.PostPatch.SameKey+w.PutDelete.SameKey, w.PostPatch.InconsistentKey+w.PutDelete.InconsistentKey)
		}), In: Everywhere, CompareLabel: "POST/PATCH sent again without a key", HistoryLabel: "writes resent without key"},
	{Key: "retries.deadlines.orphaned_calls", Label: "orphaned calls", Unit: Count,
		Value: retryFig(func(r *RetryFigures) *float64 { return Ptr(float64(r.Deadlines.OrphanedCalls)) }),
		Cell: retryCell(func(r *RetryFigures) string {
			d := r.Deadlines
			return fmt.Sprintf("%d (up to %s past the end; gave up first: upstream %d, gateway %d, client %d)", d.OrphanedCalls,
				num.SecP(scale(d.PastAnswerMs.Max, 0.001)), d.GaveUpFirst["upstream"], d.GaveUpFirst["gateway"], d.GaveUpFirst["client"])
		}), In: Everywhere},
	{Key: "cost.cost_amplification_calls", Label: "cost per completed request, during / before (calls)", Unit: Ratio,
		Value: costFig(func(c *CostFigures) *float64 { return c.CallsAmplification }), Cell: func(e *Episode) string {
			c := e.Cost
			switch {
			case c == nil:
				return "—"
			case c.WorkWithoutCompletion:
				return fmt.Sprintf("unbounded (%d calls, nothing completed)", c.CallsDuring)
			}
			return fmt.Sprintf("%s (%s against %s calls)", num.NumP(c.CallsAmplification, "×%.2f"), num.NumP(c.CallsPerCompletedDuring, "%.2f"), num.NumP(c.CallsPerCompletedBefore, "%.2f"))
		}, In: Everywhere, CompareLabel: "cost amplification (calls)", HistoryLabel: "cost amplification calls"},
	{Key: "cost.cost_amplification_tokens", Label: "cost per completed request, during / before (tokens)", Unit: Ratio,
		Value: costFig(func(c *CostFigures) *float64 { return c.TokensAmplification }), Cell: func(e *Episode) string {
			c := e.Cost
			if c == nil || (c.TokensBefore == 0 && c.TokensDuring == 0) {
				return "— (no tokens charged)"
			}
			return fmt.Sprintf("%s (%s against %s tokens)", num.NumP(c.TokensAmplification, "×%.2f"), num.NumP(c.TokensPerCompletedDuring, "%.0f"), num.NumP(c.TokensPerCompletedBefore, "%.0f"))
		}, In: InReport | InCompare, CompareLabel: "cost amplification (tokens)"},
	// Failover (failover.go; docs/analysis.md, "Failover").
	{Key: "failover.fallback", Label: "failover to", Unit: Word, Word: func(e *Episode) string {
		if f := e.Failover; f != nil && f.Fallback != "" {
			return f.Fallback
		}
		return "—"
	}, Cell: failoverCell, In: InReport | InCompare},
	{Key: "failover.failed_over_after_s", Label: "failed over after fault start", Unit: Seconds,
		Value: failoverFig(func(f *Failover) *float64 { return f.FailedOverAfterS }),
		Bounds: func(e *Episode) (float64, float64, bool) {
			if e.Failover == nil {
				return 0, 0, false
			}
			return rangeOf(e.Failover.FailedOverAfterS, e.Failover.FailedOverAfterBoundsS)
		},
		Cell: func(e *Episode) string {
			if e.Failover == nil {
				return "—"
			}
			return bounded(e.Failover.FailedOverAfterS, e.Failover.FailedOverAfterBoundsS, Seconds)
		}, In: InReport | InCompare, CompareLabel: "failed over after"},
	{Key: "failover.failed_back_after_s", Label: "failed back after fault end", Unit: Seconds,
		Value: failoverFig(func(f *Failover) *float64 { return f.FailedBackAfterS }),
		Bounds: func(e *Episode) (float64, float64, bool) {
			if e.Failover == nil {
				return 0, 0, false
			}
			return rangeOf(e.Failover.FailedBackAfterS, e.Failover.FailedBackAfterBoundsS)
		},
		Cell: func(e *Episode) string {
			f := e.Failover
			switch {
			case f == nil || f.Fallback == "":
				return "—"
			case !f.FailedBack && e.EndedByRun:
				return "— (the fault lasted to the run's end)"
			case !f.FailedBack:
				return "— (not before the run ended)"
			}
			return bounded(f.FailedBackAfterS, f.FailedBackAfterBoundsS, Seconds)
		}, In: InReport | InCompare, CompareLabel: "failed back after"},
	{Key: "failover.requests_served", Label: "served by the fallback", Unit: Count,
		Value: failoverFig(func(f *Failover) *float64 { return Ptr(float64(f.Served)) }),
		Cell: func(e *Episode) string {
			f := e.Failover
			if f == nil || f.Fallback == "" {
				return "—"
			}
			cost := num.Plural(f.FallbackCalls, "call")
			if f.FallbackTokens != nil {
				cost += ", " + num.Plural(*f.FallbackTokens, "token")
			}
			if f.Evidence == "time" {
				return fmt.Sprintf("%s (%d ok; %s)", num.Plural(f.Served, "call"), f.ServedOK, cost)
			}
			return fmt.Sprintf("%d of %d requests (%d ok; %d after the primary failed them; %s)", f.Served, f.Requests, f.ServedOK, f.AfterPrimary, cost)
		}, In: InReport},
}, sheddingFigures...)

// failoverFig reads a figure of the episode's failover; nil without it.
func failoverFig(f func(*Failover) *float64) func(*Episode) *float64 {
	return func(e *Episode) *float64 {
		if e.Failover == nil {
			return nil
		}
		return f(e.Failover)
	}
}

// failoverCell names the fallback and how the requests were followed, or
// why there is none.
func failoverCell(e *Episode) string {
	f := e.Failover
	switch {
	case f == nil:
		return "—"
	case f.Unseen != "":
		return "— (" + f.Unseen + ")"
	case f.Fallback == "":
		return fmt.Sprintf("none (%s followed)", num.Plural(f.Requests, "client request"))
	}
	how := map[string]string{"same_requests": "the same client requests reached both", "target_header": "the gateway's target header",
		"time": "matched in time: it received calls only while the primary was faulted"}[f.Evidence]
	return f.Fallback + " (" + how + ")"
}

// retryFig reads a figure of the episode's retry figures; nil without them.
func retryFig(f func(*RetryFigures) *float64) func(*Episode) *float64 {
	return func(e *Episode) *float64 {
		if e.Retries == nil {
			return nil
		}
		return f(e.Retries)
	}
}

// costFig reads a figure of the episode's cost figures; nil without them.
func costFig(f func(*CostFigures) *float64) func(*Episode) *float64 {
	return func(e *Episode) *float64 {
		if e.Cost == nil {
			return nil
		}
		return f(e.Cost)
	}
}

// retrySamples reads samples of the episode's retry figures; nil (the one
// Value) when the episode has none, e.g. read back from run.json.
func retrySamples(e *Episode, f func(*RetryFigures) []float64) []float64 {
	if e.Retries == nil {
		return nil
	}
	return f(e.Retries)
}

// retryCell is a report cell of the episode's retry figures.
func retryCell(f func(*RetryFigures) string) func(*Episode) string {
	return func(e *Episode) string {
		if e.Retries == nil {
			return "— (no forwarded sequence header)"
		}
		return f(e.Retries)
	}
}

func scale(v *float64, k float64) *float64 {
	if v == nil {
		return nil
	}
	return Ptr(*v * k)
}

// compareLabel and historyLabel are the figure's names in those outputs.
func (f Figure) ComparedAs() string {
	if f.CompareLabel != "" {
		return f.CompareLabel
	}
	return f.Label
}

// HistoryAs is the figure's name in report history.
func (f Figure) HistoryAs() string {
	if f.HistoryLabel != "" {
		return f.HistoryLabel
	}
	return f.Label
}

// CellOf is the figure's text in the report's episode table.
func (f Figure) CellOf(e *Episode) string {
	switch {
	case f.Cell != nil:
		return f.Cell(e)
	case f.Unit == Word:
		return f.Word(e)
	}
	return formatUnit(f.Value(e), f.Unit)
}

// formatUnit writes a figure for people; "—" when not observed.
func formatUnit(v *float64, u Unit) string {
	switch u {
	case Seconds:
		return num.SecP(v)
	case Count:
		return num.NumP(v, "%.0f")
	default:
		return num.NumP(v, "%.2f")
	}
}

// bounded is a figure's cell with its bounds, when the evidence leaves it
// a range ("1.2 s (1.2 s – 1.5 s)"), else the figure alone.
func bounded(v *float64, b *Bounds, u Unit) string {
	if v == nil || b == nil {
		return formatUnit(v, u)
	}
	return formatUnit(v, u) + " (" + boundsText(b, u) + ")"
}

// atLeastText says a range with no known most as "at least N", else as
// boundsText does.
func atLeastText(b *Bounds, u Unit) string {
	if b.Min != nil && b.Max == nil {
		return "at least " + formatUnit(b.Min, u)
	}
	return boundsText(b, u)
}

// boundsText says a range in the figure's unit; an unknown end is
// "unknown".
func boundsText(b *Bounds, u Unit) string {
	end := func(p *float64) string {
		if p == nil {
			return "unknown"
		}
		return formatUnit(p, u)
	}
	return end(b.Min) + " – " + end(b.Max)
}

// perCycle reads one sample from each open/close cycle of an episode.
func perCycle(f func(*Cycle) (float64, bool)) func(*Episode) []float64 {
	return func(e *Episode) []float64 {
		var out []float64
		for _, c := range e.Cycles {
			if v, ok := f(c); ok {
				out = append(out, v)
			}
		}
		return out
	}
}

func i64f(p *int64) *float64 {
	if p == nil {
		return nil
	}
	return Ptr(float64(*p))
}

func intf(p *int) *float64 {
	if p == nil {
		return nil
	}
	return Ptr(float64(*p))
}

// episodeKeys are Episode's json keys: figures under them are written by
// the struct field, every other figure from its Value.
var episodeKeys = sync.OnceValue(func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[Episode]()
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			keys[tag] = true
		}
	}
	return keys
})

// episodeJSON is Episode without its methods, for the default encoding.
type episodeJSON Episode

// MarshalJSON writes the episode's fields and every figure of Figures that
// no field holds, under its key.
func (e *Episode) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal((*episodeJSON)(e))
	if err != nil {
		return nil, err
	}
	keys := episodeKeys()
	var extra []byte
	for _, f := range Figures {
		top, _, _ := strings.Cut(f.Key, ".")
		if keys[top] {
			continue
		}
		var v any
		if f.Unit == Word {
			v = f.Word(e)
		} else {
			v = f.Value(e)
		}
		k, _ := json.Marshal(f.Key)
		val, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("figure %s: %w", f.Key, err)
		}
		extra = append(append(append(append(extra, ','), k...), ':'), val...)
	}
	if len(extra) == 0 {
		return b, nil
	}
	return append(append(b[:len(b)-1], extra...), '}'), nil
}

// progressionShown is how many values of a progression the report lists
// before summarising the rest; run.json has them all.
const progressionShown = 6

// progression writes a series of waits for people: all of them when few,
// else the first few, then "… N more (min X, max Y; all in run.json)".
func progression(vs []float64) string {
	if len(vs) == 0 {
		return "—"
	}
	n := min(len(vs), progressionShown)
	parts := make([]string, n)
	for j, c := range vs[:n] {
		parts[j] = num.Sec(c)
	}
	out := strings.Join(parts, " → ")
	if rest := vs[n:]; len(rest) > 0 {
		lo, hi := vs[0], vs[0]
		for _, c := range vs {
			lo, hi = min(lo, c), max(hi, c)
		}
		out += fmt.Sprintf(" → … %d more (min %s, max %s over all %d; every value in run.json)", len(rest), num.Sec(lo), num.Sec(hi), len(vs))
	}
	return out
}

// rangeOf is a figure's range for Figure.Bounds: ok only when v was
// observed and b leaves it a range.
func rangeOf(v *float64, b *Bounds) (lo, hi float64, ok bool) {
	if v == nil || b == nil {
		return 0, 0, false
	}
	lo, hi = BoundsSpan(*v, b)
	return lo, hi, lo < hi
}

// BoundsSpan is the least and the most a figure v with bounds b can be: v alone
// when b is nil (exact), an infinity where b leaves an end unknown.
func BoundsSpan(v float64, b *Bounds) (lo, hi float64) {
	if b == nil {
		return v, v
	}
	lo, hi = math.Inf(-1), math.Inf(1)
	if b.Min != nil {
		lo = *b.Min
	}
	if b.Max != nil {
		hi = *b.Max
	}
	return lo, hi
}
