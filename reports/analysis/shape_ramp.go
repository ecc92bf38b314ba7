package analysis

func init() {
	addHypothesis(hypothesis{shape: ShapeRamp, words: "ramp recovery", alt: "a ramp", test: rampShare})
}

// rampShare: a growing share of the traffic is let through over a
// recovery period. Its witness is rampEvidence's (shape.go): requests
// turned away, between successful admissions and with no failure, while
// fewer calls were in flight than the breaker let another through
// beside — which no half-open admitting a fixed number, or the next as
// each ends, does.
func rampShare(f *shapeFacts) verdict {
	switch {
	case f.tagged > 0:
		return ruledOut(whyTagged)
	case !f.ramp:
		return ruledOut("no request was turned away twice, between successful admissions and with no failure, while fewer calls were in flight than the breaker let another through beside")
	}
	return fits(f.rampWhy)
}
