package analysis

import (
	"math/rand/v2"
	"testing"
)

// TestFullJitterTest: the test accepts waits uniform between zero and a
// cap whatever the cap, at about its stated rate of false rejections, and
// with a few waits stretched by a loaded machine; it rejects a fixed wait, a wait with a floor (equal jitter: uniform on
// [cap/2, cap]) and immediate retries with a rare long one.
func TestFullJitterTest(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	draw := func(n int, f func(i int) float64) []float64 {
		w := make([]float64, n)
		for i := range w {
			w[i] = f(i)
		}
		return w
	}
	const trials = 2000
	rejected := 0
	for i := range trials {
		c := 10 + float64(i%7)*300 // the cap does not matter
		n := JitterMinWaits + i%40
		if !fullJitterTest(draw(n, func(int) float64 { return rnd.Float64() * c })).Full {
			rejected++
		}
	}
	// α = 0.001: a handful of 2000 at most (Stephens' form is
	// conservative at small samples).
	if rejected > 10 {
		t.Errorf("full jitter rejected %d of %d times", rejected, trials)
	}
	for name, f := range map[string]func(int) float64{
		"fixed 200ms with scheduling noise": func(int) float64 { return 200 + rnd.Float64()*3 },
		"equal jitter":                      func(int) float64 { return 50 + rnd.Float64()*50 },
		"immediate, one in ten after 100ms": func(i int) float64 { return map[bool]float64{true: 100, false: rnd.Float64()}[i%10 == 0] },
		"all zero":                          func(int) float64 { return 0 },
	} {
		missed := 0
		for range 200 {
			if fullJitterTest(draw(30, f)).Full {
				missed++
			}
		}
		if missed > 2 {
			t.Errorf("%s passed as full jitter %d of 200 times", name, missed)
		}
	}
	// A loaded machine stretches a few waits: they are not taken for the cap.
	stretched := 0
	for range 200 {
		w := draw(21, func(i int) float64 { return rnd.Float64()*50 + map[bool]float64{true: 60}[i < 2] })
		if !fullJitterTest(w).Full {
			stretched++
		}
	}
	if stretched > 2 {
		t.Errorf("full jitter with two stretched waits in 21 rejected %d of 200 times", stretched)
	}
	if tt := fullJitterTest(draw(10, func(int) float64 { return 200 })); tt.Full || tt.D < 0.99 {
		t.Errorf("fixed wait: %+v", tt)
	}
}
