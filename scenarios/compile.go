package scenarios

import (
	"encoding/json"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/halfopen/rehearse/gateway"
	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/observe"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/replay/capture"
)

// The scenario compiled into each component's options, one function per
// component. This is the one place where a scenario key becomes a
// component setting; the conductor (rehearsal) only wires the results
// together and adds what exists only at run time: listen addresses, the
// run ID. Each function expects a defaulted, validated scenario (Parse,
// Load and Resolve return one).

// CaptureOptions returns how the capture is read for the replay: the
// filter (its path regexp compiled) and the header rewrite. Incomplete
// requests are skipped, and secrets stay redacted: production credentials
// are never replayed; a scenario that needs a token sets it with
// replay.rewrite.set.
func (s *Scenario) CaptureOptions() (capture.Options, error) {
	opt := capture.Options{SkipIncomplete: true}
	if f := s.Replay.Filter; f != nil {
		opt.Filter.Methods = f.Methods
		opt.Filter.Host = f.Host
		opt.Filter.Port = uint16(f.Port)
		if f.Path != "" {
			re, err := regexp.Compile(f.Path)
			if err != nil {
				return opt, s.at("replay.filter.path", err)
			}
			opt.Filter.Path = re
		}
	}
	if rw := s.Replay.Rewrite; rw != nil {
		for _, k := range slices.Sorted(maps.Keys(rw.Set)) {
			opt.Rewrite.Set = append(opt.Rewrite.Set, capture.HeaderField{Name: k, Value: rw.Set[k]})
		}
		opt.Rewrite.Drop = rw.Drop
	}
	return opt, nil
}

// ReplayOptions returns the replayer's options for a run against target
// (the gateway's base URL, known once it listens) under runID.
func (s *Scenario) ReplayOptions(target *url.URL, runID string) replay.Options {
	r := s.Replay
	opts := replay.Options{
		Target:         target,
		Rate:           r.Rate,
		Duration:       r.Duration.D(),
		Once:           r.Once,
		Timing:         r.Timing,
		Speed:          r.Speed,
		Schedule:       r.Schedule,
		Seed:           *s.Seed,
		KeepHeaders:    r.KeepHeaders,
		MaxInFlight:    r.MaxInFlight,
		Deadline:       r.Deadline.D(),
		RunID:          runID,
		PreserveHost:   r.PreserveHost,
		AllowWrites:    r.AllowWrites || s.AllFake(),
		DeadlineHeader: r.DeadlineHeader,
	}
	if k := r.IdempotencyKeys; k != nil {
		opts.IdempotencyKeys = replay.IdempotencyKeys{Header: k.Header, Share: k.Share}
	}
	if id := r.Identity; id != nil {
		opts.Identity = replay.Identity{Body: id.Body, JSONPath: id.JSONPath, Template: id.Template}
	}
	for _, rt := range r.Routes {
		opts.Routes = append(opts.Routes, replay.RouteMap{Prefix: rt.Prefix, Pattern: rt.Path, Upstream: rt.Upstream, Route: rt.Route})
	}
	if f := s.Gateway.FastFail; f != nil {
		opts.FastFail = replay.FastFailRule{Disabled: f.Disabled, Statuses: f.Statuses, Header: f.Header, JSONField: f.JSONField, JSONValue: f.JSONValue}
	}
	return opts
}

// WarmupOptions returns the warm-up's replay options (ReplayOptions for
// its duration and rate, marked warm-up: replay.Options.Warmup), and
// false when the scenario has no warm-up. A warm-up rate given with
// timing original sends at that rate on the fixed grid.
func (s *Scenario) WarmupOptions(target *url.URL, runID string) (replay.Options, bool) {
	w := s.Replay.Warmup
	if w == nil || w.Duration <= 0 {
		return replay.Options{}, false
	}
	opts := s.ReplayOptions(target, runID)
	opts.Duration, opts.Once, opts.Warmup = w.Duration.D(), false, true
	if w.Rate > 0 {
		opts.Rate = w.Rate
		if opts.Timing == replay.TimingOriginal {
			opts.Timing, opts.Schedule = replay.TimingRate, replay.ScheduleFixed
		}
	}
	return opts, true
}

// InjectUpstreams returns the upstreams the harness serves. When the
// harness runs Redis for the fleet (redis: auto), redisAddr is its
// host:port, and the tcp upstream standing between the gateways and Redis
// (redis_upstream) relays to it.
func (s *Scenario) InjectUpstreams(redisAddr string) []inject.UpstreamConfig {
	ups := append([]inject.UpstreamConfig(nil), s.Upstreams...)
	if b := s.Gateway.Builtin; b != nil && b.RedisUpstream != "" && redisAddr != "" {
		for i := range ups {
			if ups[i].Name == b.RedisUpstream {
				ups[i].Target = redisAddr
			}
		}
	}
	return ups
}

// GatewayListen returns the address each built-in gateway instance
// listens on: the configured one for a single instance, a free loopback
// port for each instance of a fleet.
func (s *Scenario) GatewayListen() string {
	b := s.Gateway.Builtin
	if b == nil || b.Config.Listen == "" || b.Instances > 1 {
		return "127.0.0.1:0"
	}
	return b.Config.Listen
}

