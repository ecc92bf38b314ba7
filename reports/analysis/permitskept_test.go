package analysis

import "testing"

// TestFixedCountHalfOpenKeepsItsClose: a half-open that lets three slow
// probes through together and refuses the rest until all three have
// succeeded (a fixed number of trial calls, as a consecutive-success
// breaker with a request limit admits). It turned a request away at
// 3.45 s, after the gateway had the first probe's success (3.401 s): a
// half-open giving permits back as calls end would have let that request
// through, so only the fixed-count reading stands and the close is the
// third success's end, exact, after 3 successes. The permit-returning
// bound (slotsClose) must not widen it.
func TestFixedCountHalfOpenKeepsItsClose(t *testing.T) {
	r := newSimRun(1000, 3000, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 3100)
	r.pass(3100, 300, 200)
	r.pass(3150, 300, 200)
	r.pass(3200, 300, 200)
	r.blockFrom(3250, 3550)
	r.passFrom(3550, 6000, 0.5, 200)
	ep, cy := r.cycle(t)
	if cy.CloseBoundsS != nil || cy.ClosedAtS == nil {
		t.Fatalf("close %v bounds %s, want exact at the third success (%s)", fp(cy.ClosedAtS), bounds(cy.CloseBoundsS), ep.Statement)
	}
	if got := *cy.ClosedAtS; got < 3.500 || got > 3.507 {
		t.Errorf("closed at %.3f s, want the third probe's end, 3.5005 s", got)
	}
	if ep.SuccessesToClose == nil || *ep.SuccessesToClose != 3 {
		t.Errorf("successes to close %v, want 3 (%s)", ep.SuccessesToClose, ep.Statement)
	}
}
