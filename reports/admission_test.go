package reports

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"
)

// TestAdmissionLag: a gateway that decides each request some time before
// it calls the upstream (an agent runtime admits a turn 0.1–0.3 s before
// the provider call). A call admitted before the trip reaches the
// upstream after it, and a probe is let through (the cooldown's end) a
// lag before it arrives. Held to the gateway's white-box transitions:
// every cycle, open and close, the probes, and each cooldown measured to
// the moment the gateway let the probe through, not its arrival.
func TestAdmissionLag(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		lag, spread, cooldown time.Duration
		threshold             int
	}{
		{0, 0, 5 * time.Second, 5}, {200 * ms, 0, 5 * time.Second, 5}, {300 * ms, 0, 5 * time.Second, 5}, {100 * ms, 200 * ms, 5 * time.Second, 5},
		// Lags longer than the request spacing, cooldowns not much
		// longer than the lags: calls admitted before a trip arrive
		// after it, and answers come back out of order.
		{100 * ms, 400 * ms, 700 * ms, 3}, {50 * ms, 500 * ms, 2 * time.Second, 2}, {100 * ms, 600 * ms, time.Second, 5},
	} {
		lag := c.lag
		t.Run(fmt.Sprintf("%s+%s,cooldown %s,trip %d", c.lag, c.spread, c.cooldown, c.threshold), func(t *testing.T) {
			s := base()
			s.style, s.need, s.admitLag, s.admitSpread = "live", 1, lag, c.spread
			s.cooldown, s.threshold = c.cooldown, c.threshold
			a, evs := analyse(t, s)
			checkTruthBounded(t, a, evs, "search")
			var opens, halfOpens []float64
			for _, e := range truth(evs, "search") {
				bt := e.Payload.(*journal.BreakerTransition)
				switch bt.To {
				case journal.StateOpen:
					opens = append(opens, e.T.Seconds())
				case journal.StateHalfOpen:
					halfOpens = append(halfOpens, e.T.Seconds())
				}
			}
			ep := a.Upstreams["search"].Episodes[0]
			want := len(halfOpens)
			if lag == 0 && c.cooldown == 5*time.Second {
				// No half-open state in the journal: probes at open+5 s
				// (fail), +10 s (fail), +20 s (ok, quick: a trial the
				// breaker judged, trial.go).
				want = 3
			}
			if int(ep.Probes) != want {
				t.Errorf("probes %d, the gateway let %d through (%s)", ep.Probes, want, ep.Statement)
			}
			if lag > 0 && len(ep.CooldownsS) == len(halfOpens) {
				for i, h := range halfOpens {
					want := h - opens[i]
					lo, hi := ep.CooldownsS[i], ep.CooldownsS[i]
					if len(ep.CooldownsBoundsS) == len(ep.CooldownsS) && ep.CooldownsBoundsS[i] != nil {
						lo, hi = *ep.CooldownsBoundsS[i].Min, *ep.CooldownsBoundsS[i].Max
					}
					// A fixed lag is read exactly; a spread one within its bounds.
					if (c.spread == 0 && math.Abs(ep.CooldownsS[i]-want) > tol) || want < lo-tol || want > hi+tol {
						t.Errorf("cooldown %d: %.3f (bounds %.3f – %.3f), the gateway's %.3f", i+1, ep.CooldownsS[i], lo, hi, want)
					}
				}
			} else if lag > 0 {
				t.Errorf("cooldowns %v, the gateway's half-opens at %v after opens at %v", ep.CooldownsS, halfOpens, opens)
			}
			if sb := ep.SuccessesToCloseBounds; ep.SuccessesToClose == nil && (sb == nil || sb.Min == nil || *sb.Min > 1 || (sb.Max != nil && *sb.Max < 1)) {
				t.Errorf("successes to close null, bounds %v: want 1, or bounds holding 1 (%s)", sb, ep.Statement)
			} else if ep.SuccessesToClose != nil && *ep.SuccessesToClose != 1 {
				t.Errorf("successes to close %v, want 1 (%s)", ep.SuccessesToClose, ep.Statement)
			}
			t.Logf("%s", ep.Statement)
		})
	}
}

