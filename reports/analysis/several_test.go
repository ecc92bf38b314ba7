package analysis

import (
	"strings"
	"testing"
)

// TestOverlapAcrossHalfOpensIsNotSeveral: a half-open that lets one call
// through at a time, counting every answer in the state it arrives in
// (e2e TestLibraryFailsafe/backoff,
// REHEARSE_SHAPE_SEED=1796444833313890672). Calls of the closed breaker
// fail 800 ms slow; two in a row trip it at 1850.5 ms. The first
// half-open lets A through at 2150 ms and reopens on a leftover's failure
// (2200.5 ms) while A is in flight; the leftovers end by 2650.5 ms and
// requests are still turned away after, so the next half-open, which
// lets B through at 2800 ms, is another: A (failing at 2950.5 ms) and B
// are in flight together, each alone in its half-open. It reopens on A's
// failure and closes on the quick success at 3700 ms. Counting every
// overlap read "several live probes per half-open".
func TestOverlapAcrossHalfOpensIsNotSeveral(t *testing.T) {
	r := newSimRun(1000, 3000, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1900, 800, 503) // ends 1800.5 – 2650.5
	r.blockFrom(1900, 2150)
	r.pass(2150, 800, 503) // A: ends 2950.5
	r.blockFrom(2200, 2800)
	r.pass(2800, 400, 503) // B: ends 3200.5
	r.blockFrom(2850, 3700)
	r.passFrom(3700, 6000, 0.5, 200)
	ep, cy := r.cycle(t)
	if cy.ProbeCount < 2 || cy.MaxProbesInFlight < 2 {
		t.Fatalf("%d probes, %d in flight at most: want A and B, together (%s)", cy.ProbeCount, cy.MaxProbesInFlight, ep.Statement)
	}
	if cy.Shape == ShapeLiveProbes || strings.Contains(cy.ShapeEvidence, whySome) {
		t.Errorf("shape %s (%s): A and B were let through by two half-opens, a reopen between", cy.Shape, cy.ShapeEvidence)
	}
}

// TestOverlapInOneHalfOpenIsSeveral: the same breaker's half-open lets A
// and B through 50 ms apart with no refusal between: one half-open let
// both through, in flight together, and that is several at once.
func TestOverlapInOneHalfOpenIsSeveral(t *testing.T) {
	r := newSimRun(1000, 3000, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1100, 0.5, 503)
	r.blockFrom(1100, 2150)
	r.pass(2150, 800, 503) // A
	r.pass(2200, 800, 503) // B, with A
	r.blockFrom(2250, 3700)
	r.passFrom(3700, 6000, 0.5, 200)
	ep, cy := r.cycle(t)
	if cy.Shape != ShapeLiveProbes {
		t.Errorf("shape %s (%s), candidates %v: A and B were let through together by one half-open (%s)", cy.Shape, cy.ShapeEvidence, cy.ShapeCandidates, ep.Statement)
	}
}
