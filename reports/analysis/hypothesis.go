package analysis

import "sort"

// A cycle's shape is read as a feasibility question over a small family
// of breaker hypotheses (docs/analysis.md, "Breaker shapes"): each shape
// is a hypothesis value with a test that says whether the cycle's
// evidence (and what the upstream's other cycles showed of the same
// breaker, folded into the facts) fits it or rules it out, with the
// witness in words. The shape stated is the one hypothesis that fits;
// when several fit, it is ShapeUnknown and the fitting ones are named
// (Cycle.ShapeCandidates). No test depends on another's order: adding a
// shape is adding one hypothesis, in a file of its own that registers
// it (addHypothesis), with its own test.

// shapeFacts is what one cycle shows, read once from the journal through
// the interval helpers, that the hypotheses test. Tests build it by hand.
type shapeFacts struct {
	// tagged, health and live count the calls the open breaker let
	// through: marked as probes, health checks, untagged live calls.
	tagged, health, live int
	// several: live calls were in flight together while open.
	several bool
	// ramp: a share of the traffic was let through (rampEvidence), with
	// rampWhy its witness.
	ramp    bool
	rampWhy string
	// closed: traffic resumed. bySuccess: a success ended in the close
	// window (closeOf placed the close on it), byCheck: that success
	// was a passing health check; kind is how closeOf placed it.
	closed, bySuccess, byCheck bool
	kind                       uint8
	// maybeProbe: the call after which traffic resumed was alone in
	// flight, answered before the next came; expiryByOthers: the
	// upstream's other cycles show failures expiring.
	maybeProbe, expiryByOthers bool
	// checkChance ≥ 0: the checks passed throughout, and this is the
	// chance that a close beside one at every cycle was coincidence.
	checkChance float64
	// trial: traffic resumed after a lone successful trial, in an
	// upstream whose cycles show a breaker that judges its trials
	// (trialCounts); quick: the trial was answered whole before the
	// next call can have been let through (trialQuick); single: the
	// upstream's cycles show a half-open letting one call through at a
	// time (trialFacts). Upstream-wide facts, known before the reading.
	trial, quick, single bool
}

// onJudgedTrial: traffic resumed on a trial the breaker judged, read
// from live traffic (no tagged probe, no calls in flight together while
// open, no ramp: those are read by their own evidence).
func (f *shapeFacts) onJudgedTrial() bool {
	return f.trial && f.tagged == 0 && !f.several && !f.ramp
}

// oneTrialAtATime: the judged trial was answered whole before the next
// call came, and the upstream's half-open lets one call through at a
// time: its success closed it.
func (f *shapeFacts) oneTrialAtATime() bool {
	return f.onJudgedTrial() && f.single && f.quick
}

// checksClosed reports whether the health checks closed the cycle: no
// live or tagged call got through while open and traffic resumed right
// after a passing check. It is the health_check hypothesis's witness
// and, for the shapes read from live traffic, what rules them out.
func (f *shapeFacts) checksClosed() bool {
	return f.tagged == 0 && f.live == 0 && f.health > 0 && f.byCheck
}

// needsNoSuccess: traffic resumed with calls in flight together and no
// success to close on, so the breaker needed none (a timer).
func (f *shapeFacts) needsNoSuccess() bool {
	return f.closed && !f.bySuccess && !f.maybeProbe
}

// verdict is a hypothesis's answer: it fits the evidence or is ruled
// out, and why, in words (the witness when ruled out).
type verdict struct {
	fits bool
	why  string
}

func fits(why string) verdict     { return verdict{fits: true, why: why} }
func ruledOut(why string) verdict { return verdict{why: why} }

// hypothesis is one breaker shape, its name in the statement's words
// ("Shape: …"), the same as one of several readings still standing
// ("ambiguous: a live probe or …": alt), and its feasibility test.
type hypothesis struct {
	shape, words, alt string
	test              func(f *shapeFacts) verdict
}

// hypotheses is the family, each added by its own file.
var hypotheses []hypothesis

// addHypothesis adds h to the family; shape files call it from init.
func addHypothesis(h hypothesis) { hypotheses = append(hypotheses, h) }

// Witnesses shared by several hypotheses: evidence of another shape that
// rules the reading from live traffic out.
const (
	whyTagged = "calls marked as probes got through while open: a gateway that tags its probes lets no untagged one through"
	whyChecks = "no live call got through while open and traffic resumed right after a passing health check: the checks closed it"
	whySome   = "several live calls were let through at once while open"
	whyTimer  = "traffic resumed with calls in flight together and no success to close on: the breaker needed no success"
)

// shapeReading is the outcome of testing every hypothesis on a cycle.
type shapeReading struct {
	shape, why string
	// candidates are the shapes that fit, sorted, when more than one
	// does (shape is then ShapeUnknown).
	candidates []string
	// verdicts holds every hypothesis's answer, by shape.
	verdicts map[string]verdict
}

