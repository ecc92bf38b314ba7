package verdict

import (
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
)

// The verdict rule itself: no observation is not observable; a breach
// outweighs a missing figure; all kept is met.
func TestJudge(t *testing.T) {
	b := durAtMost(time.Second)
	for _, c := range []struct {
		obs  []observation
		want expect.Outcome
	}{
		{nil, expect.NotObservable},
		{[]observation{seen("a", 0.5)}, expect.Met},
		{[]observation{seen("a", 0.5), unseen("b", "gone")}, expect.NotObservable},
		{[]observation{seen("a", 2), unseen("b", "gone")}, expect.NotMet},
		{[]observation{breach("a", "did not open")}, expect.NotMet},
		{[]observation{seen("a", 1)}, expect.Met},
	} {
		r := judge("x", b, c.obs, "nothing", "things")
		if r.Outcome != c.want || r.Passed != (c.want == expect.Met) {
			t.Errorf("%+v: %+v, want %s", c.obs, r, c.want)
		}
	}
	if r := judge("x", b, []observation{seen("a", 2), unseen("b", "gone")}, "", ""); !strings.Contains(r.Message, "a: 2 s") || !strings.Contains(r.Message, "b: gone") {
		t.Errorf("message %q names neither the breach nor the missing figure", r.Message)
	}
}

// TestJudgeRange: the one verdict rule on a figure with bounds, an end of
// which may be unknown.
func TestJudgeRange(t *testing.T) {
	b := func(lo, hi *float64) *analysis.Bounds { return &analysis.Bounds{Min: lo, Max: hi} }
	for _, c := range []struct {
		bound bound
		obs   observation
		want  expect.Outcome
		text  string
	}{
		{atMost(5, fmtCount), seenBounded("e", 3, b(analysis.Ptr(3.0), analysis.Ptr(5.0)), "why"), expect.Met, "between 3 and 5"},
		{atMost(4, fmtCount), seenBounded("e", 3, b(analysis.Ptr(3.0), analysis.Ptr(5.0)), "why"), expect.NotObservable, "e: between 3 and 5, so it may or may not keep <= 4 (why)"},
		{atMost(2, fmtCount), seenBounded("e", 3, b(analysis.Ptr(3.0), analysis.Ptr(5.0)), "why"), expect.NotMet, "e: between 3 and 5"},
		{atMost(9, fmtCount), seenBounded("e", 3, b(analysis.Ptr(3.0), nil), "why"), expect.NotObservable, "between 3 and unknown"},
		{atMost(2, fmtCount), seenBounded("e", 3, b(analysis.Ptr(3.0), nil), "why"), expect.NotMet, "between 3 and unknown"},
		{atLeast(1, fmtCount), seenBounded("e", 3, b(nil, analysis.Ptr(3.0)), "why"), expect.NotObservable, "between unknown and 3"},
		{atLeast(3, fmtCount), seenBounded("e", 3, nil, "why"), expect.Met, "worst 3,"},
	} {
		r := judge("x", c.bound, []observation{c.obs}, "none", "episodes")
		if r.Outcome != c.want || !strings.Contains(r.Message+" "+r.Observed, c.text) {
			t.Errorf("%s on %+v: %s %q (observed %q), want %s with %q", c.bound.wantText(), c.obs.within, r.Outcome, r.Message, r.Observed, c.want, c.text)
		}
	}
}
