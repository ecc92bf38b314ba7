package analysis

import "testing"

// TestProbeSpacingUncountedProbes: a half-open that lets three quick
// calls through (gobreaker's MaxRequests 3), a storm long enough for two
// of its half-opens to fail on their first probe, a cooldown apart. The
// last half-open's three probes, 50 ms apart and answered in a moment,
// look like traffic resuming: they are not counted, and the spacing
// measured (1 s) is only the most the shortest can be. The bounds must
// hold the truth (50 ms) and keep the measured value as their max.
func TestProbeSpacingUncountedProbes(t *testing.T) {
	r := newSimRun(1000, 4000, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1150, 0.5, 503) // three failures trip it at 1.101 s
	r.blockFrom(1150, 2150)
	r.pass(2150, 0.5, 503) // a half-open's first probe fails: reopened
	r.blockFrom(2200, 3150)
	r.pass(3150, 0.5, 503)
	r.blockFrom(3200, 4150)
	r.passFrom(4150, 6000, 0.5, 200) // three quick probes, then closed
	ep, cy := r.cycle(t)
	if m := ep.ProbeIntervalS.Min; m == nil || *m != 1 {
		t.Fatalf("probe_interval_s.min %v, want the 1 s measured between the failed probes", fp(m))
	}
	if !cy.MaybeProbe {
		t.Fatalf("maybe_probe false: the quick probes after the last refusal cannot be told from traffic (%s)", ep.Statement)
	}
	b := ep.ProbeIntervalMinBoundsS
	if b == nil || b.Min == nil || b.Max == nil || *b.Min > 0.05 || *b.Max != 1 {
		t.Fatalf("probe_interval_min_bounds_s %s, want [≤ 0.05, 1]: the probes 50 ms apart went uncounted", bounds(b))
	}
}

// TestProbeSpacingExact: every probe counted (each half-open's probe
// failed, the last one's success answered slowly with requests turned
// away meanwhile): the spacing measured is the spacing, no bounds.
func TestProbeSpacingExact(t *testing.T) {
	r := newSimRun(1000, 3000, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 2150)
	r.pass(2150, 0.5, 503)
	r.blockFrom(2200, 3150)
	r.pass(3150, 300, 200) // a slow success; requests turned away until it ends
	r.blockFrom(3200, 3500)
	r.passFrom(3500, 6000, 0.5, 200)
	ep, cy := r.cycle(t)
	if cy.MaybeProbe {
		t.Fatalf("maybe_probe: %s", ep.Statement)
	}
	if ep.ProbeIntervalMinBoundsS != nil {
		t.Errorf("probe_interval_min_bounds_s %s on a spacing the evidence fixes", bounds(ep.ProbeIntervalMinBoundsS))
	}
}

// TestProbesInFlightUncounted: the same breaker, but the half-open's
// calls and the traffic after it take 120 ms (three in flight at once at
// 20 requests a second) while the earlier probes failed at once: one
// probe in flight was counted, yet the uncounted ones may have
// overlapped. max_probes_in_flight is the least; its bounds run to the
// most live calls in flight at once before the latest close.
func TestProbesInFlightUncounted(t *testing.T) {
	r := newSimRun(1000, 4000, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 2150)
	r.pass(2150, 0.5, 503)
	r.blockFrom(2200, 3150)
	r.pass(3150, 0.5, 503)
	r.blockFrom(3200, 4150)
	r.pass(4150, 10, 200) // quick, alone: the close cannot be told from a timer
	r.passFrom(4200, 6000, 120, 200)
	ep, cy := r.cycle(t)
	if !cy.MaybeProbe || ep.MaxProbesInFlight == nil || *ep.MaxProbesInFlight != 1 {
		t.Fatalf("maybe_probe %v, max_probes_in_flight %v: %s", cy.MaybeProbe, fp2(ep.MaxProbesInFlight), ep.Statement)
	}
	b := ep.MaxProbesInFlightBounds
	if b == nil || b.Min == nil || b.Max == nil || *b.Min != 1 || *b.Max < 3 {
		t.Fatalf("max_probes_in_flight_bounds %s, want [1, ≥ 3]: uncounted probes may have overlapped", bounds(b))
	}
}

// TestProbeSpacingClosedByAFailure: the quick half-open of
// TestProbeSpacingUncountedProbes (three probes 50 ms apart from 4.15 s,
// closed after the third), the close with no latest moment; at 5.5 s a
// call fails and the next request, 50 ms later, is forwarded: the breaker
// judges its trials (a failed trial reopened it twice), so it was closed
// by then, and the replay's catch-up pair at 5.7 s (sent 1 ms apart)
// cannot have been consecutive probes. The lower bound is the closest
// spacing before the failure, not the pair's 1 ms, and holds the truth
// (50 ms).
func TestProbeSpacingClosedByAFailure(t *testing.T) {
	r := newSimRun(1000, 4000, 7000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 2150)
	r.pass(2150, 0.5, 503)
	r.blockFrom(2200, 3150)
	r.pass(3150, 0.5, 503)
	r.blockFrom(3200, 4150)
	r.passFrom(4150, 5500, 0.5, 200)
	r.pass(5500, 0.5, 500) // tolerated: the next request is forwarded
	r.passFrom(5550, 5700, 0.5, 200)
	r.pass(5700, 0.5, 200)
	r.pass(5701, 0.5, 200) // a catch-up send
	r.passFrom(5750, 7000, 0.5, 200)
	ep, cy := r.cycle(t)
	if !cy.MaybeProbe {
		t.Fatalf("maybe_probe false: %s", ep.Statement)
	}
	b := ep.ProbeIntervalMinBoundsS
	if b == nil || b.Min == nil || *b.Min > 0.05 || *b.Min < 0.04 {
		t.Fatalf("probe_interval_min_bounds_s %s, want a least of about 50 ms: the catch-up pair came after a failure the closed breaker tolerated", bounds(b))
	}
}
