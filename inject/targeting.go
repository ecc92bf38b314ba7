package inject

import (
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// Fault states, as FaultStatus reports them.
const (
	StatePending = "pending"
	StateActive  = "active"
	StateEnded   = "ended"
)

// faultState is a fault in a running server: its window, its counters and
// the state of its per-request decisions.
type faultState struct {
	spec  FaultSpec
	fault Fault
	match *compiledMatch
	up    *upstream

	// The interfaces the fault implements, asked once.
	http     HTTPFault
	conn     ConnFault
	tcp      TCPFault
	listener ListenerFault

	// active is the lock-free look at the window that the fast paths
	// take (targetable) and decide takes first; state, under mu, is what
	// decides. state is StateActive only while active is set (activate
	// sets active first, deactivate clears it last), so that a fault
	// reported active is in force.
	active  atomic.Bool
	applied atomic.Int64

	mu    sync.Mutex
	state string
	seen  int64
	// attempts counts arrivals per seq, in two generations so that memory
	// stays bounded on long runs: the last attemptsGen to 2×attemptsGen
	// distinct seqs are remembered, far more than a retry's reach.
	attempts, oldAttempts map[uint64]uint32

	stopOnce  sync.Once
	stop      chan struct{}
	done      chan struct{}
	scheduled bool
}

func newFaultState(spec FaultSpec, f Fault, m *compiledMatch, u *upstream) *faultState {
	fs := &faultState{spec: spec, fault: f, match: m, up: u, state: StatePending,
		stop: make(chan struct{}), done: make(chan struct{})}
	fs.http, _ = f.(HTTPFault)
	fs.conn, _ = f.(ConnFault)
	fs.tcp, _ = f.(TCPFault)
	fs.listener, _ = f.(ListenerFault)
	return fs
}

func (f *faultState) status() FaultStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return FaultStatus{Spec: f.spec, Description: f.fault.Describe(), State: f.state, Seen: f.seen, Applied: f.applied.Load()}
}

// reqInfo is what targeting looks at in a request.
type reqInfo struct {
	method string
	path   string
	header http.Header
	seq    *uint64
	seqSrc string // journal.SeqFromHeader or SeqFromBody; "" without seq
	health bool
}

