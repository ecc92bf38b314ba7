package analysis

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// everyFacts calls fn with every consistent combination of the facts a
// cycle can show (a success closes only a cycle that closed, a check is
// a success, calls in flight together are live ones, a ramp needs three
// live calls and no tag, a close placed on several successes has one).
func everyFacts(fn func(f shapeFacts)) {
	for _, tagged := range []int{0, 2} {
		for _, health := range []int{0, 3} {
			for _, live := range []int{0, 1, 3} {
				for bits := 0; bits < 1<<8; bits++ {
					b := func(i int) bool { return bits&(1<<i) != 0 }
					for kind := closeTimer; kind <= closeOnPending; kind++ {
						for _, chance := range []float64{-1, 0.004} {
							f := shapeFacts{tagged: tagged, health: health, live: live,
								several: b(0), ramp: b(1), closed: b(2), bySuccess: b(3), byCheck: b(4),
								maybeProbe: b(5), expiryByOthers: b(6), kind: kind, checkChance: chance}
							if b(7) {
								continue // room for one more fact
							}
							if (f.several && f.live < 2) || (f.ramp && (f.live < 3 || f.tagged > 0)) ||
								(f.bySuccess && !f.closed) || (f.byCheck && (!f.bySuccess || f.health == 0)) ||
								((f.kind != closeTimer) != f.bySuccess) || (f.maybeProbe && (!f.closed || f.bySuccess)) ||
								(f.checkChance >= 0 && !f.byCheck) {
								continue
							}
							if f.ramp {
								f.rampWhy = "a ramp's witness"
							}
							fn(f)
						}
					}
				}
			}
		}
	}
}

// TestFamilyCoversEveryCycle: whatever a cycle shows, at least one
// hypothesis fits it (the family has no hole a cycle could fall into),
// each verdict says why in words, and a reading is either the one shape
// that fits or ambiguous with two or more named, sorted.
func TestFamilyCoversEveryCycle(t *testing.T) {
	n := 0
	everyFacts(func(f shapeFacts) {
		n++
		r := readShape(&f)
		for s, v := range r.verdicts {
			if v.why == "" {
				t.Fatalf("%+v: %s says nothing (fits %v)", f, s, v.fits)
			}
		}
		switch {
		case r.shape == ShapeUnknown && (len(r.candidates) < 2 || !sort.StringsAreSorted(r.candidates)):
			t.Fatalf("%+v: ambiguous with candidates %v", f, r.candidates)
		case r.shape != ShapeUnknown && (r.candidates != nil || !r.verdicts[r.shape].fits):
			t.Fatalf("%+v: %s stated with candidates %v, fits %v", f, r.shape, r.candidates, r.verdicts[r.shape].fits)
		}
		for s, v := range r.verdicts {
			if in := containsStr(r.candidates, s) || s == r.shape; in != v.fits {
				t.Fatalf("%+v: %s fits %v but named %v (%s, %v)", f, s, v.fits, in, r.shape, r.candidates)
			}
		}
	})
	if n < 100 {
		t.Fatalf("only %d combinations", n)
	}
}

// orderedShape is the ordered list of rules the hypotheses replaced
// (shape.go before the family), kept as the record that the family
// states the same shape on every cycle.
func orderedShape(f *shapeFacts) string {
	switch {
	case f.tagged > 0:
		return ShapeTaggedProbe
	case f.live == 0 && f.health > 0 && f.byCheck:
		return ShapeHealthCheck
	case f.ramp:
		return ShapeRamp
	case f.live == 0 && f.closed && !f.bySuccess && f.maybeProbe:
		return ShapeUnknown
	case f.live == 0 && f.closed && !f.bySuccess:
		return ShapeExpiry
	case f.live == 0:
		return ShapeUnknown
	case f.closed && (f.kind == closeOnPending || f.kind == closeOnOneOf || f.bySuccess):
		if f.several {
			return ShapeLiveProbes
		}
		return ShapeLiveProbe
	case f.several:
		return ShapeLiveProbes
	case f.closed && f.maybeProbe:
		return ShapeUnknown
	case f.closed:
		return ShapeExpiry
	}
	return ShapeLiveProbe
}

