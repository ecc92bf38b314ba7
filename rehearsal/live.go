package rehearsal

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/scenarios"
)

// StatusLine is a display of one status line, such as a terminal's bottom
// line with the log scrolling above it (internal/tty.Display): Start shows
// status(), redrawn until Stop.
type StatusLine interface {
	Start(status func() string)
	Stop()
}

// matchGrace is how long a client request that got an answer, but was not
// seen at its upstream, waits for the upstream's record before it counts
// as turned away by the gateway: the upstream records a call when it has
// answered, a moment after which the gateway may already have answered
// the client.
const matchGrace = 250 * time.Millisecond

// probeWindow is how recent a call reaching an upstream whose breaker is
// seen open must be for the status line to call the breaker half-open.
const probeWindow = time.Second

// live follows the run's events as they are recorded, for the status line:
// the replay's counts, the fault windows open now, and each watched
// upstream's breaker state as seen from outside (the gateway's fast-fails,
// the answered requests whose sequence stamp never reached the upstream,
// and the calls that still reach it) and, where metrics are
// scraped, as the gateway reports it. It is a journal.Recorder in front of
// the journal: every event goes on to the journal unchanged.
//
// The states are a live indication; the report's analysis of the whole
// journal is what a run's figures come from.
type live struct {
	rec   journal.Recorder
	clock *journal.Clock

	mu      sync.Mutex
	replay  replay.Progress
	started bool
	// warming: the counts are the warm-up's (before time zero).
	warming bool
	faults  []liveFault
	watched []string
	ups     map[string]*liveUpstream
}

type liveFault struct{ name, upstream, kind string }

// liveUpstream is what the status line knows of one watched upstream's
// breaker.
type liveUpstream struct {
	// lastRejected and lastForwarded are the run times of the last client
	// request routed to the upstream that the gateway turned away
	// (a recognised fast-fail) and of the last one it answered otherwise.
	lastRejected, lastForwarded time.Duration
	rejected, forwarded         bool
	// lastCall is the arrival of the last call that reached the upstream
	// (health checks left out) while the breaker was seen open.
	lastCall time.Duration
	called   bool
	// metrics is the last state the gateway's metrics gave ("" when none
	// were scraped for it).
	metrics string
	// stamped reports that the gateway forwards the client's sequence
	// stamp to this upstream: then a client request answered without
	// its stamp reaching the upstream was turned away (or served from
	// elsewhere) whatever the answer looks like, and the gateway's
	// rejections are seen even when the fast-fail recogniser does not
	// know them. seen holds the stamps that arrived, pending the answered
	// requests still waiting for theirs.
	stamped bool
	seen    map[uint64]time.Duration
	pending []pendingRequest
}

type pendingRequest struct {
	seq uint64
	at  time.Duration
}

func (u *liveUpstream) reject(at time.Duration) {
	u.lastRejected, u.rejected = max(u.lastRejected, at), true
}

func (u *liveUpstream) forward(at time.Duration) {
	u.lastForwarded, u.forwarded = max(u.lastForwarded, at), true
}

// settle counts as turned away the answered requests whose stamp has not
// reached the upstream within matchGrace, as of run time now.
func (u *liveUpstream) settle(now time.Duration) {
	n := 0
	for _, p := range u.pending {
		if now-p.at < matchGrace {
			break
		}
		u.reject(p.at)
		n++
	}
	u.pending = u.pending[n:]
}

// newLive returns a live view in front of rec for the scenario's watched
// upstreams: the expectations' upstreams, then those the faults target.
func newLive(rec journal.Recorder, clock *journal.Clock, sc *scenarios.Scenario) *live {
	l := &live{rec: rec, clock: clock, ups: map[string]*liveUpstream{}}
	add := func(name string) {
		if name != "" && l.ups[name] == nil {
			l.ups[name] = &liveUpstream{}
			l.watched = append(l.watched, name)
		}
	}
	if e := sc.Expectations; e != nil {
		for _, u := range e.Upstreams {
			add(u)
		}
	}
	for _, f := range sc.Faults {
		add(f.Upstream)
	}
	return l
}

// Record passes p on to the journal and follows it.
func (l *live) Record(p journal.Payload) { l.RecordAt(l.clock.Now(), p) }

// RecordAt passes p on to the journal and follows it.
func (l *live) RecordAt(t time.Duration, p journal.Payload) {
	l.rec.RecordAt(t, p)
	l.observe(t, p)
}

