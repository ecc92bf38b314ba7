package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/num"
)

// The gateway's give-ups: upstream calls the gateway abandoned before the
// upstream had finished them, and the per-call timeout they show. The
// upstream journals a hang-up as the call's outcome (client_gone, or
// stalled for a fault that held the call) with the moment it saw the
// gateway close the connection as the call's end (inject's
// TestHoldingFaultsSeeTheGatewayHangUp holds that moment to the hang-up).
// A gateway that stops reading without closing is not seen hang up: its
// call still runs when the gateway answers its client with an error of
// its own, or sends the request's next call; those are give-ups too,
// whose moment is only bounded (by that answer or that next call).
//
// Not the gateway's own timeout, and kept apart: hang-ups after the
// gateway's client had itself given up (its deadline fired first: the
// gateway passed the cancellation on), and hang-ups of a call after
// another call for the same request had answered (a hedge cancelled).

// GiveUps are the calls the gateway abandoned (run.json "give_ups").
type GiveUps struct {
	// Count is the calls the gateway gave up on of its own accord, seen
	// or not, over every upstream.
	Count int64 `json:"count"`
	// Upstreams has the figures per upstream, for upstreams with a
	// give-up.
	Upstreams map[string]*UpstreamGiveUps `json:"upstreams"`
	// ClientLeft counts hang-ups after the client's own deadline fired
	// (the gateway passed the client's cancellation on), or of a request
	// the client's transport sent again (it left once); Cancelled
	// hang-ups after another call for the same request had answered.
	ClientLeft int64 `json:"client_left"`
	Cancelled  int64 `json:"cancelled_after_another_answered"`
	// AtStop counts calls cut when the harness stopped (the upstreams
	// close what is still in flight after the run's "stop" phase): the
	// run's end, not the gateway's.
	AtStop int64 `json:"cut_at_stop"`
	// Statements say the give-ups in words; "The gateway gave up on no
	// upstream call." only when it gave up on none.
	Statements []string `json:"statements"`
}

// UpstreamGiveUps are the give-ups of the calls to one upstream.
type UpstreamGiveUps struct {
	// Seen counts the calls the upstream saw the gateway hang up on;
	// AfterS is how long each had run (arrival to hang-up), and TimeoutS
	// the gateway's per-call timeout they show: their median, with the
	// spread beside it (a per-call timeout gives a narrow one; a deadline
	// over the whole request, shrinking with each attempt, a wide one).
	Seen     int64     `json:"seen"`
	AfterS   MinP50Max `json:"after_s"`
	TimeoutS *float64  `json:"timeout_s"`
	// Unseen counts calls abandoned without the upstream seeing a
	// hang-up (still running when the gateway answered its client with
	// an error, or sent the request's next call); UnseenWithinS is the
	// longest any of them can have run before the gateway gave up on it
	// (to that answer or next call).
	Unseen        int64    `json:"unseen"`
	UnseenWithinS *float64 `json:"unseen_within_s"`
	// ThenSucceeded counts give-ups whose client request still got an ok
	// answer: OnRetry from the same upstream, OnFallback from another;
	// ThenFailed those whose request failed; Unlinked those whose call
	// carried no sequence number (the request is unknown).
	ThenSucceeded int64 `json:"then_succeeded"`
	OnRetry       int64 `json:"then_succeeded_on_retry"`
	OnFallback    int64 `json:"then_succeeded_on_fallback"`
	ThenFailed    int64 `json:"then_failed"`
	Unlinked      int64 `json:"unlinked"`
}

// MaxGiveUpMarks caps the give-ups the timeline marks per upstream (as it
// caps probes): past a few thousand the marks are a band anyway.
const MaxGiveUpMarks = 5000

// giveUps sets the run's give-ups and marks each seen one on its
// upstream's timeline lane.
func (c *collector) giveUps(a *Analysis) {
	var marks map[string][]float64
	a.GiveUps, marks = c.rl.giveUps(int64(c.stopAt))
	if a.Timeline == nil {
		return
	}
	for name, ms := range marks {
		if ut := a.Timeline.Upstreams[name]; ut != nil {
			ut.GiveUps = ms
		}
	}
}

// giveUp is one abandoned call: its index in retryLog.calls, its owner
// request (-1: unknown), and how long it ran (seen) or can have run
// (unseen) before the gateway gave up.
type giveUp struct {
	call  int
	owner int32
	ran   time.Duration
	seen  bool
}

