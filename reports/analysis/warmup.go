package analysis

import (
	"fmt"
	"slices"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/num"
)

// The warm-up (a scenario's replay.warmup) is traffic before the run's
// time zero that brings the gateway to its working state. It is scored
// nowhere: its client requests (journaled warmup: true) and the upstream
// calls they caused never reach the records the figures are computed
// from; what it did is summed up apart (Analysis.Warmup, one note, a grey
// band on the timeline). A call is the warm-up's when it carries a
// warm-up sequence number (journal.WarmupSeqBase and above), or carries
// none and arrived before time zero (the "replay" phase after the
// "warmup" one). Metrics and health samples before time zero are the
// warm-up's too: a breaker's state during it is not the run's.

// WarmupStats sums up the warm-up.
type WarmupStats struct {
	// StartS is when the warm-up began and EndS time zero (run time).
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	// Requests counts its client requests; Sent those that went out;
	// Outcomes how they ended.
	Requests int64            `json:"requests"`
	Sent     int64            `json:"sent"`
	Outcomes map[string]int64 `json:"outcomes"`
	// UpstreamCalls counts the upstream calls of the warm-up.
	UpstreamCalls int64 `json:"upstream_calls"`
	// LatencyMs is its answered requests' latency; FirstMs the first
	// answer's (a cold gateway's first turn), null when none was
	// answered.
	LatencyMs LatencySummary `json:"latency_ms"`
	FirstMs   *float64       `json:"first_ms"`
}

// WarmupWindow is the warm-up's span on the timeline (run time).
type WarmupWindow struct{ StartS, EndS float64 }

// LatencySummary is a latency distribution in ms; null fields when empty.
type LatencySummary struct {
	P50 *float64 `json:"p50"`
	P95 *float64 `json:"p95"`
	Max *float64 `json:"max"`
}

// warmupLog collects the warm-up while the journal streams past.
type warmupLog struct {
	// phase: 0 no warm-up seen, 1 in the warm-up, 2 after time zero.
	phase       int8
	start, zero time.Duration
	reqs, sent  int64
	calls       int64
	outcomes    map[string]int64
	// lat are the answered requests' latencies by scheduled send.
	lat []schedLat
}

type schedLat struct{ sched, lat time.Duration }

// take consumes ev when it belongs to the warm-up, and follows the
// phases; it reports whether ev was the warm-up's.
func (w *warmupLog) take(ev journal.Event) bool {
	switch p := ev.Payload.(type) {
	case *journal.Phase:
		switch {
		case p.Name == "warmup" && w.phase == 0:
			w.phase, w.start = 1, ev.T
		case p.Name == "replay" && w.phase == 1:
			w.phase, w.zero = 2, ev.T
		}
	case *journal.ClientRequest:
		if !p.Warmup {
			return false
		}
		w.request(p)
		return true
	case *journal.UpstreamRequest:
		if p.Seq != nil && *p.Seq >= journal.WarmupSeqBase || p.Seq == nil && w.before(ev.T) {
			w.calls++
			return true
		}
	case *journal.MetricsSample, *journal.HealthSample:
		// By the sample's own time: a state read from a gateway's log
		// is journaled when the line is read, stamped with the line's
		// time, which may be before time zero though written after.
		return w.before(ev.T)
	}
	return false
}

// before reports whether t is in the warm-up, as far as the journal has
// told: between its start and time zero, or after its start while time
// zero is still to come.
func (w *warmupLog) before(t time.Duration) bool {
	switch w.phase {
	case 1:
		return t >= w.start
	case 2:
		return t >= w.start && t < w.zero
	}
	return false
}

// origin is the run's time zero: the end of the warm-up, or 0 without
// one (nor with one cut short, when nothing was scored).
func (w *warmupLog) origin() time.Duration {
	if w.phase == 2 {
		return w.zero
	}
	return 0
}

func (w *warmupLog) request(p *journal.ClientRequest) {
	if w.outcomes == nil {
		w.outcomes = map[string]int64{}
	}
	w.reqs++
	if p.Sent > 0 {
		w.sent++
	}
	w.outcomes[string(p.Outcome)]++
	if p.Status > 0 && p.Done > 0 {
		w.lat = append(w.lat, schedLat{p.Scheduled, p.Done - p.Scheduled})
	}
}

// figures sets a.Warmup, its note and the timeline's band; nothing when
// the run had no warm-up.
func (w *warmupLog) figures(a *Analysis, runEnd time.Duration) {
	if w.phase == 0 && w.reqs == 0 {
		return
	}
	end := w.zero
	if w.phase == 1 {
		end = runEnd // interrupted during the warm-up
	}
	ws := &WarmupStats{StartS: seconds(w.start), EndS: seconds(end), Requests: w.reqs, Sent: w.sent,
		Outcomes: w.outcomes, UpstreamCalls: w.calls}
	if ws.Outcomes == nil {
		ws.Outcomes = map[string]int64{}
	}
	if len(w.lat) > 0 {
		slices.SortFunc(w.lat, func(x, y schedLat) int { return int(x.sched - y.sched) })
		ws.FirstMs = Ptr(ms(w.lat[0].lat))
		ls := make([]time.Duration, len(w.lat))
		for i, l := range w.lat {
			ls[i] = l.lat
		}
		slices.Sort(ls)
		ws.LatencyMs = LatencySummary{P50: Ptr(ms(num.Median(ls))), P95: Ptr(ms(ls[(len(ls)*95-1)/100])), Max: Ptr(ms(ls[len(ls)-1]))}
	}
	a.Warmup = ws
	if a.Timeline != nil {
		a.Timeline.Warmup = &WarmupWindow{StartS: ws.StartS, EndS: ws.EndS}
	}
	a.Notes = append(a.Notes, warmupNote(ws, w.phase == 1))
}

// warmupNote is the warm-up in one line.
func warmupNote(ws *WarmupStats, cut bool) string {
	ok := ws.Outcomes[string(journal.OutcomeOK)]
	s := fmt.Sprintf("warm-up before time zero, not scored (excluded from every figure and expectation): %s over %s (%s–%s), %d ok, %d not",
		num.Plural(ws.Requests, "request"), num.Sec(ws.EndS-ws.StartS), num.Sec(ws.StartS), num.Sec(ws.EndS), ok, ws.Requests-ok)
	if l := ws.LatencyMs; l.P50 != nil {
		s += fmt.Sprintf("; latency p50 %s, p95 %s, first answer %s", num.Ms(*l.P50), num.Ms(*l.P95), num.Ms(*ws.FirstMs))
	}
	if cut {
		s += "; the run ended during the warm-up"
	}
	return s
}