func (l *live) observe(t time.Duration, p journal.Payload) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range l.watched {
		l.ups[name].settle(t)
	}
	switch e := p.(type) {
	case *journal.FaultStart:
		l.faults = append(l.faults, liveFault{e.Name, e.Upstream, e.Type})
	case *journal.FaultEnd:
		l.faults = slices.DeleteFunc(l.faults, func(f liveFault) bool { return f.name == e.Name })
	case *journal.ClientRequest:
		u := l.ups[e.Upstream]
		if u == nil || e.Outcome == journal.OutcomeDropped {
			return
		}
		at := t
		if e.Done > 0 {
			at = e.Done
		}
		_, reached := u.seen[e.Seq]
		delete(u.seen, e.Seq)
		switch {
		case e.FastFail || e.Outcome == journal.OutcomeFastFail:
			u.reject(at)
		case !u.stamped || reached:
			u.forward(at)
		case e.Status > 0:
			u.pending = append(u.pending, pendingRequest{e.Seq, at})
		}
		// A stamped request that failed without an answer and never
		// reached the upstream says nothing of the breaker.
	case *journal.UpstreamRequest:
		u := l.ups[e.Upstream]
		if u == nil || e.HealthCheck {
			return
		}
		if u.state(t) != "closed" {
			u.lastCall, u.called = max(u.lastCall, t), true
		}
		if e.Seq != nil {
			u.stamped = true
			if i := slices.IndexFunc(u.pending, func(p pendingRequest) bool { return p.seq == *e.Seq }); i >= 0 {
				u.forward(u.pending[i].at)
				u.pending = slices.Delete(u.pending, i, i+1)
				return
			}
			if u.seen == nil {
				u.seen = map[uint64]time.Duration{}
			}
			u.seen[*e.Seq] = t
			if len(u.seen) > 4096 {
				// Stamps whose client request never came (retries of
				// one request, calls of the gateway's own): keep the
				// last half minute.
				for seq, at := range u.seen {
					if t-at > 30*time.Second {
						delete(u.seen, seq)
					}
				}
			}
		}
	case *journal.MetricsSample:
		for _, s := range e.States {
			if u := l.ups[s.Upstream]; u != nil {
				u.metrics = s.State
			}
		}
	}
}

// state is the breaker at run time now as seen from outside: open while
// the last request routed to the upstream was turned away, half-open when
// a call reached the upstream in the last probeWindow in that state,
// closed once requests are answered again; "?" before any request was
// routed to it.
func (u *liveUpstream) state(now time.Duration) string {
	switch {
	case !u.rejected && !u.forwarded:
		return "?"
	case u.rejected && (!u.forwarded || u.lastRejected > u.lastForwarded):
		if u.called && now-u.lastCall <= probeWindow && u.lastCall > u.lastForwarded {
			return "half-open"
		}
		return "open"
	default:
		return "closed"
	}
}

// setReplay keeps the replay's latest counts.
func (l *live) setReplay(p replay.Progress) {
	l.mu.Lock()
	l.replay, l.started, l.warming = p, true, false
	l.mu.Unlock()
}

// setWarmup keeps the warm-up's latest counts, shown as such until the
// replay's first.
func (l *live) setWarmup(p replay.Progress) {
	l.mu.Lock()
	l.replay, l.started, l.warming = p, true, true
	l.mu.Unlock()
}

// Line renders the status line, the most wanted first (a narrow terminal
// clips the end): elapsed/planned, sent, ok, failed, the fault windows open
// now (upstream:kind), each watched upstream's breaker (name=state, and
// the state its metrics give), then fast-fails and drops.
//
//	0:42/2:00 sent 420 ok 380 failed 40 | search:status | search=open(metrics open) | fast-fail 31
func (l *live) Line() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	p := l.replay
	if !l.started {
		b.WriteString("starting")
	} else {
		if l.warming {
			b.WriteString("warm-up ")
		}
		b.WriteString(replay.FmtClock(p.Elapsed))
		if p.Planned > 0 {
			b.WriteString("/" + replay.FmtClock(p.Planned))
		}
		fmt.Fprintf(&b, " sent %d ok %d failed %d", p.Sent, p.OK, p.Failed)
	}
	b.WriteString(" |")
	if len(l.faults) == 0 {
		b.WriteString(" no faults")
	}
	for _, f := range l.faults {
		b.WriteString(" " + f.upstream + ":" + f.kind)
	}
	if len(l.watched) > 0 {
		b.WriteString(" |")
	}
	now := l.clock.Now()
	for _, name := range l.watched {
		u := l.ups[name]
		u.settle(now)
		b.WriteString(" " + name + "=" + u.state(now))
		if u.metrics != "" {
			b.WriteString("(metrics " + strings.ReplaceAll(u.metrics, "_", "-") + ")")
		}
	}
	if p.FastFail > 0 || p.Dropped > 0 {
		b.WriteString(" |")
		if p.FastFail > 0 {
			fmt.Fprintf(&b, " fast-fail %d", p.FastFail)
		}
		if p.Dropped > 0 {
			fmt.Fprintf(&b, " dropped %d", p.Dropped)
		}
	}
	return b.String()
}
