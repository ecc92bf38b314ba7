package reports

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// sim builds journals with known answers: a replayer at a fixed rate, a
// gateway whose breakers follow a simple model, fake upstreams with fault
// windows, and the gateway's white-box transitions (which the analysis
// must not read, and tests compare against).
type sim struct {
	// ends are the fault.end events, counting the calls each fault served.
	ends       map[string]*journal.FaultEnd
	rate       float64 // client requests per second
	dur        time.Duration
	upstreams  []string // routes round-robin over these
	faults     []simFault
	threshold  int           // consecutive failures that open
	cooldown   time.Duration // before the first probe
	backoff    float64       // cooldown multiplier after a failed probe
	spacing    time.Duration // between probes in half-open
	need       int           // probe successes to close
	style      string        // "tagged", "live" (nginx) or "health" (HAProxy)
	healthInt  time.Duration // health check interval (style health, or canary)
	canary     bool          // health checks to each upstream, not faulted
	fwdSeq     bool          // gateway forwards X-Rehearse-Seq
	clientUp   bool          // client.request carries the upstream
	ignoreRA   bool          // gateway ignores Retry-After
	leakEvery  int           // forward every Nth request while open (a bug)
	concProbe  bool          // two probes at once
	metricsInt time.Duration
	noEnd      bool // no run.end (killed)
	// admitLag is how long before its upstream call the gateway decides
	// a request (an agent runtime admits a turn, then builds the
	// provider call): the breaker's state at the decision counts, and
	// the call's answer changes it only when it comes back. Live style
	// only; a live probe holds the breaker half-open meanwhile.
	admitLag time.Duration
	// admitSpread spreads each request's lag over [admitLag,
	// admitLag+admitSpread), deterministically by sequence number.
	admitSpread time.Duration
	pending     []simPending
	// backLag is how long the gateway takes to relay an answer to its
	// client after the upstream released it (1 ms when 0).
	backLag time.Duration
	expect  json.RawMessage

	ev    []journal.Event
	leaks int
	// sink, when set, receives events instead of ev (large journals).
	sink func(journal.Event)
}

// simPending is a call's answer the breaker learns at a later time.
type simPending struct {
	at    time.Duration
	apply func()
}

// settle applies the answers that came back by t, in time order.
func (s *sim) settle(t time.Duration) {
	for len(s.pending) > 0 && s.pending[0].at <= t {
		p := s.pending[0]
		s.pending = s.pending[1:]
		p.apply()
	}
}

type simFault struct {
	name, upstream, typ string
	at, for_            time.Duration
	retryAfter          time.Duration
	period, duty        time.Duration // flapping: active duty out of every period
}

type simBreaker struct {
	state     string
	fails     int
	nextProbe time.Duration
	cool      time.Duration
	succ      int
	raUntil   time.Duration
	probes    int
}

func (s *sim) add(t time.Duration, p journal.Payload) {
	if s.sink != nil {
		s.sink(journal.Event{T: t, Payload: p})
		return
	}
	s.ev = append(s.ev, journal.Event{T: t, Payload: p})
}

func (s *sim) fault(u string, t time.Duration) *simFault {
	for i := range s.faults {
		f := &s.faults[i]
		if f.upstream == u && t >= f.at && t < f.at+f.for_ {
			if f.period > 0 && (t-f.at)%f.period >= f.duty {
				continue
			}
			return f
		}
	}
	return nil
}

// serve records one upstream call and returns whether it failed.
func (s *sim) serve(u string, t time.Duration, seq *uint64, tag string, health bool) (failed bool, ra time.Duration, done time.Duration) {
	done = t + 5*time.Millisecond
	p := &journal.UpstreamRequest{Upstream: u, Method: "GET", Path: "/x", ProbeTag: tag, HealthCheck: health,
		InFlight: 1, Status: 200, Done: done, Outcome: journal.OutcomeUpstreamComplete}
	if s.fwdSeq && seq != nil {
		p.Seq = seq
	}
	if health {
		p.Path = "/healthz"
	}
	if f := s.fault(u, t); f != nil && !(health && s.canary) {
		p.Fault, p.FaultType = f.name, f.typ
		p.Status = 503
		if e := s.ends[f.name]; e != nil {
			e.Applied++
		}
		if f.typ == "retry_after" {
			p.Status, p.RetryAfter = 429, f.retryAfter
			ra = f.retryAfter
		}
		failed = true
	}
	s.add(t, p)
	return failed, ra, done
}

