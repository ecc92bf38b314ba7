package scenarios

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/observe"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/replay/capture"
)

// Defaults of a scenario, in one place. The replay defaults are the
// replay package's: 10 requests per second for five minutes.
const (
	DefaultSeed         int64 = 1
	DefaultCapture            = "builtin:agent-gateway"
	DefaultRate               = replay.DefaultRate
	DefaultDuration           = replay.DefaultDuration
	DefaultDeadline           = replay.DefaultDeadline
	DefaultReadyTimeout       = 5 * time.Second
	// DefaultPrimary and DefaultFallback are the model providers of the
	// built-in gateway when its config names none and upstreams of these
	// names exist.
	DefaultPrimary  = "llm-primary"
	DefaultFallback = "llm-fallback"
)

// DefaultUpstreams are the fake upstreams of a scenario on the built-in
// gateway that lists none: the tools and model providers the bundled
// capture calls.
var DefaultUpstreams = []string{"search", "weather", "vectors", DefaultPrimary, DefaultFallback}

// ApplyDefaults fills every field left out with its default. It is
// idempotent; Parse calls it, code that builds a Scenario calls it too.
func (s *Scenario) ApplyDefaults() {
	if s.Version == 0 {
		s.Version = Version
	}
	if s.Name == "" {
		switch {
		case s.Builtin != "":
			s.Name = s.Builtin
		case s.File != "" && s.File != "-":
			s.Name = strings.TrimSuffix(filepath.Base(s.File), filepath.Ext(s.File))
		default:
			s.Name = "scenario"
		}
	}
	if s.Seed == nil {
		seed := DefaultSeed
		s.Seed = &seed
	}
	g := &s.Gateway
	if g.URL == "" && g.Builtin == nil {
		g.Builtin = &BuiltinSpec{}
	}
	if b := g.Builtin; b != nil {
		if b.Instances == 0 {
			b.Instances = 1
		}
		// The values in force, so that the journal's copy of the
		// scenario says what the gateway ran with.
		b.Config = b.Config.WithDefaults()
		if g.Metrics == nil {
			g.Metrics = &observe.ScrapeConfig{Preset: "reference"}
		}
		if g.Health == nil {
			g.Health = &observe.HealthConfig{}
		}
	}
	if g.Ready == nil {
		g.Ready = &ReadySpec{}
	}
	if g.Ready.Timeout == 0 {
		g.Ready.Timeout = rehearse.Duration(DefaultReadyTimeout)
	}

	r := &s.Replay
	if r.Capture == "" {
		r.Capture = DefaultCapture
	}
	if r.Timing == "" {
		r.Timing = replay.TimingRate
	}
	if r.Rate == 0 {
		r.Rate = DefaultRate
	}
	if r.Schedule == "" && r.Timing == replay.TimingRate {
		// Written out, so that the journal's copy of the scenario says
		// which schedule the sends kept.
		r.Schedule = replay.ScheduleFixed
	}
	if r.Duration == 0 && !r.Once {
		r.Duration = rehearse.Duration(DefaultDuration)
	}
	if r.Deadline == 0 {
		r.Deadline = rehearse.Duration(DefaultDeadline)
	}
	if r.MaxInFlight == 0 {
		r.MaxInFlight = replay.DefaultMaxInFlight
	}

	if len(s.Upstreams) == 0 && g.Builtin != nil {
		for _, name := range DefaultUpstreams {
			s.Upstreams = append(s.Upstreams, inject.UpstreamConfig{Name: name})
		}
	}
	if b := g.Builtin; b != nil {
		if b.Config.Primary == "" && s.hasUpstream(DefaultPrimary) {
			b.Config.Primary = DefaultPrimary
		}
		if b.Config.Fallback == "" && s.hasUpstream(DefaultFallback) {
			b.Config.Fallback = DefaultFallback
		}
	}
	if len(r.Routes) == 0 {
		r.Routes = s.defaultRoutes()
	}
}

// defaultRoutes maps /tools/<name> to each upstream and the chat route to
// the primary model provider: the routes of the built-in gateway.
func (s *Scenario) defaultRoutes() []RouteSpec {
	var routes []RouteSpec
	primary := ""
	if b := s.Gateway.Builtin; b != nil {
		primary = b.Config.Primary
	} else if s.hasUpstream(DefaultPrimary) {
		primary = DefaultPrimary
	}
	for _, u := range s.Upstreams {
		if u.Mode == inject.ModeTCP {
			continue
		}
		routes = append(routes, RouteSpec{Prefix: "/tools/" + u.Name, Upstream: u.Name, Route: "/tools/" + u.Name})
	}
	if primary != "" {
		routes = append(routes, RouteSpec{Prefix: "/v1/chat/completions", Upstream: primary, Route: "/v1/chat/completions"})
	}
	return routes
}

