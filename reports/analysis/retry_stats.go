package analysis

import (
	"math"
	"sort"
	"time"

	"github.com/halfopen/rehearse/reports/num"
)

// backoffFigures summarises waits before retries, overall and by retry.
func backoffFigures(all []float64, byRetry [][]float64) BackoffFigures {
	b := BackoffFigures{Retries: int64(len(all)), P50ByRetryMs: []float64{}}
	if len(all) == 0 {
		return b
	}
	s := sortedCopy(all)
	b.MinMs, b.P50Ms, b.MaxMs = Ptr(num.Round3(s[0])), Ptr(num.Round3(num.Median(s))), Ptr(num.Round3(s[len(s)-1]))
	var meds []float64
	for _, w := range byRetry {
		if len(w) < 5 {
			break
		}
		meds = append(meds, num.Median(w))
	}
	for _, w := range byRetry {
		if len(w) == 0 {
			break
		}
		b.P50ByRetryMs = append(b.P50ByRetryMs, num.Round3(num.Median(w)))
	}
	if len(meds) >= 2 {
		grows := true
		for i := 1; i < len(meds); i++ {
			if meds[i] < 1.5*meds[i-1] {
				grows = false
			}
		}
		b.Grows = &grows
	}
	return b
}

// jitterFigures runs the full-jitter test on each retry position with
// enough waits (see JitterFigures).
func jitterFigures(byRetry [][]float64) JitterFigures {
	j := JitterFigures{Tests: []JitterTest{}}
	for i, w := range byRetry {
		if len(w) < JitterMinWaits {
			continue
		}
		t := fullJitterTest(w)
		t.Retry = i + 1
		j.Tests = append(j.Tests, t)
	}
	if len(j.Tests) > 0 {
		full := true
		for _, t := range j.Tests {
			full = full && t.Full
		}
		j.Full = &full
	}
	return j
}

// fullJitterTest tests waits (ms, at least two) for a uniform draw on
// [0, cap]. For waits uniform on [0, c], those below the k-th longest,
// divided by it, are independent and uniform on [0, 1] whatever c is; k
// is a tenth of the waits (at least 1), so that a few waits stretched by
// a loaded machine (a late timer, a descheduled gateway) are not taken
// for the cap. Those ratios are compared with U(0, 1) by their
// Kolmogorov–Smirnov distance, against Stephens' α = 0.001 critical value.
func fullJitterTest(waits []float64) JitterTest {
	s := sortedCopy(waits)
	k := max(1, (len(s)+9)/10)
	top := s[len(s)-k]
	t := JitterTest{Waits: len(s), MaxMs: num.Round3(s[len(s)-1]), CapMs: num.Round3(top)}
	rest := s[:len(s)-k] // conditioned on the k-th longest
	m := float64(len(rest))
	var d float64
	for i, w := range rest {
		u := 1.0 // every wait equal to the cap: a fixed wait
		if top > 0 {
			u = w / top
		}
		d = max(d, float64(i+1)/m-u, u-float64(i)/m)
	}
	sm := math.Sqrt(m)
	t.D = num.Round3(d)
	t.Critical = num.Round3(JitterKSCritical / (sm + 0.12 + 0.11/sm))
	t.Full = d*(sm+0.12+0.11/sm) <= JitterKSCritical
	return t
}

// lockstep compares the share of retries starting within w of another
// request's retry with what independent retries would give at the local
// rate (Poisson: 1 - exp(-2 w λ), λ the other retries in the second
// around each one). starts is sorted.
func lockstep(starts []int64, seqs []uint64, w time.Duration) LockstepFigures {
	f := LockstepFigures{Retries: int64(len(starts)), WindowMs: float64(w) / float64(time.Millisecond)}
	n := len(starts)
	if n < 2 {
		return f
	}
	const half = int64(500 * time.Millisecond)
	var coincident int
	var expected float64
	lo, hi := 0, 0
	for i, t := range starts {
		near := false
		for j := i - 1; j >= 0 && t-starts[j] <= int64(w); j-- {
			if seqs[j] != seqs[i] {
				near = true
				break
			}
		}
		for j := i + 1; !near && j < n && starts[j]-t <= int64(w); j++ {
			if seqs[j] != seqs[i] {
				near = true
			}
		}
		if near {
			coincident++
		}
		for lo < n && starts[lo] < t-half {
			lo++
		}
		for hi < n && starts[hi] <= t+half {
			hi++
		}
		lambda := float64(hi-lo-1) / 1.0 // others per second
		expected += 1 - math.Exp(-2*w.Seconds()*lambda)
	}
	obs := float64(coincident) / float64(n)
	p0 := expected / float64(n)
	f.CoincidentShare, f.IndependentShare = Ptr(num.Round3(obs)), Ptr(num.Round3(p0))
	if n >= LockstepMinRetries {
		se := math.Sqrt(max(p0*(1-p0), 1e-4) / float64(n))
		v := obs > p0+3*se && obs > 1.5*p0
		f.Lockstep, f.Basis = &v, "poisson"
	}
	return f
}

// msSummary is min/p50/max of figures in milliseconds (p50 the upper
// median, as minP50Max).
func msSummary(v []float64) MinP50Max {
	if len(v) == 0 {
		return MinP50Max{}
	}
	s := sortedCopy(v)
	return MinP50Max{Min: Ptr(num.Round3(s[0])), P50: Ptr(num.Round3(num.Median(s))), Max: Ptr(num.Round3(s[len(s)-1]))}
}

func sortedCopy(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s
}