// readShape tests every hypothesis against f. One fits: it is the shape,
// with its reason. Several: the shape is ambiguous, they are named, and
// the reason says what was seen that leaves them standing. None (a
// family that does not cover the evidence) is ambiguous too, with no
// candidate: nothing is stated that the evidence does not fix.
func readShape(f *shapeFacts) shapeReading {
	r := shapeReading{verdicts: make(map[string]verdict, len(hypotheses))}
	var fit []string
	for _, h := range hypotheses {
		v := h.test(f)
		r.verdicts[h.shape] = v
		if v.fits {
			fit = append(fit, h.shape)
		}
	}
	sort.Strings(fit)
	if len(fit) == 1 {
		r.shape, r.why = fit[0], r.verdicts[fit[0]].why
		return r
	}
	r.shape, r.candidates, r.why = ShapeUnknown, fit, ambiguousWhy(f)
	return r
}

// ambiguousWhy says what was seen when several hypotheses fit: why the
// call after which traffic resumed cannot tell them apart.
func ambiguousWhy(f *shapeFacts) string {
	switch {
	case f.onJudgedTrial() && f.quick:
		return whyJudgedTrial
	case f.onJudgedTrial():
		return whySlowTrial
	case f.live == 0 && f.closed && !f.bySuccess && f.maybeProbe:
		return "no call got through while open; the call after which traffic resumed was alone in flight, so it may have been a probe (whose answer closed the breaker) or the first call after the failures expired"
	case f.live == 0:
		return "no call got through while open"
	}
	return "one live call at a time got through while open; the call after which traffic resumed was alone in flight, so whether its answer closed the breaker (a live probe) or the breaker had already closed (failures expired, or a half-open that admits several calls) cannot be told from outside"
}

// shapeFactsOf reads cy's facts: the calls the open breaker let through
// (tagged, health, live; live in arrival order) and its close.
func (u *upstreamRun) shapeFactsOf(cy *cyc, tagged, health, live []int32) shapeFacts {
	c := u.c
	f := shapeFacts{
		tagged: len(tagged), health: len(health), live: len(live),
		several: u.severalInOneHalfOpen(cy, live),
		closed:  cy.closeAt >= 0, bySuccess: cy.closeBy >= 0,
		kind: cy.closeKind, maybeProbe: cy.maybeProbe, expiryByOthers: cy.closeKind == closeExpiredByOthers,
		checkChance: cy.checkChance,
	}
	if u.trialCounts(cy) {
		f.trial, f.quick, f.single = true, u.trialQuick(cy), u.trial.single
	}
	f.byCheck = f.bySuccess && c.calls[cy.closeBy].health
	if len(tagged) == 0 {
		f.ramp, f.rampWhy = u.rampEvidence(cy, live)
	}
	return f
}

// shapeOf infers the shape of one cycle from its admissions, its close
// and the upstream's trial facts, and says why, in words for the
// statement; candidates name the shapes that fit when more than one
// does; trial: traffic resumed on a trial the breaker judged
// (closeOnJudgedTrial places that close).
func (u *upstreamRun) shapeOf(cy *cyc, tagged, health, live []int32) (shape, evidence string, candidates []string, trial bool) {
	f := u.shapeFactsOf(cy, tagged, health, live)
	r := readShape(&f)
	return r.shape, r.why, r.candidates, f.onJudgedTrial()
}

// What a judged trial shows, when its answer came whole before the next
// call (whyJudgedTrial) or was still coming (whySlowTrial).
const (
	whyJudgedTrial = "one live call at a time got through while open; the last, answered quickly, was a trial the breaker judged (the upstream's cycles show it reopening on one failed trial after needing more failures to trip, and not as soon as an older failure could have expired, or holding the upstream out after a failed trial longer than expiring failures would): it closed on that trial's success (its answer's head or its end) or, if its half-open lets several calls through, on a later one, unseen; the close is no earlier than the trial's arrival, estimated at its end, and at least one success closed it"
	whySlowTrial   = "one live call at a time got through while open; the last, which succeeded, was a trial the breaker judged (the upstream's cycles show it holding the upstream out after a failed trial longer than expiring failures would): its answer was still coming when the next call can have been let through, so the breaker closed on its head or its end or, if its half-open lets several calls through, on a later success, unseen; the close is no earlier than the trial's arrival, estimated at its end, and at least one success closed it"
	whyOneTrial    = "one live call at a time got through while open; the last, answered quickly, closed it: the upstream's cycles show a half-open that judges its trial (it reopened on one failed trial after needing more failures to trip, and not as soon as an older failure could have expired) and lets one call through at a time (it refused a request while a trial was in flight)"
	whyJudged      = "traffic resumed on a trial the breaker judged (the upstream's cycles show it reopening on one failed trial, or holding the upstream out after one, later than failures that expire would allow): a breaker whose failures expire judges nothing"
)
