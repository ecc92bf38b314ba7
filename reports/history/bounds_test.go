package history

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
)

// TestHistoryWithinBounds: report history's first → last change of a
// figure that is a range on either run says when the difference lies
// within the bounds (not a change), and gives it plainly otherwise.
func TestHistoryWithinBounds(t *testing.T) {
	base := fixture(t, "clean")
	raw, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	change := func(first, last float64, b *analysis.Bounds) string {
		t.Helper()
		h := &HistoryIndex{}
		for i, after := range []float64{first, last} {
			var a analysis.Analysis
			if err := json.Unmarshal(raw, &a); err != nil {
				t.Fatal(err)
			}
			ep := a.Upstreams["search"].Episodes[0]
			ep.OpenedAfterS, ep.OpenedAfterBoundsS = analysis.Ptr(after), nil
			if i == 0 {
				ep.OpenedAfterBoundsS = b
			}
			h.add(&HistoryRun{Dir: string(rune('a' + i)), Analysis: &a, Figures: map[string]*float64{}}, "")
		}
		if len(h.Groups) != 1 {
			t.Fatalf("%d groups, want 1", len(h.Groups))
		}
		g := h.Groups[0]
		g.trends()
		for _, tr := range g.Trends {
			if tr.Key == trendKey("search", 0, "opened_after_s") {
				return tr.change()
			}
		}
		t.Fatalf("no opened_after_s trend in %+v", g.Trends)
		return ""
	}
	bounded := &analysis.Bounds{Min: analysis.Ptr(0.52), Max: analysis.Ptr(0.58)}
	if c := change(0.52, 0.57, bounded); !strings.HasPrefix(c, "+50") || !strings.Contains(c, "within the bounds") {
		t.Errorf("0.52 (0.52–0.58) → 0.57: %q, want +50 ms within the bounds", c)
	}
	if c := change(0.52, 0.65, bounded); strings.Contains(c, "within") {
		t.Errorf("0.52 (0.52–0.58) → 0.65: %q, want a change", c)
	}
	if c := change(0.52, 0.57, nil); strings.Contains(c, "within") {
		t.Errorf("0.52 → 0.57, both exact: %q, want a change", c)
	}
}

// fixture is the analysis of testdata/NAME.jsonl, the facade's fixtures.
func fixture(t *testing.T, name string) *analysis.Analysis {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := analysis.Analyze(f)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
