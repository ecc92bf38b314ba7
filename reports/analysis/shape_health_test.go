package analysis

import "testing"

func TestHealthCheckHypothesis(t *testing.T) {
	gate := shapeFacts{health: 4, closed: true, bySuccess: true, byCheck: true, kind: closeOnSuccess}
	chance := gate
	chance.checkChance = 0.004
	live := gate
	live.live = 1
	timer := gate
	timer.bySuccess, timer.byCheck, timer.kind = false, false, closeTimer
	tagged := gate
	tagged.tagged = 1
	checkVerdicts(t, healthGate, []verdictCase{
		{"closed right after a passing check", gate, true, "right after a passing health check"},
		{"checks passed throughout", chance, true, "chance 0.4 %"},
		{"a live call got through", live, false, "live calls got through"},
		{"resumed with no check to close on", timer, false, "did not resume right after"},
		{"tagged probes", tagged, false, "marked as probes"},
		{"no check while open", shapeFacts{closed: true}, false, "no health check"},
	})
}
