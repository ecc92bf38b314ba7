package reports

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// TestOneFailureTripGrowingCooldown: a breaker that trips on a single
// failure, lets one live call through after each cooldown and doubles
// the cooldown on a failed trial (the simulator's backoff 2), deciding
// each request some time before its call (an admission lag; the
// simulator writes its half-open states only then). Nothing lets judgedTrial rule out expiring failures (it needs
// two or more to trip): the growth does (reports/analysis/held.go).
// Held to the gateway's white-box transitions: one cycle, every
// half-open a probe (the last, quick, closing it), each cooldown.
func TestOneFailureTripGrowingCooldown(t *testing.T) {
	ms := time.Millisecond
	for _, lag := range []time.Duration{50 * ms, 150 * ms, 300 * ms} {
		t.Run(fmt.Sprintf("lag %s", lag), func(t *testing.T) {
			s := base()
			s.style, s.need, s.threshold, s.admitLag = "live", 1, 1, lag
			s.cooldown, s.backoff = 3*time.Second, 2
			s.faults[0].for_ = 8 * time.Second // the first trial (3 s) fails, the second (3+6 s) succeeds
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
			if len(halfOpens) != 2 || int(ep.Probes) != 2 || ep.ProbeOutcomes.OK != 1 {
				t.Fatalf("probes %d (%d ok), the gateway half-opened at %v: %s", ep.Probes, ep.ProbeOutcomes.OK, halfOpens, ep.Statement)
			}
			if len(ep.CooldownsS) != 2 {
				t.Fatalf("cooldowns %v, the gateway's half-opens at %v after opens at %v", ep.CooldownsS, halfOpens, opens)
			}
			for i, h := range halfOpens {
				if want := h - opens[i]; math.Abs(ep.CooldownsS[i]-want) > tol {
					t.Errorf("cooldown %d: %.3f, the gateway's %.3f", i+1, ep.CooldownsS[i], want)
				}
			}
			t.Logf("%s", ep.Statement)
		})
	}
}
