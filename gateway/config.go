package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/internal/yamlstrict"
)

// Upstream kinds.
const (
	KindTool  = "tool"
	KindModel = "model"
)

// Default values of the configuration: what a zero field means. The
// command's flags show them as their defaults; Config.WithDefaults fills
// them in.
const (
	DefaultListen                = "127.0.0.1:0"
	DefaultEnv                   = "rehearsal"
	DefaultRegion                = "local"
	DefaultUpstreamTimeout       = 30 * time.Second
	DefaultModelTimeout          = 2 * time.Minute
	DefaultWindow                = 30 * time.Second
	DefaultMinSamples            = 20
	DefaultFailureRatio          = 0.6
	DefaultConsecutiveFailures   = 5
	DefaultCooldown              = 5 * time.Second
	DefaultCooldownMax           = 60 * time.Second
	DefaultProbeInterval         = 250 * time.Millisecond
	DefaultProbeJitter           = 50 * time.Millisecond
	DefaultSuccessesToClose      = 2
	DefaultProbeDeadlineFactor   = 1.4
	DefaultProbeDeadlineMin      = 100 * time.Millisecond
	DefaultProbeDeadlineMax      = 5 * time.Second
	DefaultRetryAfterMax         = 10 * time.Minute
	DefaultRetryMaxAttempts      = 3
	DefaultRetryBaseDelay        = 50 * time.Millisecond
	DefaultRetryMaxDelay         = time.Second
	DefaultDeadlineReserve       = 50 * time.Millisecond
	DefaultDeadlineHeader        = "X-Request-Timeout-Ms"
	DefaultMaxBody               = 4 << 20
	DefaultCanaryInterval        = 5 * time.Second
	DefaultCanaryTimeout         = 2 * time.Second
	DefaultCoordFallbackInterval = time.Second
	DefaultCoordTimeout          = 200 * time.Millisecond
	DefaultCanaryPath            = "/healthz"
)

// Config is the reference gateway's configuration: the YAML file of
// `rehearse gateway --config`, and the `gateway.builtin.config:` section of
// a scenario. Keys are snake_case; durations are strings ("250ms").
//
// Like every config type of the harness, its zero value is the reference
// configuration: a zero field means its Default… value (WithDefaults fills
// them in). The few settings whose explicit zero means something else than
// "the default" (off, none) are pointers, nil meaning the default.
type Config struct {
	// Mode is ModeReference ("" or "reference", the default: the whole
	// resilience policy) or ModeNaive (fixed 200 ms retries ×3 of every
	// call, no deadline, no breaker: the gateway the practice warns
	// about, for drills that show the difference).
	Mode string `yaml:"mode" json:"mode,omitempty"`
	// Listen is the address Serve's caller should listen on (the command
	// uses it; Serve takes a listener). Default 127.0.0.1:0.
	Listen string `yaml:"listen" json:"listen"`
	// Upstreams maps an upstream's name to where and how to reach it.
	Upstreams map[string]UpstreamConfig `yaml:"upstreams" json:"upstreams"`
	// Primary and Fallback name the model providers (upstreams of kind
	// model) of POST /v1/chat/completions. Empty Primary disables the
	// route; empty Fallback means no fallback.
	Primary  string `yaml:"primary" json:"primary,omitempty"`
	Fallback string `yaml:"fallback" json:"fallback,omitempty"`
	// FallbackOnError sends a chat request to the fallback provider when
	// the primary failed before any byte reached the client (5xx, reset,
	// timeout), not only when the primary's breaker is open. nil means
	// true.
	FallbackOnError *bool `yaml:"fallback_on_error" json:"fallback_on_error"`
	// Breaker holds the circuit breaker parameters, shared by every
	// dependency.
	Breaker BreakerConfig `yaml:"breaker" json:"breaker"`
	// Retry bounds the retries of idempotent calls.
	Retry RetryConfig `yaml:"retry" json:"retry"`
	// Deadline is how the request's deadline is shared with the client
	// and the upstream.
	Deadline DeadlineConfig `yaml:"deadline" json:"deadline"`
	// Canary is the synthetic health check behind /healthz.
	Canary CanaryConfig `yaml:"canary" json:"canary"`
	// Coord is "" (no fleet coordination) or redis://host:port/db: the
	// Redis that serialises half-open probes across a fleet.
	Coord string `yaml:"coord" json:"coord,omitempty"`
	// CoordFallbackInterval is the per-process probe spacing used while
	// Redis is unreachable (fail-safe). Default 1s.
	CoordFallbackInterval rehearse.Duration `yaml:"coord_fallback_interval" json:"coord_fallback_interval"`
	// CoordTimeout bounds each Redis call, so that a partitioned Redis
	// delays a probe by at most this much. Default 200ms.
	CoordTimeout rehearse.Duration `yaml:"coord_timeout" json:"coord_timeout"`
	// Env and Region label the metrics; an upstream's own region wins.
	Env    string `yaml:"env" json:"env"`
	Region string `yaml:"region" json:"region"`
}

