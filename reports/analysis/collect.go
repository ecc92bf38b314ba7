package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"
	"unique"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// The collector keeps one plain record per client request and per upstream
// call (never the decoded events or their text), aggregated state for
// metrics and health, and the run's metadata; inference runs once the
// journal is read. Times are run times (time.Duration since the run's
// start) until the JSON boundary. Names (upstreams, routes, tags,
// outcomes) are unique.Handle values: a record holds an 8-byte handle, not
// a copy of the name, and compares names by handle.

// call is one upstream.request.
type call struct {
	t   time.Duration // arrival
	end time.Duration // when the exchange ended; t when unknown (hasEnd false)
	// retryAfter is the advertised Retry-After; 0 when none.
	retryAfter time.Duration
	seq        uint64 // forwarded sequence number (hasSeq)
	upstream   name
	tag        name // probe tag; noName = none
	status     int16
	hasEnd     bool
	hasSeq     bool
	health     bool
	tagged     bool
	failed     bool
	// faulted: an injected fault answered it.
	faulted bool
}

// creq is one client.request.
type creq struct {
	seq   uint64
	sched time.Duration // scheduled send
	sent  time.Duration // when it went out; 0 when it did not
	done  time.Duration // when the exchange ended; 0 when it did not
	route name
	// upstream is the upstream the replayer named; noName = not given.
	upstream name
	outcome  name
	fastFail bool
	late     bool
	// sends is how many times it went out: 1 + the replayer transport's
	// re-sends.
	sends int
}

// lat is the latency from the scheduled send (what a user waited).
func (r *creq) lat() time.Duration { return r.done - r.sched }

// statePoint is a change of a sampled state.
type statePoint struct {
	t     time.Duration
	state string
}

// faultRec is one fault window as journalled.
type faultRec struct {
	name, typ, upstream string
	start, end          time.Duration // end < 0: no fault.end seen
	planned             time.Duration
	// spec is the fault.start as recorded and applied its fault.end's
	// count (-1 without one), for the report's "What was injected".
	spec    journal.FaultStart
	applied int64
}

// name is a canonical string: records hold a handle (8 bytes), so a
// million records naming a few upstreams hold a few strings.
type name = unique.Handle[string]

func nameOf(s string) name { return unique.Make(s) }

// The names the analysis compares records with.
var (
	noName     = nameOf("")
	outOK      = nameOf(string(journal.OutcomeOK))
	outDropped = nameOf(string(journal.OutcomeDropped))
	outHTTP5xx = nameOf(string(journal.OutcomeHTTP5xx))
)

type collector struct {
	start *journal.RunStart
	// cfg is start's config, decoded once (nil: none, or unreadable).
	cfg        *startConfig
	end        *journal.RunEnd
	lastT      time.Duration
	events     int64
	unknown    int64
	torn       bool
	calls      []call
	reqs       []creq
	faults     []faultRec
	openFaults map[string]int // fault name -> index in faults
	// upstreams are the upstream names in order of first mention.
	upstreams []string
	upOrder   map[string]int          // 1-based position in upstreams
	metrics   map[string][]statePoint // upstream -> change points
	metricsN  int64
	health    []statePoint
	healthN   int64
	healthBad int64
	upNames   map[string]bool // upstreams named in run.start
	platform  []*journal.PlatformSample
	rl        *retryLog // the retry, deadline and cost analysis
	warm      warmupLog // the warm-up, kept apart (warmup.go)
	fo        failoverLog
	// handles and upHandles answer nameOf and upstreamName for the names
	// of the last lines (upHandles: names already in upstreams).
	handles, upHandles recent[name]

	// interruptAt and stopAt are the times of the phases "interrupted"
	// and "stop"; -1 when not recorded.
	interruptAt, stopAt time.Duration
}

func newCollector() *collector {
	c := &collector{
		openFaults: map[string]int{},
		upOrder:    map[string]int{},
		metrics:    map[string][]statePoint{},
		upNames:    map[string]bool{},
		rl:         newRetryLog(),
	}
	c.interruptAt, c.stopAt = -1, -1
	return c
}

// reserve sizes the record slices for a journal of size bytes. Nearly
// every line is a client request or an upstream call, of at least 200
// bytes each: a quarter of size/200 for each kind, less than the file if it
// holds fewer. Growing them by appending had copied each several times
// over (Go grows a large slice by a quarter), a fifth of a million-event
// analysis's allocation; room reserved and never used is never touched.
func (c *collector) reserve(size int64) {
	n := int(min(size/400, 1<<26))
	c.reqs = make([]creq, 0, n)
	c.calls = make([]call, 0, n)
	c.rl.reqs = make([]rReq, 0, n)
	c.rl.calls = make([]rCall, 0, n)
}

// upstreamName records an upstream's name and returns its handle.
func (c *collector) upstreamName(u string) name {
	if h, ok := c.upHandles.get(u, ""); ok {
		return h
	}
	if _, ok := c.upOrder[u]; u != "" && !ok {
		c.upstreams = append(c.upstreams, u)
		c.upOrder[u] = len(c.upstreams)
	}
	h := c.name(u)
	c.upHandles.put(u, "", h)
	return h
}

// name is nameOf(s), from the cache when s was seen lately.
func (c *collector) name(s string) name {
	if h, ok := c.handles.get(s, ""); ok {
		return h
	}
	h := nameOf(s)
	c.handles.put(s, "", h)
	return h
}

