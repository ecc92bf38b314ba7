package analysis

import (
	"strings"
	"testing"
)

// TestAmbiguousNamesItsCandidates: a quick trial fits three shapes, and
// the statement and the report's shape cell name all three in words, not
// "shape ambiguous" alone (issue 30).
func TestAmbiguousNamesItsCandidates(t *testing.T) {
	r := newSimRun(1000, 2400, 5000)
	r.passFrom(0, 1000, 1, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 2500)
	r.pass(2500, 1, 200) // the quick trial
	r.passFrom(2550, 5000, 1, 200)
	ep, cy := r.cycle(t)
	if cy.Shape != ShapeUnknown || len(cy.ShapeCandidates) != 3 {
		t.Fatalf("shape %s candidates %v, want ambiguous among three", cy.Shape, cy.ShapeCandidates)
	}
	want := "ambiguous: expiring failures, a live probe, or several live probes"
	if !strings.Contains(ep.Statement, "Shape: "+want+".") {
		t.Errorf("statement %q does not name the candidates (%q)", ep.Statement, want)
	}
	var cell string
	for _, f := range Figures {
		if f.Key == "shape" {
			cell = f.Cell(ep)
		}
	}
	if !strings.HasPrefix(cell, want+" (") {
		t.Errorf("shape cell %q, want it to start %q", cell, want)
	}
}

func TestCandidateWords(t *testing.T) {
	for _, tc := range []struct {
		cands []string
		want  string
	}{
		{nil, ""},
		{[]string{ShapeLiveProbe}, "a live probe"},
		{[]string{ShapeLiveProbe, ShapeLiveProbes}, "a live probe or several live probes"},
		{[]string{ShapeExpiry, ShapeLiveProbe, ShapeLiveProbes}, "expiring failures, a live probe, or several live probes"},
	} {
		if got := candidateWords(tc.cands); got != tc.want {
			t.Errorf("candidateWords(%v) = %q, want %q", tc.cands, got, tc.want)
		}
	}
	// An ambiguous last cycle after a stated one: the cell says which.
	ep := &Episode{Shape: ShapeLiveProbe + "+" + ShapeUnknown, ShapeEvidence: "w",
		Cycles: []*Cycle{{Shape: ShapeLiveProbe}, {Shape: ShapeUnknown, ShapeCandidates: []string{ShapeLiveProbe, ShapeLiveProbes}}}}
	if got, want := shapeCell(ep), "live_probe+ambiguous; the last cycle ambiguous: a live probe or several live probes (w)"; got != want {
		t.Errorf("cell %q, want %q", got, want)
	}
	if got := lastShapeWords(ep); got != "ambiguous: a live probe or several live probes" {
		t.Errorf("statement words %q", got)
	}
}

// TestEveryHypothesisHasAlternativeWords: each shape can be named among
// the candidates of an ambiguous cycle, in words of its own.
func TestEveryHypothesisHasAlternativeWords(t *testing.T) {
	seen := map[string]bool{}
	for _, h := range hypotheses {
		if h.alt == "" || seen[h.alt] {
			t.Errorf("hypothesis %s: alternative words %q empty or repeated", h.shape, h.alt)
		}
		seen[h.alt] = true
	}
}
