package reports

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"
)

// TestBasisOnSims: on the simulated breakers (tagged, live and
// health-check probes, flapping faults, with and without attribution,
// failures that expire, a bounded open), every basis names the
// observation at its bound, every bounded figure has one and exact ones
// none (analysis.BasisProblems), in the analysis and in its run.json read
// back.
func TestBasisOnSims(t *testing.T) {
	t.Parallel()
	runs := map[string][]journal.Event{"bounded open": boundedOpenJournal()}
	for name, s := range gapsOnlySims() {
		runs["gaps only "+name] = s.build()
	}
	for _, style := range []string{"tagged", "live", "health"} {
		for _, flap := range []bool{false, true} {
			s := base()
			s.style = style
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
			runs[fmt.Sprintf("%s/flap=%v", style, flap)] = s.build()
		}
	}
	rng := rand.New(rand.NewPCG(30, 16)) // fixed: the same runs each time
	ms := time.Millisecond
	for n := 0; n < 8; n++ {
		x := expirySim{rate: 20, phase: time.Duration(rng.IntN(50)) * ms, lag: time.Duration(300+rng.IntN(1500)) * time.Microsecond,
			forget: time.Duration(800+rng.IntN(1700)) * ms, maxFails: 2 + rng.IntN(3), healthy: time.Duration(1+rng.IntN(300)) * ms,
			faultAt: 3 * time.Second, faultFor: time.Duration(3000+rng.IntN(3000)) * ms, dur: 14 * time.Second}
		if n%2 == 0 {
			x.checkEvery = time.Duration(150+rng.IntN(400)) * ms
		}
		ev, _ := x.build()
		runs[fmt.Sprintf("expiry %+v", x)] = ev
	}
	bounded := 0
	var prec analysis.Precision
	for name, ev := range runs {
		a, err := analysis.AnalyzeEvents(ev)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for up, ua := range a.Upstreams {
			for i, ep := range ua.Episodes {
				where := fmt.Sprintf("%s: %s #%d", name, up, i+1)
				for _, p := range analysis.BasisProblems(ep) {
					t.Errorf("%s: %s", where, p)
				}
				bounded += len(ep.Bases)
				prec = prec.Add(ep.Precision())
				raw, err := json.Marshal(ep)
				if err != nil {
					t.Fatal(err)
				}
				var back analysis.Episode
				if err := json.Unmarshal(raw, &back); err != nil {
					t.Fatal(err)
				}
				for _, p := range analysis.BasisProblems(&back) {
					t.Errorf("%s, read back: %s", where, p)
				}
			}
		}
	}
	if bounded == 0 {
		t.Error("no basis in any run: the sims do not exercise it")
	}
	// The figures Precision tallies as bounded or unknown are among
	// those BasisProblems requires a basis of.
	t.Logf("%d bases over %d runs; figures exact %d, bounded %d, unknown %d", bounded, len(runs), prec.Exact, prec.Bounded, prec.Unknown)
}
