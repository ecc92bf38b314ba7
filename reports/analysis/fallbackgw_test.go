package analysis

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// fallbackGW writes the journal of a small AI gateway in front of a primary
// and a fallback provider, with its own log of what it did (the truth the
// failover and give-up figures are held to). Per turn it decides after an
// admission lag; while the primary cools down it calls the fallback
// straight away; otherwise it calls the primary, and on a failed answer
// (503 during the fault) or at its per-call timeout (a slow fault) it
// starts the primary's cooldown and calls the fallback. The first turn
// after the cooldown is the probe: a success ends the failover.
type fallbackGW struct {
	rate     float64
	dur      time.Duration
	faultAt  time.Duration
	faultFor time.Duration
	slow     bool          // the fault holds calls (the gateway times out) instead of 503
	timeout  time.Duration // the gateway's per-call timeout
	cooldown time.Duration
	lag      time.Duration // decision to provider call
	stamp    bool          // provider calls carry the turn's sequence number
	header   string        // the gateway's chosen-target response header, kept ("" none)
	tokens   int64         // prompt+completion tokens a healthy answer charges
	toTheEnd bool          // the fault has no fault.end and no planned length: it lasts to the run's end
	// balanced: the route is balanced over both (odd turns go straight
	// to the backup), and a failed primary call is sent again to it.
	balanced bool
	rng      *rand.Rand

	evs []journal.Event
	log gwLog
}

// gwLog is the gateway's own account.
type gwLog struct {
	firstFallback  time.Duration // first call to the fallback; -1 none
	failBack       time.Duration // first primary call after the fault answered ok; -1
	served, ok     int64         // turns handed to the fallback, answered ok
	afterPrimary   int64         // of them, tried on the primary first
	fallbackCalls  int64
	fallbackTokens int64
	primaryCalls   int64 // calls to the primary for the turns the fallback served
	giveUps        []time.Duration
	giveUpsThenOK  int64
	balanced       int64 // turns balanced straight to the backup from the fault's start (not failover)
}

func (g *fallbackGW) add(t time.Duration, p journal.Payload) {
	g.evs = append(g.evs, journal.Event{T: t, Payload: p})
}

// call records one provider call and returns its end and whether it
// failed; a held call ends at the gateway's timeout.
func (g *fallbackGW) call(up string, at time.Duration, seq uint64) (time.Duration, bool) {
	p := &journal.UpstreamRequest{Upstream: up, Method: "POST", Path: "/v1/chat/completions", InFlight: 1}
	if g.stamp {
		s := seq
		p.Seq, p.SeqFrom = &s, journal.SeqFromBody
	}
	faulted := up == "primary" && at >= g.faultAt && at < g.faultAt+g.faultFor
	done := at + 40*time.Millisecond + time.Duration(g.rng.IntN(20))*time.Millisecond
	switch {
	case faulted && g.slow:
		done = at + g.timeout + time.Duration(g.rng.IntN(3))*time.Millisecond
		p.Fault, p.FaultType, p.Status, p.Outcome = "slow", "latency", 0, journal.OutcomeUpstreamGone
		g.log.giveUps = append(g.log.giveUps, done-at)
	case faulted:
		done = at + 5*time.Millisecond
		p.Fault, p.FaultType, p.Status, p.Outcome = "storm", "status", 503, journal.OutcomeUpstreamComplete
	default:
		p.Status, p.Outcome = 200, journal.OutcomeUpstreamComplete
		p.PromptTokens, p.CompletionTokens = g.tokens*4/5, g.tokens/5
	}
	p.Done = done
	g.add(at, p)
	return done, faulted
}

// build runs the replay and returns the journal.
func (g *fallbackGW) build() []journal.Event {
	g.rng = rand.New(rand.NewPCG(1, 2))
	g.log.firstFallback, g.log.failBack = -1, -1
	cfg := map[string]any{"rate": g.rate}
	if g.header != "" {
		cfg["replay"] = map[string]any{"keep_headers": []string{g.header}}
	}
	raw, _ := json.Marshal(cfg)
	g.add(0, &journal.RunStart{RunID: "fb-1", Scenario: "fallback", Seed: 1, Rate: g.rate, Duration: g.dur,
		WallStart: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), Upstreams: []string{"primary", "backup"}, Config: raw})
	name := "storm"
	if g.slow {
		name = "slow"
	}
	if g.toTheEnd {
		g.faultFor = g.dur * 2
		g.add(g.faultAt, &journal.FaultStart{Name: name, Type: "status", Upstream: "primary"})
	} else {
		g.add(g.faultAt, &journal.FaultStart{Name: name, Type: "status", Upstream: "primary", For: g.faultFor})
		g.add(g.faultAt+g.faultFor, &journal.FaultEnd{Name: name, Upstream: "primary"})
	}
	coolFrom, coolUntil := time.Duration(-1), time.Duration(-1)
	interval := time.Duration(float64(time.Second) / g.rate)
	for i := 0; time.Duration(i)*interval < g.dur; i++ {
		sent := time.Duration(i) * interval
		seq := uint64(i)
		at := sent + g.lag
		var pCalls int64
		target, end := "primary", time.Duration(0)
		// Sequential here, concurrent in the gateway: a turn is cooled
		// down only by a failure that came before its decision.
		balancedHere := g.balanced && seq%2 == 1
		if balancedHere || (at >= coolFrom && at < coolUntil) {
			target = "backup"
		} else {
			done, failed := g.call("primary", at, seq)
			pCalls++
			end = done
			if failed {
				if done > coolUntil {
					coolFrom, coolUntil = done, done+g.cooldown
				}
				target, at = "backup", done+2*time.Millisecond
			} else if at >= g.faultAt+g.faultFor && (g.log.failBack < 0 || at < g.log.failBack) {
				g.log.failBack = at
			}
		}
		c := &journal.ClientRequest{Seq: seq, Method: "POST", Route: "/v1/chat/completions", Scheduled: sent, Sent: sent,
			Status: 200, Outcome: journal.OutcomeOK, BodyStamp: true}
		if target == "backup" && balancedHere {
			end, _ = g.call("backup", at, seq)
			if sent >= g.faultAt {
				g.log.balanced++ // in the episode's span
			}
		} else if target == "backup" {
			done, _ := g.call("backup", at, seq)
			end = done
			if g.log.firstFallback < 0 || at < g.log.firstFallback {
				g.log.firstFallback = at
			}
			g.log.served++
			g.log.ok++
			g.log.fallbackCalls++
			g.log.fallbackTokens += g.tokens
			g.log.primaryCalls += pCalls
			if pCalls > 0 {
				g.log.afterPrimary++
				if g.slow {
					g.log.giveUpsThenOK++
				}
			}
		}
		c.Done = end + time.Millisecond
		if g.header != "" {
			c.Headers = map[string]string{g.header: "openai-compat/" + target}
		}
		g.add(c.Done, c)
	}
	g.add(g.dur+time.Second, &journal.RunEnd{Reason: journal.EndCompleted})
	return g.evs
}

func (l gwLog) String() string {
	return fmt.Sprintf("first fallback %v, fail-back %v, served %d (%d ok, %d after primary), fallback calls %d, tokens %d, primary calls %d, give-ups %d",
		l.firstFallback, l.failBack, l.served, l.ok, l.afterPrimary, l.fallbackCalls, l.fallbackTokens, l.primaryCalls, len(l.giveUps))
}