func (s *sim) transition(t time.Duration, u, from, to string) {
	s.add(t, &journal.BreakerTransition{Dependency: u, From: from, To: to})
}

func (s *sim) open(b *simBreaker, u string, t time.Duration, ra time.Duration) {
	if b.state != journal.StateOpen {
		s.transition(t, u, b.state, journal.StateOpen)
	}
	b.state, b.fails, b.succ = journal.StateOpen, 0, 0
	wait := b.cool
	if ra > 0 && !s.ignoreRA && ra > wait {
		wait = ra
	}
	b.nextProbe = t + wait
}

// probeUntil runs due out-of-band probes (tagged style) up to t.
func (s *sim) probeUntil(b *simBreaker, u string, t time.Duration) {
	for b.state != journal.StateClosed && s.style == "tagged" && b.nextProbe <= t {
		pt := b.nextProbe
		if b.state == journal.StateOpen {
			s.transition(pt, u, journal.StateOpen, journal.StateHalfOpen)
			b.state = journal.StateHalfOpen
		}
		failed, ra, done := s.serve(u, pt, nil, "half-open", false)
		if s.concProbe {
			s.serve(u, pt+time.Millisecond, nil, "half-open", false)
		}
		if failed {
			b.cool = time.Duration(float64(b.cool) * s.backoff)
			s.open(b, u, done, ra)
			continue
		}
		b.succ++
		if b.succ >= s.need {
			s.transition(done, u, journal.StateHalfOpen, journal.StateClosed)
			b.state, b.cool, b.fails = journal.StateClosed, s.cooldown, 0
			return
		}
		b.nextProbe = pt + s.spacing
	}
}

// build generates the journal.
func (s *sim) build() []journal.Event {
	if s.backoff == 0 {
		s.backoff = 2
	}
	if s.need == 0 {
		s.need = 2
	}
	if s.spacing == 0 {
		s.spacing = 300 * time.Millisecond
	}
	cfg := json.RawMessage(`{"rate":10}`)
	if s.expect != nil {
		cfg = json.RawMessage(`{"rate":10,"expectations":` + string(s.expect) + `}`)
	}
	s.add(0, &journal.RunStart{RunID: "sim-1", Scenario: "sim", Seed: 1, Rate: s.rate, Duration: s.dur,
		WallStart: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), Upstreams: s.upstreams,
		Platform: &journal.Platform{OS: "linux", Arch: "amd64", NumCPU: 2, GoVersion: "go1.26",
			TimerGranularity: &journal.TimerStats{Samples: 100, P50: 60 * time.Microsecond, P99: 1100 * time.Microsecond, Max: 2 * time.Millisecond},
			TCPKeepalive:     map[string]string{"net.ipv4.tcp_keepalive_time": "7200"}}, Config: cfg})
	for _, f := range s.faults {
		s.add(f.at, &journal.FaultStart{Name: f.name, Type: f.typ, Upstream: f.upstream, For: f.for_})
		if s.ends == nil {
			s.ends = map[string]*journal.FaultEnd{}
		}
		s.ends[f.name] = &journal.FaultEnd{Name: f.name, Upstream: f.upstream}
		s.add(f.at+f.for_, s.ends[f.name])
	}
	br := map[string]*simBreaker{}
	for _, u := range s.upstreams {
		br[u] = &simBreaker{state: journal.StateClosed, cool: s.cooldown}
	}
	interval := time.Duration(float64(time.Second) / s.rate)
	n := int(s.dur / interval)
	nextHealth := time.Duration(0)
	nextMetrics := time.Duration(0)
	for i := 0; i < n; i++ {
		t := time.Duration(i) * interval
		for s.healthInt > 0 && nextHealth <= t {
			for _, u := range s.upstreams {
				b := br[u]
				failed, _, _ := s.serve(u, nextHealth, nil, "", true)
				if s.style == "health" && b.state == journal.StateOpen {
					if failed {
						b.succ = 0
					} else if b.succ++; b.succ >= s.need {
						s.transition(nextHealth, u, journal.StateOpen, journal.StateClosed)
						b.state, b.fails = journal.StateClosed, 0
					}
				}
			}
			nextHealth += s.healthInt
		}
		for s.metricsInt > 0 && nextMetrics <= t {
			var st []journal.BreakerState
			for _, u := range s.upstreams {
				st = append(st, journal.BreakerState{Dependency: u, Upstream: u, State: br[u].state})
			}
			s.add(nextMetrics, &journal.MetricsSample{Source: "sim", States: st})
			nextMetrics += s.metricsInt
		}
		s.settle(t)
		u := s.upstreams[i%len(s.upstreams)]
		b := br[u]
		s.probeUntil(b, u, t)
		seq := uint64(i)
		cr := &journal.ClientRequest{Seq: seq, Method: "GET", Route: "/tools/" + u, Scheduled: t, Sent: t + 100*time.Microsecond}
		if s.clientUp {
			cr.Upstream = u
		}
		forward := b.state == journal.StateClosed
		liveProbe := false
		if b.state == journal.StateOpen && s.style == "live" && t >= b.nextProbe {
			forward, liveProbe = true, true
		}
		if !forward && s.leakEvery > 0 && i%s.leakEvery == 0 {
			forward = true
			s.leaks++
		}
		if forward {
			if liveProbe && s.admitLag > 0 {
				s.transition(t, u, journal.StateOpen, journal.StateHalfOpen)
				b.state = journal.StateHalfOpen
			}
			lag := s.admitLag
			if s.admitSpread > 0 {
				_, frac := math.Modf(float64(i) * 0.6180339887)
				lag += time.Duration(frac * float64(s.admitSpread))
			}
			failed, ra, done := s.serve(u, t+time.Millisecond+lag, &seq, "", false)
			cr.Done, cr.HeadersAt = done+max(s.backLag, time.Millisecond), done
			if failed {
				cr.Status, cr.Outcome = 503, journal.OutcomeHTTP5xx
				if ra > 0 {
					cr.Status, cr.Outcome = 429, journal.OutcomeHTTP4xx
				}
			} else {
				cr.Status, cr.Outcome = 200, journal.OutcomeOK
			}
			if s.admitLag > 0 {
				// Answers come back in their own order, not the decisions'.
				p := simPending{at: done, apply: func() { s.learn(b, u, failed, liveProbe, ra, done) }}
				at := sort.Search(len(s.pending), func(j int) bool { return s.pending[j].at > done })
				s.pending = slices.Insert(s.pending, at, p)
			} else {
				s.learn(b, u, failed, liveProbe, ra, done)
			}
		} else {
			cr.Done, cr.HeadersAt = t+time.Millisecond, t+time.Millisecond
			cr.Status = 503
			if s.style == "health" {
				cr.Outcome = journal.OutcomeHTTP5xx
			} else {
				cr.Outcome, cr.FastFail, cr.FastFailCode = journal.OutcomeFastFail, true, "dependency_unavailable"
			}
		}
		cr.Latency, cr.Service = cr.Done-cr.Scheduled, cr.Done-cr.Sent
		s.add(t, cr)
	}
	if !s.noEnd {
		s.add(s.dur, &journal.RunEnd{Reason: journal.EndCompleted})
	}
	return s.ev
}

