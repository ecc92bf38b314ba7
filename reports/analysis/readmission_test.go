package analysis

import (
	"sort"
	"testing"

	"github.com/halfopen/rehearse/journal"
)

// spreadTripRun is a breaker whose failures expire one by one (each is
// remembered forget ms; three remembered turn requests away), tripped by
// failures 300 ms apart (a partial fault fails one request in six, then
// every one from 1650 ms until 2600 ms). Requests are sent every 50 ms and
// answered in 1 ms. It returns the journal and the breaker's own closes:
// each time the oldest failure expired and left two.
func spreadTripRun(forget float64) ([]journal.Event, []float64) {
	r := newSimRun(1000, 2600, 5000)
	var fails, closes []float64
	remembered := func(t float64) int {
		n := 0
		for _, f := range fails {
			if f <= t && t < f+forget {
				n++
			}
		}
		return n
	}
	open := false
	for x := 0.0; x < 5000; x += 50 {
		at := x + 0.5
		if remembered(at) >= 3 {
			open = true
			r.block(x)
			continue
		}
		if open {
			// Closed when the failure that left two expired.
			last := 0.0
			for _, f := range fails {
				if e := f + forget; e <= at && e > last {
					last = e
				}
			}
			closes = append(closes, last)
			open = false
		}
		status := 200
		if (x >= 1000 && x < 1650 && int(x-1000)%300 == 0) || (x >= 1650 && x < 2600) {
			status = 503
			fails = append(fails, x+1.5)
		}
		r.pass(x, 1, status)
	}
	r.add(5000, &journal.RunEnd{Reason: journal.EndCompleted})
	sort.SliceStable(r.ev, func(i, j int) bool { return r.ev[i].T < r.ev[j].T })
	return r.ev, closes
}

// spreadTripProbing is spreadTripRun's traffic and failures through a
// breaker that probes: three failures in a row of the remembered (forget
// ms) open it, and after cooldown ms it lets one request through; a
// failed probe reopens it, a successful one closes it.
func spreadTripProbing(forget, cooldown float64) []journal.Event {
	r := newSimRun(1000, 2600, 5000)
	var fails []float64
	open, until := false, 0.0
	for x := 0.0; x < 5000; x += 50 {
		at := x + 0.5
		if open && at < until {
			r.block(x)
			continue
		}
		status := 200
		if (x >= 1000 && x < 1650 && int(x-1000)%300 == 0) || (x >= 1650 && x < 2600) {
			status = 503
		}
		r.pass(x, 1, status)
		switch {
		case open && status == 503:
			until = x + 1.5 + cooldown
		case open:
			open, fails = false, nil
		case status == 503:
			fails = append(fails, x+1.5)
			n := 0
			for _, f := range fails {
				if f > x+1.5-forget {
					n++
				}
			}
			if n >= 3 {
				open, until = true, x+1.5+cooldown
			}
		}
	}
	r.add(5000, &journal.RunEnd{Reason: journal.EndCompleted})
	sort.SliceStable(r.ev, func(i, j int) bool { return r.ev[i].T < r.ev[j].T })
	return r.ev
}

// TestReadmissionOfAProbingBreaker: the same spread trip through a breaker
// that probes every 250 ms, less than the failures' gaps: each failed
// probe is re-admitted within them, but no sooner than its first wait
// less a request's spacing; it stays one cycle and is not read as
// failures expiring.
func TestReadmissionOfAProbingBreaker(t *testing.T) {
	a, err := AnalyzeEvents(spreadTripProbing(1000, 250))
	if err != nil {
		t.Fatal(err)
	}
	cys := a.Upstreams["app"].Episodes[0].Cycles
	if len(cys) != 1 || cys[0].Shape == ShapeExpiry {
		t.Fatalf("want one cycle not read as expiry: %d cycles %v", len(cys), shapesOf(cys))
	}
	if n := cys[0].ProbeCount; n < 3 {
		t.Errorf("probes %d, want the failed probes counted", n)
	}
}

// TestQuickReadmissionFromFailureGaps: after a lone call let through while
// open failed and requests were turned away again, the next call was let
// through 300 ms later — within the widest gap between the failures that
// tripped it, as a breaker forgetting them one by one does, and sooner
// than a breaker that probes can wait again (its first wait, 450 ms, less
// one request's spacing). The failures expire: every re-admission is a
// close and a re-trip, each close inside its bounds. The ½-of-the-first-
// wait rule missed it (300 ms is more than half of 450 ms) and left one
// ambiguous cycle whose close had no upper bound.
func TestQuickReadmissionFromFailureGaps(t *testing.T) {
	ev, closes := spreadTripRun(1000)
	a, err := AnalyzeEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	cys := a.Upstreams["app"].Episodes[0].Cycles
	for i, cy := range cys {
		t.Logf("cycle %d: open %.4f closed %v bounds %s shape %s", i, cy.OpenedAtS, fp(cy.ClosedAtS), bounds(cy.CloseBoundsS), cy.Shape)
	}
	if len(cys) != len(closes) {
		t.Fatalf("%d cycles, the breaker closed %d times (%v ms)", len(cys), len(closes), closes)
	}
	for i, cy := range cys {
		want := closes[i] / 1000
		if cy.Shape != ShapeExpiry {
			t.Errorf("cycle %d: shape %s, want %s", i, cy.Shape, ShapeExpiry)
		}
		if b := cy.CloseBoundsS; b == nil || b.Min == nil || b.Max == nil || want < *b.Min-0.002 || want > *b.Max+0.002 {
			t.Errorf("cycle %d: closed at %.4f, bounds %s", i, want, bounds(cy.CloseBoundsS))
		}
	}
}
