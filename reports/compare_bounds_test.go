package reports

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/compare"
	"github.com/halfopen/rehearse/reports/history"
)

// TestCompareWithinBounds: report compare does not call a difference a
// change when the figure is a range (its *_bounds) and the two sides'
// ranges meet: an open that several failures fit, between 520 and 580 ms
// on one side, and 570 ms exact on the other, is the same open as far as
// the evidence goes; 650 ms exact is beyond it, and flagged.
func TestCompareWithinBounds(t *testing.T) {
	base, _ := analyse(t, base())
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
	row := func(c *compare.Comparison) compare.CompareRow {
		t.Helper()
		for _, r := range c.Rows {
			if r.Key == "opened_after_s" && strings.HasPrefix(r.Group, "search episode 1") {
				return r
			}
		}
		t.Fatalf("no opened_after_s row: %+v", c.Rows)
		return compare.CompareRow{}
	}
	bounded := &analysis.Bounds{Min: analysis.Ptr(0.52), Max: analysis.Ptr(0.58)}
	opt := compare.CompareOptions{Labels: [2]string{"old", "new"}, Force: true}

	c, err := compare.CompareAnalyses(runs(5, 0.52, bounded), runs(5, 0.57, nil), opt)
	if err != nil {
		t.Fatal(err)
	}
	r := row(c)
	if r.Flag || !r.WithinBounds || !strings.Contains(r.Note, "old 520 ms – 580 ms, new 570 ms") {
		t.Errorf("0.52 (0.52–0.58) against 0.57: flag %v, within bounds %v, note %q; want not a change, the ranges named", r.Flag, r.WithinBounds, r.Note)
	}
	if v := r.VerdictCell(); !strings.HasPrefix(v, "not a change") {
		t.Errorf("verdict %q", v)
	}

	c, err = compare.CompareAnalyses(runs(5, 0.52, bounded), runs(5, 0.65, nil), opt)
	if err != nil {
		t.Fatal(err)
	}
	if r := row(c); !r.Flag || r.WithinBounds {
		t.Errorf("0.52 (0.52–0.58) against 0.65: flag %v, within bounds %v (%s); want flagged", r.Flag, r.WithinBounds, r.Note)
	}

	// Exact on both sides: the estimates decide, as before.
	c, err = compare.CompareAnalyses(runs(5, 0.52, nil), runs(5, 0.57, nil), opt)
	if err != nil {
		t.Fatal(err)
	}
	if r := row(c); !r.Flag || r.WithinBounds {
		t.Errorf("0.52 against 0.57, both exact: flag %v, within bounds %v; want flagged", r.Flag, r.WithinBounds)
	}
}

// TestHistoryWithinBounds: report history's first → last change of a
// figure that is a range on either run says when the difference lies
// within the bounds (not a change), and gives it plainly otherwise.
func TestHistoryWithinBounds(t *testing.T) {
	base, _ := analyse(t, base())
	raw, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	change := func(first, last float64, b *analysis.Bounds) string {
		t.Helper()
		h := &history.HistoryIndex{}
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
			h.Add(&history.HistoryRun{Dir: string(rune('a' + i)), Analysis: &a, Figures: map[string]*float64{}}, "")
		}
		if len(h.Groups) != 1 {
			t.Fatalf("%d groups, want 1", len(h.Groups))
		}
		g := h.Groups[0]
		g.ComputeTrends()
		for _, tr := range g.Trends {
			if tr.Key == history.TrendKey("search", 0, "opened_after_s") {
				return tr.Change()
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
