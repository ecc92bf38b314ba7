package analysis

import (
	"strings"
	"testing"
)

// A half-open reopened on a failure that was not the last probe's
// (reopen.go).

// TestReopenOnAnOlderFailure: failsafe-go (a failure rate ≥ 0.33 over ≥ 5
// executions in 1.752 s, 2 successes close it, delay 553 ms) behind a
// gateway that gives up on a call after 752 ms, answers 2 s slow from
// 2.932 s for 2.455 s (e2e TestLibraryFailsafe/rate,
// REHEARSE_SHAPE_SEED=1796443348761574372, the journal kept with
// REHEARSE_E2E_OUT). failsafe-go counts an answer in the state it arrives
// in, so each half-open reopened on a call let through before it: a call
// of the closed breaker (4.720), the first half-open's probe (5.471), the
// second's (6.070), while its own probes were still in flight. Its log:
// opened 4.120, half-open 4.718, open 4.720, half-open 5.318, open
// 5.471, half-open 6.068, open 6.070, half-open 6.668, closed 7.019 —
// four cooldowns of 0.597 s. Counting reopens on the last probe's failure
// alone measured one.
func TestReopenOnAnOlderFailure(t *testing.T) {
	a := analyzeGz(t, "testdata/failsafe-leftover-reopens.jsonl.gz")
	u := a.Upstreams["app"]
	if u == nil || len(u.Episodes) != 1 || len(u.Episodes[0].Cycles) != 1 {
		t.Fatalf("app: want one episode of one cycle, got %+v", u)
	}
	cy := u.Episodes[0].Cycles[0]
	truth := []float64{4.717545 - 4.120137, 5.317545 - 4.720203, 6.067547 - 5.470797, 6.667539 - 6.070225}
	if len(cy.CooldownsS) != len(truth) {
		t.Fatalf("cooldowns %v, the library's log has %d (%v)", cy.CooldownsS, len(truth), truth)
	}
	for i, want := range truth {
		got := cy.CooldownsS[i]
		var b *Bounds
		if i < len(cy.CooldownsBoundsS) {
			b = cy.CooldownsBoundsS[i]
		}
		switch {
		case b != nil && !holds(b, want):
			t.Errorf("cooldown %d: %.4f s, bounds %s do not hold the library's %.4f s", i+1, got, bounds(b), want)
		case b == nil && (got < want-0.005 || got > want+0.005):
			t.Errorf("cooldown %d: %.4f s stated exact, the library's %.4f s", i+1, got, want)
		}
		if b != nil && *b.Max-*b.Min > 0.2 {
			// The refusals fix each reopen to a few failures' ends: the
			// first half-open's to four (4.720 – 4.870 s), the third's
			// to two; not wider.
			t.Errorf("cooldown %d: bounds %s wider than the failures that can have reopened it", i+1, bounds(b))
		}
	}
}

// TestReopenOnALeftover: three failures in a row trip a breaker at
// 1150.5 ms; a call it let through while closed (1100 ms) fails slowly,
// at 2000.5 ms, in the half-open that let probe A through at 1700 ms (A
// fails later still, at 2700.5 ms). A breaker that counts the leftover's
// failure reopens on it: refusals from 2050 ms, and probe B let through
// at 2600 ms while A is still in flight — a wait of 600 ms from the
// leftover's end. B fails at once (2601 ms), C comes 599.5 ms later and a
// success at 3750 ms closes it. A's failure ends after B was let
// through, so it cannot have begun that wait; the count of reopens on
// the last probe's failure alone missed it.
func TestReopenOnALeftover(t *testing.T) {
	r := newSimRun(1000, 3300, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1100, 0.5, 503)
	r.pass(1100, 900, 503) // the leftover: ends 2000.5
	r.pass(1150, 0.5, 503) // the third failure in a row: trips it
	r.blockFrom(1200, 1700)
	r.pass(1700, 1000, 503) // A
	r.blockFrom(1750, 2600)
	r.pass(2600, 0.5, 503) // B
	r.blockFrom(2650, 3200)
	r.pass(3200, 0.5, 503) // C
	r.blockFrom(3250, 3750)
	r.passFrom(3750, 6000, 0.5, 200)
	ep, cy := r.cycle(t)
	if cy.ProbeCount < 3 || len(cy.CooldownsS) < 3 {
		t.Fatalf("%d probes, cooldowns %v: want A, B and C and the waits before them (%s)", cy.ProbeCount, cy.CooldownsS, ep.Statement)
	}
	for i, want := range []float64{0.550, 0.600, 0.5995} {
		got := cy.CooldownsS[i]
		if i < len(cy.CooldownsBoundsS) && cy.CooldownsBoundsS[i] != nil {
			if !holds(cy.CooldownsBoundsS[i], want) {
				t.Errorf("cooldown %d: %v s, bounds %s do not hold %v s", i+1, got, bounds(cy.CooldownsBoundsS[i]), want)
			}
			continue
		}
		if got < want-0.002 || got > want+0.002 {
			t.Errorf("cooldown %d: %v s stated exact, want %v s", i+1, got, want)
		}
	}
}

