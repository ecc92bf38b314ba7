package analysis

import (
	"fmt"
	"math"
)

// basisSlackS is the most a basis end may differ from the bound it
// explains: each moment is written to the millisecond, and a span's two
// rounded moments can differ from the rounded span by one more.
const basisSlackS = 0.0011

// BasisProblems lists where an episode's bases (Episode.Bases) do not
// explain its bounds: a bounded figure with no basis, an end whose
// moment (at_s, less from_s for a span) is not the bound it claims to
// have set, an open end that names an observation or a set one that says
// none, an end no observation set ("derived"), a null figure with no why,
// or a basis beside an exact figure. Nil when they all hold. The tests
// hold every journal they analyse to it; run.json read back holds too.
func BasisProblems(ep *Episode) []string {
	ck := basisChecker{ep: ep, seen: map[string]bool{}}
	ck.bounds("opened_after_s", ep.OpenedAfterBoundsS, -ep.StartS, true)
	ck.bounds("first_probe_after_open_s", ep.FirstProbeAfterOpenBoundsS, 0, true)
	ck.bounds("metrics_open_lag_s", ep.MetricsOpenLagBoundsS, 0, true)
	ck.bounds("probe_interval_s.min", ep.ProbeIntervalMinBoundsS, 0, false)
	ck.bounds("max_probes_in_flight", ep.MaxProbesInFlightBounds, 0, false)
	ck.bounds("failures_before_open", ep.FailuresBeforeOpenBounds, 0, false)
	ck.bounds("failed_requests_before_open", ep.FailedRequestsBeforeOpenBounds, 0, false)
	for i, b := range ep.CooldownsBoundsS {
		ck.bounds(cooldownKey(i), b, 0, true)
	}
	if b, bs := ep.ProbeIntervalMinBoundsS, ep.Bases["probe_interval_s.min"]; b != nil && bs != nil {
		ck.end("probe_interval_s.min", "min", bs.Min, b.Min, 0, true)
	}
	ck.bounds("probes", ep.probesBounds(), 0, false)
	ck.counts()
	ck.close()
	ck.seen["open_time_s"] = true
	switch ob := ep.Bases["open_time_s"]; {
	case ep.OpenTimeBoundsS != nil:
		ck.bounds("open_time_s", ep.OpenTimeBoundsS, 0, false)
	case ep.OpenTimeS != nil && ob != nil:
		ck.add("an exact open_time_s carries a basis")
	case ep.OpenTimeS == nil && ep.Opened && (ob == nil || ob.Why == ""):
		ck.add("a null open_time_s says nothing")
	}
	for k := range ep.Bases {
		if !ck.seen[k] {
			ck.add("basis %s explains a figure that is exact", k)
		}
	}
	return ck.out
}

type basisChecker struct {
	ep   *Episode
	seen map[string]bool
	out  []string
}

func (ck *basisChecker) add(f string, a ...any) { ck.out = append(ck.out, fmt.Sprintf(f, a...)) }

// end checks one end e of key's basis against the bound v (nil: open);
// off is added to the end's moment (a figure counted from the fault's
// start); timed: the end's moment is the bound.
func (ck *basisChecker) end(key, which string, e *BasisEnd, v *float64, off float64, timed bool) {
	switch {
	case e == nil:
		ck.add("%s basis has no %s", key, which)
	case v == nil && e.Evidence != "none":
		ck.add("%s %s is open, but its basis names %s", key, which, e.Evidence)
	case v != nil && e.Evidence == "none":
		ck.add("%s %s is %v, but its basis says none", key, which, *v)
	case e.Evidence == "derived":
		ck.add("%s %s basis names no observation: %s", key, which, e.Text)
	case v != nil && timed && (e.AtS == nil || math.Abs(e.moment()+off-*v) > basisSlackS):
		ck.add("%s %s is %v, its basis %s says %v", key, which, *v, e.Evidence, e.moment()+off)
	case e.Text == "":
		ck.add("%s %s basis has no text", key, which)
	}
}

// moment is the value an end sets: its moment, less from_s for a span
// (never below 0).
func (e *BasisEnd) moment() float64 {
	if e.AtS == nil {
		return math.NaN()
	}
	if e.FromS != nil {
		return math.Max(*e.AtS-*e.FromS, 0)
	}
	return *e.AtS
}

// bounds checks the basis of a figure with bounds b (nil: exact or
// null, nothing to check here).
func (ck *basisChecker) bounds(key string, b *Bounds, off float64, timed bool) {
	ck.seen[key] = true
	if b == nil {
		return
	}
	bs := ck.ep.Bases[key]
	if bs == nil {
		ck.add("%s bounded with no basis", key)
		return
	}
	ck.end(key, "min", bs.Min, b.Min, off, timed)
	ck.end(key, "max", bs.Max, b.Max, off, timed)
}

// counts checks that the counts before the open were counted to the
// earliest and the latest open.
func (ck *basisChecker) counts() {
	ep := ck.ep
	for _, k := range []string{"failures_before_open", "failed_requests_before_open"} {
		bs := ep.Bases[k]
		if bs == nil || bs.Min == nil || bs.Max == nil || len(ep.Cycles) == 0 {
			continue
		}
		c := ep.Cycles[0]
		lo, hi := c.OpenedAtS, c.OpenedAtS
		if ob := c.OpenBoundsS; ob != nil && ob.Max != nil {
			hi = *ob.Max
		}
		if bs.Min.AtS == nil || bs.Max.AtS == nil || *bs.Min.AtS != lo || *bs.Max.AtS != hi {
			ck.add("%s counted to %v and %v, the open is %v – %v", k, bs.Min.AtS, bs.Max.AtS, lo, hi)
		}
	}
}

// close checks the close's basis (its bounds, or why it is null) and
// successes_to_close's.
func (ck *basisChecker) close() {
	ep := ck.ep
	ck.seen["closed_after_recovery_s"], ck.seen["successes_to_close"] = true, true
	cb := ep.Bases["closed_after_recovery_s"]
	switch {
	case ep.ClosedAtS != nil && ep.CloseBoundsS != nil:
		ck.bounds("closed_after_recovery_s", ep.CloseBoundsS, 0, true)
	case ep.ClosedAtS != nil && cb != nil:
		ck.add("an exact close carries a basis: %s", cb.Text())
	case ep.ClosedAtS == nil && len(ep.Cycles) > 0 && (cb == nil || cb.Why == ""):
		ck.add("a close never seen says nothing")
	}
	sb := ep.Bases["successes_to_close"]
	switch {
	case ep.SuccessesToClose != nil && sb != nil:
		ck.add("an exact successes_to_close carries a basis: %s", sb.Text())
	case !ep.Closed || ep.SuccessesToClose != nil:
	case ep.SuccessesToCloseBounds != nil:
		ck.bounds("successes_to_close", ep.SuccessesToCloseBounds, 0, false)
	case sb == nil || sb.Why == "":
		ck.add("a null successes_to_close says nothing")
	}
}
