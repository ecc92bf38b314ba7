// Package stats compares two sets of samples of one figure (probe spacing,
// cooldowns, time to open, …) taken on two sides of a comparison (macOS and
// Linux, last week and this week), and says whether their difference is
// beyond noise.
//
// The estimate is the difference of medians (B − A). Its confidence
// interval comes from a two-level percentile bootstrap with a fixed seed:
// each resample draws a side's runs with replacement, then each drawn
// run's samples with replacement, so that run-to-run noise (a loaded
// machine, a different GC rhythm) widens the interval as much as
// cycle-to-cycle noise does. Samples of one run are not independent of
// each other; a rank test over the pooled samples (Hodges–Lehmann with
// Mann–Whitney) would treat twenty probe intervals of one run as twenty
// independent observations and call a one-run fluke significant. The
// fixed seed makes the interval a pure function of the samples: the same
// runs always give the same verdict.
//
// With few runs the plain percentile interval is too narrow (a resample
// cannot reach beyond the runs it has; with three runs per side it misses
// the true difference about twice as often as it claims). The interval is
// therefore the expanded percentile interval (Hesterberg, "What teachers
// should know about the bootstrap", 2015): its tail probability is
// 2Φ(−√(n/(n−1))·t(α/2, n−1)) with n the number of runs on the smaller
// side (samples, when a side has one run). It widens the interval as a t
// interval is wider than a normal one, and converges to the plain interval
// as n grows.
//
// A figure with one value per run (time to open, time to close) has no
// replication inside a run to widen the bootstrap, whose interval then
// spans about the range of the runs: three runs per side that do not
// overlap happen one time in ten by chance. For such figures the exact
// rank test of the runs (Wilcoxon–Mann–Whitney) must agree, so three runs
// per side can never be clear at 95 % (the smallest p is 0.1) and four can
// (2/70).
//
// A difference is flagged (Beyond) only when it is statistically clear
// (the interval excludes zero) and at least a practical threshold (a
// Threshold: absolute, in the figure's unit, or relative to A's median,
// whichever is larger). One sample per side gives no interval at all: the
// result says that noise cannot be separated, and nothing is flagged.
package stats

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
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
}

// Comparable reports whether both sides have at least one sample.
func (r Result) Comparable() bool { return r.A.N > 0 && r.B.N > 0 }

// Notes of a Result.
const (
	NoteNoSamples = "not observed on both sides"
	NoteOneSample = "one sample per side: a difference cannot be told from noise"
	NoteOneSided  = "one sample on one side: its noise is unknown, no interval"
	NoteWithinRun = "one run per side: the interval covers cycle-to-cycle noise only, not run-to-run"
	NoteFewRuns   = "one value per run: %d runs per side cannot be clear at %.0f %% (the rank test needs more runs)"
)

// Compare compares sides a and b of one figure. Each side is a list of
// runs, each run a list of samples (empty runs are ignored). th is the
// practical threshold.
func Compare(a, b [][]float64, th Threshold, opt Options) Result {
	if opt.Level <= 0 || opt.Level >= 1 {
		opt.Level = DefaultLevel
	}
	if opt.Resamples <= 0 {
		opt.Resamples = DefaultResamples
	}
	if opt.Seed == 0 {
		opt.Seed = DefaultSeed
	}
	r := Result{A: Summarize(a), B: Summarize(b), Level: opt.Level}
	a, b = thin(a), thin(b)
	if !r.Comparable() {
		r.Note = NoteNoSamples
		return r
	}
	r.Delta = r.B.Median - r.A.Median
	r.Threshold = th.Of(r.A.Median)
	switch {
	case r.A.N == 1 && r.B.N == 1:
		r.Note = NoteOneSample
		return r
	case r.A.N == 1 || r.B.N == 1:
		r.Note = NoteOneSided
		return r
	}
	n := min(r.A.Runs, r.B.Runs)
	if n < 2 {
		n = min(r.A.N, r.B.N)
	}
	r.Lo, r.Hi = bootstrap(a, b, expandedAlpha(1-opt.Level, n), opt)
	r.HasCI, r.Judged = true, true
	r.Clear = r.Lo > 0 || r.Hi < 0
	if va, vb, ok := onePerRun(a, b); ok {
		// One value per run: no within-run replication widens the
		// bootstrap, whose interval is then about the range of the runs
		// (three runs per side that do not overlap happen one time in ten
		// by chance alone). The exact rank test of the runs decides.
		p, minP := RankTest(va, vb)
		if minP > 1-opt.Level {
			r.Clear, r.Judged = false, false
			r.Note = fmt.Sprintf(NoteFewRuns, min(len(va), len(vb)), opt.Level*100)
		} else if p > 1-opt.Level {
			r.Clear = false
		}
	}
	r.Beyond = r.Clear && math.Abs(r.Delta) >= r.Threshold
	if r.A.Runs == 1 && r.B.Runs == 1 {
		r.Note = NoteWithinRun
	}
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

// bootstrap returns the percentile interval of median(b*) − median(a*)
// over two-level resamples, with tail probability alpha (both tails).
func bootstrap(a, b [][]float64, alpha float64, opt Options) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15))
	bufA := make([]float64, 0, total(a))
	bufB := make([]float64, 0, total(b))
	d := make([]float64, opt.Resamples)
	for i := range d {
		bufA = resample(rng, a, bufA[:0])
		bufB = resample(rng, b, bufB[:0])
		d[i] = median(bufB) - median(bufA)
	}
	slices.Sort(d)
	return Quantile(d, alpha/2), Quantile(d, 1-alpha/2)
}

