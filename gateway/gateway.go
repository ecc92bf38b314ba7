package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/journal"
)

// Header names of the gateway's conventions (shared with replay and
// inject).
const (
	HeaderSeq          = "X-Rehearse-Seq"
	HeaderRun          = "X-Rehearse-Run"
	HeaderProbe        = "X-Breaker-Probe"
	HeaderBreakerState = "X-Breaker-State"
	HeaderHealthCheck  = "X-Health-Check"
	// ProbeTag is the value of HeaderProbe on half-open probes.
	ProbeTag = "half-open"
	// ProbeUserAgent is the User-Agent of half-open probes.
	ProbeUserAgent = "rehearse-gateway-probe/1"
	// CanaryUserAgent is the User-Agent of the synthetic canary.
	CanaryUserAgent = "rehearse-gateway-canary/1"
)

// Option configures a Gateway.
type Option func(*options)

type options struct {
	rec      journal.Recorder
	clock    Clock
	reg      prometheus.Registerer
	logger   *slog.Logger
	instance string
	seed     *uint64
}

// WithRecorder makes the gateway record a breaker.transition event for
// every state change (white-box ground truth for the harness's tests).
func WithRecorder(r journal.Recorder) Option { return func(o *options) { o.rec = r } }

// WithClock sets the breakers' clock (default SystemClock).
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

// WithRegisterer also registers the gateway's collectors on r (they are
// always registered on the gateway's own registry, served at /metrics).
func WithRegisterer(r prometheus.Registerer) Option { return func(o *options) { o.reg = r } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithInstance names this gateway instance (default hostname-pid): it
// appears in Via headers, logs, journal events and fleet leases.
func WithInstance(id string) Option { return func(o *options) { o.instance = id } }

// WithSeed seeds the jitter of probes and retry backoff, for reproducible
// tests (default: random).
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = &seed } }

// dependency is one upstream with its breaker.
type dependency struct {
	name    string
	cfg     UpstreamConfig
	base    *url.URL
	region  string
	key     string // breaker key: name|region|fingerprint
	cred    string
	breaker *Breaker
	labels  prometheus.Labels

	mu           sync.Mutex
	canary       canaryResult
	disagreeFrom time.Time
	// lastLocalProbe is when this process last probed without the fleet
	// lease (coordinator unreachable): the fail-safe spacing outlives the
	// breaker's own state changes.
	lastLocalProbe time.Time
}

// Gateway is the reference gateway. Create it with New, serve it with
// Serve, stop it with Shutdown or Close.
type Gateway struct {
	cfg      Config
	opts     options
	log      *slog.Logger
	deps     map[string]*dependency
	names    []string
	m        *metrics
	registry *prometheus.Registry
	client   *http.Client // ordinary calls: keep-alive pool
	probes   *http.Client // probes: a fresh connection each (see docs: workers)
	canaryC  *http.Client
	coord    coordinator
	mux      *http.ServeMux

	rndMu sync.Mutex
	rnd   *rand.Rand

	coordMu   sync.Mutex
	coordDown bool

	srvMu   sync.Mutex
	servers []*http.Server
	stop    context.CancelFunc
	ctx     context.Context
	wg      sync.WaitGroup
	closed  bool
}

