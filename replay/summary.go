package replay

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/halfopen/rehearse/journal"
)

// Summary is what a replay did and how accurately. It is written as
// summary.json and embedded in run.json, so its JSON names are snake_case
// with units.
type Summary struct {
	Target string `json:"target"`
	// Timing is "rate" or "original"; Rate is the planned rate (rate
	// mode) and Speed the speed factor (original mode).
	Timing string  `json:"timing"`
	Rate   float64 `json:"rate_per_s,omitempty"`
	Speed  float64 `json:"speed,omitempty"`
	// Schedule is where the sends of timing rate fell: fixed, poisson
	// or jittered (Options.Schedule); empty in original timing.
	Schedule string `json:"schedule,omitempty"`
	// Duration is the planned duration (0: none, with once).
	Duration time.Duration `json:"-"`
	// Elapsed is the time from the first due slot to the end of the last
	// exchange.
	Elapsed time.Duration `json:"-"`
	// Scheduled counts the slots the schedule reached: Sent + Dropped.
	Scheduled int `json:"scheduled"`
	// Sent counts requests handed to the transport.
	Sent int `json:"sent"`
	// Completed counts sent requests whose exchange ended with a response
	// or a classified failure before Run returned (all of them, unless
	// the run was interrupted and in-flight requests were aborted).
	Completed int `json:"completed"`
	// Dropped counts slots never sent; DroppedInFlight of them because
	// the in-flight cap was reached, DroppedMissed because the replayer
	// was stalled past them.
	Dropped         int `json:"dropped"`
	DroppedInFlight int `json:"dropped_in_flight"`
	DroppedMissed   int `json:"dropped_missed"`
	// Late counts sent requests that started later than the threshold.
	Late            int     `json:"late"`
	LateThresholdMS float64 `json:"late_threshold_ms"`
	// Retried counts requests the transport re-sent on a new connection
	// after a kept-alive connection failed before any response byte.
	Retried int `json:"retried,omitempty"`
	// ByOutcome counts every scheduled request by outcome class.
	ByOutcome map[journal.Outcome]int `json:"by_outcome"`
	// FastFailCodes counts fast-fail responses by the gateway's code.
	FastFailCodes map[string]int `json:"fast_fail_codes,omitempty"`
	// ByStatus counts responses by HTTP status code.
	ByStatus map[int]int `json:"by_status,omitempty"`
	// Lateness is the send lateness (actual send − due time) of the sent
	// requests.
	Lateness Quantiles `json:"lateness_ms"`
	// Latency is measured from the due time to the end of the exchange
	// (what a user would have waited), over completed requests.
	Latency Quantiles `json:"latency_ms"`
	// AchievedRate counts the requests sent in each second of the run
	// (index 0 is [0 s, 1 s) from the start of sending).
	AchievedRate []int `json:"achieved_rate_per_s"`
	// Partial reports that the run stopped before its planned end.
	Partial bool `json:"partial,omitempty"`
	// SkippedIncomplete counts corpus requests not replayed because the
	// capture held them incompletely.
	SkippedIncomplete int `json:"skipped_incomplete,omitempty"`
	// SkippedUnsendable counts, by reason, complete corpus requests not
	// replayed because net/http cannot send them as captured.
	SkippedUnsendable map[string]int `json:"skipped_unsendable,omitempty"`

	DurationS float64 `json:"duration_s,omitempty"`
	ElapsedS  float64 `json:"elapsed_s"`
}

// Quantiles summarises a distribution in milliseconds.
type Quantiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
}

func quantiles(h *hdrhistogram.Histogram) Quantiles {
	// Histograms are in microseconds.
	ms := func(v int64) float64 { return float64(v) / 1000 }
	return Quantiles{
		Count: h.TotalCount(),
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(h.Max()),
		Mean:  h.Mean() / 1000,
	}
}

