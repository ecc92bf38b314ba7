package analysis

func init() {
	addHypothesis(hypothesis{shape: ShapeLiveProbe, words: "one live probe per half-open", alt: "a live probe", test: oneLiveProbe})
}

// oneLiveProbe: one live client request at a time is let through as the
// probe, and the breaker closes on its success (a classic one-trial
// half-open; a failure-count window that lets one call by). Calls in
// flight together while open rule it out, and so does traffic resuming
// with no success to close on and calls in flight together.
func oneLiveProbe(f *shapeFacts) verdict {
	switch {
	case f.tagged > 0:
		return ruledOut(whyTagged)
	case f.checksClosed():
		return ruledOut(whyChecks)
	case f.ramp:
		return ruledOut("a share of the traffic was let through: " + f.rampWhy)
	case f.several:
		return ruledOut(whySome)
	case f.needsNoSuccess():
		return ruledOut(whyTimer)
	case f.live > 0 && f.closed && f.kind == closeOnPending:
		return fits("live calls were let through while open; traffic resumed after one had succeeded while another was still in flight, so the breaker closed on that success or on a later answer: the close is bounded, the successes it took unknown")
	case f.live > 0 && f.closed && f.kind == closeOnOneOf:
		return fits(whyOneOf)
	case f.live > 0 && f.closed && f.bySuccess:
		return fits("one live call at a time got through while open; requests were turned away until its success")
	case f.live > 0 && !f.closed:
		return fits("one live call at a time got through while open")
	case f.oneTrialAtATime():
		return fits(whyOneTrial)
	}
	return fits("the call after which traffic resumed, or the next the breaker lets through, may be its one probe")
}

// whyOneOf: several successes ended in the close window.
const whyOneOf = "live calls were let through while open, and more than one of them succeeded between the last request turned away and the first resumed: the breaker closed on one of those answers (a half-open counting some of the calls it let through closes before the last), which one unseen, so the close is bounded and the successes it took unknown"
