// Package stats compares two sets of samples of one figure (probe spacing,
// cooldowns, time to open, …) taken on two sides of a comparison (macOS and
// Linux, last week and this week), and says whether their difference is
// beyond noise.
//
// The unit of evidence is the run: samples of one run share its machine,
// its load and its GC rhythm, so they are not independent of each other,
// and a test over pooled samples would call a one-run fluke significant.
// Each run's value is the median of its samples; the difference is B − A
// of the sides' mean run values, and its interval is Student's pooled
// two-sample t interval over the run values (CompareRuns). Under the
// hypothesis tested — both sides ran the same thing — both sides' runs
// share one spread, so it is pooled with R_A + R_B − 2 degrees of freedom:
// two runs a side (or one against two) can decide, where a rank test of
// the runs could not (two against two reach p = 1/3 at best).
//
// Two runs that agree exactly have not shown that runs never differ: a
// value read through client requests is known only to the request
// interval, a count only to one call, a bounded figure only to its
// bounds, and a run's median only to its own samples' spread. The spread
// a run value is given is therefore at least that floor (RunFloor in
// CompareRuns): the bootstrap variance of the run's median plus grain²/12,
// the variance of a uniform error over one grain (Sheppard). The floor
// only widens the interval, so the error rate stays at most 1 − Level
// under the t interval's assumption (run values about normal: each is a
// median, or a time made of many small delays).
//
// With one run a side there is no run-to-run spread at all: the interval
// covers the noise within the two runs only (each run's median with its
// floor, Student's t with the smaller run's samples less one degrees of
// freedom), which the result says; one sample a side cannot be judged.
//
// A difference is flagged (Beyond) only when it is statistically clear
// (the interval excludes zero) and at least a practical threshold (a
// Threshold: absolute, in the figure's unit, or relative to A's value,
// whichever is larger). The fixed seed of the floor's bootstrap makes every
// result a pure function of the samples: the same runs give the same
// verdict, in CI and on a laptop.
package stats

import (
	"math"
	"slices"
)

// Defaults of Options.
const (
	DefaultLevel     = 0.95
	DefaultResamples = 2000
	DefaultSeed      = 17
)

// Options tunes the bootstrap. The zero value means the defaults.
type Options struct {
	// Level is the confidence level of the interval; 0 means 0.95.
	Level float64
	// Resamples is the number of bootstrap resamples; 0 means 2000.
	Resamples int
	// Seed seeds the resampling; 0 means DefaultSeed. Fixed so that the
	// same samples always give the same interval.
	Seed uint64
}

// Threshold is the smallest difference worth a flag: Abs in the figure's
// unit, or Rel times |median of A|, whichever is larger.
type Threshold struct {
	Abs float64
	Rel float64
}

// Of returns the threshold that applies to a figure whose A-side median
// is ref.
func (t Threshold) Of(ref float64) float64 {
	return math.Max(t.Abs, t.Rel*math.Abs(ref))
}

// Summary describes one side's samples.
type Summary struct {
	// N is the number of samples, Runs the number of runs holding at
	// least one.
	N    int
	Runs int
	// Median, P10 and P90 of the pooled samples (linear interpolation
	// between order statistics); zero when N is 0.
	Median, P10, P90 float64
}

// Result is the comparison of one figure.
type Result struct {
	A, B Summary
	// Delta is B's median minus A's; meaningful when both sides have
	// samples (Comparable).
	Delta float64
	// HasCI reports whether Lo and Hi hold a confidence interval of Delta
	// at Level.
	HasCI  bool
	Lo, Hi float64
	Level  float64
	// Clear reports that the interval excludes zero (and, for one value
	// per run, that the rank test agrees).
	Clear bool
	// Judged reports whether these samples can tell a difference from
	// noise at all: false with one sample on a side, or with one value
	// per run and too few runs for the rank test to reach Level.
	Judged bool
	// Threshold is the practical threshold that applied (in the unit).
	Threshold float64
	// Beyond reports that the difference is clear and at least Threshold:
	// the flag.
	Beyond bool
	// Note says plainly what limits the result, or is empty.
	Note string
	// DF is the degrees of freedom of the run-level interval (R_A + R_B −
	// 2); below 1 the interval is the within-run bootstrap.
	DF int
	// Between is the spread (standard deviation) of the run values around
	// their side's mean, pooled over both sides; Floor the least spread a
	// run value has even between identical runs (its median's within-run
	// noise and its resolution). The interval uses the larger.
	Between, Floor float64
	// RunsToJudge, when not Judged, is how many runs a side would judge
	// the figure; 0 when more runs cannot (a side never observed it).
	RunsToJudge int
	// RunsToTell, when the difference is at least the threshold but not
	// clear, is how many runs a side would make a difference this size
	// clear were runs to spread as these do; 0 otherwise.
	RunsToTell int
}