func (s *Scenario) hasUpstream(name string) bool {
	return slices.ContainsFunc(s.Upstreams, func(u inject.UpstreamConfig) bool { return u.Name == name })
}

// upstream returns the named upstream's config.
func (s *Scenario) upstream(name string) (inject.UpstreamConfig, bool) {
	for _, u := range s.Upstreams {
		if u.Name == name {
			return u, true
		}
	}
	return inject.UpstreamConfig{}, false
}

// AllFake reports whether every upstream is a fake served by the harness,
// which makes replaying writes safe: nothing real receives them.
func (s *Scenario) AllFake() bool {
	for _, u := range s.Upstreams {
		if b := s.Gateway.Builtin; b != nil && b.Redis == "auto" && u.Name == b.RedisUpstream {
			continue // relays to the harness's own Redis
		}
		if u.Mode != "" && u.Mode != inject.ModeFake {
			return false
		}
	}
	return true
}

// Validate checks the defaulted scenario as a whole: references between
// sections, ranges, and each package's own rules. All problems found are
// returned together.
func (s *Scenario) Validate() error {
	var errs rehearse.ConfigErrors
	add := func(path string, err error) {
		// A section's own validation may report several fields at once.
		if es, ok := errors.AsType[rehearse.ConfigErrors](err); ok {
			for _, e := range es {
				errs = append(errs, s.at(path, e))
			}
			return
		}
		errs = append(errs, s.at(path, err))
	}

	if err := rehearse.CheckName(s.Name); err != nil {
		add("name", err)
	}
	if s.Version != Version {
		add("version", fmt.Errorf("unsupported version %d; this rehearse reads version %d", s.Version, Version))
	}
	g := s.Gateway
	switch {
	case g.URL != "" && g.Builtin != nil:
		add("gateway", errors.New("set either url (your gateway) or builtin (the reference gateway), not both"))
	case g.URL != "":
		if _, err := rehearse.ParseHTTPURL(g.URL); err != nil {
			add("gateway.url", err)
		}
	}
	if b := g.Builtin; b != nil {
		if b.Instances < 1 {
			add("gateway.builtin.instances", fmt.Errorf("want at least 1, got %d", b.Instances))
		}
		if b.Instances > 16 {
			add("gateway.builtin.instances", fmt.Errorf("at most 16 instances, got %d", b.Instances))
		}
		switch {
		case b.Redis == "", b.Redis == "auto":
		case strings.HasPrefix(b.Redis, "redis://"):
		default:
			add("gateway.builtin.redis", fmt.Errorf("want auto or a redis:// URL, got %q", b.Redis))
		}
		if b.Instances > 1 && b.Redis == "" {
			add("gateway.builtin.instances", fmt.Errorf("%d instances share half-open probe leases through Redis: set redis: auto (or a redis:// URL)", b.Instances))
		}
		if b.RedisUpstream != "" {
			u, ok := s.upstream(b.RedisUpstream)
			switch {
			case !ok:
				add("gateway.builtin.redis_upstream", fmt.Errorf("no upstream named %q", b.RedisUpstream))
			case u.Mode != inject.ModeTCP:
				add("gateway.builtin.redis_upstream", fmt.Errorf("upstream %q must have mode: tcp to stand between the gateways and Redis", b.RedisUpstream))
			case b.Redis == "":
				add("gateway.builtin.redis_upstream", errors.New("needs redis: auto or a redis:// URL"))
			}
		}
		if err := s.GatewayConfig(placeholderURL, "").Validate(); err != nil {
			add(s.gatewayErrorPath(err), err)
		}
		for name := range b.Config.Upstreams {
			if !s.hasUpstream(name) {
				add("gateway.builtin.config.upstreams."+name, fmt.Errorf("no upstream named %q in upstreams", name))
			}
		}
	}
	if m := g.Metrics; m != nil && g.Builtin == nil && m.URL == "" && m.PromQuery == nil {
		add("gateway.metrics.url", errors.New("required for a gateway given by url (e.g. http://127.0.0.1:8080/metrics)"))
	}
	if g.Log != nil {
		if err := g.Log.Validate(); err != nil {
			add("gateway.log", err)
		}
	}
	if h := g.Health; h != nil && g.Builtin == nil && h.URL == "" {
		add("gateway.health.url", errors.New("required for a gateway given by url (e.g. http://127.0.0.1:8080/healthz)"))
	}
	if g.Ready != nil && g.Ready.URL != "" {
		if _, err := rehearse.ParseHTTPURL(g.Ready.URL); err != nil {
			add("gateway.ready.url", err)
		}
	}

	r := s.Replay
	if !strings.HasPrefix(r.Capture, "builtin:") {
		if fi, err := os.Stat(s.CapturePath()); err != nil {
			add("replay.capture", fmt.Errorf("cannot read capture %s: %v", s.CapturePath(), errors.Unwrap(err)))
		} else if err := capture.NotRegular(fi); err != nil {
			add("replay.capture", fmt.Errorf("capture %w", err))
		}
	} else if _, err := OpenBuiltinCapture(strings.TrimPrefix(r.Capture, "builtin:")); err != nil {
		add("replay.capture", err)
	}
	switch r.Timing {
	case replay.TimingRate:
		if r.Rate < 0 || r.Rate > 100000 {
			add("replay.rate", fmt.Errorf("want a rate between 0 and 100000 requests per second, got %g", r.Rate))
		}
	case replay.TimingOriginal:
		if r.Speed < 0 {
			add("replay.speed", fmt.Errorf("must not be negative, got %g", r.Speed))
		}
		if r.Schedule != "" {
			add("replay.schedule", fmt.Errorf("applies to timing rate; timing original keeps the capture's own spacing"))
		}
	default:
		add("replay.timing", fmt.Errorf("unknown timing %q; allowed: rate, original", r.Timing))
	}
	if w := r.Warmup; w != nil {
		if w.Duration <= 0 {
			add("replay.warmup.duration", fmt.Errorf("required: how long the warm-up sends, above zero (e.g. 30s)"))
		}
		if w.Rate < 0 || w.Rate > 100000 {
			add("replay.warmup.rate", fmt.Errorf("want a rate between 0 and 100000 requests per second, got %g", w.Rate))
		}
	}
	if r.Schedule != "" && !slices.Contains(replay.Schedules(), r.Schedule) {
		add("replay.schedule", fmt.Errorf("unknown schedule %q; allowed: %s", r.Schedule, strings.Join(replay.Schedules(), ", ")))
	}
	if len(r.KeepHeaders) > replay.MaxKeepHeaders {
		add("replay.keep_headers", fmt.Errorf("%d headers; at most %d", len(r.KeepHeaders), replay.MaxKeepHeaders))
	}
	keep := map[string]bool{}
	for i, h := range r.KeepHeaders {
		p := fmt.Sprintf("replay.keep_headers[%d]", i)
		if err := replay.CheckKeepHeader(h); err != nil {
			add(p, fmt.Errorf("%q: %w", h, err))
		} else if c := http.CanonicalHeaderKey(h); keep[c] {
			add(p, fmt.Errorf("%q is named twice", h))
		} else {
			keep[c] = true
		}
	}
	if k := r.IdempotencyKeys; k != nil && (k.Share < 0 || k.Share > 1) {
		add("replay.idempotency_keys.share", fmt.Errorf("must be a fraction between 0 and 1, got %g", k.Share))
	}
	if id := r.Identity; id != nil {
		switch id.Body {
		case "", replay.IdentityAuto, replay.IdentityOff:
		default:
			add("replay.identity.body", fmt.Errorf("unknown mode %q; allowed: auto, off", id.Body))
		}
		if id.JSONPath != "" && id.Template != "" {
			add("replay.identity", errors.New("set at most one of json_path and template"))
		} else if id.Body == replay.IdentityOff && (id.JSONPath != "" || id.Template != "") {
			add("replay.identity.body", errors.New("off stamps nothing: remove it to use json_path or template"))
		}
		if id.JSONPath != "" && slices.Contains(strings.Split(id.JSONPath, "."), "") {
			add("replay.identity.json_path", fmt.Errorf("%q has an empty element; want e.g. input.-1.text", id.JSONPath))
		}
	}
	if r.MaxInFlight < 0 {
		add("replay.max_in_flight", fmt.Errorf("must not be negative, got %d", r.MaxInFlight))
	}
	if f := r.Filter; f != nil {
		if f.Path != "" {
			if _, err := regexp.Compile(f.Path); err != nil {
				add("replay.filter.path", fmt.Errorf("invalid regexp: %v", err))
			}
		}
		if f.Port < 0 || f.Port > 65535 {
			add("replay.filter.port", fmt.Errorf("want 1-65535, got %d", f.Port))
		}
	}
	for i, rt := range r.Routes {
		p := fmt.Sprintf("replay.routes[%d]", i)
		if (rt.Prefix == "") == (rt.Path == "") {
			add(p, errors.New("set exactly one of prefix and path"))
		}
		if rt.Path != "" {
			if _, err := regexp.Compile(rt.Path); err != nil {
				add(p+".path", fmt.Errorf("invalid regexp: %v", err))
			}
		}
		if !s.hasUpstream(rt.Upstream) {
			add(p+".upstream", fmt.Errorf("no upstream named %q; upstreams: %s", rt.Upstream, strings.Join(s.upstreamNames(), ", ")))
		}
	}

	seen := map[string]bool{}
	for i, u := range s.Upstreams {
		p := fmt.Sprintf("upstreams[%d]", i)
		if u.Name == "" {
			add(p+".name", errors.New("missing: every upstream needs a name"))
		} else if seen[u.Name] {
			add(p+".name", fmt.Errorf("duplicate upstream name %q", u.Name))
		}
		seen[u.Name] = true
	}
	faultNames := map[string]bool{}
	for i, f := range s.Faults {
		p := fmt.Sprintf("faults[%d]", i)
		if !s.hasUpstream(f.Upstream) {
			add(p+".upstream", fmt.Errorf("no upstream named %q; upstreams: %s", f.Upstream, strings.Join(s.upstreamNames(), ", ")))
		}
		if f.Name != "" {
			if faultNames[f.Name] {
				add(p+".name", fmt.Errorf("duplicate fault name %q", f.Name))
			}
			faultNames[f.Name] = true
		}
		if d := r.Duration.D(); d > 0 && f.At.D() >= d {
			add(p+".at", fmt.Errorf("the fault starts at %s but the replay ends at %s", f.At, r.Duration))
		}
	}
	if len(errs) == 0 {
		// The upstream and fault sections are inject's own config: let it
		// check everything else it knows (modes, targets, params).
		if _, err := inject.New(s.Upstreams, s.Faults, inject.WithRegisterer(prometheus.NewRegistry())); err != nil {
			add("", err)
		}
	}
	if err := s.Report.Validate(); err != nil {
		add("report", err)
	}
	if e := s.Expectations; e != nil {
		if err := e.Validate(); err != nil {
			add("expectations", err)
		}
		for i, name := range e.Upstreams {
			if !s.hasUpstream(name) {
				add(fmt.Sprintf("expectations.upstreams[%d]", i), fmt.Errorf("no upstream named %q", name))
			}
		}
		if h := e.HealthyUnaffected; h != nil {
			for i, name := range h.Names {
				if !s.hasUpstream(name) {
					add(fmt.Sprintf("expectations.healthy_unaffected[%d]", i), fmt.Errorf("no upstream named %q", name))
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func (s *Scenario) upstreamNames() []string {
	out := make([]string, len(s.Upstreams))
	for i, u := range s.Upstreams {
		out[i] = u.Name
	}
	return out
}

// CapturePath returns the capture file's path resolved against the
// scenario's directory ("" for a built-in capture).
func (s *Scenario) CapturePath() string {
	c := s.Replay.Capture
	if strings.HasPrefix(c, "builtin:") {
		return ""
	}
	if c == "-" || filepath.IsAbs(c) {
		return c
	}
	return filepath.Join(s.Dir(), c)
}

// OpenCapture opens the scenario's capture, built-in or file.
func (s *Scenario) OpenCapture() (io.ReadCloser, string, error) {
	c := s.Replay.Capture
	if name, ok := strings.CutPrefix(c, "builtin:"); ok {
		rc, err := OpenBuiltinCapture(name)
		return rc, c, err
	}
	p := s.CapturePath()
	f, err := capture.OpenFile(p)
	if err != nil {
		return nil, p, fmt.Errorf("%w: capture: %w", rehearse.ErrInvalid, err)
	}
	return f, p, nil
}

// gatewayErrorPath is where a built-in gateway config error belongs: under
// gateway.builtin.config, except for an upstream the file does not
// configure there (the gateway's upstreams are the scenario's): then the
// error is about that upstream's entry in upstreams.
func (s *Scenario) gatewayErrorPath(err error) string {
	const section = "gateway.builtin.config"
	ce, ok := errors.AsType[*rehearse.ConfigError](err)
	if !ok {
		return section
	}
	name, ok := strings.CutPrefix(ce.Path, "upstreams.")
	if !ok {
		return section
	}
	name, _, _ = strings.Cut(name, ".")
	if _, inFile := s.positions[section+".upstreams."+name]; inFile {
		return section
	}
	for i, u := range s.Upstreams {
		if u.Name == name {
			ce.Path = "" // the message names the upstream
			return fmt.Sprintf("upstreams[%d].name", i)
		}
	}
	return section
}

// placeholderURL stands for an upstream's address in validation; the
// conductor wires the real addresses.
func placeholderURL(string) string { return "http://127.0.0.1:1" }
