package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// draw makes runs × n samples: each run has its own offset (sd runSD)
// around mean, each sample within-run noise (sd sd).
func draw(rng *rand.Rand, runs, n int, mean, runSD, sd float64) [][]float64 {
	out := make([][]float64, runs)
	for i := range out {
		off := mean + rng.NormFloat64()*runSD
		for range n {
			out[i] = append(out[i], off+rng.NormFloat64()*sd)
		}
	}
	return out
}

func TestQuantile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 3}, {1, 5}, {0.1, 1.4}, {0.9, 4.6}, {0.25, 2}} {
		if got := Quantile(v, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := Quantile([]float64{7}, 0.9); got != 7 {
		t.Errorf("one value: %v", got)
	}
}

// TestMedianMatchesSort checks the quickselect median against sorting, on
// random lengths with many ties.
func TestMedianMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rng.IntN(40)
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(rng.IntN(6))
		}
		s := slices.Clone(v)
		slices.Sort(s)
		if got, want := median(v), Quantile(s, 0.5); got != want {
			t.Fatalf("median(%v) = %v, want %v", s, got, want)
		}
	}
}

func TestShiftIsFoundAndCovered(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a := draw(rng, 3, 20, 400, 1, 5)
	b := draw(rng, 3, 20, 460, 1, 5)
	r := Compare(a, b, Threshold{Abs: 2}, Options{})
	if !r.HasCI || !r.Clear || !r.Beyond {
		t.Fatalf("60 ms shift not flagged: %+v", r)
	}
	if r.Lo > 60 || r.Hi < 60 || r.Lo <= 0 {
		t.Errorf("interval [%.2f, %.2f] should hold 60 and exclude 0", r.Lo, r.Hi)
	}
	if r.A.N != 60 || r.B.Runs != 3 || r.Note != "" {
		t.Errorf("summary: %+v %+v note %q", r.A, r.B, r.Note)
	}
	if r.A.P10 >= r.A.Median || r.A.P90 <= r.A.Median {
		t.Errorf("spread: %+v", r.A)
	}
}

// TestCoverage draws many pairs of sets from known distributions and
// checks that the 95 % interval holds the true difference about as often
// as it claims (5 %), with and without a true shift. The bounds leave room
// for the number of trials.
func TestCoverage(t *testing.T) {
	for _, c := range []struct {
		name              string
		shift, runSD, sd  float64
		maxMiss, maxFlags float64
	}{
		{"no shift, sample noise", 0, 0, 5, 0.10, 0.10},
		{"no shift, run-to-run noise", 0, 3, 1, 0.12, 0.12},
		{"shift 10, sample noise", 10, 0, 5, 0.10, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			const trials = 60
			miss, flags := 0, 0
			for range trials {
				a := draw(rng, 3, 15, 100, c.runSD, c.sd)
				b := draw(rng, 3, 15, 100+c.shift, c.runSD, c.sd)
				r := Compare(a, b, Threshold{}, Options{Resamples: 400})
				if r.Lo > c.shift || r.Hi < c.shift {
					miss++
				}
				if r.Beyond {
					flags++
				}
			}
			t.Logf("true difference outside the interval in %d/%d; flagged %d/%d", miss, trials, flags, trials)
			if f := float64(miss) / trials; f > c.maxMiss {
				t.Errorf("interval misses the true difference %.0f%% of the time (allowed %.0f%%)", f*100, c.maxMiss*100)
			}
			if f := float64(flags) / trials; f > c.maxFlags {
				t.Errorf("flagged %.0f%% of identical sets (allowed %.0f%%)", f*100, c.maxFlags*100)
			}
			if c.shift > 0 && flags < trials*9/10 {
				t.Errorf("a shift of 2 sd flagged only %d/%d times", flags, trials)
			}
		})
	}
}

