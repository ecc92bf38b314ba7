package compare

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
)

// TestCompareWithinBounds: report compare does not call a difference a
// change when the figure is a range (its *_bounds) and the two sides'
// ranges meet: an open that several failures fit, between 520 ms and 2 s
// on one side, and 1.5 s exact on the other, is the same open as far as
// the evidence goes; 2.2 s exact is beyond it, and flagged. (The
// fixture's search requests are 200 ms apart, the grain of its timings:
// the differences are several grains.)
func TestCompareWithinBounds(t *testing.T) {
	base := fixture(t, "clean")
	raw, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	with := func(after float64, b *analysis.Bounds) *analysis.Analysis {
		t.Helper()
		var a analysis.Analysis
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		ep := a.Upstreams["search"].Episodes[0]
		ep.OpenedAfterS, ep.OpenedAfterBoundsS = analysis.Ptr(after), b
		return &a
	}
	runs := func(n int, after float64, b *analysis.Bounds) []*analysis.Analysis {
		var out []*analysis.Analysis
		for range n {
			out = append(out, with(after, b))
		}
		return out
	}
	row := func(c *Comparison) CompareRow {
		t.Helper()
		for _, r := range c.Rows {
			if r.Key == "opened_after_s" && strings.HasPrefix(r.Group, "search episode 1") {
				return r
			}
		}
		t.Fatalf("no opened_after_s row: %+v", c.Rows)
		return CompareRow{}
	}
	bounded := &analysis.Bounds{Min: analysis.Ptr(0.52), Max: analysis.Ptr(2.0)}
	opt := CompareOptions{Labels: [2]string{"old", "new"}, Force: true}

	c, err := CompareAnalyses(runs(5, 0.52, bounded), runs(5, 1.5, nil), opt)
	if err != nil {
		t.Fatal(err)
	}
	r := row(c)
	if r.Flag || !r.WithinBounds || !strings.Contains(r.Note, "old 520 ms – 2 s, new 1.5 s") {
		t.Errorf("0.52 (0.52–2) against 1.5: flag %v, within bounds %v, note %q; want not a change, the ranges named", r.Flag, r.WithinBounds, r.Note)
	}
	if v := r.verdictCell(); !strings.HasPrefix(v, "not a change") {
		t.Errorf("verdict %q", v)
	}

	c, err = CompareAnalyses(runs(5, 0.52, bounded), runs(5, 2.2, nil), opt)
	if err != nil {
		t.Fatal(err)
	}
	if r := row(c); !r.Flag || r.WithinBounds {
		t.Errorf("0.52 (0.52–2) against 2.2: flag %v, within bounds %v (%s); want flagged", r.Flag, r.WithinBounds, r.Note)
	}

	// Exact on both sides: the estimates decide, as before.
	c, err = CompareAnalyses(runs(5, 0.52, nil), runs(5, 1.5, nil), opt)
	if err != nil {
		t.Fatal(err)
	}
	if r := row(c); !r.Flag || r.WithinBounds {
		t.Errorf("0.52 against 1.5, both exact: flag %v, within bounds %v; want flagged", r.Flag, r.WithinBounds)
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