// UpstreamConfig says where an upstream is and how to call it.
type UpstreamConfig struct {
	// URL is the upstream's base URL (http or https); request paths are
	// appended to its path.
	URL string `yaml:"url" json:"url"`
	// Region labels the dependency; empty means Config.Region.
	Region string `yaml:"region" json:"region,omitempty"`
	// Credential is sent as "Authorization: Bearer <credential>" instead of
	// the client's Authorization header. Only its fingerprint is ever
	// written or logged; it is part of the breaker key.
	Credential string `yaml:"credential" json:"credential,omitempty"`
	// CredentialEnv names an environment variable holding the credential,
	// so that config files need not hold secrets.
	CredentialEnv string `yaml:"credential_env" json:"credential_env,omitempty"`
	// Kind is "tool" (default) or "model".
	Kind string `yaml:"kind" json:"kind,omitempty"`
	// Timeout bounds a whole client request to this upstream, retries
	// included. Zero means 30s for tools, 2m for models (streams).
	Timeout rehearse.Duration `yaml:"timeout" json:"timeout,omitempty"`
	// HeaderTimeout bounds the wait for response headers of one attempt
	// ("headers never arrived"). Zero means Timeout.
	HeaderTimeout rehearse.Duration `yaml:"header_timeout" json:"header_timeout,omitempty"`
}

// BreakerConfig holds the parameters of every dependency's breaker. The
// defaults are the reference values of docs/gateway.md ("The field's practice").
type BreakerConfig struct {
	// Window is the sliding window over which outcomes are counted (30s),
	// in 30 buckets of Window/30.
	Window rehearse.Duration `yaml:"window" json:"window"`
	// MinSamples is the least number of outcomes in the window before the
	// failure ratio can open the breaker (20).
	MinSamples int `yaml:"min_samples" json:"min_samples"`
	// FailureRatio opens the breaker when the share of failures (5xx and
	// transport failures) in the window exceeds it (0.6).
	FailureRatio float64 `yaml:"failure_ratio" json:"failure_ratio"`
	// ConsecutiveFailures opens the breaker after this many transport
	// failures in a row (5); any HTTP response resets the count.
	ConsecutiveFailures int `yaml:"consecutive_failures" json:"consecutive_failures"`
	// Cooldown is the first open period (5s): set it from the
	// dependency's historical recovery time. It doubles after each failed
	// probe up to CooldownMax (60s), and resets when the breaker closes.
	Cooldown    rehearse.Duration `yaml:"cooldown" json:"cooldown"`
	CooldownMax rehearse.Duration `yaml:"cooldown_max" json:"cooldown_max"`
	// ProbeInterval is the least spacing between half-open probe starts
	// (250ms); ProbeJitter (50ms) adds a uniform random [0, jitter] to each
	// spacing so that a fleet does not probe in lockstep.
	// (nil means 50ms; 0 means none).
	ProbeInterval rehearse.Duration  `yaml:"probe_interval" json:"probe_interval"`
	ProbeJitter   *rehearse.Duration `yaml:"probe_jitter" json:"probe_jitter"`
	// SuccessesToClose consecutive successful probes close the breaker (2).
	SuccessesToClose int `yaml:"successes_to_close" json:"successes_to_close"`
	// DistinctWorkers requires those successes to come from at least two
	// different workers (nil means true). A worker is one upstream TCP
	// connection of one gateway instance; see docs/gateway.md.
	DistinctWorkers *bool `yaml:"distinct_workers" json:"distinct_workers"`
	// ProbeDeadlineFactor × the observed P99 time to response headers is a
	// probe's header deadline (1.4, i.e. P99 + 40 %), clamped to
	// [ProbeDeadlineMin, ProbeDeadlineMax] (100ms, 5s); with fewer than 20
	// observations the maximum applies.
	ProbeDeadlineFactor float64           `yaml:"probe_deadline_factor" json:"probe_deadline_factor"`
	ProbeDeadlineMin    rehearse.Duration `yaml:"probe_deadline_min" json:"probe_deadline_min"`
	ProbeDeadlineMax    rehearse.Duration `yaml:"probe_deadline_max" json:"probe_deadline_max"`
	// RetryAfterOpens makes a 429 with Retry-After open the
	// breaker, or extend its open period, to at least Retry-After: the
	// upstream's cooldown wins (nil means true).
	RetryAfterOpens *bool `yaml:"retry_after_opens" json:"retry_after_opens"`
	// RetryAfterMax caps an honoured Retry-After (10m), against a
	// misconfigured upstream pausing a dependency for days.
	RetryAfterMax rehearse.Duration `yaml:"retry_after_max" json:"retry_after_max"`
	// CountStreamCuts counts a body cut after bytes were sent (a stream cut
	// mid-way) as a breaker failure. Default false: it is counted in
	// openclaw_breaker_upstream_failures_total{class="cut_mid_body"} only,
	// since a reset after tokens were sent is more often a billing or
	// client issue than a sick upstream.
	CountStreamCuts bool `yaml:"count_stream_cuts" json:"count_stream_cuts"`
}

