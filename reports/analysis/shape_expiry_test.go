package analysis

import "testing"

func TestExpiryHypothesis(t *testing.T) {
	checkVerdicts(t, failuresExpire, []verdictCase{
		{"resumed together, no success", shapeFacts{closed: true}, true, "the failures expired"},
		{"other cycles expire", shapeFacts{closed: true, expiryByOthers: true}, true, "other cycles show its failures expiring"},
		{"single failed calls while open", shapeFacts{live: 1, closed: true}, true, "each expiry let one call through"},
		{"a lone quick call may be the first after expiry", shapeFacts{closed: true, maybeProbe: true}, true, ""},
		{"closed on a success", shapeFacts{live: 1, closed: true, bySuccess: true, kind: closeOnSuccess}, false, "until a success"},
		{"never resumed", shapeFacts{live: 1}, false, "never resumed"},
		{"calls in flight together while open", shapeFacts{live: 3, several: true, closed: true}, false, "let one call through each time"},
		{"a ramp", shapeFacts{live: 3, ramp: true, rampWhy: "w", closed: true}, false, "a share of the traffic"},
		{"tagged probes", shapeFacts{tagged: 1, closed: true}, false, "marked as probes"},
	})
}
