package reports

import (
	"fmt"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"
)

// gapsOnlySims are simulated drills whose upstream calls carry no
// sequence number and whose client requests name no upstream: the
// analysis reads the breaker from the gaps in the calls alone. Each
// breaker style closes its own way (tagged probes, a live probe, passing
// health checks), once or flapping, so every close the gaps-only reading
// places comes from one estimator fed different evidence.
func gapsOnlySims() map[string]*sim {
	out := map[string]*sim{}
	for _, style := range []string{"tagged", "live", "health"} {
		for _, flap := range []bool{false, true} {
			s := base()
			s.fwdSeq, s.clientUp, s.style = false, false, style
			if style == "health" {
				s.healthInt = 500 * time.Millisecond
			}
			if style == "live" {
				s.cooldown, s.backoff = 2*time.Second, 1
			}
			if flap {
				s.cooldown, s.backoff = time.Second, 1
				s.faults = []simFault{{name: "flap", upstream: "search", typ: "status", at: 10 * time.Second, for_: 30 * time.Second,
					period: 10 * time.Second, duty: 4 * time.Second}}
			}
			out[fmt.Sprintf("%s/flap=%v", style, flap)] = s
		}
	}
	return out
}

// TestGapsOnlyCloseBounds: without attribution the close is placed by the
// same estimator as with it (closeOf, fed the gap's last missing arrival
// as the last refusal), so it carries bounds too. Every close the
// breaker made is the stated figure, within the run's tolerance, or
// lies inside the stated bounds, and a bound never excludes it. Before
// the one estimator, a close with no success seen in the window was
// stated at the first resumed call with that call as its lower bound,
// which excludes a breaker that closed a moment before it (a health
// check's pass, a probe's answer while another call was in flight).
func TestGapsOnlyCloseBounds(t *testing.T) {
	for name, s := range gapsOnlySims() {
		t.Run(name, func(t *testing.T) {
			a, evs := analyse(t, s)
			ua := a.Upstreams["search"]
			if ua.Routing != "gaps_only" {
				t.Fatalf("routing %q", ua.Routing)
			}
			var closes []float64
			for _, e := range truth(evs, "search") {
				if bt := e.Payload.(*journal.BreakerTransition); bt.To == journal.StateClosed {
					closes = append(closes, e.T.Round(time.Millisecond).Seconds())
				}
			}
			var cycles []*analysis.Cycle
			for _, ep := range ua.Episodes {
				cycles = append(cycles, ep.Cycles...)
			}
			if len(cycles) == 0 || len(cycles) > len(closes) {
				t.Fatalf("%d cycles, white-box closes at %v", len(cycles), closes)
			}
			for i, cy := range cycles {
				if cy.ClosedAtS == nil {
					t.Errorf("cycle %d: no close, white-box closed at %.3f", i, closes[i])
					continue
				}
				want, got, b := closes[i], *cy.ClosedAtS, cy.CloseBoundsS
				t.Logf("cycle %d: white-box %.3f, closed %.3f bounds %s successes %v shape %s", i, want, got, bounds(b), fp2(cy.SuccessesToClose), cy.Shape)
				switch {
				case b == nil:
					if got < want-tol || got > want+tol {
						t.Errorf("cycle %d: closed at %.3f (exact), white-box %.3f", i, got, want)
					}
				case b.Min == nil || want < *b.Min-tol || (b.Max != nil && want > *b.Max+tol):
					t.Errorf("cycle %d: close bounds %s exclude the white-box close %.3f (stated %.3f)", i, bounds(b), want, got)
				}
			}
		})
	}
}

// stripAttribution makes a journal gaps-only: upstream calls lose their
// sequence numbers and client requests their upstream.
func stripAttribution(evs []journal.Event) []journal.Event {
	out := make([]journal.Event, len(evs))
	for i, e := range evs {
		switch p := e.Payload.(type) {
		case *journal.UpstreamRequest:
			q := *p
			q.Seq = nil
			e.Payload = &q
		case *journal.ClientRequest:
			q := *p
			q.Upstream = ""
			e.Payload = &q
		}
		out[i] = e
	}
	return out
}

// TestGapsOnlyExpiryCloseBounds: a breaker whose failures expire closes
// on a timer, before the first call it lets through. Read from gaps
// alone, every close lies inside the stated bounds and no success is
// counted, whether healthy answers are quick (the call after the last gap
// is alone in flight) or slow (in flight when the next arrives). The
// gaps-only machine had its own close estimator (closeMoment), which
// stated a failed trial's end as an exact close, and the first resumed
// call's arrival as a lower bound past the timer's close; the one
// estimator bounds both. And the cycles show a failed call after a gap
// followed by traffic at the usual spacing — no breaker that judges its
// trial does that — so the quick success that ended the last gap is no
// closing trial (it was stated as one, exact, 50 ms after the truth).
func TestGapsOnlyExpiryCloseBounds(t *testing.T) {
	ms := time.Millisecond
	for _, healthy := range []time.Duration{2 * ms, 300 * ms} {
		for _, forget := range []time.Duration{1200 * ms, 2100 * ms} {
			x := expirySim{rate: 20, phase: 10 * ms, lag: ms, healthy: healthy, forget: forget, maxFails: 3,
				faultAt: 3 * time.Second, faultFor: 4 * time.Second, dur: 14 * time.Second}
			t.Run(fmt.Sprintf("healthy=%v/forget=%v", healthy, forget), func(t *testing.T) {
				ev, spells := x.build()
				a, err := analysis.AnalyzeEvents(stripAttribution(ev))
				if err != nil {
					t.Fatal(err)
				}
				ua := a.Upstreams["app"]
				if ua.Routing != "gaps_only" || len(ua.Episodes) != 1 {
					t.Fatalf("routing %q, %d episodes", ua.Routing, len(ua.Episodes))
				}
				cycles := ua.Episodes[0].Cycles
				if len(cycles) != len(spells) {
					t.Fatalf("%d cycles, the breaker had %v", len(cycles), spells)
				}
				for i, cy := range cycles {
					want := spells[i].close.Seconds()
					t.Logf("cycle %d: truth %.3f, closed %v bounds %s", i, want, fp(cy.ClosedAtS), bounds(cy.CloseBoundsS))
					if b := cy.CloseBoundsS; cy.ClosedAtS == nil || b == nil || b.Min == nil || want < *b.Min-0.002 || (b.Max != nil && want > *b.Max+0.002) {
						t.Errorf("cycle %d: closed at %.3f by the breaker, stated %v with bounds %s", i, want, fp(cy.ClosedAtS), bounds(cy.CloseBoundsS))
					}
					if cy.SuccessesToClose != nil {
						t.Errorf("cycle %d: successes_to_close %d, %s: a breaker whose failures expire counts none", i, *cy.SuccessesToClose, cy.Shape)
					}
				}
			})
		}
	}
}
