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
