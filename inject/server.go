package inject

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// Option configures a Server.
type Option func(*Server)

// WithRecorder sets where events go; the default, journal.Discard, keeps
// nothing.
func WithRecorder(r journal.Recorder) Option { return func(s *Server) { s.rec = r } }

// WithClock sets the run's clock, against which fault windows are timed and
// events stamped; nil (the default) starts a clock when Start is called.
func WithClock(c *journal.Clock) Option { return func(s *Server) { s.clock = c } }

// WithSeed sets the seed of per-request decisions and sampled delays; the
// default is 0, itself a valid, reproducible seed.
func WithSeed(seed int64) Option { return func(s *Server) { s.seed = seed } }

// WithRegisterer registers the server's metrics on r; nil (the default)
// keeps them unregistered.
func WithRegisterer(r prometheus.Registerer) Option { return func(s *Server) { s.reg = r } }

// WithLogger sets the logger; nil (the default) means slog.Default().
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// Server serves a rehearsal's upstreams and applies its faults.
//
// Decisions are reproducible: a request matching a fault's window, match
// rule and health-check switch is given the fault's next ordinal n
// (1-based, in arrival order); it is faulted when n <= first_n (if set), n
// is a multiple of every_nth (if set), and, if probability p < 1,
//
//	rand.New(rand.NewPCG(uint64(seed), fnv1a64(faultName + "\x00" + key))).Float64() < p
//
// where key is "seq:<seq>:<attempt>" when the request carries the client
// sequence header (attempt counts earlier arrivals of the same seq at this
// fault, from 0, so that a gateway's retry gets an independent draw), and
// "n:<n>" otherwise. With the sequence header forwarded, decisions depend
// only on the seed and the client's requests, not on goroutine scheduling.
// When several faults of an upstream are active, the first one in
// declaration order that decides yes is applied.
type Server struct {
	rec   journal.Recorder
	clock *journal.Clock
	seed  int64
	reg   prometheus.Registerer
	log   *slog.Logger
	m     *metrics

	upstreams []*upstream
	byName    map[string]*upstream

	mu      sync.Mutex
	faults  []*faultState
	started bool
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	names   map[string]bool

	closeOnce sync.Once
	closeErr  error
}

// New validates the upstreams and faults and returns a server ready to
// Start. Invalid input is a *rehearse.ConfigError wrapping rehearse.ErrInvalid.
func New(upstreams []UpstreamConfig, faults []FaultSpec, opts ...Option) (*Server, error) {
	s := &Server{rec: journal.Discard, byName: map[string]*upstream{}, names: map[string]bool{}}
	for _, o := range opts {
		o(s)
	}
	if s.rec == nil {
		s.rec = journal.Discard
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("component", "inject")
	if len(upstreams) == 0 {
		return nil, &rehearse.ConfigError{Path: "upstreams", Err: errors.New("no upstreams")}
	}
	for i, uc := range upstreams {
		u, err := uc.withDefaults()
		if err != nil {
			var ce *rehearse.ConfigError
			if errors.As(err, &ce) {
				ce.Path = joinPath(fmt.Sprintf("upstreams[%d]", i), ce.Path)
			}
			return nil, err
		}
		if _, dup := s.byName[u.Name]; dup {
			return nil, &rehearse.ConfigError{Path: fmt.Sprintf("upstreams[%d].name", i), Err: fmt.Errorf("duplicate upstream name %q", u.Name)}
		}
		up, err := newUpstream(s, u)
		if err != nil {
			return nil, err
		}
		s.upstreams = append(s.upstreams, up)
		s.byName[u.Name] = up
	}
	s.m = newMetrics()
	if s.reg != nil {
		if err := s.m.register(s.reg); err != nil {
			return nil, fmt.Errorf("inject: registering metrics: %w", err)
		}
	}
	for _, u := range s.upstreams {
		u.gauge = s.m.inFlight.WithLabelValues(u.cfg.Name)
	}
	for i, spec := range faults {
		fs, err := s.prepare(spec)
		if err != nil {
			var ce *rehearse.ConfigError
			if errors.As(err, &ce) {
				ce.Path = joinPath(fmt.Sprintf("faults[%d]", i), ce.Path)
			}
			return nil, err
		}
		s.faults = append(s.faults, fs)
	}
	s.publish()
	return s, nil
}

// prepare compiles a spec and checks it against its upstream.
func (s *Server) prepare(spec FaultSpec) (*faultState, error) {
	fault, err := spec.compile()
	if err != nil {
		return nil, err
	}
	u, ok := s.byName[spec.Upstream]
	if !ok {
		return nil, &rehearse.ConfigError{Path: "upstream", Err: fmt.Errorf("unknown upstream %q; known: %s", spec.Upstream, s.upstreamNames())}
	}
	if err := u.accepts(spec, fault); err != nil {
		return nil, &rehearse.ConfigError{Path: "type", Err: err}
	}
	if spec.Name == "" {
		spec.Name = spec.Upstream + "-" + spec.Type
		base := spec.Name
		for i := 2; s.names[spec.Name]; i++ {
			spec.Name = fmt.Sprintf("%s-%d", base, i)
		}
	}
	if s.names[spec.Name] {
		return nil, &rehearse.ConfigError{Path: "name", Err: fmt.Errorf("duplicate fault name %q", spec.Name)}
	}
	s.names[spec.Name] = true
	match, _ := spec.Match.compile()
	return newFaultState(spec, fault, match, u), nil
}

func (s *Server) upstreamNames() string {
	names := make([]string, len(s.upstreams))
	for i, u := range s.upstreams {
		names[i] = u.cfg.Name
	}
	sort.Strings(names)
	return fmt.Sprint(names)
}

// Start binds every upstream's listener and starts serving and the fault
// schedule. A listener that cannot be bound is an error wrapping
// rehearse.ErrEnvironment naming the upstream and the address; nothing is
// left running then. ctx bounds the server's life: when it is done, the
// server closes as with Close.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("inject: server already started")
	}
	s.started = true
	if s.clock == nil {
		s.clock = journal.NewClock(time.Now())
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.mu.Unlock()

	for i, u := range s.upstreams {
		if err := u.start(); err != nil {
			for _, started := range s.upstreams[:i] {
				started.stop()
			}
			s.cancel()
			s.mu.Lock()
			s.closed = true
			s.mu.Unlock()
			return fmt.Errorf("%w: upstream %q: cannot listen on %s: %w", rehearse.ErrEnvironment, u.cfg.Name, u.cfg.Listen, err)
		}
		s.log.Info("upstream listening", "upstream", u.cfg.Name, "mode", u.cfg.Mode, "addr", u.Addr())
	}
	s.mu.Lock()
	for _, f := range s.faults {
		s.schedule(f)
	}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-ctx.Done():
			go s.Close()
		case <-s.ctx.Done():
		}
	}()
	return nil
}