// Comparable reports whether both sides have at least one sample.
func (r Result) Comparable() bool { return r.A.N > 0 && r.B.N > 0 }

// Notes of a Result.
const (
	NoteNoSamples = "not observed on both sides"
	NoteOneSample = "one sample per side: a difference cannot be told from noise"
	NoteOneSided  = "one sample on one side: its noise is unknown, no interval"
	NoteWithinRun = "one run per side: the interval covers cycle-to-cycle noise only, not run-to-run"
)

// Compare compares sides a and b of one figure. Each side is a list of
// runs, each run a list of samples (empty runs are ignored), all exact
// (no grain: CompareRuns takes each run's resolution). th is the
// practical threshold.
func Compare(a, b [][]float64, th Threshold, opt Options) Result {
	return CompareRuns(exactRuns(a), exactRuns(b), th, opt)
}

func exactRuns(side [][]float64) []Run {
	out := make([]Run, len(side))
	for i, s := range side {
		out[i] = Run{Samples: s}
	}
	return out
}

// defaults fills the zero fields of opt.
func (opt Options) defaults() Options {
	if opt.Level <= 0 || opt.Level >= 1 {
		opt.Level = DefaultLevel
	}
	if opt.Resamples <= 0 {
		opt.Resamples = DefaultResamples
	}
	if opt.Seed == 0 {
		opt.Seed = DefaultSeed
	}
	return opt
}

// withinRun compares one run a side. There is no run-to-run spread to
// measure, so the interval covers the noise within the two runs only
// (NoteWithinRun): each run's median with the spread the floor gives it
// (its samples' bootstrap variance and its grain), and Student's t
// quantile with the smaller run's samples less one degrees of freedom. A
// run of one sample has no within-run noise to show: not judged.
func withinRun(r Result, a, b Run, th Threshold, opt Options) Result {
	ya, yb := median(slices.Clone(a.Samples)), median(slices.Clone(b.Samples))
	r.Delta = yb - ya
	r.Threshold = th.Of(ya)
	switch {
	case r.A.N == 1 && r.B.N == 1:
		r.Note, r.RunsToJudge = NoteOneSample, 2
		return r
	case r.A.N == 1 || r.B.N == 1:
		r.Note, r.RunsToJudge = NoteOneSided, 2
		return r
	}
	fa, fb := runFloor([]Run{a}, opt), runFloor([]Run{b}, opt)
	r.Floor = math.Sqrt((fa + fb) / 2)
	half := tQuantile(1-opt.Level, min(len(a.Samples), len(b.Samples))-1) * math.Sqrt(fa+fb)
	r.Lo, r.Hi = r.Delta-half, r.Delta+half
	r.HasCI, r.Judged = true, true
	r.Clear = r.Lo > 0 || r.Hi < 0
	r.Beyond = r.Clear && math.Abs(r.Delta) >= r.Threshold
	r.Note = NoteWithinRun
	return r
}

// Summarize pools a side's runs and summarises them.
func Summarize(runs [][]float64) Summary {
	var all []float64
	s := Summary{}
	for _, r := range runs {
		if len(r) > 0 {
			s.Runs++
			all = append(all, r...)
		}
	}
	s.N = len(all)
	if s.N == 0 {
		return s
	}
	slices.Sort(all)
	s.Median = Quantile(all, 0.5)
	s.P10 = Quantile(all, 0.1)
	s.P90 = Quantile(all, 0.9)
	return s
}

