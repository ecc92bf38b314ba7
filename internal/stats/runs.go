package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Run is one run's samples of a figure with the figure's resolution in
// that run.
type Run struct {
	// Samples are the figure's values in the run (every cycle's, every
	// probe interval's); empty means the run did not observe it.
	Samples []float64
	// Grain is the width of the smallest step the measurement resolves in
	// this run, in the figure's unit: the request interval for a moment
	// seen through client requests, 1 for a count, the width of the
	// figure's bounds when the evidence leaves it a range. A value is
	// known to within one grain. 0 means exact.
	Grain float64
}

// CompareRuns compares sides a and b of one figure, run by run, with
// each run's resolution. th is the practical threshold.
//
// With two runs or more in all beyond one a side (one run against two is
// enough) the decision is Student's pooled two-sample t interval of the
// run values (each run's median): under the hypothesis being tested, that
// both sides ran the same thing, both sides' runs share one spread, so
// the spread is pooled over both sides with R_A + R_B − 2 degrees of
// freedom. That spread is floored by what every run value must vary by
// even between identical runs (RunFloor): the sampling variance of the
// run's median (its within-run samples, bootstrapped) and the rounding of
// a value known to one grain (grain²/12, the variance of a uniform error
// over one grain). Two runs that agree to the last grain have shown no
// spread below the grain, not no spread at all. The floor only widens the
// interval, so the test keeps at most its stated error rate.
//
// With one run a side there is no run-to-run spread to pool: the interval
// covers the noise within the two runs only (withinRun), and a figure with
// one sample a side cannot be judged (RunsToJudge says 2).
func CompareRuns(a, b []Run, th Threshold, opt Options) Result {
	opt = opt.defaults()
	r := Result{A: Summarize(samplesOf(a)), B: Summarize(samplesOf(b)), Level: opt.Level}
	if !r.Comparable() {
		r.Note = NoteNoSamples
		return r
	}
	a, b = keepObserved(a), keepObserved(b)
	r.DF = len(a) + len(b) - 2
	if r.DF < 1 {
		return withinRun(r, a[0], b[0], th, opt)
	}
	ya, yb := runValues(a), runValues(b)
	ma, mb := mean(ya), mean(yb)
	r.Delta = mb - ma
	r.Threshold = th.Of(ma)
	r.Between = math.Sqrt((sumSq(ya, ma) + sumSq(yb, mb)) / float64(r.DF))
	r.Floor = math.Sqrt(runFloor(append(slices.Clone(a), b...), opt))
	sd := math.Max(r.Between, r.Floor)
	se := sd * math.Sqrt(1/float64(len(a))+1/float64(len(b)))
	half := tQuantile(1-opt.Level, r.DF) * se
	r.Lo, r.Hi = r.Delta-half, r.Delta+half
	r.HasCI, r.Judged = true, true
	r.Clear = r.Lo > 0 || r.Hi < 0
	r.Beyond = r.Clear && math.Abs(r.Delta) >= r.Threshold
	if !r.Clear && r.Delta != 0 && math.Abs(r.Delta) >= r.Threshold {
		r.RunsToTell = RunsToTell(r.Delta, sd, opt.Level)
	}
	return r
}

// Judgeable reports whether CompareRuns can judge sides a and b: both
// observed the figure, and there is a run-to-run spread to pool (two runs
// or more in all beyond one a side) or, with one run a side, more than
// one sample on each. It depends only on how many runs and samples there
// are, never on their values, so it may choose the number of figures a
// simultaneous level is shared among.
func Judgeable(a, b []Run) bool {
	a, b = keepObserved(a), keepObserved(b)
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	if len(a)+len(b) >= 3 {
		return true
	}
	return len(a[0].Samples) > 1 && len(b[0].Samples) > 1
}

// RunsToTell returns how many runs a side would make a difference delta
// clear at level, were each run value to spread by sd: the least R with
// t(R_A + R_B − 2)·sd·√(2/R) < |delta|. 0 when delta is 0.
func RunsToTell(delta, sd float64, level float64) int {
	d := math.Abs(delta)
	if d == 0 || math.IsNaN(d) || math.IsInf(sd, 0) {
		return 0
	}
	clear := func(n int) bool {
		return tQuantile(1-level, 2*n-2)*sd*math.Sqrt(2/float64(n)) < d
	}
	// The half-width falls with n: double to an n that tells, then
	// bisect down to the least.
	lo, hi := 1, 2
	for !clear(hi) {
		if hi > 1<<30 {
			return 0
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if clear(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// runFloor returns the least variance a run value has even between
// identical runs, averaged over the runs: the bootstrap variance of the
// run's median over its own samples, plus grain²/12.
func runFloor(runs []Run, opt Options) float64 {
	rng := rand.New(rand.NewPCG(opt.Seed, 0x2545f4914f6cdd1d))
	var sum float64
	buf := make([]float64, 0, MaxPerRun)
	for _, r := range runs {
		sum += r.Grain * r.Grain / 12
		if len(r.Samples) < 2 {
			continue
		}
		var s, s2 float64
		for range opt.Resamples {
			buf = buf[:0]
			for range r.Samples {
				buf = append(buf, r.Samples[rng.IntN(len(r.Samples))])
			}
			m := median(buf)
			s += m
			s2 += m * m
		}
		n := float64(opt.Resamples)
		sum += math.Max(s2/n-(s/n)*(s/n), 0)
	}
	return sum / float64(len(runs))
}

// keepObserved drops runs without samples, thins long ones to MaxPerRun
// quantiles and keeps each run's grain.
func keepObserved(runs []Run) []Run {
	var out []Run
	for _, r := range runs {
		if len(r.Samples) == 0 {
			continue
		}
		t := thin([][]float64{r.Samples})
		out = append(out, Run{Samples: t[0], Grain: math.Abs(r.Grain)})
	}
	return out
}

func samplesOf(runs []Run) [][]float64 {
	out := make([][]float64, len(runs))
	for i, r := range runs {
		out[i] = r.Samples
	}
	return out
}

// runValues returns each run's median.
func runValues(runs []Run) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = median(slices.Clone(r.Samples))
	}
	return out
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func sumSq(v []float64, m float64) float64 {
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s
}
