package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/halfopen/rehearse/reports/num"
)

// Saturation before the first fault.
//
// A gateway that was already saturated when the first fault began (more
// requests offered than it serves: 10 req/s into one AI agent gateway on 2 cores)
// queues them, and every figure of the fault then mixes the fault's
// effect with the queue's. The window looked at is the healthy traffic
// from time zero (after any warm-up) to the first fault's start (or the
// run's end), and the evidence is of two kinds, each a test on this run's
// own figures, none a fixed latency:
//
//   - queueing: the client latency grows with time (Mann–Kendall trend
//     test of latency against the scheduled send, one-sided at
//     SaturationZ), by at least its own level at the start (the last
//     fifth's median at least twice the first fifth's, and by more
//     than one send interval: one more request queued), while the
//     upstream calls' own latency did not grow by half as much (so the
//     growth is the gateway's, not the dependency's);
//   - sends outpacing answers: the requests in flight grow with time
//     (the same trend test on the in-flight count at each send), the
//     answers that came back by the last send fell short of the sends by
//     more than Little's law explains (λ·L, the offered rate times the
//     first fifth's latency) plus three of its Poisson standard
//     deviations, and the requests in flight at the end are more than
//     twice what Little's law gives for the offered rate and the latency
//     of the window's first fifth; the upstream's latency, again, not
//     growing by half as much as the client's.
//
// Either makes the report say the gateway was saturated, with the figures.

const (
	// SaturationZ is the one-sided critical value of the trend tests:
	// 3.29 is p = 0.0005 for a normal statistic, so that a healthy run is
	// called saturated by chance about once in two thousand.
	SaturationZ = 3.29
	// SaturationMinRequests is the least number of answered requests in
	// the window for a verdict: the Mann–Kendall statistic's normal
	// approximation holds from about 10, and a fifth of the window
	// should hold a few requests for its median.
	SaturationMinRequests = 20
	// saturationMaxN caps the points the O(n²) Mann–Kendall statistic
	// uses (taken evenly over the window): two million pairs, a few
	// milliseconds. slopeMaxN caps the Theil–Sen slope's, whose pairwise
	// slopes are sorted: 400 points, 80,000 slopes
	// (BenchmarkSaturationTrend).
	saturationMaxN = 2000
	slopeMaxN      = 400
)

// SaturationFigures are the evidence on saturation before the first
// fault; null in run.json with fewer than SaturationMinRequests answered
// requests in the window.
type SaturationFigures struct {
	// StartS and EndS bound the window: the first and last send from
	// time zero to the first fault (or the run's end).
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	// Requests counts the answered client requests in the window.
	Requests int64 `json:"requests"`
	// LatencyFirstMs and LatencyLastMs are the median client latency of
	// the window's first and last fifth (by send); LatencyTrendZ the
	// Mann–Kendall statistic of latency against time (positive: growing);
	// LatencySlopeMsPerS its Theil–Sen slope.
	LatencyFirstMs     float64 `json:"latency_first_ms"`
	LatencyLastMs      float64 `json:"latency_last_ms"`
	LatencyTrendZ      float64 `json:"latency_trend_z"`
	LatencySlopeMsPerS float64 `json:"latency_slope_ms_per_s"`
	// The same of the upstream calls' own latency (arrival to end); null
	// without SaturationMinRequests calls with an end in the window.
	UpstreamCalls         int64    `json:"upstream_calls"`
	UpstreamFirstMs       *float64 `json:"upstream_first_ms"`
	UpstreamLastMs        *float64 `json:"upstream_last_ms"`
	UpstreamTrendZ        *float64 `json:"upstream_trend_z"`
	UpstreamSlopeMsPerS   *float64 `json:"upstream_slope_ms_per_s"`
	OfferedRatePerS       float64  `json:"offered_rate_per_s"`
	AnsweredRatePerS      float64  `json:"answered_rate_per_s"`
	InFlightFirst         float64  `json:"in_flight_first"`
	InFlightLast          float64  `json:"in_flight_last"`
	InFlightTrendZ        float64  `json:"in_flight_trend_z"`
	InFlightLittle        float64  `json:"in_flight_expected"`
	Queueing              bool     `json:"queueing"`
	SendsOutpacingAnswers bool     `json:"sends_outpacing_answers"`
	Saturated             bool     `json:"saturated"`
	Evidence              string   `json:"evidence,omitempty"`
}