// learn is the breaker learning a forwarded call's answer at done.
func (s *sim) learn(b *simBreaker, u string, failed, liveProbe bool, ra, done time.Duration) {
	if failed {
		switch {
		case liveProbe:
			b.cool = time.Duration(float64(b.cool) * s.backoff)
			s.open(b, u, done, ra)
		case b.state == journal.StateClosed && ra > 0 && !s.ignoreRA:
			s.open(b, u, done, ra) // a 429 with Retry-After opens at once
		case b.state == journal.StateClosed:
			b.fails++
			if b.fails >= s.threshold {
				s.open(b, u, done, ra)
			}
		}
		return
	}
	if b.state == journal.StateClosed {
		b.fails = 0
	}
	if liveProbe {
		s.transition(done, u, b.state, journal.StateClosed)
		b.state, b.fails, b.cool = journal.StateClosed, 0, s.cooldown
	}
}

// truth extracts the white-box transitions for an upstream.
// truthSpan is the white-box span of the upstream's breaker trouble: its
// first transition out of closed and its last back to closed (0 when
// none), in seconds.
func truthSpan(events []journal.Event, u string) (openT, closeT float64) {
	for _, e := range truth(events, u) {
		bt := e.Payload.(*journal.BreakerTransition)
		if bt.From == journal.StateClosed && openT == 0 {
			openT = e.T.Round(time.Millisecond).Seconds()
		}
		if bt.To == journal.StateClosed {
			closeT = e.T.Round(time.Millisecond).Seconds()
		}
	}
	return openT, closeT
}

func truth(events []journal.Event, u string) []journal.Event {
	var out []journal.Event
	for _, e := range events {
		if bt, ok := e.Payload.(*journal.BreakerTransition); ok && bt.Dependency == u {
			out = append(out, e)
		}
	}
	return out
}