// TestRunNoiseIsNotSignal shows why runs are the unit: with a run-to-run
// offset much larger than the within-run noise, pooling the samples as if
// independent (one run a side) would flag most identical sets.
func TestRunNoiseIsNotSignal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const trials = 50
	flags, naive := 0, 0
	for range trials {
		a := draw(rng, 3, 20, 100, 3, 0.5)
		b := draw(rng, 3, 20, 100, 3, 0.5)
		if Compare(a, b, Threshold{}, Options{Resamples: 400}).Beyond {
			flags++
		}
		if Compare([][]float64{flat(a)}, [][]float64{flat(b)}, Threshold{}, Options{Resamples: 400}).Beyond {
			naive++
		}
	}
	t.Logf("flagged %d/%d run by run, %d/%d pooled", flags, trials, naive, trials)
	if flags > trials*15/100 || naive < trials/2 {
		t.Errorf("run by run flagged %d/%d identical sets, pooled %d/%d", flags, trials, naive, trials)
	}
}

func TestThresholdAndNotes(t *testing.T) {
	a := [][]float64{{100, 100.1, 99.9, 100, 100.05}, {100, 99.95, 100.1}}
	b := [][]float64{{101, 101.1, 100.9, 101, 101.05}, {101, 100.95, 101.1}}
	r := Compare(a, b, Threshold{Abs: 2}, Options{})
	if !r.Clear || r.Beyond || r.Threshold != 2 {
		t.Errorf("1 unit clear but below a threshold of 2 must not be flagged: %+v", r)
	}
	if r := Compare(a, b, Threshold{Abs: 0.5, Rel: 0.05}, Options{}); r.Threshold != 5 || r.Beyond {
		t.Errorf("relative threshold 5%% of 100 = 5: %+v", r)
	}
	if r := Compare(a, b, Threshold{Abs: 0.5}, Options{}); !r.Beyond {
		t.Errorf("beyond 0.5: %+v", r)
	}

	one := Compare([][]float64{{1}}, [][]float64{{9}}, Threshold{}, Options{})
	if one.HasCI || one.Judged || one.Beyond || one.Note != NoteOneSample || one.Delta != 8 {
		t.Errorf("one sample per side: %+v", one)
	}
	if r := Compare([][]float64{{1}}, [][]float64{{9, 9.1, 8.9}}, Threshold{}, Options{}); r.HasCI || r.Beyond || r.Note != NoteOneSided {
		t.Errorf("one sample on one side: %+v", r)
	}
	if r := Compare([][]float64{{}, nil}, [][]float64{{1, 2}}, Threshold{}, Options{}); r.Comparable() || r.Note != NoteNoSamples {
		t.Errorf("no samples on A: %+v", r)
	}
	if r := Compare([][]float64{{1, 2, 3, 1.5}}, [][]float64{{9, 9.1, 8.9, 9}}, Threshold{}, Options{}); !r.Beyond || r.Note != NoteWithinRun {
		t.Errorf("one run per side says so: %+v", r)
	}
}

// flat pools a side's runs into one.
func flat(runs [][]float64) []float64 {
	var out []float64
	for _, r := range runs {
		out = append(out, r...)
	}
	return out
}

func TestDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	a, b := draw(rng, 3, 10, 0, 1, 1), draw(rng, 3, 10, 0.5, 1, 1)
	r1 := Compare(a, b, Threshold{}, Options{})
	r2 := Compare(a, b, Threshold{}, Options{})
	if r1 != r2 {
		t.Errorf("same samples, different results: %+v vs %+v", r1, r2)
	}
	// The inputs are not reordered by the comparison.
	if c := Compare(a, b, Threshold{}, Options{}); c != r1 {
		t.Errorf("inputs changed by Compare")
	}
}

func BenchmarkCompare(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	x, y := draw(rng, 3, 3000, 0, 1, 1), draw(rng, 3, 3000, 0, 1, 1)
	for b.Loop() {
		Compare(x, y, Threshold{}, Options{})
	}
}

