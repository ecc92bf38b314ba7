package analysis

import (
	"fmt"
	"sort"
	"testing"

	"github.com/halfopen/rehearse/journal"
)

// checksBesideTimer is a run whose breaker closes on a timer of its own
// three times while health checks pass throughout, every 500 ms: at
// each close a check ended offs[k] ms after the last request turned away,
// 50 ms before traffic resumed. The gateway relays every answer back ms
// after the upstream released it, healthy traffic too: the run's
// measured slack is back + 5 ms when back exceeds 5 ms.
func checksBesideTimer(back float64, offs [3]float64) []journal.Event {
	r := newSimRun(1000, 8400, 10000)
	pass := func(x float64, status int) {
		s := r.seq
		out := journal.OutcomeOK
		if status >= 500 {
			out = journal.OutcomeHTTP5xx
		}
		r.add(x, &journal.ClientRequest{Seq: s, Method: "POST", Route: "/", Upstream: "app", Scheduled: simMS(x), Sent: simMS(x),
			HeadersAt: simMS(x + 1.5 + back), Done: simMS(x + 1.5 + back), Status: status, Outcome: out, Latency: simMS(1.5 + back), Service: simMS(1.5 + back)})
		r.add(x+0.5, &journal.UpstreamRequest{Upstream: "app", Method: "POST", Path: "/", Seq: &s, InFlight: 1, Status: status,
			Done: simMS(x + 1.5), Outcome: journal.OutcomeUpstreamComplete})
		r.seq++
	}
	for x := 250.0; x < 10000; x += 500 {
		r.add(x, &journal.UpstreamRequest{Upstream: "app", Method: "GET", Path: "/healthz", HealthCheck: true, InFlight: 1, Status: 200,
			Done: simMS(x + 1), Outcome: journal.OutcomeUpstreamComplete})
	}
	from := 0.0
	for k, b := range []float64{1000, 4000, 7000} {
		for x := from; x < b; x += 50 {
			pass(x, 200)
		}
		pass(b, 503)
		pass(b+50, 503)
		lb := b + 1251 - offs[k] // the check that ends at b+1251
		first := lb - 50*float64(int((lb-b-100)/50))
		for x := first; x <= lb; x += 50 {
			r.block(x)
		}
		from = lb + 50
	}
	for x := from; x < 10000; x += 50 {
		pass(x, 200)
	}
	r.add(10000, &journal.RunEnd{Reason: journal.EndCompleted})
	sort.SliceStable(r.ev, func(i, j int) bool { return r.ev[i].T < r.ev[j].T })
	return r.ev
}

// TestInStepFromSlack: checks that ended at the same offset from the last
// refusal at every close are one trial of the coincidence, not three:
// the chance that a timer beside which a check happened to end looks like
// a gate is then the largest single one (0.15 here), above
// CoincidenceMax, and the checks are not the gate. "The same offset" is
// within the run's measured slack: offsets 20, 30 and 25 ms apart by 10 ms
// are the same moment on a run whose gateway relays answers 20 ms late
// (slack 25 ms) — the 3 ms constant took them for three trials (chance
// 0.15³ < 1 %) and credited the checks — and different moments on a run
// relaying at once (slack 5 ms), where the product stands.
func TestInStepFromSlack(t *testing.T) {
	for _, tc := range []struct {
		back float64
		gate bool
	}{{20, false}, {0.5, true}} {
		t.Run(fmt.Sprintf("back=%vms", tc.back), func(t *testing.T) {
			a, err := AnalyzeEvents(checksBesideTimer(tc.back, [3]float64{20, 30, 25}))
			if err != nil {
				t.Fatal(err)
			}
			ua := a.Upstreams["app"]
			if len(ua.Episodes) != 1 || len(ua.Episodes[0].Cycles) != 3 {
				t.Fatalf("want one episode of 3 cycles: %+v", ua.Episodes)
			}
			if f := ua.Forwarding; f == nil || (tc.back > 5) != (f.SlackS > 0.006) {
				t.Fatalf("forwarding %+v: want a slack measured from a %v ms relay", f, tc.back)
			}
			for i, cy := range ua.Episodes[0].Cycles {
				if gate := cy.Shape == ShapeHealthCheck; gate != tc.gate {
					t.Errorf("cycle %d: shape %s (%s), checks as the gate: %v, want %v", i, cy.Shape, cy.ShapeEvidence, gate, tc.gate)
				}
			}
		})
	}
}