// RetryConfig bounds retries: full-jitter exponential backoff inside the
// request's remaining deadline less the reserve, only for idempotent
// methods (GET, HEAD, OPTIONS, TRACE) or requests carrying an
// Idempotency-Key header, never for half-open probes, and never sooner
// than an upstream's Retry-After.
type RetryConfig struct {
	// MaxAttempts is the total number of attempts, the first included (3).
	// 1 disables retries.
	MaxAttempts int `yaml:"max_attempts" json:"max_attempts"`
	// BaseDelay and MaxDelay shape the backoff: attempt n waits a uniform
	// random time in [0, min(MaxDelay, BaseDelay×2^(n-1))).
	BaseDelay rehearse.Duration `yaml:"base_delay" json:"base_delay"`
	MaxDelay  rehearse.Duration `yaml:"max_delay" json:"max_delay"`
	// MaxBody is the largest request body buffered for retries and
	// failover (4 MiB); larger bodies are refused with 413.
	MaxBody int64 `yaml:"max_body" json:"max_body"`
}

// DeadlineConfig orders the deadlines client > gateway > upstream call.
// The gateway's deadline for a request is the upstream's timeout, or
// the client's announced budget less Reserve when that is shorter; each
// upstream call must end Reserve before it, so that the gateway still
// has time to answer, and is told its budget in Header.
type DeadlineConfig struct {
	// Reserve is kept back from the gateway's deadline for answering the
	// client after the last upstream call gave up; zero means 50ms.
	Reserve rehearse.Duration `yaml:"reserve" json:"reserve"`
	// Header carries a budget in milliseconds: read from the client (its
	// remaining deadline) and sent to the upstream (the call's remaining
	// deadline). Default X-Request-Timeout-Ms; "-" neither reads nor
	// sends it ("" means the default).
	Header string `yaml:"header" json:"header"`
}

// Gateway modes.
const (
	ModeReference = "reference"
	ModeNaive     = "naive"
)

// The naive mode's retry policy: the one the practice warns about.
const (
	NaiveRetries    = 3
	NaiveRetryDelay = 200 * time.Millisecond
)

// CanaryConfig is the synthetic health check: GET <upstream>/healthz with
// X-Health-Check: canary at an interval.
type CanaryConfig struct {
	// Interval between checks; nil means 5s, zero disables the canary.
	Interval *rehearse.Duration `yaml:"interval" json:"interval"`
	// Timeout of one check (2s).
	Timeout rehearse.Duration `yaml:"timeout" json:"timeout"`
	// Path checked on every upstream ("/healthz").
	Path string `yaml:"path" json:"path"`
}