// add takes one event. Events may come slightly out of time order (an
// upstream call is written when it completes, stamped with its arrival).
func (c *collector) add(ev journal.Event) {
	c.events++
	t := ev.T
	if t > c.lastT {
		c.lastT = t
	}
	if c.warm.take(ev) {
		return // before time zero: scored nowhere
	}
	switch p := ev.Payload.(type) {
	case *journal.RunStart:
		if c.start == nil {
			c.start = p
			c.cfg = decodeStart(p.Config)
			for _, u := range p.Upstreams {
				c.upNames[u] = true
				c.upstreamName(u)
			}
		}
	case *journal.RunEnd:
		c.end = p
	case *journal.Phase:
		switch {
		case p.Name == PhaseInterrupted && c.interruptAt < 0:
			c.interruptAt = t
		case p.Name == "stop" && c.stopAt < 0:
			c.stopAt = t
		}
	case *journal.FaultStart:
		c.openFaults[p.Name] = len(c.faults)
		c.upstreamName(p.Upstream)
		spec := *p
		spec.Params = append(json.RawMessage(nil), p.Params...)
		c.faults = append(c.faults, faultRec{name: p.Name, typ: p.Type, upstream: p.Upstream, start: t, end: -1, planned: p.For,
			spec: spec, applied: -1})
	case *journal.FaultEnd:
		if i, ok := c.openFaults[p.Name]; ok {
			c.faults[i].end = t
			c.faults[i].applied = p.Applied
			delete(c.openFaults, p.Name)
		}
	case *journal.ClientRequest:
		r := creq{seq: p.Seq, sched: p.Scheduled, route: c.name(p.Route), upstream: noName, outcome: c.name(string(p.Outcome)),
			fastFail: p.FastFail || p.Outcome == journal.OutcomeFastFail, late: p.Late, sends: p.Sends()}
		if p.Sent > 0 {
			r.sent = p.Sent
		}
		if p.Done > 0 {
			r.done = max(p.Done, r.sched)
		}
		if p.Upstream != "" {
			r.upstream = c.upstreamName(p.Upstream)
		}
		c.reqs = append(c.reqs, r)
		c.rl.addRequest(p)
		c.fo.addRequest(p)
	case *journal.UpstreamRequest:
		c.rl.addCall(ev.T, p)
		k := call{t: t, end: t, retryAfter: max(p.RetryAfter, 0), upstream: c.upstreamName(p.Upstream), tag: noName, status: int16(min(max(p.Status, 0), 999)),
			health: p.HealthCheck, failed: upstreamFailed(p), faulted: p.Fault != ""}
		if p.Done > 0 && p.Done >= t {
			k.end, k.hasEnd = p.Done, true
		}
		if p.Seq != nil {
			k.seq, k.hasSeq = *p.Seq, true
		}
		if p.ProbeTag != "" {
			k.tagged, k.tag = true, c.name(p.ProbeTag)
		}
		c.calls = append(c.calls, k)
	case *journal.MetricsSample:
		if p.Error != "" {
			return
		}
		c.metricsN++
		for _, s := range p.States {
			u := s.Upstream
			if u == "" {
				u = s.Dependency
			}
			st := normState(s.State)
			pts := c.metrics[u]
			if n := len(pts); n == 0 || pts[n-1].state != st {
				c.metrics[u] = append(pts, statePoint{t: t, state: st})
			}
		}
	case *journal.HealthSample:
		c.healthN++
		st := "healthy"
		if !p.Healthy {
			st = "unhealthy"
			c.healthBad++
		}
		if n := len(c.health); n == 0 || c.health[n-1].state != st {
			c.health = append(c.health, statePoint{t: t, state: st})
		}
	case *journal.PlatformSample:
		c.platform = append(c.platform, p)
	case *journal.Unknown:
		c.unknown++
	}
}

// normState maps preset state names onto closed / half_open / open.
func normState(s string) string {
	switch s {
	case journal.StateOpen, "OPEN", "down", "DOWN":
		return journal.StateOpen
	case journal.StateHalfOpen, "half-open", "HALF_OPEN", "halfopen":
		return journal.StateHalfOpen
	default:
		return journal.StateClosed
	}
}

// upstreamFailed reports whether the upstream call failed as the gateway
// saw it: a 5xx or 429, or an exchange that did not complete. A fault that
// only adds latency is not a failure unless the gateway gave up.
func upstreamFailed(p *journal.UpstreamRequest) bool {
	if p.Status >= 500 || p.Status == 429 {
		return true
	}
	switch callOutcome(p) {
	case journal.OutcomeUpstreamComplete, "":
		return false
	default:
		return true
	}
}

// ErrNoJournal is returned for an input that holds no journal events.
var ErrNoJournal = errors.New("journal holds no events")

// Analyze reads a journal from r in one streaming pass and analyses it.
// Memory grows with the number of requests in plain records (56 bytes per
// upstream call, 64 per client request), never with the journal's text. A torn last line (a run
// killed mid-write) is tolerated and noted; a corrupt line is an error
// wrapping rehearse.ErrInvalid with its line number.
func Analyze(r io.Reader) (*Analysis, error) { return AnalyzeWith(r, nil) }

// AnalyzeWith is Analyze that also hands each event to also (when not
// nil) as it streams past. The event is transient: also copies what it
// keeps.
func AnalyzeWith(r io.Reader, also func(journal.Event)) (*Analysis, error) {
	c := newCollector()
	if st, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
			c.reserve(fi.Size())
		}
	}
	add := c.add
	if also != nil {
		add = func(ev journal.Event) { c.add(ev); also(ev) }
	}
	torn, err := journal.DecodeTransient(r, add)
	if err != nil {
		var ce *journal.CorruptError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("%w: %w", rehearse.ErrInvalid, err)
		}
		return nil, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
	}
	c.torn = torn
	return c.finish()
}

// AnalyzeEvents analyses events already in memory (journal.Memory.Events).
func AnalyzeEvents(events []journal.Event) (*Analysis, error) {
	c := newCollector()
	for _, ev := range events {
		c.add(ev)
	}
	return c.finish()
}
