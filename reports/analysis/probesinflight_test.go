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

// TestHalfOpenGivesPermitsBack: failsafe-go (a failure rate ≥ 0.52 over
// ≥ 10 executions in 1.461 s, 3 successes close it, delay 1.079 s), the
// upstream resetting from 3.354 s for 1.7 s, healthy answers 300 ms slow
// (e2e TestLibraryFailsafe/rate, REHEARSE_SHAPE_SEED=1796445890834287309,
// the journal kept with REHEARSE_E2E_OUT). Its log: open 4.3063,
// half-open 5.4059, closed 5.8062. The half-open let 3 calls through
// (5.406, 5.456, 5.506) and turned the next away while they were in
// flight; as each succeeded (5.711, 5.756) it gave its permit back and
// let the next call in (5.756, 5.806): traffic that looks resumed while
// still half-open, until the third success (5.806). Bounded by the
// first resumed call, the close was stated between 5.710 and 5.756,
// before the log's. Not before more calls were in flight together than
// the half-open admits (4, at 5.909) can it be bounded from outside.
func TestHalfOpenGivesPermitsBack(t *testing.T) {
	a := analyzeGz(t, "testdata/failsafe-permit-returned.jsonl.gz")
	u := a.Upstreams["app"]
	if u == nil || len(u.Episodes) != 1 || len(u.Episodes[0].Cycles) != 1 {
		t.Fatalf("app: want one episode of one cycle, got %+v", u)
	}
	cy := u.Episodes[0].Cycles[0]
	const closed = 5.8062
	b := cy.CloseBoundsS
	if cb := u.Episodes[0].Bases["closed_after_recovery_s"]; cb != nil && cb.Max != nil {
		t.Logf("close %v, bounds %s, the latest: %s (%s)", fp(cy.ClosedAtS), bounds(b), cb.Max.Evidence, cb.Max.Text)
		if b != nil && b.Max != nil && cb.Max.Evidence != "permits_exceeded" {
			t.Errorf("the latest's basis %s, want permits_exceeded: the calls in flight together bound it", cb.Max.Evidence)
		}
	}
	if b == nil || b.Min == nil {
		t.Fatalf("close %v stated exact, the library's %.4f: a permit-returning half-open is not pinned by one success", fp(cy.ClosedAtS), closed)
	}
	if *b.Min > closed+0.005 || (b.Max != nil && *b.Max < closed-0.005) {
		t.Errorf("close bounds %s do not hold the library's close %.4f", bounds(b), closed)
	}
	if b.Max != nil && *b.Max > 5.95 {
		// The fourth call in flight together (5.909) bounds it.
		t.Errorf("close bounds %s: the latest is later than the evidence allows", bounds(b))
	}
}