// WriteText writes the human summary.
func (s *Summary) WriteText(w io.Writer) error {
	var b []byte
	pf := func(format string, a ...any) { b = fmt.Appendf(b, format, a...) }
	state := "completed"
	if s.Partial {
		state = "interrupted (partial)"
	}
	pf("replay %s → %s in %.1fs\n", state, s.Target, s.ElapsedS)
	if s.Timing == TimingOriginal {
		pf("  timing     original ×%g\n", s.Speed)
	} else {
		pf("  rate       %g/s planned", s.Rate)
		if s.DurationS > 0 {
			pf(" for %s", s.Duration)
		}
		pf("\n")
	}
	pf("  scheduled  %d   sent %d   completed %d   dropped %d (in-flight cap %d, missed %d)   late %d (> %gms)\n",
		s.Scheduled, s.Sent, s.Completed, s.Dropped, s.DroppedInFlight, s.DroppedMissed, s.Late, s.LateThresholdMS)
	pf("  lateness   p50 %.3fms  p99 %.3fms  max %.3fms\n", s.Lateness.P50, s.Lateness.P99, s.Lateness.Max)
	pf("  latency    p50 %.1fms  p99 %.1fms  max %.1fms (from the due time)\n", s.Latency.P50, s.Latency.P99, s.Latency.Max)
	pf("  outcomes  ")
	for _, o := range slices.Sorted(maps.Keys(s.ByOutcome)) {
		pf(" %s %d", o, s.ByOutcome[o])
	}
	pf("\n")
	if s.SkippedIncomplete > 0 || len(s.SkippedUnsendable) > 0 {
		// Corpus requests never sent: said, so that nothing is lost
		// without a word.
		pf("  skipped    %d incomplete in the capture", s.SkippedIncomplete)
		for _, w := range slices.Sorted(maps.Keys(s.SkippedUnsendable)) {
			pf("; %d %s", s.SkippedUnsendable[w], w)
		}
		pf("\n")
	}
	if len(s.FastFailCodes) > 0 {
		pf("  fast-fail ")
		for _, c := range slices.Sorted(maps.Keys(s.FastFailCodes)) {
			pf(" %s %d", c, s.FastFailCodes[c])
		}
		pf("\n")
	}
	if n := len(s.AchievedRate); n > 0 {
		lo, hi := slices.Min(s.AchievedRate), slices.Max(s.AchievedRate)
		if n > 2 {
			// The last second is usually partial; judge the full ones.
			lo, hi = slices.Min(s.AchievedRate[:n-1]), slices.Max(s.AchievedRate[:n-1])
		}
		pf("  per second min %d max %d over %d s\n", lo, hi, n)
	}
	_, err := w.Write(b)
	return err
}

// stats accumulates the summary while the run goes.
type stats struct {
	mu       sync.Mutex
	s        Summary
	lateness *hdrhistogram.Histogram
	latency  *hdrhistogram.Histogram
	inFlight int
	errors   int // outcomes other than ok/4xx/5xx/fast-fail
}

func newStats() *stats {
	return &stats{
		s: Summary{
			ByOutcome:     map[journal.Outcome]int{},
			FastFailCodes: map[string]int{},
			ByStatus:      map[int]int{},
			AchievedRate:  []int{},
		},
		// 1 µs to 1 h, three significant digits.
		lateness: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3),
		latency:  hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3),
	}
}

func (st *stats) sent(due, at time.Duration, late bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s.Sent++
	st.inFlight++
	if late {
		st.s.Late++
	}
	_ = st.lateness.RecordValue(max(int64((at-due)/time.Microsecond), 0))
	sec := int(at / time.Second)
	if sec >= 0 {
		for len(st.s.AchievedRate) <= sec {
			st.s.AchievedRate = append(st.s.AchievedRate, 0)
		}
		st.s.AchievedRate[sec]++
	}
}

func (st *stats) done(ev *journal.ClientRequest, retried bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.inFlight--
	st.s.Completed++
	st.s.ByOutcome[ev.Outcome]++
	if ev.Status != 0 {
		st.s.ByStatus[ev.Status]++
	}
	if ev.FastFail && ev.FastFailCode != "" {
		st.s.FastFailCodes[ev.FastFailCode]++
	}
	if retried {
		st.s.Retried++
	}
	if isErrorOutcome(ev.Outcome) {
		st.errors++
	}
	_ = st.latency.RecordValue(max(int64(ev.Latency/time.Microsecond), 0))
}

func (st *stats) aborted(ev *journal.ClientRequest) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.inFlight--
	st.s.ByOutcome[ev.Outcome]++
	st.errors++
}

func (st *stats) dropped(reason string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s.Dropped++
	st.s.ByOutcome[journal.OutcomeDropped]++
	if reason == dropInFlight {
		st.s.DroppedInFlight++
	} else {
		st.s.DroppedMissed++
	}
}

func isErrorOutcome(o journal.Outcome) bool {
	switch o {
	case journal.OutcomeOK, journal.OutcomeHTTP4xx, journal.OutcomeHTTP5xx, journal.OutcomeFastFail,
		journal.OutcomeStreamError, journal.OutcomeStreamCut:
		// Answers the gateway chose (a stream's verdict is in its
		// events), not transport failures.
		return false
	}
	return true
}

// snapshot returns a copy of the summary so far.
func (st *stats) snapshot() Summary {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.s
	s.ByOutcome = cloneMap(st.s.ByOutcome)
	s.FastFailCodes = cloneMap(st.s.FastFailCodes)
	s.ByStatus = cloneMap(st.s.ByStatus)
	s.AchievedRate = slices.Clone(st.s.AchievedRate)
	s.Scheduled = s.Sent + s.Dropped
	s.Lateness = quantiles(st.lateness)
	s.Latency = quantiles(st.latency)
	return s
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