// New builds a gateway from a validated configuration. It does not listen:
// call Serve with a listener. An invalid configuration wraps
// rehearse.ErrInvalid. An unreachable coordinator is not an error: the
// gateway starts in its fail-safe mode and says so.
func New(cfg Config, opts ...Option) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	o := options{rec: journal.Discard, clock: SystemClock{}, logger: slog.Default()}
	for _, f := range opts {
		f(&o)
	}
	if o.instance == "" {
		host, _ := os.Hostname()
		o.instance = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	seed := rand.Uint64()
	if o.seed != nil {
		seed = *o.seed
	}
	g := &Gateway{
		cfg:      cfg,
		opts:     o,
		log:      o.logger.With("component", "gateway", "instance", o.instance),
		deps:     map[string]*dependency{},
		m:        newMetrics(cfg.Env),
		registry: prometheus.NewRegistry(),
		rnd:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
	g.ctx, g.stop = context.WithCancel(context.Background())

	g.client = &http.Client{Transport: newTransport(false), CheckRedirect: noRedirect}
	g.probes = &http.Client{Transport: newTransport(true), CheckRedirect: noRedirect}
	g.canaryC = &http.Client{Transport: newTransport(true), CheckRedirect: noRedirect}

	for name, u := range cfg.Upstreams {
		base, _ := url.Parse(u.URL) // validated
		region := u.Region
		if region == "" {
			region = cfg.Region
		}
		d := &dependency{
			name:   name,
			cfg:    u,
			base:   base,
			region: region,
			cred:   u.credential(),
			labels: prometheus.Labels{"dependency": name, "region": region, "env": cfg.Env},
		}
		if u.Timeout <= 0 {
			d.cfg.Timeout = rehearse.Duration(DefaultUpstreamTimeout)
			if u.Kind == KindModel {
				d.cfg.Timeout = rehearse.Duration(DefaultModelTimeout)
			}
		}
		if u.HeaderTimeout <= 0 || u.HeaderTimeout > d.cfg.Timeout {
			d.cfg.HeaderTimeout = d.cfg.Timeout
		}
		d.key = name + "|" + region + "|" + u.Fingerprint()
		d.breaker = NewBreaker(cfg.Breaker,
			WithBreakerClock(o.clock),
			WithJitterSource(rand.New(rand.NewPCG(seed, uint64(len(g.deps))+1))),
			WithTransitionFunc(func(t Transition) { g.transition(d, t) }))
		g.m.state.With(d.labels).Set(float64(Closed))
		g.deps[name] = d
		g.names = append(g.names, name)
	}
	sort.Strings(g.names)

	if cfg.Coord != "" {
		rc, err := newRedisCoord(cfg.Coord, cfg.CoordTimeout.D())
		if err != nil {
			return nil, err
		}
		g.coord = rc
		g.m.coordUp.Set(1)
	}
	if err := g.m.register(g.registry, g.coord != nil); err != nil {
		return nil, fmt.Errorf("gateway metrics: %w", err)
	}
	if o.reg != nil {
		if err := g.m.register(o.reg, g.coord != nil); err != nil {
			return nil, fmt.Errorf("gateway metrics: %w", err)
		}
	}

	g.mux = http.NewServeMux()
	g.mux.HandleFunc("/tools/{name}", g.serveTool)
	g.mux.HandleFunc("/tools/{name}/{rest...}", g.serveTool)
	g.mux.HandleFunc("/v1/chat/completions", g.serveChat)
	g.mux.Handle("GET /metrics", promhttp.HandlerFor(g.registry, promhttp.HandlerOpts{}))
	g.mux.HandleFunc("GET /healthz", g.serveHealth)
	g.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, apiError{Code: CodeNotFound, Message: "no route for " + r.URL.Path})
	})
	return g, nil
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func newTransport(fresh bool) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // upstreams are addressed directly
	t.MaxIdleConnsPerHost = 64
	t.DisableKeepAlives = fresh
	t.DisableCompression = true // pass bodies through untouched
	return t
}

// Instance returns the gateway's instance name.
func (g *Gateway) Instance() string { return g.opts.instance }

// Registry returns the gateway's own metrics registry (served at /metrics).
func (g *Gateway) Registry() *prometheus.Registry { return g.registry }

// Breaker returns the breaker of the named upstream, or nil.
func (g *Gateway) Breaker(name string) *Breaker {
	if d := g.deps[name]; d != nil {
		return d.breaker
	}
	return nil
}

// Handler returns the gateway's HTTP handler.
func (g *Gateway) Handler() http.Handler { return g.mux }

// Serve serves the gateway on ln until Shutdown or Close, and runs the
// canary meanwhile. It returns nil after a Shutdown or Close.
func (g *Gateway) Serve(ln net.Listener) error {
	srv := &http.Server{
		Handler:           g.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
	}
	g.srvMu.Lock()
	if g.closed {
		g.srvMu.Unlock()
		return http.ErrServerClosed
	}
	first := len(g.servers) == 0
	g.servers = append(g.servers, srv)
	g.srvMu.Unlock()
	if first {
		g.startBackground()
	}
	g.log.Info("gateway serving", "addr", ln.Addr().String(), "upstreams", g.names, "coord", redactURL(g.cfg.Coord))
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("%w: gateway: %w", rehearse.ErrEnvironment, err)
}

// Run listens on cfg.Listen, serves until ctx is done, then shuts down
// gracefully. A taken port wraps rehearse.ErrEnvironment. ready, if not
// nil, is called with the bound address once listening.
func (g *Gateway) Run(ctx context.Context, ready func(addr net.Addr)) error {
	ln, err := rehearse.Listen(g.cfg.Listen)
	if err != nil {
		return fmt.Errorf("%w: gateway listen %s: %w", rehearse.ErrEnvironment, g.cfg.Listen, err)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(ln) }()
	select {
	case err := <-errc:
		_ = g.Close()
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = g.Shutdown(sctx)
		<-errc
		return nil
	}
}

func (g *Gateway) startBackground() {
	if g.canaryOn() || g.coord != nil {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.canaryLoop(g.ctx)
		}()
	}
}

// Shutdown stops accepting requests, waits for those in flight (until ctx
// is done), stops the canary and the breakers' timers, and closes the
// coordinator.
func (g *Gateway) Shutdown(ctx context.Context) error {
	return g.stopServers(func(s *http.Server) error { return s.Shutdown(ctx) })
}

// Close stops the gateway at once, dropping requests in flight.
func (g *Gateway) Close() error { return g.stopServers((*http.Server).Close) }

// stopServers marks the gateway closed, stops each server with stop, then
// releases the breakers, the canary and the coordinator.
func (g *Gateway) stopServers(stop func(*http.Server) error) error {
	g.srvMu.Lock()
	g.closed = true
	servers := g.servers
	g.srvMu.Unlock()
	var errs []error
	for _, s := range servers {
		if err := stop(s); err != nil {
			errs = append(errs, err)
		}
	}
	g.release()
	return errors.Join(errs...)
}

