package analysis

func init() {
	addHypothesis(hypothesis{shape: ShapeExpiry, words: "no probes, failures expire", alt: "expiring failures", test: failuresExpire})
}

// failuresExpire: no half-open and no probes: the failures are forgotten
// after a period and traffic resumes on that timer. It is read from how
// traffic resumed, so a cycle that never closed, or closed on a success,
// is no witness for it; and each expiry lets one call through, so calls
// in flight together while open rule it out.
func failuresExpire(f *shapeFacts) verdict {
	switch {
	case f.tagged > 0:
		return ruledOut(whyTagged)
	case f.ramp:
		return ruledOut("a share of the traffic was let through: " + f.rampWhy)
	case f.several:
		return ruledOut(whySome + ": failures that expire let one call through each time")
	case f.onJudgedTrial():
		return ruledOut(whyJudged)
	case !f.closed:
		return ruledOut("traffic never resumed: how it resumes is what shows failures expiring")
	case f.bySuccess:
		return ruledOut("requests were turned away until a success ended in the close window: a timer waits for none")
	case f.live > 0:
		return fits("single calls got through while open and failed; traffic resumed with calls in flight together and no success to close on: failures expire, and each expiry let one call through")
	case f.expiryByOthers:
		return fits("no call got through while open and no success closed it; the call after which traffic resumed was alone in flight, and the upstream's other cycles show its failures expiring (traffic resumed with no success to close on, or a call let through again soon after an admitted one failed): read the same way")
	}
	return fits("no call got through while open, and traffic resumed with calls in flight together and no success to close on: the failures expired")
}