// GatewayCoord returns the fleet coordinator's URL: "" without Redis; the
// harness's own Redis (harnessRedis, its redis:// URL) for redis: auto or
// the configured URL; and, with redis_upstream, Redis reached through that
// relay (relayAddr, its host:port), so that faults on it partition the
// fleet from Redis.
func (s *Scenario) GatewayCoord(harnessRedis, relayAddr string) string {
	b := s.Gateway.Builtin
	switch {
	case b == nil || b.Redis == "":
		return ""
	case b.RedisUpstream != "":
		return "redis://" + relayAddr + "/0"
	case b.Redis == "auto":
		return harnessRedis
	}
	return b.Redis
}

// GatewayConfig returns the built-in gateway's configuration wired to the
// scenario's upstreams, each at upstreamURL(name) (tcp relays are not the
// gateway's HTTP upstreams; the model providers are of kind model), with
// coord as its coordinator. The zero fields keep their defaults.
func (s *Scenario) GatewayConfig(upstreamURL func(name string) string, coord string) gateway.Config {
	cfg := s.Gateway.Builtin.Config
	ups := make(map[string]gateway.UpstreamConfig, len(s.Upstreams))
	for _, u := range s.Upstreams {
		if u.Mode == inject.ModeTCP {
			continue
		}
		gu := cfg.Upstreams[u.Name]
		gu.URL = upstreamURL(u.Name)
		if u.Name == cfg.Primary || u.Name == cfg.Fallback {
			gu.Kind = gateway.KindModel
		}
		ups[u.Name] = gu
	}
	cfg.Upstreams = ups
	cfg.Coord = coord
	cfg.Listen = s.GatewayListen()
	return cfg
}

// HealthConfig returns the health canary's configuration for a gateway at
// target (its base URL), nil when none: the built-in gateway's /healthz by
// default.
func (s *Scenario) HealthConfig(target string) *observe.HealthConfig {
	h := s.Gateway.Health
	if h == nil {
		return nil
	}
	hc := *h
	if hc.URL == "" {
		hc.URL = strings.TrimRight(target, "/") + "/healthz"
	}
	return &hc
}

// ScrapeConfigs returns the metrics scrapes, given the built-in gateway
// instances' base URLs (none for a gateway given by URL). In a fleet each
// instance keeps its own breakers; the first instance's metrics stand for
// the fleet's view (the reports keep one state lane per upstream), while
// the upstream side still sees every instance's calls.
func (s *Scenario) ScrapeConfigs(instanceURLs []string) []observe.ScrapeConfig {
	m := s.Gateway.Metrics
	switch {
	case m == nil:
		return nil
	case m.URL != "" || m.PromQuery != nil:
		return []observe.ScrapeConfig{*m}
	case len(instanceURLs) == 0:
		return nil
	}
	mc := *m
	mc.URL = instanceURLs[0] + "/metrics"
	return []observe.ScrapeConfig{mc}
}

// LogConfig returns the gateway log observer's configuration, nil when
// none, with a relative path resolved against the scenario's directory.
func (s *Scenario) LogConfig() *observe.LogConfig {
	l := s.Gateway.Log
	if l == nil {
		return nil
	}
	lc := *l
	if lc.Path != "" && !filepath.IsAbs(lc.Path) {
		lc.Path = filepath.Join(s.Dir(), lc.Path)
	}
	return &lc
}

// ReadyCheck is how to tell that the gateway answers before the replay.
type ReadyCheck struct {
	// URL is polled until it answers.
	URL string
	// Timeout is how long to wait.
	Timeout time.Duration
	// Require2xx waits for a 2xx answer, not any answer.
	Require2xx bool
}

// ReadyCheck returns the readiness check for a gateway at target: the
// ready URL, else the health URL, else the gateway's root.
func (s *Scenario) ReadyCheck(target string) ReadyCheck {
	rc := ReadyCheck{URL: strings.TrimRight(target, "/") + "/"}
	if h := s.HealthConfig(target); h != nil {
		rc.URL = h.URL
	}
	if r := s.Gateway.Ready; r != nil {
		if r.URL != "" {
			rc.URL = r.URL
		}
		rc.Timeout, rc.Require2xx = r.Timeout.D(), r.Require2xx
	}
	if rc.Timeout <= 0 {
		rc.Timeout = DefaultReadyTimeout
	}
	return rc
}

// RunStart returns the scenario's part of the journal's first event, what
// the reports read: the name, file, seed, plan (rate, duration,
// upstreams), the compiled scenario itself (with the expectations) and its
// digest. The conductor adds the run ID, the clock, the target and the
// platform.
func (s *Scenario) RunStart() (*journal.RunStart, error) {
	cfg, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	digest, err := s.Digest()
	if err != nil {
		return nil, err
	}
	rs := &journal.RunStart{
		Scenario:       s.Name,
		ScenarioFile:   s.absFile(),
		Seed:           *s.Seed,
		Duration:       s.Replay.Duration.D(),
		Upstreams:      s.upstreamNames(),
		Config:         cfg,
		ScenarioDigest: digest,
	}
	if s.Replay.Timing == replay.TimingRate {
		rs.Rate = s.Replay.Rate
	}
	return rs, nil
}

// absFile is the scenario file's absolute path, "" for a built-in drill.
func (s *Scenario) absFile() string {
	if s.Builtin != "" {
		return ""
	}
	if abs, err := filepath.Abs(s.File); err == nil {
		return abs
	}
	return s.File
}
