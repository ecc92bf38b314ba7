package analysis

import "testing"

func TestRampHypothesis(t *testing.T) {
	checkVerdicts(t, rampShare, []verdictCase{
		{"refusals below its concurrency", shapeFacts{live: 4, ramp: true, rampWhy: "3 successful calls got through", closed: true}, true, "3 successful calls"},
		{"no such refusal", shapeFacts{live: 4, closed: true, bySuccess: true}, false, "no request was turned away twice"},
		{"tagged probes", shapeFacts{tagged: 1, live: 4}, false, "marked as probes"},
	})
}