// Quantile returns the q-quantile of sorted (non-empty) values, linearly
// interpolated between order statistics (Hyndman–Fan type 7, as R and
// NumPy default to).
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// MaxPerRun bounds the samples of one run the bootstrap resamples; a run
// with more (send lateness of every request) is replaced by MaxPerRun of
// its quantiles, evenly spaced. The shape is kept and the interval can
// only widen (fewer samples vary more), while a comparison of thousands
// of samples stays a fraction of a second.
const MaxPerRun = 400

// thin drops empty runs and thins long ones to MaxPerRun quantiles,
// without modifying the input.
func thin(runs [][]float64) [][]float64 {
	out := make([][]float64, 0, len(runs))
	for _, r := range runs {
		switch {
		case len(r) == 0:
		case len(r) <= MaxPerRun:
			out = append(out, r)
		default:
			s := slices.Clone(r)
			slices.Sort(s)
			q := make([]float64, MaxPerRun)
			for i := range q {
				q[i] = Quantile(s, (float64(i)+0.5)/MaxPerRun)
			}
			out = append(out, q)
		}
	}
	return out
}

// tQuantile returns t such that P(|T| > t) = alpha for Student's t with
// df degrees of freedom, by bisection on tTwoSided.
func tQuantile(alpha float64, df int) float64 {
	if df > 300 {
		// The exact sums take df/2 terms; here the Cornish–Fisher
		// expansion around the normal quantile is within 1e-6 there.
		z := zQuantile(alpha)
		d := float64(df)
		z3, z5 := z*z*z, z*z*z*z*z
		return z + (z3+z)/(4*d) + (5*z5+16*z3+3*z)/(96*d*d) + (3*z5*z*z+19*z5+17*z3-15*z)/(384*d*d*d)
	}
	lo, hi := 0.0, 1e4
	for range 200 {
		mid := (lo + hi) / 2
		if 1-tCentral(mid, df) > alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// zQuantile returns z such that P(|Z| > z) = alpha for a standard normal
// Z, by bisection on erfc.
func zQuantile(alpha float64) float64 {
	lo, hi := 0.0, 40.0
	for range 200 {
		mid := (lo + hi) / 2
		if math.Erfc(mid/math.Sqrt2) > alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// tCentral returns P(|T| ≤ t) for Student's t with df degrees of freedom
// (Abramowitz and Stegun 26.7.3 and 26.7.4: finite sums in θ = atan(t/√df)
// for integer df).
func tCentral(t float64, df int) float64 {
	th := math.Atan(t / math.Sqrt(float64(df)))
	s, c := math.Sin(th), math.Cos(th)
	if df%2 == 1 {
		if df == 1 {
			return 2 * th / math.Pi
		}
		sum, term := c, c
		for k := 3; k <= df-2; k += 2 {
			term *= float64(k-1) / float64(k) * c * c
			sum += term
		}
		return 2 / math.Pi * (th + s*sum)
	}
	sum, term := 1.0, 1.0
	for k := 2; k <= df-2; k += 2 {
		term *= float64(k-1) / float64(k) * c * c
		sum += term
	}
	return s * sum
}

// median returns the median of v, reordering v (quickselect: a bootstrap
// takes thousands of medians of the same few thousand values).
func median(v []float64) float64 {
	n := len(v)
	m := selectK(v, n/2)
	if n%2 == 1 {
		return m
	}
	// The lower middle is the largest value left of n/2 after selection.
	lower := v[0]
	for _, x := range v[1 : n/2] {
		lower = math.Max(lower, x)
	}
	return (lower + m) / 2
}

// selectK partially orders v so that v[k] is its k-th smallest value,
// everything left of it no larger and everything right no smaller, and
// returns v[k] (Hoare's selection with a middle pivot).
func selectK(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		p := v[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for v[i] < p {
				i++
			}
			for v[j] > p {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}