// TestNoReopenWhenAnAnswerFreedTheSlot: a half-open letting one call
// through at a time and closing on three successes. A leftover fails at
// 1720.5 ms while probe A (1700 ms) is in flight, and refusals follow;
// but A's success (2000.5 ms) came back before B was let through at
// 2050 ms: B may have taken the slot A gave back in the same half-open
// (one that tolerates a failure, or ignores an older state's answers),
// so the refusals show no reopen, and no wait is claimed before B or C
// (a reopen on the leftover would have claimed one of 330 ms).
func TestNoReopenWhenAnAnswerFreedTheSlot(t *testing.T) {
	r := newSimRun(1000, 1700, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1100, 0.5, 503)
	r.pass(1100, 620, 503) // the leftover: ends 1720.5
	r.pass(1150, 0.5, 503)
	r.blockFrom(1200, 1700)
	r.pass(1700, 300, 200) // A
	r.blockFrom(1750, 2050)
	r.pass(2050, 300, 200) // B
	r.blockFrom(2100, 2400)
	r.passFrom(2400, 6000, 0.5, 200)
	ep, cy := r.cycle(t)
	if cy.ProbeCount < 2 {
		t.Fatalf("%d probes: want A and B (%s)", cy.ProbeCount, ep.Statement)
	}
	if len(cy.CooldownsS) != 1 {
		t.Errorf("cooldowns %v: only the wait from the open to A shows", cy.CooldownsS)
	}
}

// unseenWaitRun: a breaker whose half-open lets two calls through and
// counts every answer in the state it arrives in (e2e
// TestLibraryFailsafe/backoff, REHEARSE_SHAPE_SEED=1796444874958287268).
// Calls of the closed breaker fail 1 s slow; two in a row trip it at
// 2050.5 ms. The first half-open lets P1 (2950 ms) and P2 (3000 ms)
// through and reopens on a leftover's failure (3000.5 ms). P1's failure
// ends at 3640.5 ms, after the last refusal (3600 ms) and before P3
// (3650 ms): P1's answer may have freed the slot P3 took in the same
// half-open, so the reopen does not show, though it came and the wait
// before P3 was 649.5 ms. The second half-open lets P3 and P4 (3700 ms)
// through and reopens on P3's failure (4350.5 ms); the third lets P5
// (5550 ms, a wait of 1199.5 ms) and P6 through and closes on P5's
// success. The breaker's waits: 899.5, 649.5 and 1199.5 ms.
func unseenWaitRun() *simRun {
	r := newSimRun(1000, 4500, 8000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 2100, 1000, 503) // ends 2000.5 – 3050.5
	r.blockFrom(2100, 2950)
	r.pass(2950, 690, 503) // P1: ends 3640.5
	r.pass(3000, 700, 503) // P2: ends 3700.5
	r.blockFrom(3050, 3650)
	r.pass(3650, 700, 503) // P3: ends 4350.5
	r.pass(3700, 700, 503) // P4: ends 4400.5
	r.blockFrom(3750, 5550)
	r.pass(5550, 300, 200) // P5: ends 5850.5, closes it
	r.pass(5600, 300, 200) // P6
	r.blockFrom(5650, 5850)
	r.passFrom(5900, 8000, 0.5, 200)
	return r
}