// WithDefaults returns c with every zero field (nil for the pointer
// fields) set to its default. It is what New runs and what a scenario
// records, so that a journal says which values were in force.
func (c Config) WithDefaults() Config {
	setIfZero(&c.Listen, DefaultListen)
	if c.Upstreams == nil {
		c.Upstreams = map[string]UpstreamConfig{}
	}
	setIfNil(&c.FallbackOnError, true)
	c.Breaker = c.Breaker.WithDefaults()
	r := &c.Retry
	setIfZero(&r.MaxAttempts, DefaultRetryMaxAttempts)
	setIfZero(&r.BaseDelay, rehearse.Duration(DefaultRetryBaseDelay))
	setIfZero(&r.MaxDelay, rehearse.Duration(DefaultRetryMaxDelay))
	setIfZero(&r.MaxBody, DefaultMaxBody)
	setIfZero(&c.Deadline.Reserve, rehearse.Duration(DefaultDeadlineReserve))
	setIfZero(&c.Deadline.Header, DefaultDeadlineHeader)
	setIfNil(&c.Canary.Interval, rehearse.Duration(DefaultCanaryInterval))
	setIfZero(&c.Canary.Timeout, rehearse.Duration(DefaultCanaryTimeout))
	setIfZero(&c.Canary.Path, DefaultCanaryPath)
	setIfZero(&c.CoordFallbackInterval, rehearse.Duration(DefaultCoordFallbackInterval))
	setIfZero(&c.CoordTimeout, rehearse.Duration(DefaultCoordTimeout))
	setIfZero(&c.Env, DefaultEnv)
	setIfZero(&c.Region, DefaultRegion)
	return c
}

// WithDefaults returns b with every zero field (nil for the pointer
// fields) set to the reference value.
func (b BreakerConfig) WithDefaults() BreakerConfig {
	setIfZero(&b.Window, rehearse.Duration(DefaultWindow))
	setIfZero(&b.MinSamples, DefaultMinSamples)
	setIfZero(&b.FailureRatio, DefaultFailureRatio)
	setIfZero(&b.ConsecutiveFailures, DefaultConsecutiveFailures)
	setIfZero(&b.Cooldown, rehearse.Duration(DefaultCooldown))
	setIfZero(&b.CooldownMax, max(rehearse.Duration(DefaultCooldownMax), b.Cooldown))
	setIfZero(&b.ProbeInterval, rehearse.Duration(DefaultProbeInterval))
	setIfNil(&b.ProbeJitter, rehearse.Duration(DefaultProbeJitter))
	setIfZero(&b.SuccessesToClose, DefaultSuccessesToClose)
	setIfNil(&b.DistinctWorkers, true)
	setIfZero(&b.ProbeDeadlineFactor, DefaultProbeDeadlineFactor)
	setIfZero(&b.ProbeDeadlineMin, rehearse.Duration(DefaultProbeDeadlineMin))
	setIfZero(&b.ProbeDeadlineMax, max(rehearse.Duration(DefaultProbeDeadlineMax), b.ProbeDeadlineMin))
	setIfNil(&b.RetryAfterOpens, true)
	setIfZero(&b.RetryAfterMax, rehearse.Duration(DefaultRetryAfterMax))
	return b
}

func setIfZero[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// setIfNil points *p at a copy of v when it is nil. A pointer that is set
// is copied too, so that a defaulted config shares nothing with its source.
func setIfNil[T any](p **T, v T) {
	if *p != nil {
		v = **p
	}
	*p = &v
}

// credential returns the upstream's credential, from CredentialEnv when set.
func (u UpstreamConfig) credential() string {
	if u.CredentialEnv != "" {
		return os.Getenv(u.CredentialEnv)
	}
	return u.Credential
}

// Fingerprint returns a short, non-reversible fingerprint of the
// upstream's credential ("" when it has none): the part of the breaker key
// that tells two keys of one provider apart without revealing either.
func (u UpstreamConfig) Fingerprint() string {
	c := u.credential()
	if c == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(c))
	return hex.EncodeToString(sum[:6])
}

// MarshalJSON writes the upstream with its credential replaced by its
// fingerprint, so that a config recorded in a journal holds no secret.
func (u UpstreamConfig) MarshalJSON() ([]byte, error) {
	type plain UpstreamConfig
	p := plain(u)
	if p.Credential != "" {
		// The one marker of everything rehearse writes, and the
		// fingerprint that tells two credentials apart.
		p.Credential = redact.Marker + " sha256:" + u.Fingerprint()
	}
	return json.Marshal(p)
}