// giveUps finds the calls the gateway abandoned; stop is when the
// harness began to stop (-1: unknown). It returns the moments of the seen
// ones too, by upstream, for the timeline.
func (l *retryLog) giveUps(stop int64) (*GiveUps, map[string][]float64) {
	g := &GiveUps{Upstreams: map[string]*UpstreamGiveUps{}, Statements: []string{}}
	owners := l.callOwners()
	// Each request's calls by arrival: the next call after each, and the
	// request's last call (who answered it).
	first, next, last := l.callOrder(owners)
	found := l.findGiveUps(g, stop, owners, first, next)
	ran := map[uint16][]time.Duration{}
	marks := map[string][]float64{}
	for _, gu := range found {
		k := &l.calls[gu.call]
		name := l.ups.names[k.up]
		if gu.seen && len(marks[name]) < MaxGiveUpMarks {
			marks[name] = append(marks[name], seconds(time.Duration(k.end)))
		}
		u := g.Upstreams[name]
		if u == nil {
			u = &UpstreamGiveUps{}
			g.Upstreams[name] = u
		}
		g.Count++
		if gu.seen {
			u.Seen++
			ran[k.up] = append(ran[k.up], gu.ran)
		} else {
			u.Unseen++
			u.UnseenWithinS = Ptr(max(seconds(gu.ran), derefOr(u.UnseenWithinS, 0)))
		}
		switch {
		case gu.owner < 0:
			u.Unlinked++
		case journal.Outcome(l.outcomes.names[l.reqs[gu.owner].outcome]) != journal.OutcomeOK:
			u.ThenFailed++
		default:
			u.ThenSucceeded++
			if lc := last[gu.owner]; lc >= 0 && l.calls[lc].up == k.up {
				u.OnRetry++
			} else {
				u.OnFallback++
			}
		}
	}
	for up, rs := range ran {
		u := g.Upstreams[l.ups.names[up]]
		u.AfterS = minP50Max(rs)
		u.TimeoutS = u.AfterS.P50
	}
	g.Statements = g.statements()
	return g, marks
}

// findGiveUps lists the calls the gateway abandoned of its own accord,
// and counts into g the hang-ups that were not its (the harness stopping,
// the client leaving first, a hedge cancelled). first and next walk each
// request's calls by arrival (callOrder).
func (l *retryLog) findGiveUps(g *GiveUps, stop int64, owners, first, next []int32) []giveUp {
	var found []giveUp
	for i := range l.calls {
		k := &l.calls[i]
		if k.flags&rcHealth != 0 || k.flags&rcDone == 0 {
			continue
		}
		o := owners[i]
		switch {
		case l.hungUp(k):
			switch {
			case stop >= 0 && k.end >= stop:
				g.AtStop++
			case o >= 0 && (l.reqs[o].resent || l.clientLeftFirst(&l.reqs[o], k.end)):
				// A request the client's own transport sent again had
				// left the gateway once: a hang-up may be its passing on.
				g.ClientLeft++
			case o >= 0 && l.anotherAnswered(i, first[o], next):
				g.Cancelled++
			default:
				found = append(found, giveUp{i, o, time.Duration(k.end - k.at), true})
			}
		case o >= 0 && !l.failedCall(k) && !l.reqs[o].resent:
			// Complete and not failed by the upstream's record, yet the
			// gateway moved on while it ran: answered its client with an
			// error of its own, or sent the request's next call.
			r := &l.reqs[o]
			by := int64(-1)
			if n := next[i]; n >= 0 && l.calls[n].at < k.end {
				by = l.calls[n].at
			}
			if journal.Outcome(l.outcomes.names[r.outcome]) == journal.OutcomeHTTP5xx && r.done > 0 && r.done < k.end && (by < 0 || r.done < by) {
				by = r.done
			}
			if by >= 0 {
				found = append(found, giveUp{i, o, time.Duration(by - k.at), false})
			}
		}
	}
	return found
}

func derefOr(p *float64, v float64) float64 {
	if p == nil {
		return v
	}
	return *p
}

