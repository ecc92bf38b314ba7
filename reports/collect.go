package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// The collector keeps compact records (tens of bytes per request, never the
// decoded events or their text), aggregated state for metrics and health,
// and the run's metadata; inference runs once the journal is read.

// call flags.
const (
	fHealth uint8 = 1 << iota
	fTagged
	fFailed
	fHasSeq
	fHasDone
)

// call is one upstream.request, compacted to 32 bytes.
type call struct {
	t      int64  // arrival, run time in ns
	seq    uint64 // forwarded sequence number (fHasSeq)
	dur    uint32 // µs from arrival to end (fHasDone)
	raMs   uint32 // Retry-After in ms; 0 when none
	up     uint16 // interned upstream
	tag    uint16 // interned probe tag (0 = none)
	status int16
	flags  uint8
}

func (c *call) health() bool { return c.flags&fHealth != 0 }
func (c *call) tagged() bool { return c.flags&fTagged != 0 }
func (c *call) failed() bool { return c.flags&fFailed != 0 }
func (c *call) hasSeq() bool { return c.flags&fHasSeq != 0 }

// end is when the call ended, or its arrival when unknown.
func (c *call) end() int64 {
	if c.flags&fHasDone != 0 {
		return c.t + int64(c.dur)*int64(time.Microsecond)
	}
	return c.t
}

// retryAfter is the advertised Retry-After in ns, 0 when none.
func (c *call) retryAfter() int64 { return int64(c.raMs) * int64(time.Millisecond) }

// clampU32 converts a non-negative duration in units of unit to uint32,
// saturating.
func clampU32(d, unit int64) uint32 {
	return uint32(min(max(d/unit, 0), 1<<32-1))
}

// creq is one client.request, compacted to 32 bytes.
type creq struct {
	seq     uint64
	sched   int64  // scheduled send, run time in ns
	sentD   int32  // µs from sched to the send (rSent)
	doneD   uint32 // µs from sched to the end (rDone)
	route   uint16 // interned route
	up      uint16 // interned upstream; 0 = not given
	outcome uint16 // interned outcome
	flags   uint8
}

// creq flags.
const (
	rSent uint8 = 1 << iota
	rDone
	rFastFail
	rLate
)

// sent is when the request went out, 0 when it did not.
func (r *creq) sent() int64 {
	if r.flags&rSent == 0 {
		return 0
	}
	return max(r.sched+int64(r.sentD)*int64(time.Microsecond), 1)
}

// done is when the exchange ended, 0 when it did not.
func (r *creq) done() int64 {
	if r.flags&rDone == 0 {
		return 0
	}
	return max(r.sched+int64(r.doneD)*int64(time.Microsecond), 1)
}

// lat is the latency from the scheduled send (what a user waited).
func (r *creq) lat() int64 { return int64(r.doneD) * int64(time.Microsecond) }

func (r *creq) fastFail() bool { return r.flags&rFastFail != 0 }
func (r *creq) late() bool     { return r.flags&rLate != 0 }

// statePoint is a change of a sampled state.
type statePoint struct {
	t     int64
	state string
}

// faultRec is one fault window as journalled.
type faultRec struct {
	name, typ, upstream string
	start, end          int64 // end < 0: no fault.end seen
	planned             time.Duration
}

// interner maps strings to small integers; index 0 is "".
type interner struct {
	ids   map[string]uint16
	names []string
}

func newInterner() *interner { return &interner{ids: map[string]uint16{"": 0}, names: []string{""}} }

func (in *interner) id(s string) uint16 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	if len(in.names) >= 1<<16-1 {
		// A journal with 65k distinct routes or tags is not a rehearsal;
		// fold the rest into one bucket rather than grow without bound.
		return uint16(len(in.names) - 1)
	}
	id := uint16(len(in.names))
	in.ids[s] = id
	in.names = append(in.names, s)
	return id
}

type collector struct {
	start      *journal.RunStart
	end        *journal.RunEnd
	lastT      int64
	events     int64
	unknown    int64
	torn       bool
	calls      []call
	reqs       []creq
	faults     []faultRec
	openFaults map[string]int // fault name -> index in faults
	ups        *interner
	routes     *interner
	tags       *interner
	outcomes   *interner
	metrics    map[string][]statePoint // upstream -> change points
	metricsN   int64
	health     []statePoint
	healthN    int64
	healthBad  int64
	upNames    map[string]bool // upstreams named in run.start
}