// TestTQuantile checks the t distribution against printed tables.
func TestTQuantile(t *testing.T) {
	for _, c := range []struct {
		alpha float64
		df    int
		want  float64
	}{{0.05, 1, 12.706}, {0.05, 2, 4.303}, {0.05, 3, 3.182}, {0.05, 4, 2.776}, {0.05, 10, 2.228}, {0.05, 30, 2.042}, {0.01, 5, 4.032}} {
		if got := tQuantile(c.alpha, c.df); math.Abs(got-c.want) > 0.001 {
			t.Errorf("t(%v, %d) = %.4f, want %.3f", c.alpha, c.df, got, c.want)
		}
	}
}

// TestTwoRunsDecide is issue 31's case: the first probe after open at
// 2.02 s in both runs of one side and 5.02 s in both of the other, read
// through requests 20 ms apart. Two runs a side decide it; the interval
// is the grain's rounding noise around +3 s.
func TestTwoRunsDecide(t *testing.T) {
	a := []Run{{Samples: []float64{2020}, Grain: 20}, {Samples: []float64{2020}, Grain: 20}}
	b := []Run{{Samples: []float64{5020}, Grain: 20}, {Samples: []float64{5020}, Grain: 20}}
	r := CompareRuns(a, b, Threshold{Abs: 2, Rel: 0.005}, Options{})
	if !r.Judged || !r.Clear || !r.Beyond || r.DF != 2 || r.Delta != 3000 {
		t.Fatalf("2 s vs 5 s, two runs a side: %+v", r)
	}
	// Half-width t(0.975, 2)·(20/√12)·√(1/2 + 1/2) = 4.303·5.774 = 24.8.
	if math.Abs(r.Hi-r.Delta-24.84) > 0.05 || math.Abs(r.Floor-20/math.Sqrt(12)) > 1e-9 || r.Between != 0 {
		t.Errorf("interval [%v, %v], floor %v, between %v", r.Lo, r.Hi, r.Floor, r.Between)
	}
	// One run against two decides too (one degree of freedom).
	if r := CompareRuns(a[:1], b, Threshold{}, Options{}); !r.Judged || !r.Beyond || r.DF != 1 {
		t.Errorf("1 vs 2: %+v", r)
	}
	// One against one cannot, and says two runs a side would.
	if r := CompareRuns(a[:1], b[:1], Threshold{}, Options{}); r.Judged || r.Beyond || r.RunsToJudge != 2 {
		t.Errorf("1 vs 1: %+v", r)
	}
	// Three runs a side of one value each are judged too.
	three := Compare([][]float64{{1}, {2}, {3}}, [][]float64{{10}, {11}, {12}}, Threshold{}, Options{})
	if !three.Judged || !three.Beyond || three.Note != "" || three.DF != 4 {
		t.Errorf("3 vs 3: %+v", three)
	}
	mixed := Compare([][]float64{{1}, {2}, {3}, {2}, {1.5}}, [][]float64{{1.2}, {2.5}, {3.1}, {1.8}, {1.1}}, Threshold{}, Options{})
	if mixed.Clear || !mixed.Judged {
		t.Errorf("overlapping 5 vs 5: %+v", mixed)
	}
}