// LoadConfig reads a YAML configuration file, strictly (unknown keys are
// errors), and validates it; zero fields keep their defaults. Errors are
// *rehearse.ConfigError with file:line:col (rehearse.ErrInvalid); an
// unreadable file wraps rehearse.ErrEnvironment... unless it does not
// exist, which is bad input.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Config{}, fmt.Errorf("%w: gateway config: %w", rehearse.ErrInvalid, err)
		}
		return Config{}, fmt.Errorf("%w: gateway config: %w", rehearse.ErrEnvironment, err)
	}
	return ParseConfig(data, path)
}

// ParseConfig decodes a YAML configuration strictly and validates it; file
// names the source in errors.
func ParseConfig(data []byte, file string) (Config, error) {
	doc, err := yamlstrict.ParseDocument(file, data)
	if errors.Is(err, yamlstrict.ErrEmpty) {
		return Config{}, &rehearse.ConfigError{File: file, Err: errors.New("empty gateway config")}
	}
	if err != nil {
		return Config{}, err
	}
	return DecodeConfig(doc, file)
}

// DecodeConfig decodes a YAML node (a document or a mapping) over the
// zero Config, strictly, and validates the result. Errors carry
// file:line:col.
func DecodeConfig(n *yaml.Node, file string) (Config, error) {
	var cfg Config
	d := yamlstrict.Decoder{File: file, Merge: true, Positions: map[string]yamlstrict.Pos{}}
	if errs := d.Decode(n, &cfg, ""); len(errs) > 0 {
		return Config{}, errs[0]
	}
	if err := cfg.Validate(); err != nil {
		ce := rehearse.AtPath("", err)
		ce.File = file
		for p := ce.Path; p != "" && ce.Line == 0; p = parentPath(p) {
			if pos, ok := d.Positions[p]; ok {
				ce.Line, ce.Col = pos.Line, pos.Col
			}
		}
		return Config{}, ce
	}
	return cfg, nil
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return ""
	}
	return p[:i]
}

