package analysis

import (
	"sort"
	"testing"

	"github.com/halfopen/rehearse/journal"
)

// TestTrialFactsNotFromARamp: a breaker that admits a share of the
// traffic refuses requests beside a lone call and reopens on a failure
// without judging any trial. Its cycles are no evidence of a half-open
// judging one trial at a time: a later quick close of the same upstream
// stays ambiguous instead of a confident live probe.
func TestTrialFactsNotFromARamp(t *testing.T) {
	r := newSimRun(1000, 3000, 6000)
	r.passFrom(0, 1000, 1, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 1500)
	r.pass(1500, 5, 503) // a lone admission fails; refusals follow
	r.blockFrom(1550, 2000)
	r.pass(2000, 200, 503) // refusals while it is in flight
	r.blockFrom(2050, 3000)
	for _, at := range []float64{3000, 3150, 3300} { // a share: refusals with nothing in flight
		r.pass(at, 5, 200)
		r.blockFrom(at+50, at+150)
	}
	r.passFrom(3450, 4000, 1, 200)
	// The same upstream trips again and comes back on a quick call.
	r.passFrom(4000, 4150, 0.5, 503)
	r.blockFrom(4150, 4600)
	r.pass(4600, 1, 200)
	r.passFrom(4650, 6000, 1, 200)
	r.add(6000, &journal.RunEnd{Reason: journal.EndCompleted})
	sort.SliceStable(r.ev, func(i, j int) bool { return r.ev[i].T < r.ev[j].T })
	a, err := AnalyzeEvents(r.ev)
	if err != nil {
		t.Fatal(err)
	}
	cys := a.Upstreams["app"].Episodes[0].Cycles
	if len(cys) != 2 || cys[0].Shape != ShapeRamp {
		t.Fatalf("want a ramp cycle then another: %d cycles %v", len(cys), shapesOf(cys))
	}
	if last := cys[1]; last.Shape != ShapeUnknown || last.SuccessesToClose != nil || !last.MaybeProbe {
		t.Errorf("the quick close after a ramp: shape %s, successes %v, maybe_probe %v (%s), want ambiguous", last.Shape, fp2(last.SuccessesToClose), last.MaybeProbe, last.ShapeEvidence)
	}
}

func shapesOf(cys []*Cycle) []string {
	var out []string
	for _, c := range cys {
		out = append(out, c.Shape)
	}
	return out
}
