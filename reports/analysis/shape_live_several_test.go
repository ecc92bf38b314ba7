package analysis

import "testing"

func TestLiveProbesHypothesis(t *testing.T) {
	checkVerdicts(t, severalLiveProbes, []verdictCase{
		{"in flight together, refused until they succeeded", shapeFacts{live: 3, several: true, closed: true, bySuccess: true, kind: closeOnSuccess}, true, "until they had succeeded"},
		{"in flight together, one pending", shapeFacts{live: 3, several: true, closed: true, bySuccess: true, kind: closeOnPending}, true, "lets the next call in as one ends"},
		{"in flight together, resumed on a timer", shapeFacts{live: 3, several: true, closed: true}, true, "several live calls"},
		{"in flight together, never closed", shapeFacts{live: 3, several: true}, true, "several live calls"},
		{"a lone quick call", shapeFacts{live: 1, closed: true, maybeProbe: true}, true, "several quick calls"},
		{"one at a time, refused until its success", shapeFacts{live: 1, closed: true, bySuccess: true, kind: closeOnSuccess}, false, "one live call at a time"},
		{"one at a time, never closed", shapeFacts{live: 2}, false, "turned away beside it"},
		{"resumed together, no success", shapeFacts{closed: true}, false, "needed no success"},
		{"checks closed it", shapeFacts{health: 2, closed: true, bySuccess: true, byCheck: true, kind: closeOnSuccess}, false, "the checks closed it"},
		{"tagged probes", shapeFacts{tagged: 1, live: 3, several: true}, false, "marked as probes"},
	})
}
