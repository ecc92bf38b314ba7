package analysis

import (
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/journal"
)

// TestTrialFactsDecideTheReading: the upstream's trial facts are facts of
// the shape reading, not a narrowing after it: a judged trial rules
// expiry out, quick or slow; one call at a time with a quick trial leaves
// live_probe alone; calls in flight together are read by their own
// evidence whatever the trial facts.
func TestTrialFactsDecideTheReading(t *testing.T) {
	trial := shapeFacts{live: 1, closed: true, maybeProbe: true, trial: true, checkChance: -1}
	quick := trial
	quick.quick = true
	single := quick
	single.single = true
	slowSingle := trial
	slowSingle.single = true
	several := single
	several.live, several.several = 3, true
	for _, tc := range []struct {
		name  string
		f     shapeFacts
		shape string
		cands []string
		why   string
	}{
		{"judged, one at a time", single, ShapeLiveProbe, nil, "lets one call through at a time"},
		{"judged, quick", quick, ShapeUnknown, []string{ShapeLiveProbe, ShapeLiveProbes}, "answered quickly, was a trial the breaker judged"},
		{"judged, slow", trial, ShapeUnknown, []string{ShapeLiveProbe, ShapeLiveProbes}, "still coming"},
		{"judged, slow, one at a time", slowSingle, ShapeUnknown, []string{ShapeLiveProbe, ShapeLiveProbes}, "still coming"},
		{"calls in flight together", several, ShapeLiveProbes, nil, "several live calls"},
	} {
		r := readShape(&tc.f)
		if r.shape != tc.shape || !reflect.DeepEqual(r.candidates, tc.cands) || !strings.Contains(r.why, tc.why) {
			t.Errorf("%s: %s %v (%s), want %s %v with %q", tc.name, r.shape, r.candidates, r.why, tc.shape, tc.cands, tc.why)
		}
	}
}

// TestJudgedTrialClosePlacedOnce: the close on a judged quick trial is
// placed on the cycle before its figures (closeOnJudgedTrial), so every
// figure of the page gives the same close: the cycle's closed_at_s and
// the timeline's open interval end at the trial's end (the timeline
// ended at the first resumed call's arrival while the cycle stated the
// trial's end). One call at a time: exact, 1 success; else bounded from
// the trial's arrival, its latest unseen.
func TestJudgedTrialClosePlacedOnce(t *testing.T) {
	for _, tc := range []struct {
		failTook float64
		shape    string
		exact    bool
	}{
		{1, ShapeUnknown, false},
		{120, ShapeLiveProbe, true},
	} {
		r := newSimRun(1000, 2400, 5000)
		r.passFrom(0, 1000, 1, 200)
		r.passFrom(1000, 1150, 0.5, 503)
		r.blockFrom(1150, 1500)
		r.pass(1500, tc.failTook, 503) // the failed trial
		r.blockFrom(1550, 2500)
		r.pass(2500, 1, 200) // the quick trial: arrives 2500.5, ends 2501.5
		r.passFrom(2550, 5000, 1, 200)
		r.add(5000, &journal.RunEnd{Reason: journal.EndCompleted})
		sort.SliceStable(r.ev, func(i, j int) bool { return r.ev[i].T < r.ev[j].T })
		a, err := AnalyzeEvents(r.ev)
		if err != nil {
			t.Fatal(err)
		}
		cy := a.Upstreams["app"].Episodes[0].Cycles[0]
		if cy.Shape != tc.shape || cy.ClosedAtS == nil || math.Abs(*cy.ClosedAtS-2.5015) > 0.001 {
			t.Fatalf("failed trial %v ms: shape %s closed %v, want %s closed at the trial's end 2.5015 (%s)", tc.failTook, cy.Shape, deref(cy.ClosedAtS), tc.shape, cy.ShapeEvidence)
		}
		open := a.Timeline.Upstreams["app"].Open
		if len(open) != 1 || math.Abs(open[0].EndS-*cy.ClosedAtS) > 1e-6 {
			t.Errorf("failed trial %v ms: timeline open %+v, want it to end at the stated close %.4f", tc.failTook, open, *cy.ClosedAtS)
		}
		switch {
		case tc.exact && (cy.CloseBoundsS != nil || cy.SuccessesToClose == nil || *cy.SuccessesToClose != 1 || cy.MaybeProbe):
			t.Errorf("one at a time: bounds %+v successes %v maybe %v, want exact, 1, counted", cy.CloseBoundsS, cy.SuccessesToClose, cy.MaybeProbe)
		case !tc.exact && (cy.CloseBoundsS == nil || cy.CloseBoundsS.Min == nil || math.Abs(*cy.CloseBoundsS.Min-2.5005) > 0.001 || cy.CloseBoundsS.Max != nil ||
			cy.SuccessesToCloseBounds == nil || !cy.MaybeProbe):
			t.Errorf("judged: bounds %+v successes %+v maybe %v, want [2.5005, unknown], at least 1", cy.CloseBoundsS, cy.SuccessesToCloseBounds, cy.MaybeProbe)
		}
	}
}