// checkTruthBounded holds every black-box cycle of the upstream to the
// white-box transitions within the cycle's bounds: the truth's open in
// [opened_at_s, open_bounds_s.max], its close in close_bounds_s (or at
// closed_at_s when exact), each ± tol.
func checkTruthBounded(t *testing.T, a *analysis.Analysis, evs []journal.Event, u string) {
	t.Helper()
	var opens, closes []float64
	for _, e := range truth(evs, u) {
		bt := e.Payload.(*journal.BreakerTransition)
		if bt.From == journal.StateClosed && bt.To == journal.StateOpen {
			opens = append(opens, e.T.Seconds())
		}
		if bt.To == journal.StateClosed {
			closes = append(closes, e.T.Seconds())
		}
	}
	var cycles []*analysis.Cycle
	for _, ep := range a.Upstreams[u].Episodes {
		cycles = append(cycles, ep.Cycles...)
	}
	if len(cycles) != len(opens) {
		t.Fatalf("%s: %d black-box cycles, white-box opens at %v", u, len(cycles), opens)
	}
	for i, c := range cycles {
		lo, hi := c.OpenedAtS, c.OpenedAtS
		if b := c.OpenBoundsS; b != nil {
			hi = *b.Max
		}
		if opens[i] < lo-tol || opens[i] > hi+tol {
			t.Errorf("cycle %d: open %.3f – %.3f, white-box %.3f", i+1, lo, hi, opens[i])
		}
		if i >= len(closes) || c.ClosedAtS == nil {
			continue
		}
		lo, hi = analysis.BoundsSpan(*c.ClosedAtS, c.CloseBoundsS)
		if closes[i] < lo-tol || closes[i] > hi+tol {
			t.Errorf("cycle %d: close %.3f – %.3f, white-box %.3f", i+1, lo, hi, closes[i])
		}
	}
}

// TestMeasuredReturnHop: a gateway that relays each answer to its client
// 20 ms after the upstream released it, on healthy traffic and faulted
// alike. The slack the model allows between an upstream's stamps and the
// client's grows by that usual delay, measured on the run
// (forwarding.slack_s: 20 ms + 5 ms), beyond the 5 ms floor: the failure
// that tripped the breaker, passed on 20 ms later like every answer, is
// no sign of a gateway slow to act, and the open stays exact instead of
// stretching to the first request turned away. A gateway relaying in a
// millisecond keeps the floor.
func TestMeasuredReturnHop(t *testing.T) {
	s := base()
	s.style, s.need, s.backLag = "live", 1, 20*time.Millisecond
	a, evs := analyse(t, s)
	checkTruth(t, a, evs, "search")
	f := a.Upstreams["search"].Forwarding
	if f == nil || math.Abs(f.SlackS-0.025) > 0.002 {
		t.Errorf("forwarding %+v: want a slack of the measured 20 ms return hop", f)
	}
	ep := a.Upstreams["search"].Episodes[0]
	if b := ep.Cycles[0].OpenBoundsS; b != nil {
		t.Errorf("open bounded %v – %v: the tripping failure was passed on as late as every answer (%s)", *b.Min, *b.Max, ep.Statement)
	}
	s = base()
	s.style, s.need = "live", 1
	a, _ = analyse(t, s)
	if f := a.Upstreams["search"].Forwarding; f == nil || f.SlackS != 0.005 || f.LateSlackS != 0.05 {
		t.Errorf("a 1 ms return hop: forwarding %+v, want the floors (5 ms, 50 ms)", f)
	}
}

// TestSplitCycleFastFails: a breaker whose failures expire is split into a
// cycle per re-trip; each cycle's fast-fails are its own refusals that
// were recognised as fast-fails, never a share of the whole's. Here the
// gateway's refusals before the first re-admission are plain 503s (not
// recognised) and the later ones fast-fails.
func TestSplitCycleFastFails(t *testing.T) {
	ms := time.Millisecond
	x := expirySim{rate: 20, phase: 10 * ms, lag: ms, healthy: 300 * ms, forget: 1200 * ms, maxFails: 2,
		faultAt: 3 * time.Second, faultFor: 3 * time.Second, dur: 12 * time.Second}
	ev, spells := x.build()
	if len(spells) < 2 {
		t.Fatalf("the sim re-tripped %d times: want a split cycle", len(spells)-1)
	}
	firstClose := spells[0].close
	for _, e := range ev {
		if cr, ok := e.Payload.(*journal.ClientRequest); ok && cr.FastFail && cr.Sent < firstClose {
			cr.FastFail, cr.Outcome = false, journal.OutcomeHTTP5xx
		}
	}
	a, err := analysis.AnalyzeEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	cys := a.Upstreams["app"].Episodes[0].Cycles
	if len(cys) != len(spells) {
		t.Fatalf("%d cycles, the breaker's spells %d", len(cys), len(spells))
	}
	for i, cy := range cys {
		want := cy.Blocked
		if i == 0 {
			want = 0
		}
		if cy.FastFails != want {
			t.Errorf("cycle %d: %d fast-fails of %d refusals, want %d", i+1, cy.FastFails, cy.Blocked, want)
		}
	}
}
