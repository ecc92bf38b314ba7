package compare

import (
	"strings"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
)

// TestUndecidedSaysRuns: one run a side leaves the figures with one value
// a run undecided, and the comparison says which and that two runs a side
// would judge them; two runs a side judge every figure both observed.
func TestUndecidedSaysRuns(t *testing.T) {
	clean := fixture(t, "clean")
	one, err := CompareAnalyses([]*analysis.Analysis{clean}, []*analysis.Analysis{clean}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if one.Unjudged == 0 || len(one.Undecided) != 1 || one.Undecided[0].Runs != 2 || len(one.Undecided[0].Figures) != one.Unjudged {
		t.Fatalf("one run a side: %d unjudged, undecided %+v", one.Unjudged, one.Undecided)
	}
	warn := strings.Join(one.Warnings, "\n")
	if !strings.Contains(warn, "2 runs a side would judge them") || !strings.Contains(warn, "search episode 1 (storm): opened after fault start") {
		t.Errorf("warnings do not say what would judge the figures:\n%s", warn)
	}
	if h := one.Headline(); !strings.Contains(h, "cannot be judged (2 runs a side would judge") {
		t.Errorf("headline %q", h)
	}

	two, err := CompareAnalyses([]*analysis.Analysis{clean, clean}, []*analysis.Analysis{clean, clean}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if two.Unjudged != 0 || two.Flagged != 0 || len(two.Undecided) != 0 || two.Judgeable == 0 {
		t.Errorf("two runs a side of one run: %d unjudged, %d flagged, %d judgeable", two.Unjudged, two.Flagged, two.Judgeable)
	}
	// The level is shared among the figures judged.
	if want := 1 - (1-two.Level)/float64(two.Judgeable); two.FigureLevel != want {
		t.Errorf("figure level %v, want %v", two.FigureLevel, want)
	}
}