// TestFamilyStatesTheOrderedRulesShapes: on every combination of facts,
// the seven shapes the ordered rules knew are stated as they stated
// them. A shape added later (its own file) may split an ambiguous or
// single reading; this test holds the original family only.
func TestFamilyStatesTheOrderedRulesShapes(t *testing.T) {
	orig := map[string]bool{ShapeTaggedProbe: true, ShapeHealthCheck: true, ShapeRamp: true, ShapeExpiry: true, ShapeLiveProbe: true, ShapeLiveProbes: true}
	saved := hypotheses
	defer func() { hypotheses = saved }()
	hypotheses = nil
	for _, h := range saved {
		if orig[h.shape] {
			hypotheses = append(hypotheses, h)
		}
	}
	if len(hypotheses) != len(orig) {
		t.Fatalf("%d of the %d original hypotheses registered", len(hypotheses), len(orig))
	}
	everyFacts(func(f shapeFacts) {
		if got, want := readShape(&f).shape, orderedShape(&f); got != want {
			t.Fatalf("%+v: %s, the ordered rules said %s", f, got, want)
		}
	})
}

// TestAddedHypothesisJoinsTheCandidates: adding a shape is adding one
// hypothesis. One that also fits a cycle some other shape alone fitted
// makes that cycle ambiguous with both named; one that fits nothing
// changes nothing.
func TestAddedHypothesisJoinsTheCandidates(t *testing.T) {
	saved := hypotheses
	defer func() { hypotheses = saved }()
	f := shapeFacts{live: 1, closed: true, bySuccess: true, kind: closeOnSuccess, checkChance: -1}
	if r := readShape(&f); r.shape != ShapeLiveProbe {
		t.Fatalf("a lone probe that closed on its success: %s %v", r.shape, r.candidates)
	}
	addHypothesis(hypothesis{shape: "never", test: func(*shapeFacts) verdict { return ruledOut("never fits") }})
	if r := readShape(&f); r.shape != ShapeLiveProbe || r.verdicts["never"].fits {
		t.Fatalf("a hypothesis that fits nothing moved the reading: %s %v", r.shape, r.candidates)
	}
	addHypothesis(hypothesis{shape: "admission_window", test: func(f *shapeFacts) verdict {
		if f.live == 1 && f.bySuccess {
			return fits("one call let through per window")
		}
		return ruledOut("not one call per window")
	}})
	r := readShape(&f)
	if want := []string{"admission_window", ShapeLiveProbe}; r.shape != ShapeUnknown || !reflect.DeepEqual(r.candidates, want) {
		t.Fatalf("got %s %v, want ambiguous %v", r.shape, r.candidates, want)
	}
}

// TestQuickTrialNamesItsCandidates: a breaker trips, turns requests
// away, lets one call through that a healthy upstream answers in a
// millisecond, and traffic flows at once. A probe's success, several
// quick probes and failures that expired all fit: the cycle is
// ambiguous and names the three. A half-open whose lone probe is slow,
// with requests turned away while it is in flight, fits one.
func TestQuickTrialNamesItsCandidates(t *testing.T) {
	for _, tc := range []struct {
		took  float64
		shape string
		cands []string
	}{
		{1, ShapeUnknown, []string{ShapeExpiry, ShapeLiveProbe, ShapeLiveProbes}},
		{300, ShapeLiveProbe, nil},
	} {
		t.Run(fmt.Sprint(tc.took), func(t *testing.T) {
			r := newSimRun(1000, 2000, 5000)
			r.passFrom(0, 1000, 1, 200)
			r.passFrom(1000, 1150, 0.5, 503)
			r.blockFrom(1150, 2000)
			r.pass(2000, tc.took, 200)
			resume := 2050.0
			if tc.took > 50 {
				r.blockFrom(2050, 2000+tc.took+50)
				resume = 2000 + tc.took + 50
			}
			r.passFrom(resume, 5000, 1, 200)
			_, cy := r.cycle(t)
			if cy.Shape != tc.shape || !reflect.DeepEqual(cy.ShapeCandidates, tc.cands) {
				t.Errorf("shape %s candidates %v, want %s %v (%s)", cy.Shape, cy.ShapeCandidates, tc.shape, tc.cands, cy.ShapeEvidence)
			}
		})
	}
}

