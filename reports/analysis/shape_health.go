package analysis

import "fmt"

func init() {
	addHypothesis(hypothesis{shape: ShapeHealthCheck, words: "health checks decide", alt: "health checks", test: healthGate})
}

// healthGate: the gateway's health checks decide; it closes on a passing
// check, or a run of them. Its witness is traffic resuming right after a
// passing check with no live call let through while open (checksGate
// has already held every close of the upstream to the same rule and
// placed the closes again without the checks when they are not the
// gate, so a close on a check here is one the upstream's cycles allow).
func healthGate(f *shapeFacts) verdict {
	switch {
	case f.tagged > 0:
		return ruledOut(whyTagged)
	case f.live > 0:
		return ruledOut("live calls got through while open: the checks were not the only way through")
	case f.health == 0:
		return ruledOut("no health check reached the upstream while open")
	case !f.byCheck:
		return ruledOut("traffic did not resume right after a passing health check")
	case f.checkChance >= 0:
		return fits(fmt.Sprintf("traffic resumed right after a passing health check, and no live call got through while open; the checks passed throughout, so a timer of the gateway's own could look the same, but only by a coincidence at every close (chance %.2g %%): the close is also bounded by the requests either side", 100*f.checkChance))
	}
	return fits("traffic resumed right after a passing health check, and no live call got through while open")
}
