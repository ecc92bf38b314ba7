package analysis

import (
	"slices"
	"time"

	"github.com/halfopen/rehearse/reports/num"
)

// Forwarding is how long the gateway's forwarding hop takes, measured on
// the upstream's healthy traffic (calls that reached it before its first
// fault, each matched to its client request): from the client's send to
// the call's arrival (the gateway's decision and its own call, which an
// agent runtime makes some time after it admits a request: the admission
// lag), and from the upstream releasing its answer to the client
// receiving it (the way back, when the gateway learns the answer). The
// model reads each call's moments through these: a call arriving at t
// was let through between its client's send and t less the least lag
// seen, most likely t less the usual lag. Null with fewer than
// minForwardingSamples healthy calls.
type Forwarding struct {
	Samples int `json:"samples"`
	// SendToArrivalS is client send → upstream arrival; ReleaseToReceiptS
	// upstream end → client receipt (successful single calls only; it
	// can be below 0 by the two processes' clock reads).
	SendToArrivalS    MinP50Max `json:"send_to_arrival_s"`
	ReleaseToReceiptS MinP50Max `json:"release_to_receipt_s"`
	// SlackS is how far apart the model takes two processes' stamps of
	// one moment to be on this run (a call's end and the request the
	// gateway refused after it; a gateway acting on an answer it has
	// relayed), and LateSlackS how late the upstream may stamp an end
	// after the gateway had the answer: close.go's closeSlack and
	// closeSlackLate, plus the way back's usual delay (release → receipt,
	// p50) when that exceeds closeSlack.
	SlackS     float64 `json:"slack_s"`
	LateSlackS float64 `json:"late_slack_s"`
}

// minForwardingSamples is the fewest healthy calls a lag is measured
// from: below it a quiet upstream's one slow dial would stand for the
// gateway's lag. The 1 s to 3 s before a fault at the default rates
// give 5–60.
const minForwardingSamples = 5

// fwdLag is the measured forwarding lag the model uses (zero values:
// not measured, every call read as let through at its arrival).
type fwdLag struct {
	min, p50 time.Duration
	ok       bool
}

// forwarding measures the upstream's forwarding hop on the calls that
// reached it before its first fault (needs u.reqOf: after the state
// machine matched calls to requests) and keeps the lag in u.lag.
func (u *upstreamRun) forwarding() *Forwarding {
	c := u.c
	until := u.frame.end
	if len(u.wins) > 0 {
		until = u.wins[0].start
	}
	var there, back []time.Duration
	for _, i := range u.live {
		k := &c.calls[i]
		if k.t >= until {
			break
		}
		if k.tagged || k.failed {
			continue
		}
		ri, ok := u.reqOfCall(i)
		if !ok {
			continue
		}
		r := &c.reqs[ri]
		if r.sent <= 0 || r.sent > k.t || r.sends > 1 {
			continue
		}
		there = append(there, k.t-r.sent)
		if k.hasEnd && r.done > 0 && r.outcome == outOK {
			back = append(back, r.done-k.end)
		}
	}
	if len(there) < minForwardingSamples {
		return nil
	}
	slices.Sort(there)
	u.lag = fwdLag{min: there[0], p50: num.Median(there), ok: true}
	f := &Forwarding{Samples: len(there), SendToArrivalS: minP50Max(there)}
	// The way back has no decision on it: a gateway that relays every
	// answer some time after the upstream released it (buffering, a
	// stream passed on) does so on healthy traffic too, and a failure
	// relayed as late is no sign of a gateway slow to act. When that
	// usual delay exceeds the clocks' noise (closeSlack) it is added to
	// the slacks; below it they stay as they were. Not the largest
	// delay: one slow answer in the healthy phase would stand for the
	// gateway, and a slack also decides what counts as late (a larger
	// one can narrow a bound). The way there carries the admission lag,
	// read through letAt instead.
	if len(back) > 0 {
		f.ReleaseToReceiptS = minP50Max(back)
		if usual := num.Median(back); usual > closeSlack {
			u.slack = usual + closeSlack
			u.slackLate = max(closeSlackLate, u.slack)
		}
	}
	f.SlackS, f.LateSlackS = seconds(u.slack), seconds(u.slackLate)
	return f
}

// letAt is when the gateway most likely let call i through, and letHi
// the latest it can have: its arrival less the usual and the least
// forwarding lag of healthy traffic, never before its client's send.
// A lag within the slack is the clocks' noise and two processes'
// scheduling, not a hop the gateway takes: the call is read at its
// arrival then. The earliest is letFrom.
func (u *upstreamRun) letAt(i int32) (at, hi time.Duration) {
	k := &u.c.calls[i]
	at, hi = k.t, k.t
	if !u.lag.ok || u.lag.p50 <= u.slack {
		return at, hi
	}
	// The least lag less the clocks' noise: a call is never forwarded
	// faster than the gateway ever did while healthy.
	at, hi = k.t-u.lag.p50, k.t-max(u.lag.min-u.slack, 0)
	if r, ok := u.reqOfCall(i); ok {
		if s := u.c.reqs[r].sent; s > 0 {
			at, hi = max(at, s), max(hi, s)
		}
	}
	return at, hi
}