func (g *Gateway) release() {
	g.stop()
	g.wg.Wait()
	for _, d := range g.deps {
		d.breaker.Close()
	}
	g.client.CloseIdleConnections()
	g.canaryC.CloseIdleConnections()
	if g.coord != nil {
		_ = g.coord.close()
	}
}

// transition publishes a breaker's state change: metrics, journal, log.
// It runs with the breaker's lock held.
func (g *Gateway) transition(d *dependency, t Transition) {
	g.m.state.With(d.labels).Set(float64(t.To))
	g.m.transitions.With(prometheus.Labels{
		"dependency": d.name, "region": d.region, "env": g.cfg.Env,
		"from": t.From.String(), "to": t.To.String(),
	}).Inc()
	g.opts.rec.Record(&journal.BreakerTransition{
		Gateway:    g.opts.instance,
		Dependency: d.name,
		From:       t.From.String(),
		To:         t.To.String(),
		Reason:     t.Reason,
	})
	attrs := []any{"dependency", d.name, "from", t.From.String(), "to", t.To.String(), "reason", t.Reason}
	if t.To == Open {
		attrs = append(attrs, "open_for", t.OpenFor.String())
	}
	g.log.Info("breaker transition", attrs...)
}

// jitter returns a uniform random duration in [0, d).
func (g *Gateway) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	g.rndMu.Lock()
	defer g.rndMu.Unlock()
	return time.Duration(g.rnd.Int64N(int64(d)))
}

// admit asks the dependency's breaker for a call and, for a half-open
// probe in fleet mode, the fleet's probe lease. The caller counts
// rejections (a chat call may still go to the fallback). It returns a release func
// to call when the call is over (it shortens the lease to the rest of the
// probe spacing).
func (g *Gateway) admit(ctx context.Context, d *dependency) (*Ticket, *Rejection, func()) {
	t, rej := d.breaker.Allow()
	if rej != nil {
		return nil, rej, nil
	}
	if !t.Probe || g.coord == nil {
		return t, nil, func() {}
	}
	interval := g.cfg.Breaker.ProbeInterval.D()
	hold := t.ProbeDeadline + d.cfg.Timeout.D() + interval
	cctx, cancel := context.WithTimeout(ctx, g.cfg.CoordTimeout.D())
	token, ok, err := g.coord.acquire(cctx, d.key, hold)
	cancel()
	if err != nil {
		// Fail safe: probe locally, but space this process's probes by
		// coord_fallback_interval instead of probe_interval.
		g.coordFailed(err)
		spacing := g.cfg.CoordFallbackInterval.D()
		now := time.Now()
		d.mu.Lock()
		wait := d.lastLocalProbe.Add(spacing).Sub(now)
		if wait <= 0 {
			d.lastLocalProbe = now
		}
		d.mu.Unlock()
		if wait > 0 {
			t.Cancel()
			return nil, &Rejection{State: HalfOpen, Reason: ReasonProbeSpacing, RetryAfter: wait}, nil
		}
		return t, nil, func() {}
	}
	g.coordOK()
	if !ok {
		t.Cancel()
		g.m.coordDenied.With(d.labels).Inc()
		return nil, &Rejection{State: HalfOpen, Reason: ReasonProbeInFlight, RetryAfter: interval}, nil
	}
	start := time.Now()
	return t, nil, func() {
		keep := interval - time.Since(start)
		if keep > 0 {
			keep = (keep + time.Millisecond - 1).Truncate(time.Millisecond)
		}
		rctx, cancel := context.WithTimeout(context.Background(), g.cfg.CoordTimeout.D())
		defer cancel()
		if err := g.coord.release(rctx, d.key, token, keep); err != nil {
			g.coordFailed(err)
		}
	}
}

func (g *Gateway) coordFailed(err error) {
	g.m.coordErrors.Inc()
	g.m.coordUp.Set(0)
	g.coordMu.Lock()
	was := g.coordDown
	g.coordDown = true
	g.coordMu.Unlock()
	if !was {
		g.log.Warn("fleet coordinator unreachable: probing locally with wider spacing (fail-safe)",
			"coord", redactURL(g.cfg.Coord), "probe_spacing", g.cfg.CoordFallbackInterval.String(), "err", err)
	}
}

func (g *Gateway) coordOK() {
	g.m.coordUp.Set(1)
	g.coordMu.Lock()
	was := g.coordDown
	g.coordDown = false
	g.coordMu.Unlock()
	if was {
		g.log.Info("fleet coordinator reachable again: probe leases restored", "coord", redactURL(g.cfg.Coord))
	}
}

// redactURL drops user info and credential parameters from a URL for logs.
func redactURL(s string) string { return redact.URL(s) }

// sanitizeName keeps a log value short and printable.
func sanitizeName(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.ToValidUTF8(s, "?")
}
