package analysis

func init() {
	addHypothesis(hypothesis{shape: ShapeLiveProbes, words: "several live probes per half-open", alt: "several live probes", test: severalLiveProbes})
}

// severalLiveProbes: a half-open that lets several live requests through
// at once (a configured number of trial calls, each counted, or permits
// given back as calls end). Calls in flight together while open are its
// witness; one call at a time with requests turned away beside it rules
// it out, as does traffic resuming with no success to close on.
func severalLiveProbes(f *shapeFacts) verdict {
	switch {
	case f.tagged > 0:
		return ruledOut(whyTagged)
	case f.checksClosed():
		return ruledOut(whyChecks)
	case f.ramp:
		return ruledOut("a share of the traffic was let through: " + f.rampWhy)
	case f.several && f.closed && f.kind == closeOnPending:
		return fits("several live calls were let through at once while open; traffic resumed after one had succeeded while another was still in flight, so the breaker closed on that success or on a later answer (a half-open that lets the next call in as one ends): the close is bounded, the successes it took unknown")
	case f.several && f.closed && f.kind == closeOnOneOf:
		return fits(whyOneOf)
	case f.several && f.closed && f.bySuccess:
		return fits("several live calls were let through at once while open, and requests were turned away until they had succeeded")
	case f.several:
		return fits(whySome)
	case f.oneTrialAtATime():
		return ruledOut("a request was refused while one trial alone was in flight, and traffic resumed on a trial the breaker judged: its half-open lets one call through at a time")
	case f.needsNoSuccess():
		return ruledOut(whyTimer)
	case f.live > 0 && f.closed && f.bySuccess:
		return ruledOut("one live call at a time got through while open; requests were turned away until its success")
	case f.live > 0 && !f.closed:
		return ruledOut("one live call at a time got through while open, with requests turned away beside it")
	}
	return fits("the call after which traffic resumed was alone in flight: a half-open that lets several quick calls through may have closed on a later one, unseen")
}
