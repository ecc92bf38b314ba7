package analysis

import "testing"

// TestHalfOpenSlowProbesAreNotResumption: failsafe-go (4 failures of the
// last 6 open it, 2 successes of 3 close it, delay 460 ms doubling to
// 1.84 s) behind a gateway that gives up after 872 ms, the upstream 2 s
// slow from 2.198 s for 2.591 s (e2e TestLibraryFailsafe/backoff,
// REHEARSE_SHAPE_SEED=1796446798278955482, the journal kept with
// REHEARSE_E2E_OUT). Its log: open 3.2486, half-open 3.7206, open 3.7935
// (a call let through before the open failed), half-open 4.7206, closed
// 4.8710 — one cycle. Each half-open let slow calls through together
// (3.721 and 3.771; 4.721, 4.771 and 4.821) before any answered: its
// probes (it admits up to 3), not traffic resuming after a timer. Read as
// resumed traffic, the first half-open was split off as a closed breaker
// re-tripping, and the shape stated as failures expiring, 2 cycles.
func TestHalfOpenSlowProbesAreNotResumption(t *testing.T) {
	a := analyzeGz(t, "testdata/failsafe-backoff-reopened-probes.jsonl.gz")
	u := a.Upstreams["app"]
	if u == nil || len(u.Episodes) != 1 {
		t.Fatalf("app: want one episode, got %+v", u)
	}
	cys := u.Episodes[0].Cycles
	if len(cys) != 1 {
		for _, cy := range cys {
			t.Logf("cycle open %.3f close %v shape %s: %s", cy.OpenedAtS, fp(cy.ClosedAtS), cy.Shape, cy.ShapeEvidence)
		}
		t.Fatalf("%d cycles, the library's log has 1", len(cys))
	}
	cy := cys[0]
	if cy.Shape == ShapeExpiry {
		t.Errorf("shape %s (%s): the library's half-open admitted those calls", cy.Shape, cy.ShapeEvidence)
	}
	const open, closed = 3.2486, 4.8710
	if cy.OpenedAtS < open-0.02 || cy.OpenedAtS > open+0.02 {
		t.Errorf("opened %.4f, the library's log %.4f", cy.OpenedAtS, open)
	}
	switch b := cy.CloseBoundsS; {
	case b != nil && b.Min != nil && *b.Min > closed+0.005:
		t.Errorf("close bounds %s after the library's close %.4f", bounds(b), closed)
	case b != nil && b.Max != nil && *b.Max < closed-0.005:
		t.Errorf("close bounds %s before the library's close %.4f", bounds(b), closed)
	case b == nil && (cy.ClosedAtS == nil || *cy.ClosedAtS < closed-0.02 || *cy.ClosedAtS > closed+0.02):
		t.Errorf("close %v stated exact, the library's %.4f", fp(cy.ClosedAtS), closed)
	}
}