func newCollector() *collector {
	return &collector{
		openFaults: map[string]int{},
		ups:        newInterner(),
		routes:     newInterner(),
		tags:       newInterner(),
		outcomes:   newInterner(),
		metrics:    map[string][]statePoint{},
		upNames:    map[string]bool{},
	}
}

// add takes one event. Events may come slightly out of time order (an
// upstream call is written when it completes, stamped with its arrival).
func (c *collector) add(ev journal.Event) {
	c.events++
	t := int64(ev.T)
	if t > c.lastT {
		c.lastT = t
	}
	switch p := ev.Payload.(type) {
	case *journal.RunStart:
		if c.start == nil {
			c.start = p
			for _, u := range p.Upstreams {
				c.upNames[u] = true
				c.ups.id(u)
			}
		}
	case *journal.RunEnd:
		c.end = p
	case *journal.FaultStart:
		c.openFaults[p.Name] = len(c.faults)
		c.faults = append(c.faults, faultRec{name: p.Name, typ: p.Type, upstream: p.Upstream, start: t, end: -1, planned: p.For})
		c.ups.id(p.Upstream)
	case *journal.FaultEnd:
		if i, ok := c.openFaults[p.Name]; ok {
			c.faults[i].end = t
			delete(c.openFaults, p.Name)
		}
	case *journal.ClientRequest:
		r := creq{seq: p.Seq, sched: int64(p.Scheduled), route: c.routes.id(p.Route), outcome: c.outcomes.id(string(p.Outcome))}
		if p.Sent > 0 {
			r.flags |= rSent
			d := min(max((int64(p.Sent)-r.sched)/int64(time.Microsecond), -(1<<31)), 1<<31-1)
			r.sentD = int32(d)
		}
		if p.Done > 0 {
			r.flags |= rDone
			r.doneD = clampU32(int64(p.Done)-r.sched, int64(time.Microsecond))
		}
		if p.FastFail || p.Outcome == journal.OutcomeFastFail {
			r.flags |= rFastFail
		}
		if p.Late {
			r.flags |= rLate
		}
		if p.Upstream != "" {
			r.up = c.ups.id(p.Upstream)
		}
		c.reqs = append(c.reqs, r)
	case *journal.UpstreamRequest:
		k := call{t: t, raMs: clampU32(int64(p.RetryAfter), int64(time.Millisecond)), up: c.ups.id(p.Upstream),
			status: int16(min(max(p.Status, 0), 32767))}
		if p.Done > 0 && int64(p.Done) >= t {
			k.flags |= fHasDone
			k.dur = clampU32(int64(p.Done)-t, int64(time.Microsecond))
		}
		if p.Seq != nil {
			k.seq = *p.Seq
			k.flags |= fHasSeq
		}
		if p.HealthCheck {
			k.flags |= fHealth
		}
		if p.ProbeTag != "" {
			k.flags |= fTagged
			k.tag = c.tags.id(p.ProbeTag)
		}
		if upstreamFailed(p) {
			k.flags |= fFailed
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
	switch p.Outcome {
	case journal.OutcomeUpstreamComplete, "":
		return false
	default:
		return true
	}
}

// ErrNoJournal is returned for an input that holds no journal events.
var ErrNoJournal = errors.New("journal holds no events")

// Analyze reads a journal from r in one streaming pass and analyses it.
// Memory grows with the number of requests in compact records (tens of
// bytes each), never with the journal's text. A torn last line (a run
// killed mid-write) is tolerated and noted; a corrupt line is an error
// wrapping rehearse.ErrInvalid with its line number.
func Analyze(r io.Reader) (*Analysis, error) {
	c := newCollector()
	torn, err := journal.Decode(r, c.add)
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

// configExpectations reads "expectations" from run.start's config.
func configExpectations(raw json.RawMessage) (*Expectations, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var cfg struct {
		Expectations *Expectations `json:"expectations"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%w: run.start config: expectations: %w", rehearse.ErrInvalid, err)
	}
	if cfg.Expectations != nil {
		if err := cfg.Expectations.Validate(); err != nil {
			return nil, err
		}
	}
	return cfg.Expectations, nil
}