// Validate checks the configuration with its defaults filled in. An error
// is a *rehearse.ConfigError naming the field (its YAML path).
func (c Config) Validate() error {
	c = c.WithDefaults()
	bad := func(field, format string, args ...any) error {
		return &rehearse.ConfigError{Path: field, Err: fmt.Errorf(format, args...)}
	}
	if c.Mode != "" && c.Mode != ModeReference && c.Mode != ModeNaive {
		return bad("mode", "want %q or %q, got %q", ModeReference, ModeNaive, c.Mode)
	}
	if c.Deadline.Reserve < 0 {
		return bad("deadline.reserve", "must not be negative")
	}
	if h := c.Deadline.Header; h != "-" && strings.ContainsAny(h, " :\t\r\n") {
		return bad("deadline.header", "not a header name: %q", h)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Upstreams)) {
		u := c.Upstreams[name]
		f := "upstreams." + name
		if name == "" || strings.ContainsAny(name, "/ ?#") {
			return bad(f, "upstream name %q must be non-empty, without '/', space, '?' or '#'", name)
		}
		if u.URL == "" {
			return bad(f, "url is required")
		}
		if _, err := rehearse.ParseHTTPURL(u.URL); err != nil {
			return bad(f+".url", "%v", err)
		}
		if u.Kind != "" && u.Kind != KindTool && u.Kind != KindModel {
			return bad(f+".kind", "want %q or %q, got %q", KindTool, KindModel, u.Kind)
		}
		if u.Credential != "" && u.CredentialEnv != "" {
			return bad(f+".credential_env", "set credential or credential_env, not both")
		}
		if u.HeaderTimeout > 0 && u.Timeout > 0 && u.HeaderTimeout > u.Timeout {
			return bad(f+".header_timeout", "header_timeout %s exceeds timeout %s", u.HeaderTimeout, u.Timeout)
		}
	}
	for _, p := range []struct{ field, name string }{{"primary", c.Primary}, {"fallback", c.Fallback}} {
		if p.name == "" {
			continue
		}
		if _, ok := c.Upstreams[p.name]; !ok {
			return bad(p.field, "no upstream named %q", p.name)
		}
	}
	if c.Fallback != "" && c.Primary == "" {
		return bad("fallback", "a fallback needs a primary")
	}
	if c.Fallback != "" && c.Fallback == c.Primary {
		return bad("fallback", "fallback %q is the primary", c.Fallback)
	}
	b := c.Breaker
	switch {
	case b.Window <= 0:
		return bad("breaker.window", "must be positive")
	case b.MinSamples < 1:
		return bad("breaker.min_samples", "must be at least 1, got %d", b.MinSamples)
	case !(b.FailureRatio > 0 && b.FailureRatio <= 1): // NaN too (a flag can say NaN)
		return bad("breaker.failure_ratio", "must be in (0, 1], got %g", b.FailureRatio)
	case b.ConsecutiveFailures < 1:
		return bad("breaker.consecutive_failures", "must be at least 1, got %d", b.ConsecutiveFailures)
	case b.Cooldown <= 0:
		return bad("breaker.cooldown", "must be positive")
	case b.CooldownMax < b.Cooldown:
		return bad("breaker.cooldown_max", "cooldown_max %s is below cooldown %s", b.CooldownMax, b.Cooldown)
	case b.ProbeInterval <= 0:
		return bad("breaker.probe_interval", "must be positive")
	case b.SuccessesToClose < 1:
		return bad("breaker.successes_to_close", "must be at least 1, got %d", b.SuccessesToClose)
	case !(b.ProbeDeadlineFactor >= 1) || math.IsInf(b.ProbeDeadlineFactor, 1):
		return bad("breaker.probe_deadline_factor", "must be a finite number at least 1, got %g", b.ProbeDeadlineFactor)
	case b.ProbeDeadlineMin <= 0:
		return bad("breaker.probe_deadline_min", "must be positive")
	case b.ProbeDeadlineMax < b.ProbeDeadlineMin:
		return bad("breaker.probe_deadline_max", "probe_deadline_max %s is below probe_deadline_min %s", b.ProbeDeadlineMax, b.ProbeDeadlineMin)
	}
	r := c.Retry
	switch {
	case r.MaxAttempts < 1 || r.MaxAttempts > 10:
		return bad("retry.max_attempts", "must be in [1, 10], got %d", r.MaxAttempts)
	case r.BaseDelay < 0:
		return bad("retry.base_delay", "must not be negative")
	case r.MaxDelay < r.BaseDelay:
		return bad("retry.max_delay", "max_delay %s is below base_delay %s", r.MaxDelay, r.BaseDelay)
	case r.MaxBody <= 0:
		return bad("retry.max_body", "must be positive")
	}
	if *b.ProbeJitter < 0 {
		return bad("breaker.probe_jitter", "must not be negative")
	}
	if *c.Canary.Interval < 0 {
		return bad("canary.interval", "must not be negative (0 disables the canary)")
	}
	if *c.Canary.Interval > 0 && c.Canary.Timeout <= 0 {
		return bad("canary.timeout", "must be positive")
	}
	if *c.Canary.Interval > 0 && !strings.HasPrefix(c.Canary.Path, "/") {
		return bad("canary.path", "must start with '/', got %q", c.Canary.Path)
	}
	if c.Coord != "" {
		pu, err := url.Parse(c.Coord)
		if err != nil || (pu.Scheme != "redis" && pu.Scheme != "rediss") || pu.Host == "" {
			return bad("coord", "want redis://host:port/db, got %q", c.Coord)
		}
		if c.CoordFallbackInterval < b.ProbeInterval {
			return bad("coord_fallback_interval", "must be at least probe_interval (%s)", b.ProbeInterval)
		}
		if c.CoordTimeout <= 0 {
			return bad("coord_timeout", "must be positive")
		}
	}
	return nil
}

// ParseUpstreamFlag parses the command line form name=url of an upstream
// (kind tool, default timeouts).
func ParseUpstreamFlag(spec string) (string, UpstreamConfig, error) {
	name, raw, ok := strings.Cut(spec, "=")
	if !ok || name == "" || raw == "" {
		return "", UpstreamConfig{}, fmt.Errorf("%w: --upstream %q: want name=url, e.g. search=http://127.0.0.1:9001", rehearse.ErrInvalid, spec)
	}
	return name, UpstreamConfig{URL: raw, Kind: KindTool}, nil
}