func (m *compiledMatch) matches(r reqInfo) bool {
	if m == nil {
		return true
	}
	if m.method != "" && m.method != r.method {
		return false
	}
	if m.path != nil && !m.path.MatchString(r.path) {
		return false
	}
	for name, re := range m.header {
		vals := r.header.Values(name)
		if len(vals) == 0 {
			return false
		}
		if re == nil {
			continue
		}
		ok := false
		for _, v := range vals {
			if re.MatchString(v) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// decide reports whether the fault applies to the request, following the
// rule documented on Server, and counts it.
func (f *faultState) decide(r reqInfo, seed int64) bool {
	if !f.active.Load() {
		return false
	}
	if r.health && !f.spec.HealthChecks {
		return false
	}
	if !f.match.matches(r) {
		return false
	}
	p := f.spec.Probability
	f.mu.Lock()
	if f.state != StateActive {
		f.mu.Unlock()
		return false
	}
	f.seen++
	n := f.seen
	var key string
	if p > 0 && p < 1 {
		if r.seq != nil {
			a := f.nextAttempt(*r.seq)
			key = "seq:" + strconv.FormatUint(*r.seq, 10) + ":" + strconv.FormatUint(uint64(a), 10)
		} else {
			key = "n:" + strconv.FormatInt(n, 10)
		}
	}
	f.mu.Unlock()
	if f.spec.FirstN > 0 && n > int64(f.spec.FirstN) {
		return false
	}
	if f.spec.EveryNth > 0 && n%int64(f.spec.EveryNth) != 0 {
		return false
	}
	if key != "" && !Decide(seed, f.spec.Name, key, p) {
		return false
	}
	f.applied.Add(1)
	return true
}

const attemptsGen = 1 << 15

// nextAttempt returns how many times seq arrived before and counts this
// arrival. The caller holds f.mu.
func (f *faultState) nextAttempt(seq uint64) uint32 {
	if f.attempts == nil {
		f.attempts = map[uint64]uint32{}
	}
	a, ok := f.attempts[seq]
	if !ok {
		a = f.oldAttempts[seq]
	}
	if !ok && len(f.attempts) >= attemptsGen {
		f.oldAttempts, f.attempts = f.attempts, map[uint64]uint32{}
	}
	f.attempts[seq] = a + 1
	return a
}

// Decide is the per-request probability draw, exported so that tools can
// predict a run's decisions: it reports whether
// rand.New(rand.NewPCG(uint64(seed), fnv1a64(fault+"\x00"+key))).Float64() < p.
func Decide(seed int64, fault, key string, p float64) bool {
	return rand.New(rand.NewPCG(uint64(seed), hashKey(fault, key))).Float64() < p
}

func hashKey(a, b string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(a))
	h.Write([]byte{0})
	h.Write([]byte(b))
	return h.Sum64()
}

// schedule starts the fault's window goroutine. The caller holds s.mu.
// A window due already opens before schedule returns, so that a fault at 0
// is in force as soon as Start (or AddFault) returns.
func (s *Server) schedule(f *faultState) {
	f.scheduled = true
	opened := false
	if f.spec.At.D() <= s.now() {
		s.activate(f)
		opened = true
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(f.done)
		s.runWindow(f, opened)
	}()
}

// runWindow opens the fault's window at At and closes it at At+For, or
// when the fault is removed or the server closes.
func (s *Server) runWindow(f *faultState, opened bool) {
	wait := func(at time.Duration) bool {
		t := time.NewTimer(at - s.now())
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-f.stop:
			return false
		case <-s.ctx.Done():
			return false
		}
	}
	if !opened {
		if !wait(f.spec.At.D()) {
			f.setState(StateEnded)
			return
		}
		s.activate(f)
	}
	if f.spec.For > 0 {
		wait(f.spec.At.D() + f.spec.For.D())
	} else {
		select {
		case <-f.stop:
		case <-s.ctx.Done():
		}
	}
	s.deactivate(f)
}

func (f *faultState) setState(st string) {
	f.mu.Lock()
	f.state = st
	f.mu.Unlock()
}

func (s *Server) activate(f *faultState) {
	params, _ := json.Marshal(f.spec.Params)
	p := f.spec.Probability
	if p == 0 {
		p = 1
	}
	s.rec.Record(&journal.FaultStart{
		Name: f.spec.Name, Type: f.spec.Type, Upstream: f.spec.Upstream, For: f.spec.For.D(),
		Params: params, Probability: p, HealthChecks: f.spec.HealthChecks,
	})
	// In force before it is reported: whoever sees StateActive (Faults,
	// the control API, the active gauge) and sends a request at once
	// must find the fault applied. The fast paths read active without
	// the lock; were the state set first, a request sent in between
	// (a preempted window goroutine on a loaded machine: milliseconds)
	// would be answered healthy by a fault reported active.
	f.active.Store(true)
	if f.listener != nil {
		if err := f.listener.Begin(f.up); err != nil {
			s.logError(f, "begin", err)
		}
	}
	f.setState(StateActive)
	s.m.active.WithLabelValues(f.spec.Upstream, f.spec.Name).Set(1)
	s.log.Info("fault start", "fault", f.spec.Name, "type", f.spec.Type, "upstream", f.spec.Upstream, "what", f.fault.Describe())
}

func (s *Server) deactivate(f *faultState) {
	// Out of force before it is reported ended, as activate: once
	// StateEnded is seen no request is faulted (decide reads the state
	// under the lock; active, the fast paths' look, is cleared after)
	// and no connection refused.
	if f.listener != nil {
		if err := f.listener.End(f.up); err != nil {
			s.logError(f, "end", err)
		}
	}
	f.setState(StateEnded)
	f.active.Store(false)
	s.m.active.WithLabelValues(f.spec.Upstream, f.spec.Name).Set(0)
	s.rec.Record(&journal.FaultEnd{Name: f.spec.Name, Upstream: f.spec.Upstream, Applied: f.applied.Load()})
	s.log.Info("fault end", "fault", f.spec.Name, "upstream", f.spec.Upstream, "applied", f.applied.Load())
}

func (s *Server) logError(f *faultState, phase string, err error) {
	msg := "fault " + f.spec.Name + " " + phase + ": " + err.Error()
	s.log.Error(msg)
	s.rec.Record(&journal.Log{Level: "error", Source: "inject", Msg: msg})
}

// remove stops the fault's window (recording fault.end if it was open) and
// waits until that is done.
func (f *faultState) remove() {
	f.stopOnce.Do(func() { close(f.stop) })
	if f.scheduled {
		<-f.done
	}
}