// saturation computes the figures over [from, to) of the sends.
func (c *collector) saturation(from, to time.Duration) *SaturationFigures {
	type pt struct{ t, lat time.Duration }
	var lats []pt
	var sends []time.Duration
	var ends []time.Duration // each sent request's end; unanswered: never
	lo := sort.Search(len(c.reqs), func(i int) bool { return c.reqs[i].sched >= from })
	for i := lo; i < len(c.reqs) && c.reqs[i].sched < to; i++ {
		r := &c.reqs[i]
		if r.sent <= 0 {
			continue
		}
		sends = append(sends, r.sent)
		end := time.Duration(math.MaxInt64)
		if r.done > 0 {
			end = r.done
			lats = append(lats, pt{r.sched, r.lat()})
		}
		ends = append(ends, end)
	}
	if len(lats) < SaturationMinRequests {
		return nil
	}
	// The rates are over the span of the sends (first to last): the
	// answers that came back in it against the sends.
	first, last := slices.Min(sends), slices.Max(sends)
	span := (last - first).Seconds()
	if span <= 0 {
		return nil
	}
	var answered int64
	for _, e := range ends {
		if e <= last {
			answered++
		}
	}
	s := &SaturationFigures{StartS: seconds(first), EndS: seconds(last), Requests: int64(len(lats))}
	xs, ys := make([]float64, len(lats)), make([]float64, len(lats))
	for i, p := range lats {
		xs[i], ys[i] = p.t.Seconds(), ms(p.lat)
	}
	s.LatencyFirstMs, s.LatencyLastMs = fifths(ys)
	s.LatencyTrendZ, s.LatencySlopeMsPerS = trend(xs, ys)

	var uxs, uys []float64
	clo := sort.Search(len(c.calls), func(i int) bool { return c.calls[i].t >= from })
	for i := clo; i < len(c.calls) && c.calls[i].t < to; i++ {
		k := &c.calls[i]
		if k.health || !k.hasEnd {
			continue
		}
		uxs, uys = append(uxs, k.t.Seconds()), append(uys, ms(k.end-k.t))
	}
	s.UpstreamCalls = int64(len(uxs))
	upGrowth := math.NaN()
	if len(uxs) >= SaturationMinRequests {
		f, l := fifths(uys)
		z, sl := trend(uxs, uys)
		s.UpstreamFirstMs, s.UpstreamLastMs = Ptr(num.Round3(f)), Ptr(num.Round3(l))
		s.UpstreamTrendZ, s.UpstreamSlopeMsPerS = Ptr(num.Round3(z)), Ptr(num.Round3(sl))
		upGrowth = l - f
	}
	s.OfferedRatePerS = float64(len(sends)-1) / span
	// A queue that grew by one request makes each later one wait one
	// send interval longer: a growth of less than that is no queue, only
	// a latency that drifted (sub-millisecond answers doubling).
	growth := s.LatencyLastMs - s.LatencyFirstMs
	// The gateway's own: the upstream calls did not slow down by half as
	// much (an upstream slowing down fills the gateway too, but that is
	// the dependency's latency, which the faults are about).
	own := math.IsNaN(upGrowth) || upGrowth < growth/2
	s.Queueing = own && s.LatencyTrendZ > SaturationZ && growth > s.LatencyFirstMs && growth > 1000/s.OfferedRatePerS
	s.AnsweredRatePerS = float64(answered) / span
	s.inFlight(sends, ends)
	// A gateway that keeps up leaves about Little's λ·L in flight at the
	// last send, unanswered: Poisson-like (an M/G/∞ count), of standard
	// deviation √(λ·L). A queue leaves more, and more as it grows.
	short := float64(len(sends)) - float64(answered)
	s.SendsOutpacingAnswers = own && s.InFlightTrendZ > SaturationZ && short > s.InFlightLittle+3*math.Sqrt(s.InFlightLittle) &&
		s.InFlightLast > 2*s.InFlightLittle
	s.Saturated = s.Queueing || s.SendsOutpacingAnswers
	s.round()
	if s.Saturated {
		s.Evidence = s.evidence()
	}
	return s
}

// inFlight sets the in-flight figures: the requests in flight at each
// send (sent before it, not yet ended), their trend, the first and last
// fifth's medians, and what Little's law gives for the offered rate at
// the first fifth's latency.
func (s *SaturationFigures) inFlight(sends, ends []time.Duration) {
	idx := make([]int, len(sends))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(sends[a] - sends[b]) })
	done := slices.Clone(ends)
	slices.Sort(done)
	xs, ys := make([]float64, len(idx)), make([]float64, len(idx))
	for k, i := range idx {
		ended := sort.Search(len(done), func(j int) bool { return done[j] > sends[i] })
		xs[k], ys[k] = sends[i].Seconds(), float64(k+1-ended)
	}
	s.InFlightFirst, s.InFlightLast = fifths(ys)
	s.InFlightTrendZ, _ = trend(xs, ys)
	s.InFlightLittle = s.OfferedRatePerS * s.LatencyFirstMs / 1000
}