// expandedAlpha is the tail probability of the expanded percentile
// interval for nominal alpha and n observations (n ≥ 2).
func expandedAlpha(alpha float64, n int) float64 {
	x := math.Sqrt(float64(n)/float64(n-1)) * tQuantile(alpha, n-1)
	return math.Erfc(x / math.Sqrt2) // 2Φ(−x)
}

// tQuantile returns t such that P(|T| > t) = alpha for Student's t with
// df degrees of freedom, by bisection on tTwoSided.
func tQuantile(alpha float64, df int) float64 {
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

// resample draws len(runs) runs with replacement and, from each, as many
// samples as it holds, with replacement, appending them to buf.
func resample(rng *rand.Rand, runs [][]float64, buf []float64) []float64 {
	for range runs {
		run := runs[rng.IntN(len(runs))]
		for range run {
			buf = append(buf, run[rng.IntN(len(run))])
		}
	}
	return buf
}

func total(runs [][]float64) int {
	n := 0
	for _, r := range runs {
		n += len(r)
	}
	return n
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

// onePerRun returns each side's values when no run holds more than one.
func onePerRun(a, b [][]float64) (va, vb []float64, ok bool) {
	for _, side := range [][][]float64{a, b} {
		for _, r := range side {
			if len(r) > 1 {
				return nil, nil, false
			}
		}
	}
	return flat(a), flat(b), true
}

func flat(runs [][]float64) []float64 {
	var out []float64
	for _, r := range runs {
		out = append(out, r...)
	}
	return out
}

// RankTest is the two-sided exact permutation test of the rank sum
// (Wilcoxon–Mann–Whitney, midranks for ties) of a against b. It returns
// the p-value and the smallest p-value these samples can reach (2/C(n, k)
// without ties). Above 16 values in all it uses the normal approximation
// with the tie correction, and the smallest p is reported as 0.
func RankTest(a, b []float64) (p, minP float64) {
	all := append(slices.Clone(a), b...)
	n, k := len(all), len(a)
	if k == 0 || k == n {
		return 1, 1
	}
	ranks := midranks(all)
	obs := 0.0
	for i := range k {
		obs += ranks[i]
	}
	mean := float64(k) * float64(n+1) / 2
	dev := math.Abs(obs - mean)
	if n > 16 {
		sorted := slices.Clone(all)
		slices.Sort(sorted)
		var ties float64
		for i := 0; i < n; {
			j := i
			for j < n && sorted[j] == sorted[i] {
				j++
			}
			t := float64(j - i)
			ties += t*t*t - t
			i = j
		}
		nf, kf := float64(n), float64(k)
		v := kf * (nf - kf) / 12 * ((nf + 1) - ties/(nf*(nf-1)))
		if v <= 0 {
			return 1, 0
		}
		return math.Min(1, math.Erfc(math.Max(dev-0.5, 0)/math.Sqrt(v)/math.Sqrt2)), 0
	}
	// Every way to pick k of the n ranks.
	var total, extreme, atMax, maxDev float64
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		sum := 0.0
		for _, i := range idx {
			sum += ranks[i]
		}
		d := math.Abs(sum - mean)
		total++
		if d >= dev-1e-9 {
			extreme++
		}
		switch {
		case d > maxDev+1e-9:
			maxDev, atMax = d, 1
		case d >= maxDev-1e-9:
			atMax++
		}
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			break
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
	return extreme / total, atMax / total
}

// midranks returns the rank of each value (1-based), ties sharing the
// mean of their ranks.
func midranks(v []float64) []float64 {
	order := make([]int, len(v))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(v[x], v[y]) })
	r := make([]float64, len(v))
	for i := 0; i < len(order); {
		j := i
		for j < len(order) && v[order[j]] == v[order[i]] {
			j++
		}
		mid := float64(i+j+1) / 2
		for q := i; q < j; q++ {
			r[order[q]] = mid
		}
		i = j
	}
	return r
}