// TestFloors: runs that agree exactly have not shown a spread below their
// resolution or their own samples' noise. Without the floors the same
// values are called clear.
func TestFloors(t *testing.T) {
	grain := func(v float64, g float64) []Run {
		return []Run{{Samples: []float64{v}, Grain: g}, {Samples: []float64{v}, Grain: g}}
	}
	// One grain apart: within the rounding of two reads 20 ms apart.
	if r := CompareRuns(grain(2020, 20), grain(2040, 20), Threshold{}, Options{}); r.Clear || !r.Judged {
		t.Errorf("one grain apart, grain 20: %+v", r)
	}
	if r := CompareRuns(grain(2020, 0), grain(2040, 0), Threshold{}, Options{}); !r.Clear {
		t.Errorf("one grain apart, exact: %+v", r)
	}
	// Each run's median is 5 (A) or 6 (B), but its samples spread over
	// 8: the medians agreeing is chance, not precision.
	a := [][]float64{{1, 5, 9}, {1, 5, 9}}
	b := [][]float64{{2, 6, 10}, {2, 6, 10}}
	r := Compare(a, b, Threshold{}, Options{})
	if r.Clear || r.Between != 0 || r.Floor < 1 {
		t.Errorf("within-run noise as the floor: %+v", r)
	}
	if r := Compare([][]float64{{5}, {5}}, [][]float64{{6}, {6}}, Threshold{}, Options{}); !r.Clear {
		t.Errorf("the same medians without within-run samples: %+v", r)
	}
}

// TestTwoRunsErrorRate draws two runs a side of one value each, from one
// distribution, rounded to a grain about the noise's size, and checks the
// share flagged against the stated 5 %; then a shift of six spreads is
// found nearly always.
func TestTwoRunsErrorRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const trials = 600
	side := func(mean, g float64) []Run {
		out := make([]Run, 2)
		for i := range out {
			v := mean + rng.NormFloat64()*10
			out[i] = Run{Samples: []float64{math.Round(v/g) * g}, Grain: g}
		}
		return out
	}
	for _, g := range []float64{1, 20} {
		flags, found := 0, 0
		for range trials {
			if CompareRuns(side(1000, g), side(1000, g), Threshold{}, Options{}).Beyond {
				flags++
			}
			if CompareRuns(side(1000, g), side(1060, g), Threshold{}, Options{}).Beyond {
				found++
			}
		}
		t.Logf("grain %v: identical flagged %d/%d, shift of 6 sd found %d/%d", g, flags, trials, found, trials)
		if flags > trials*7/100 {
			t.Errorf("grain %v: identical sides flagged %d/%d, above the stated 5 %%", g, flags, trials)
		}
		if found < trials*7/10 {
			t.Errorf("grain %v: a shift of 6 sd found only %d/%d", g, found, trials)
		}
	}
}

func TestRunsToTell(t *testing.T) {
	// t(0.975, 2R−2)·√(2/R): R = 2: 4.30, 3: 2.27, 4: 1.73, 5: 1.46.
	for _, c := range []struct {
		delta float64
		want  int
	}{{5, 2}, {3, 3}, {2, 4}, {1.6, 5}, {0, 0}} {
		if got := RunsToTell(c.delta, 1, 0.95); got != c.want {
			t.Errorf("RunsToTell(%v, 1) = %d, want %d", c.delta, got, c.want)
		}
	}
	// Judged but not clear, beyond the threshold: says how many runs.
	r := Compare([][]float64{{1}, {3}}, [][]float64{{4}, {6}}, Threshold{}, Options{})
	if r.Clear || r.RunsToTell < 3 {
		t.Errorf("not clear at 2 runs: %+v", r)
	}
}

// TestTQuantileLargeDF checks the expansion used above 300 degrees of
// freedom against the exact sums.
func TestTQuantileLargeDF(t *testing.T) {
	for _, alpha := range []float64{0.05, 0.01, 0.0025} {
		for _, df := range []int{301, 400, 1000} {
			lo, hi := 0.0, 1e4
			for range 200 {
				mid := (lo + hi) / 2
				if 1-tCentral(mid, df) > alpha {
					lo = mid
				} else {
					hi = mid
				}
			}
			if got := tQuantile(alpha, df); math.Abs(got-lo) > 1e-6 {
				t.Errorf("t(%v, %d) = %.7f, exact %.7f", alpha, df, got, lo)
			}
		}
	}
	if z := zQuantile(0.05); math.Abs(z-1.959964) > 1e-6 {
		t.Errorf("z(0.05) = %v", z)
	}
}
