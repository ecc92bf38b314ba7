package verdict

import (
	"fmt"
	"maps"
	"slices"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
	"github.com/halfopen/rehearse/reports/num"
)

// Why a failover moment is a range (the not-observable message).
const headerUnplaced = "the request was followed by the gateway's target header alone: the call that reached the upstream is not known, only the request's send and answer"

// failoverUnseen is why an episode shows no failover figure to judge, or
// "" when it shows one (a failover, or none although its requests were
// followed).
func failoverUnseen(f *analysis.Failover) string {
	switch {
	case f == nil:
		return "no failover figure (the analysis did not follow the requests)"
	case f.Unseen != "":
		return f.Unseen
	case f.Fallback == "" && f.Requests == 0:
		return "no client request of its routes during the episode"
	}
	return ""
}

// evalFailsOver: in every covered episode the gateway handed the primary's
// requests to another upstream within the bound of the fault's start; an
// episode whose followed requests never went elsewhere is a breach.
func evalFailsOver(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.FailsOverWithin == nil {
		return expect.ExpectationResult{}, false
	}
	obs := ev.perEpisode(func(r episodeRef) observation {
		f := r.ep.Failover
		if why := failoverUnseen(f); why != "" {
			return unseen(r.label(), why)
		}
		if f.Fallback == "" {
			return breach(r.label(), fmt.Sprintf("never failed over: none of the %s of its routes went to another upstream", num.Plural(f.Requests, "client request")))
		}
		return seenBounded(r.label(), *f.FailedOverAfterS, f.FailedOverAfterBoundsS, headerUnplaced)
	})
	return judge("fails_over_within", durAtMost(e.FailsOverWithin.D()), obs, noEpisode, "episodes"), true
}

// evalFailsBack: after every failover the primary served its own requests
// again within the bound of the fault's end. Still on the fallback longer
// than the bound when the run ended is a breach; sooner, not observable.
func evalFailsBack(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.FailsBackWithin == nil {
		return expect.ExpectationResult{}, false
	}
	lim := e.FailsBackWithin.D().Seconds()
	obs := ev.perEpisode(func(r episodeRef) observation {
		ep, f := r.ep, r.ep.Failover
		if why := failoverUnseen(f); why != "" {
			return unseen(r.label(), why)
		}
		switch since := ev.a.Run.DurationS - ep.EndS; {
		case f.Fallback == "":
			return unseen(r.label(), "never failed over: nothing to fail back from")
		case ep.EndedByRun:
			return unseen(r.label(), "the fault lasted to the run's end: no recovery to fail back after")
		case f.FailedBack:
			return seenBounded(r.label(), max(*f.FailedBackAfterS, 0), f.FailedBackAfterBoundsS, headerUnplaced)
		case since > lim:
			return breach(r.label(), fmt.Sprintf("still on %s %s after the fault ended (the run ended then)", f.Fallback, num.Sec(since)))
		default:
			return unseen(r.label(), fmt.Sprintf("had not failed back when the run ended, %s after the fault ended", num.Sec(max(since, 0))))
		}
	})
	return judge("fails_back_within", durAtMost(e.FailsBackWithin.D()), obs, noEpisode, "episodes"), true
}

// evalCallTimeout: every call the gateway abandoned at a covered upstream
// was abandoned within the bound of its start. A call abandoned without
// the upstream seeing it is known only to have been abandoned by a moment
// (the gateway's answer or next call): it keeps the bound when that moment
// does.
func evalCallTimeout(ev *evaluation, e expect.Expectations) (expect.ExpectationResult, bool) {
	if e.CallTimeoutMax == nil {
		return expect.ExpectationResult{}, false
	}
	g := ev.a.GiveUps
	names := e.Upstreams
	if len(names) == 0 && g != nil {
		names = slices.Sorted(maps.Keys(g.Upstreams))
	}
	var obs []observation
	for _, name := range names {
		var u *analysis.UpstreamGiveUps
		if g != nil {
			u = g.Upstreams[name]
		}
		switch {
		case u == nil:
			obs = append(obs, unseen(name, "the gateway gave up on no call to it: its timeout was not tested"))
		case u.Seen > 0:
			obs = append(obs, seenNote(name, *u.AfterS.Max, fmt.Sprintf("gave up on a call after %s", num.SecP(u.AfterS.Max))))
		}
		if u != nil && u.Unseen > 0 {
			obs = append(obs, seenBounded(name+" (unseen hang-ups)", *u.UnseenWithinS, &analysis.Bounds{Min: analysis.Ptr(0.0), Max: u.UnseenWithinS},
				"the upstream did not see these hang-ups: each came before the gateway's answer or next call, how long before is unknown"))
		}
	}
	res := judge("call_timeout_max", durAtMost(e.CallTimeoutMax.D()), obs, "the gateway gave up on no upstream call: its timeout was not tested", "upstreams")
	return res, true
}