// Addr returns the address an upstream listens on ("127.0.0.1:port") after
// Start; "" for an unknown upstream or before Start.
func (s *Server) Addr(upstream string) string {
	u, ok := s.byName[upstream]
	if !ok {
		return ""
	}
	return u.Addr()
}

// URL returns "http://" + Addr(upstream); "" when Addr is.
func (s *Server) URL(upstream string) string {
	a := s.Addr(upstream)
	if a == "" {
		return ""
	}
	return "http://" + a
}

// Upstreams returns the upstream names in configuration order.
func (s *Server) Upstreams() []string {
	out := make([]string, len(s.upstreams))
	for i, u := range s.upstreams {
		out[i] = u.cfg.Name
	}
	return out
}

// Close stops every listener and connection, ends open fault windows
// (recording fault.end), and waits for every goroutine the server started.
// It is safe to call more than once and concurrently: every call returns
// when the server is closed.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Server) close() error {
	s.mu.Lock()
	wasStarted := s.started
	s.closed = true
	faults := append([]*faultState(nil), s.faults...)
	s.mu.Unlock()
	if !wasStarted {
		return nil
	}
	// Cancel first: it ends every window (each records its fault.end),
	// stalled handlers, relays, and a listener still trying to reopen.
	s.cancel()
	for _, f := range faults {
		f.remove()
	}
	var errs []error
	for _, u := range s.upstreams {
		if err := u.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

// AddFault adds a fault while the server runs (or before Start). Its At is
// relative to the moment it is added once the server runs, so that a drill
// driven by hand can say "in 5s, for 30s".
func (s *Server) AddFault(spec FaultSpec) (FaultStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return FaultStatus{}, errors.New("inject: server closed")
	}
	if s.started {
		spec.At += rehearse.Duration(s.clock.Now())
	}
	f, err := s.prepare(spec)
	if err != nil {
		return FaultStatus{}, err
	}
	s.faults = append(s.faults, f)
	s.publish()
	if s.started {
		s.schedule(f)
	}
	return f.status(), nil
}

// RemoveFault ends (recording fault.end if it was active) and removes the
// named fault; it reports whether the fault existed.
func (s *Server) RemoveFault(name string) bool {
	return s.removeWhere(func(f *faultState) bool { return f.spec.Name == name }) > 0
}

// ClearFaults ends and removes every fault of upstream, or of all upstreams
// when upstream is "". It returns how many were removed.
func (s *Server) ClearFaults(upstream string) int {
	return s.removeWhere(func(f *faultState) bool { return upstream == "" || f.spec.Upstream == upstream })
}

func (s *Server) removeWhere(pred func(*faultState) bool) int {
	s.mu.Lock()
	var keep, gone []*faultState
	for _, f := range s.faults {
		if pred(f) {
			gone = append(gone, f)
			delete(s.names, f.spec.Name)
		} else {
			keep = append(keep, f)
		}
	}
	s.faults = keep
	s.publish()
	s.mu.Unlock()
	for _, f := range gone {
		f.remove()
	}
	return len(gone)
}

// FaultStatus is a fault and where it stands.
type FaultStatus struct {
	Spec FaultSpec `json:"spec"`
	// Description says what the fault does, in a few words.
	Description string `json:"description"`
	// State is "pending", "active" or "ended".
	State string `json:"state"`
	// Seen counts the requests that matched the fault while active;
	// Applied those it was applied to.
	Seen    int64 `json:"seen"`
	Applied int64 `json:"applied"`
}

// Faults returns every fault with its state, in declaration order.
func (s *Server) Faults() []FaultStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FaultStatus, len(s.faults))
	for i, f := range s.faults {
		out[i] = f.status()
	}
	return out
}

// publish gives every upstream its current faults in declaration order, as
// an immutable slice read without locks on the request path. The caller
// holds s.mu.
func (s *Server) publish() {
	per := map[*upstream][]*faultState{}
	for _, f := range s.faults {
		per[f.up] = append(per[f.up], f)
	}
	for _, u := range s.upstreams {
		fs := per[u]
		u.faults.Store(&fs)
	}
}

// now returns the run time.
func (s *Server) now() time.Duration { return s.clock.Now() }
