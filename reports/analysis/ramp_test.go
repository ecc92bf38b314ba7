package analysis

import (
	"testing"
)

// permitJournal: a 503 storm trips the breaker at ~1.1 s; from 2 s a
// half-open that lets one call through at a time and the next one in as
// each ends (failsafe-go's permits) needs three successes. Its answers
// take 300 ms; requests sent while one is in flight are turned away, and
// so is one sent 2 ms after each answer came back, before the gateway had
// given the permit back. The third closes it: from 3150 ms everything
// passes.
func permitJournal() *simRun {
	r := newSimRun(1000, 2000, 5000)
	r.passFrom(0, 1000, 300, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 2000)
	for _, at := range []float64{2000, 2400} {
		r.pass(at, 300, 200)
		r.blockFrom(at+50, at+301)
		r.block(at + 303)
	}
	r.pass(2800, 300, 200)
	r.blockFrom(2850, 3100)
	r.passFrom(3150, 5000, 300, 200)
	return r
}

// rampJournal: the same storm; from 2 s the breaker lets one request in
// three through (quick answers) and turns the others away with nothing in
// flight, a share of the traffic: Traefik's ramp.
func rampJournal() *simRun {
	r := newSimRun(1000, 2000, 5000)
	r.passFrom(0, 1000, 300, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 2000)
	for at := 2000.0; at < 2600; at += 150 {
		r.pass(at, 5, 200)
		r.blockFrom(at+50, at+150)
	}
	r.passFrom(2600, 5000, 5, 200)
	return r
}

// TestRampNeedsARefusalWithNothingInFlight: requests turned away between
// the successes of a half-open that lets the next call in as one ends are
// no ramp when each refusal came while a call was in flight or before
// the gateway can have read the last answer; a ramp turns requests away
// with nothing in flight. The first read as a ramp before the refusal had
// to be certain.
func TestRampNeedsARefusalWithNothingInFlight(t *testing.T) {
	if ep, cy := permitJournal().cycle(t); cy.Shape == ShapeRamp {
		t.Errorf("one call at a time, refusals only while one was in flight or its answer unread: shape %s (%s), want no ramp", cy.Shape, cy.ShapeEvidence)
	} else if cy.ClosedAtS == nil || *cy.ClosedAtS < 3.100 || *cy.ClosedAtS > 3.101 || cy.SuccessesToClose == nil || *cy.SuccessesToClose != 3 {
		t.Errorf("closed at %v after %v successes, want 3.1005 after 3: %s", fp3(cy.ClosedAtS), fp2(cy.SuccessesToClose), ep.Statement)
	}
	if _, cy := rampJournal().cycle(t); cy.Shape != ShapeRamp {
		t.Errorf("a share let through, refusals with nothing in flight: shape %s (%s), want %s", cy.Shape, cy.ShapeEvidence, ShapeRamp)
	}
}

// TestRampCloseFromLastRefusal: a ramp closes on its timer, somewhere
// after the last request it turned away (2550 ms) and by the first
// resumed call (2600.5 ms). The last call of its share let through ended
// in between (2570.5 ms): that success is no close, so it bounds
// nothing. The close estimator placed it as a closing success, and a
// later pass moved the estimate to the first resumed call but kept the
// success as the lower bound, ruling out a ramp that ended at 2560 ms.
func TestRampCloseFromLastRefusal(t *testing.T) {
	r := newSimRun(1000, 2000, 5000)
	r.passFrom(0, 1000, 300, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 2000)
	for at := 2000.0; at < 2450; at += 150 {
		r.pass(at, 5, 200)
		r.blockFrom(at+50, at+150)
	}
	r.pass(2450, 120, 200) // ends 2570.5, after the last refusal
	r.blockFrom(2500, 2600)
	r.passFrom(2600, 5000, 5, 200)
	ep, cy := r.cycle(t)
	if cy.Shape != ShapeRamp {
		t.Fatalf("shape %s (%s), want %s", cy.Shape, cy.ShapeEvidence, ShapeRamp)
	}
	b := cy.CloseBoundsS
	if cy.ClosedAtS == nil || *cy.ClosedAtS != 2.6005 && *cy.ClosedAtS != 2.601 || b == nil || b.Min == nil || *b.Min != 2.55 || b.Max != nil || cy.SuccessesToClose != nil {
		t.Errorf("closed at %v, bounds %s, successes %v; want the first resumed call (2.6005), from the last refusal (2.55), no latest, no count: %s",
			fp(cy.ClosedAtS), bounds(b), fp2(cy.SuccessesToClose), ep.Statement)
	}
}