// callOrder returns for each request its first and last call by arrival
// (-1: none), and for each call the request's next call (-1: none).
func (l *retryLog) callOrder(owners []int32) (first, next, last []int32) {
	next = make([]int32, len(l.calls))
	first, last = make([]int32, len(l.reqs)), make([]int32, len(l.reqs))
	for i := range last {
		first[i], last[i] = -1, -1
	}
	byReq := make([]int32, 0, len(l.calls))
	for i := range l.calls {
		next[i] = -1
		if owners[i] >= 0 && l.calls[i].flags&rcHealth == 0 {
			byReq = append(byReq, int32(i))
		}
	}
	slices.SortStableFunc(byReq, func(a, b int32) int {
		return cmp.Or(cmp.Compare(owners[a], owners[b]), cmp.Compare(l.calls[a].at, l.calls[b].at))
	})
	for j, i := range byReq {
		if j+1 < len(byReq) && owners[byReq[j+1]] == owners[i] {
			next[i] = byReq[j+1]
		}
		if first[owners[i]] < 0 {
			first[owners[i]] = i
		}
		last[owners[i]] = i
	}
	return first, next, last
}

// clientLeftFirst reports that the client had given up on request r (its
// own deadline fired) by the time the gateway hung up at hungUp.
func (l *retryLog) clientLeftFirst(r *rReq, hungUp int64) bool {
	o := journal.Outcome(l.outcomes.names[r.outcome])
	return (o == journal.OutcomeHeadersTimeout || o == journal.OutcomeDeadlineMidBody) && r.done > 0 && r.done <= hungUp
}

// anotherAnswered reports that another call for the same request (its
// calls run from first along next), started while call i ran, had
// answered (not failed) before i was hung up on: a hedge, whose loser the
// gateway cancelled. The other call must have started in the first half
// of i's run: a gateway that gives up on a call starts its next one at
// the hang-up, and the upstream stamps a hang-up a little late (it sees
// the connection close after the gateway closed it), so a quick next
// call can arrive and even answer before i's recorded end; the midpoint
// tells the two apart whatever the timeout, without that lag.
func (l *retryLog) anotherAnswered(i int, first int32, next []int32) bool {
	k := &l.calls[i]
	mid := k.at + (k.end-k.at)/2
	for j := first; j >= 0; j = next[j] {
		c := &l.calls[j]
		if int(j) != i && c.at > k.at && c.at < mid && c.end <= k.end && !l.failedCall(c) {
			return true
		}
	}
	return false
}

// statements says the give-ups in words.
func (g *GiveUps) statements() []string {
	out := []string{}
	if g.Count == 0 {
		out = append(out, "The gateway gave up on no upstream call.")
	}
	for _, name := range slices.Sorted(maps.Keys(g.Upstreams)) {
		u := g.Upstreams[name]
		var s string
		if u.Seen > 0 {
			s = fmt.Sprintf("%s: the gateway gave up on %s after %s (min %s, max %s): its per-call timeout", name, num.Plural(u.Seen, "call"),
				num.SecP(u.TimeoutS), num.SecP(u.AfterS.Min), num.SecP(u.AfterS.Max))
		}
		if u.Unseen > 0 {
			if s != "" {
				s += "; "
			} else {
				s = name + ": "
			}
			s += fmt.Sprintf("it moved on from %s the upstream had not finished, within %s of their start", num.Plural(u.Unseen, "more call"), num.SecP(u.UnseenWithinS))
		}
		s += fmt.Sprintf(". %d of those requests still succeeded (%d on a retry, %d on another upstream), %d failed", u.ThenSucceeded, u.OnRetry, u.OnFallback, u.ThenFailed)
		if u.Unlinked > 0 {
			s += fmt.Sprintf(", %d carried no sequence number", u.Unlinked)
		}
		out = append(out, s+".")
	}
	if g.ClientLeft > 0 {
		out = append(out, fmt.Sprintf("The gateway hung up on %s after its client's own deadline had fired (not its timeout).", num.Plural(g.ClientLeft, "call")))
	}
	if g.AtStop > 0 {
		out = append(out, fmt.Sprintf("%s still in flight when the run stopped were cut by the harness (not a give-up).", num.Plural(g.AtStop, "call")))
	}
	if g.Cancelled > 0 {
		out = append(out, fmt.Sprintf("The gateway hung up on %s after another call for the same request had answered (cancelled, not timed out).", num.Plural(g.Cancelled, "call")))
	}
	return out
}