func (s *SaturationFigures) round() {
	for _, p := range []*float64{&s.LatencyFirstMs, &s.LatencyLastMs, &s.LatencyTrendZ, &s.LatencySlopeMsPerS,
		&s.OfferedRatePerS, &s.AnsweredRatePerS, &s.InFlightFirst, &s.InFlightLast, &s.InFlightTrendZ, &s.InFlightLittle} {
		*p = num.Round3(*p)
	}
}

// evidence says what showed the saturation, in one sentence of figures.
func (s *SaturationFigures) evidence() string {
	var parts []string
	if s.Queueing {
		p := fmt.Sprintf("client latency grew from %s to %s over %s (trend z = %.1f, %s more each second)",
			num.Ms(s.LatencyFirstMs), num.Ms(s.LatencyLastMs), num.Sec(s.EndS-s.StartS), s.LatencyTrendZ, num.Ms(s.LatencySlopeMsPerS))
		if s.UpstreamFirstMs != nil {
			p += fmt.Sprintf(" while the upstream calls took %s then %s", num.Ms(*s.UpstreamFirstMs), num.Ms(*s.UpstreamLastMs))
		} else {
			p += " (the upstream's own latency was not observed)"
		}
		parts = append(parts, p)
	}
	if s.SendsOutpacingAnswers {
		parts = append(parts, fmt.Sprintf("%.1f requests/s were sent and %.1f/s answered; in flight grew from %.0f to %.0f (trend z = %.1f) where Little's law gives %.1f at the first fifth's latency",
			s.OfferedRatePerS, s.AnsweredRatePerS, s.InFlightFirst, s.InFlightLast, s.InFlightTrendZ, s.InFlightLittle))
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out += "; " + p
	}
	return out
}

// saturationNote is the report's note on a saturated gateway.
func saturationNote(s *SaturationFigures, faults bool) string {
	where, what := "before the first fault", "figures under the faults mix the fault's effect with the queue's"
	if !faults {
		where, what = "(no fault: over the whole run)", "every figure carries the queue's latency"
	}
	return fmt.Sprintf("the gateway was saturated %s, from %s to %s: %s. It was offered more than it serves, and %s; lower replay.rate, add a replay.warmup if it was starting cold, or give it more room.",
		where, num.Sec(s.StartS), num.Sec(s.EndS), s.Evidence, what)
}

// fifths returns the medians of the first and last fifth of ys (in their
// order), at least one point each.
func fifths(ys []float64) (first, last float64) {
	k := max(1, len(ys)/5)
	f, l := slices.Clone(ys[:k]), slices.Clone(ys[len(ys)-k:])
	slices.Sort(f)
	slices.Sort(l)
	return num.Median(f), num.Median(l)
}

// trend is the Mann–Kendall statistic of ys against xs (z, continuity
// corrected; ties in either count as no direction) over at most
// saturationMaxN points, and the Theil–Sen slope (median of the pairwise
// slopes) over at most slopeMaxN, each taken evenly.
func trend(xs, ys []float64) (z, slope float64) {
	xs, ys = evenly(xs, ys, saturationMaxN)
	n := len(xs)
	var sum float64
	for i := range n {
		for j := i + 1; j < n; j++ {
			dx, dy := xs[j]-xs[i], ys[j]-ys[i]
			if dx < 0 {
				dy = -dy
			}
			switch {
			case dx == 0:
			case dy > 0:
				sum++
			case dy < 0:
				sum--
			}
		}
	}
	v := float64(n) * float64(n-1) * float64(2*n+5) / 18
	switch {
	case sum > 0:
		z = (sum - 1) / math.Sqrt(v)
	case sum < 0:
		z = (sum + 1) / math.Sqrt(v)
	}
	xs, ys = evenly(xs, ys, slopeMaxN)
	n = len(xs)
	slopes := make([]float64, 0, n*(n-1)/2)
	for i := range n {
		for j := i + 1; j < n; j++ {
			if dx := xs[j] - xs[i]; dx != 0 {
				slopes = append(slopes, (ys[j]-ys[i])/dx)
			}
		}
	}
	if len(slopes) > 0 {
		slices.Sort(slopes)
		slope = num.Median(slopes) // ys in ms, xs in s: ms per second
	}
	return z, slope
}

// evenly returns at most max of the points, taken evenly.
func evenly(xs, ys []float64, max int) ([]float64, []float64) {
	n := len(xs)
	if n <= max {
		return xs, ys
	}
	sx, sy := make([]float64, max), make([]float64, max)
	for i := range sx {
		j := i * n / max
		sx[i], sy[i] = xs[j], ys[j]
	}
	return sx, sy
}