// TestUnseenReopenBoundsTheCount: the wait before P3 cannot be told
// from outside, so the cooldowns stated are the least there were: the
// count carries bounds that hold the breaker's three, and every wait
// stated holds one of the breaker's, in order.
func TestUnseenReopenBoundsTheCount(t *testing.T) {
	ep, cy := unseenWaitRun().cycle(t)
	truth := []float64{0.8995, 0.6495, 1.1995}
	b := cy.CooldownsCountBounds
	if b == nil || b.Min == nil || b.Max == nil {
		t.Fatalf("cooldowns %v, count bounds %s: one wait may be unseen, the count is not exact (%s)", cy.CooldownsS, bounds(b), ep.Statement)
	}
	if int(*b.Min) != len(cy.CooldownsS) || !holds(b, float64(len(truth))) {
		t.Errorf("count bounds %s with %d stated: do not hold the breaker's %d", bounds(b), len(cy.CooldownsS), len(truth))
	}
	if eb := ep.CooldownsCountBounds; eb == nil || *eb.Min != *b.Min || *eb.Max != *b.Max {
		t.Errorf("episode count bounds %s, the cycle's %s", bounds(eb), bounds(b))
	}
	// Each stated wait is one of the breaker's, in order.
	j := 0
	for i, got := range cy.CooldownsS {
		lo, hi := BoundsSpan(got, nil)
		if i < len(cy.CooldownsBoundsS) && cy.CooldownsBoundsS[i] != nil {
			lo, hi = BoundsSpan(got, cy.CooldownsBoundsS[i])
		}
		for j < len(truth) && (truth[j] < lo-0.002 || truth[j] > hi+0.002) {
			j++
		}
		if j == len(truth) {
			t.Fatalf("cooldowns %v (bounds %v): wait %d holds none of the breaker's %v left in order", cy.CooldownsS, cy.CooldownsBoundsS, i+1, truth)
		}
		j++
	}
}

// TestSeenReopensCountExactly: where every reopen shows (a failed probe
// followed by refusals each time), the count has no bounds.
func TestSeenReopensCountExactly(t *testing.T) {
	r := newSimRun(1000, 3300, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 1700)
	r.pass(1700, 0.5, 503)
	r.blockFrom(1750, 2300)
	r.pass(2300, 0.5, 503)
	r.blockFrom(2350, 2900)
	r.passFrom(2900, 6000, 0.5, 200)
	ep, cy := r.cycle(t)
	if len(cy.CooldownsS) < 2 || cy.CooldownsCountBounds != nil {
		t.Errorf("cooldowns %v, count bounds %s: every reopen shows (%s)", cy.CooldownsS, bounds(cy.CooldownsCountBounds), ep.Statement)
	}
}

// TestCooldownCellSaysAWaitMayBeUnseen: the report's cooldown cell says
// when the count is only bounded, so the progression is not read as
// every wait there was.
func TestCooldownCellSaysAWaitMayBeUnseen(t *testing.T) {
	var cell func(*Episode) string
	for _, f := range Figures {
		if f.Key == "cooldowns_s" {
			cell = f.Cell
		}
	}
	if cell == nil {
		t.Fatal("no cooldowns_s figure")
	}
	ep := &Episode{CooldownsS: []float64{0.9, 1.15}}
	if s := cell(ep); strings.Contains(s, "unseen") {
		t.Errorf("exact count: %q", s)
	}
	ep.CooldownsCountBounds = &Bounds{Min: Ptr(2.0), Max: Ptr(3.0)}
	if s := cell(ep); !strings.Contains(s, "2 to 3 waits") || !strings.Contains(s, "unseen") {
		t.Errorf("count bounded 2 to 3: %q", s)
	}
}