// verdictCase is one cycle's facts and what a hypothesis must answer:
// fits or not, with a word its reason must hold.
type verdictCase struct {
	name string
	f    shapeFacts
	fits bool
	word string
}

// checkVerdicts holds one hypothesis's test to its cases.
func checkVerdicts(t *testing.T, test func(*shapeFacts) verdict, cases []verdictCase) {
	t.Helper()
	for _, tc := range cases {
		if tc.f.checkChance == 0 {
			tc.f.checkChance = -1
		}
		v := test(&tc.f)
		if v.fits != tc.fits || !strings.Contains(v.why, tc.word) {
			t.Errorf("%s: fits %v (%s), want %v with %q", tc.name, v.fits, v.why, tc.fits, tc.word)
		}
	}
}

// TestJudgedTrialNarrowsTheCandidates: a lone trial that failed, then
// refusals long after any expiry of the trip's failures could explain,
// show a breaker that judges its trials: failures expiring is ruled out
// for the quick close that follows, and live_probe and live_probes are
// left. A request refused while that failed trial was in flight shows a
// half-open letting one call through at a time: live_probe alone.
func TestJudgedTrialNarrowsTheCandidates(t *testing.T) {
	for _, tc := range []struct {
		failTook float64
		shape    string
		cands    []string
	}{
		{1, ShapeUnknown, []string{ShapeLiveProbe, ShapeLiveProbes}},
		{120, ShapeLiveProbe, nil},
	} {
		t.Run(fmt.Sprint(tc.failTook), func(t *testing.T) {
			r := newSimRun(1000, 2400, 5000)
			r.passFrom(0, 1000, 1, 200)
			r.passFrom(1000, 1150, 0.5, 503)
			r.blockFrom(1150, 1500)
			r.pass(1500, tc.failTook, 503) // the failed trial
			r.blockFrom(1550, 2500)
			r.pass(2500, 1, 200) // the quick trial
			r.passFrom(2550, 5000, 1, 200)
			_, cy := r.cycle(t)
			if cy.Shape != tc.shape || !reflect.DeepEqual(cy.ShapeCandidates, tc.cands) {
				t.Errorf("shape %s candidates %v, want %s %v (%s)", cy.Shape, cy.ShapeCandidates, tc.shape, tc.cands, cy.ShapeEvidence)
			}
		})
	}
}

// TestEveryHypothesisIsNamed: each shape of the family has a name of its
// own and words of its own for the statement, so that one added in its
// own file is stated as itself, never as "shape ambiguous".
func TestEveryHypothesisIsNamed(t *testing.T) {
	names, words := map[string]bool{}, map[string]bool{"shape ambiguous": true}
	for _, h := range hypotheses {
		if h.shape == "" || h.shape == ShapeUnknown || names[h.shape] || h.words == "" || words[h.words] || h.test == nil {
			t.Errorf("hypothesis %q (%q): unnamed, repeated or without a test", h.shape, h.words)
		}
		names[h.shape], words[h.words] = true, true
		if shapeWords(h.shape) != h.words {
			t.Errorf("%s stated as %q, want %q", h.shape, shapeWords(h.shape), h.words)
		}
	}
	if len(names) != 6 || shapeWords(ShapeUnknown) != "shape ambiguous" {
		t.Errorf("%d shapes %v; ambiguous stated as %q", len(names), names, shapeWords(ShapeUnknown))
	}
}
