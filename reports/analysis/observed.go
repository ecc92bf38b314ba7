package analysis

import (
	"math"
	"time"

	"github.com/halfopen/rehearse/reports/num"
)

// The observable layer: what the clients and the upstream saw of an
// episode, with no inference about the breaker's state. Requests turned
// away and answers that came back are facts; when the breaker opened or
// closed is a hypothesis the evidence only bounds (cycles, close_bounds_s).
// Expectations about recovery judge this layer by default (closes_within:
// a gateway whose users got answers again in time passes, whatever its
// breaker's state was then).

// Observed is an episode's observable layer.
type Observed struct {
	// RefusingFromS is when the first request turned away was sent, and
	// RefusedUntilS when the last one was (of the episode's last cycle).
	RefusingFromS *float64 `json:"refusing_from_s"`
	RefusedUntilS *float64 `json:"refused_until_s"`
	// ResumedAtS is when live traffic was forwarded again and answered:
	// the first request of the traffic that resumed after the last
	// refusal got its successful answer (for an upstream without client
	// attribution, the upstream finished its first call). ResumedAfterS
	// is that less the fault's end (negative: before it ended). Null
	// while refusals never stopped.
	ResumedAtS    *float64 `json:"resumed_at_s"`
	ResumedAfterS *float64 `json:"resumed_after_s"`
	// TurnedAway counts the client requests the gateway did not forward
	// while refusing; ReachedWhileRefusing the calls (health checks
	// aside) that reached the upstream between a cycle's first refusal
	// and the answer to its last: probes, admissions and leaks alike,
	// before any reading of which they were.
	TurnedAway           int64 `json:"turned_away"`
	ReachedWhileRefusing int64 `json:"reached_while_refusing"`
}

// observed sets an opened episode's observable layer from its cycles.
func (u *upstreamRun) observed(ep *Episode, w window) {
	if !ep.Opened || len(ep.Cycles) == 0 {
		return
	}
	c := u.c
	o := &Observed{}
	first, last := ep.Cycles[0], ep.Cycles[len(ep.Cycles)-1]
	if first.refuseFrom >= 0 {
		o.RefusingFromS = Ptr(seconds(first.refuseFrom))
	}
	if last.refuseUntil >= 0 {
		o.RefusedUntilS = Ptr(seconds(last.refuseUntil))
	}
	if last.resumedAt >= 0 {
		o.ResumedAtS = Ptr(seconds(last.resumedAt))
		o.ResumedAfterS = Ptr(seconds(last.resumedAt - w.end))
	}
	for _, cy := range ep.Cycles {
		o.TurnedAway += cy.Blocked
		if cy.refuseFrom < 0 {
			continue
		}
		for _, i := range u.live {
			k := &c.calls[i]
			if k.t > cy.refuseDone {
				break
			}
			if k.t >= cy.refuseFrom {
				o.ReachedWhileRefusing++
			}
		}
	}
	ep.Observed = o
}

// refusals records on out when cy's refusals began and ended: the first
// and last requests turned away were sent, and the last one's answer
// came back (its send when none did). -1 when it turned none away (an
// upstream without client attribution).
func (out *Cycle) refusals(cy *cyc) {
	out.refuseFrom, out.refuseUntil, out.refuseDone = -1, -1, -1
	if n := len(cy.blockedAt); n > 0 {
		out.refuseFrom, out.refuseUntil = cy.blockedAt[0], cy.blockedAt[n-1]
		out.refuseDone = max(cy.blockedDone[n-1], out.refuseUntil)
	}
	out.resumedAt = cy.resumed
	if cy.resumed >= 0 {
		out.ResumedAtS = Ptr(seconds(cy.resumed))
	}
}

// resumedAt is when the first of the requests run (indexes into u.sent:
// the traffic that resumed after the last refusal) got a successful
// answer back; -1 when none did.
func (u *upstreamRun) resumedAt(run []int) time.Duration {
	at := time.Duration(-1)
	for _, q := range run {
		r := &u.c.reqs[u.sent[q]]
		if r.outcome == outOK && r.done > 0 && (at < 0 || r.done < at) {
			at = r.done
		}
	}
	return at
}

// CloseText is the inferred close relative to the fault's end, in the one
// text every output gives it (the report's cell, the statement, the
// postmortem, verdict messages): "1.2 s after the fault ended" when
// exact, "between 1.2 s and 1.5 s after the fault ended" when bounded,
// "1.2 s after the fault ended or later" when the evidence has no latest
// moment. "" when it did not close.
func CloseText(ep *Episode) string {
	if !ep.Closed || ep.ClosedAfterRecoveryS == nil {
		return ""
	}
	v := *ep.ClosedAfterRecoveryS
	b := ep.CloseBoundsS
	if b == nil || b.Min == nil {
		return relEnd(v) + " the fault ended"
	}
	lo := *b.Min - ep.EndS
	if b.Max == nil {
		return relEnd(lo) + " the fault ended or later"
	}
	hi := *b.Max - ep.EndS
	if hi-lo < 0.0005 {
		return relEnd(v) + " the fault ended"
	}
	if (lo < 0) == (hi < 0) {
		return "between " + num.Sec(math.Abs(lo)) + " and " + relEnd(hi) + " the fault ended"
	}
	return "between " + relEnd(lo) + " and " + relEnd(hi) + " the fault ended"
}

// ResumedText is when traffic resumed relative to the fault's end
// ("0.6 s after the fault ended"); "" when it did not.
func ResumedText(ep *Episode) string {
	if ep.Observed == nil || ep.Observed.ResumedAfterS == nil {
		return ""
	}
	return relEnd(*ep.Observed.ResumedAfterS) + " the fault ended"
}

// relEnd is an offset from the fault's end in words: "1.2 s after",
// "0.3 s before".
func relEnd(v float64) string {
	if v < 0 {
		return num.Sec(-v) + " before"
	}
	return num.Sec(v) + " after"
}
