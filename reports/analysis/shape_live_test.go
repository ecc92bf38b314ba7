package analysis

import "testing"

func TestLiveProbeHypothesis(t *testing.T) {
	checkVerdicts(t, oneLiveProbe, []verdictCase{
		{"refused until its success", shapeFacts{live: 1, closed: true, bySuccess: true, kind: closeOnSuccess}, true, "until its success"},
		{"another still in flight", shapeFacts{live: 2, closed: true, bySuccess: true, kind: closeOnPending}, true, "still in flight"},
		{"several successes in the window", shapeFacts{live: 2, closed: true, bySuccess: true, kind: closeOnOneOf}, true, "more than one of them succeeded"},
		{"never closed", shapeFacts{live: 2}, true, "one live call at a time"},
		{"a lone quick call", shapeFacts{closed: true, maybeProbe: true}, true, "may be its one probe"},
		{"calls in flight together", shapeFacts{live: 3, several: true, closed: true, bySuccess: true, kind: closeOnSuccess}, false, "several live calls"},
		{"resumed together, no success", shapeFacts{live: 1, closed: true}, false, "needed no success"},
		{"checks closed it", shapeFacts{health: 2, closed: true, bySuccess: true, byCheck: true, kind: closeOnSuccess}, false, "the checks closed it"},
		{"a ramp", shapeFacts{live: 3, ramp: true, rampWhy: "w", closed: true}, false, "a share of the traffic"},
		{"tagged probes", shapeFacts{tagged: 1, live: 1}, false, "marked as probes"},
	})
}
