package analysis

import "testing"

func TestTaggedProbeHypothesis(t *testing.T) {
	checkVerdicts(t, taggedProbe, []verdictCase{
		{"marked calls while open", shapeFacts{tagged: 2, live: 3, closed: true}, true, "2 calls marked as probes"},
		{"none marked", shapeFacts{live: 1, closed: true, bySuccess: true}, false, "no call marked"},
	})
}
