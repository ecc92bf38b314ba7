package inject

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

// Upstream modes.
const (
	// ModeFake serves responses made up by the harness (HealthyConfig).
	ModeFake = "fake"
	// ModeProxy reverse-proxies HTTP to a real upstream at Target.
	ModeProxy = "proxy"
	// ModeTCP relays raw TCP to Target, for non-HTTP dependencies.
	ModeTCP = "tcp"
)

// Defaults. Flags and zero values of the config types resolve to these, in
// one place (applyDefaults).
const (
	DefaultListen        = "127.0.0.1:0"
	DefaultMode          = ModeFake
	DefaultSeqHeader     = "X-Rehearse-Seq"
	DefaultIdemHeader    = "Idempotency-Key"
	DefaultDeadlineHdr   = "X-Request-Timeout-Ms"
	DefaultPromptTokens  = 200
	DefaultOutputTokens  = 50
	DefaultStatus        = 200
	DefaultBodyBytes     = 512
	DefaultChunkBytes    = 1024
	DefaultSSEEvents     = 10
	DefaultSSEInterval   = 50 * time.Millisecond
	DefaultSSEModel      = "rehearse-fake"
	DefaultProbeHeader   = "X-Breaker-Probe"
	DefaultProbeUA       = "(?i)probe"
	DefaultHealthHeader  = "X-Health-Check"
	DefaultControlListen = "127.0.0.1:0"
)

// DefaultHealthPaths are the paths recognised as the gateway's health checks
// when an upstream does not say otherwise.
var DefaultHealthPaths = []string{"/healthz", "/health"}

// Config is the standalone config file of `rehearse inject serve`: the same
// upstreams and faults sections as a scenario file.
type Config struct {
	Upstreams []UpstreamConfig `yaml:"upstreams" json:"upstreams"`
	Faults    []FaultSpec      `yaml:"faults,omitempty" json:"faults,omitempty"`
	// Seed drives per-request probability decisions; 0 is a valid seed.
	Seed int64 `yaml:"seed,omitempty" json:"seed,omitempty"`
}

// ParseConfig decodes a standalone config strictly: unknown fields are errors
// with their line and column.
func ParseConfig(data []byte) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &rehearse.ConfigError{Err: fmt.Errorf("not valid YAML: %w", err)}
	}
	var c Config
	if len(doc.Content) == 0 {
		return nil, &rehearse.ConfigError{Err: errors.New("empty config: want an upstreams section")}
	}
	if err := decodeStrict(&doc, &c, ""); err != nil {
		return nil, err
	}
	if len(c.Upstreams) == 0 {
		return nil, &rehearse.ConfigError{Line: doc.Content[0].Line, Col: doc.Content[0].Column, Err: errors.New("no upstreams: want at least one entry under upstreams")}
	}
	return &c, nil
}

// UpstreamConfig describes one upstream the harness serves. Only Name is
// required; every other zero value means the documented default.
type UpstreamConfig struct {
	// Name identifies the upstream in faults, the journal and metrics
	// (e.g. "search", "llm-primary").
	Name string `yaml:"name" json:"name" doc:"upstream name, used by faults, the journal and metrics"`
	// Listen is the address to bind; "" means 127.0.0.1:0 (a free port).
	Listen string `yaml:"listen,omitempty" json:"listen,omitempty" doc:"address to bind (default 127.0.0.1:0, a free loopback port)"`
	// Mode is "fake" (default), "proxy" or "tcp".
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty" doc:"fake (default), proxy (HTTP reverse proxy to target) or tcp (TCP relay to target)"`
	// Target is the real upstream for proxy mode (a URL, http://host:port)
	// and tcp mode (host:port). Unused in fake mode.
	Target string `yaml:"target,omitempty" json:"target,omitempty" doc:"real upstream: http://host:port for proxy mode, host:port for tcp mode"`
	// API is the model provider API the upstream speaks: "openai",
	// "anthropic", or "" (auto: by path, /chat/completions as OpenAI,
	// /v1/messages as Anthropic). It shapes a fake's chat answers, and
	// the error bodies and stream error events of faults, on any mode.
	API string `yaml:"api,omitempty" json:"api,omitempty" doc:"model provider API: openai, anthropic, or empty (auto: /chat/completions as OpenAI, /v1/messages as Anthropic)"`
	// Healthy is how a fake upstream answers when no fault applies; nil
	// means the defaults of HealthyConfig.
	Healthy *HealthyConfig `yaml:"healthy,omitempty" json:"healthy,omitempty" doc:"fake mode: the healthy response"`
	// HealthCheck recognises the gateway's health checks; nil means path
	// /healthz or /health, or header X-Health-Check present.
	HealthCheck *HealthCheckConfig `yaml:"health_check,omitempty" json:"health_check,omitempty" doc:"how to recognise the gateway's health checks"`
	// ProbeTag recognises the gateway's half-open probes; nil means header
	// X-Breaker-Probe present, or a User-Agent matching (?i)probe.
	ProbeTag *ProbeTagConfig `yaml:"probe_tag,omitempty" json:"probe_tag,omitempty" doc:"how to recognise the gateway's half-open probes"`
	// SeqHeader carries the client sequence stamp; "" means X-Rehearse-Seq.
	SeqHeader string `yaml:"seq_header,omitempty" json:"seq_header,omitempty" doc:"header carrying the client sequence stamp (default X-Rehearse-Seq)"`
	// IdempotencyHeader is the idempotency key header whose fingerprint is
	// recorded; "" means Idempotency-Key.
	IdempotencyHeader string `yaml:"idempotency_header,omitempty" json:"idempotency_header,omitempty" doc:"idempotency key header recorded as a fingerprint (default Idempotency-Key)"`
	// DeadlineHeader is the header in which the gateway announces a call's
	// budget in milliseconds; "" means X-Request-Timeout-Ms.
	DeadlineHeader string `yaml:"deadline_header,omitempty" json:"deadline_header,omitempty" doc:"header announcing the call's budget in ms (default X-Request-Timeout-Ms)"`
}

// HealthyConfig is a fake upstream's healthy behaviour. Zero values mean the
// defaults given per field.
type HealthyConfig struct {
	// Status is the response status; 0 means 200.
	Status int `yaml:"status,omitempty" json:"status,omitempty" doc:"status code (default 200)"`
	// BodyBytes is the size of the JSON body; 0 means 512.
	BodyBytes int `yaml:"body_bytes,omitempty" json:"body_bytes,omitempty" doc:"JSON body size in bytes (default 512)"`
	// Latency is the delay before the response headers; nil means none.
	Latency *LatencyConfig `yaml:"latency,omitempty" json:"latency,omitempty" doc:"delay before the response headers"`
	// Chunked sends the body with chunked transfer encoding, ChunkBytes at a
	// time, ChunkInterval apart, instead of with a Content-Length.
	Chunked bool `yaml:"chunked,omitempty" json:"chunked,omitempty" doc:"send the body chunked instead of with a Content-Length"`
	// ChunkBytes is the chunk size; 0 means 1024.
	ChunkBytes int `yaml:"chunk_bytes,omitempty" json:"chunk_bytes,omitempty" doc:"chunk size in bytes (default 1024)"`
	// ChunkInterval is the pause between chunks; 0 means none.
	ChunkInterval rehearse.Duration `yaml:"chunk_interval,omitempty" json:"chunk_interval,omitempty" doc:"pause between chunks (default none)"`
	// SSE shapes the OpenAI-compatible event stream sent to requests that
	// ask for one (JSON body "stream": true, or Accept: text/event-stream);
	// nil means the defaults of SSEConfig.
	SSE *SSEConfig `yaml:"sse,omitempty" json:"sse,omitempty" doc:"server-sent event stream for requests asking for one"`
	// Headers are added to every healthy response.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty" doc:"headers added to every healthy response"`
	// Usage is the token usage a chat completion reports (and is charged,
	// in the journal); nil means the defaults of UsageConfig.
	Usage *UsageConfig `yaml:"usage,omitempty" json:"usage,omitempty" doc:"token usage of a chat completion"`
}

// UsageConfig is the OpenAI-style usage block of a fake chat completion:
// in the JSON body, and in the last event of a stream.
type UsageConfig struct {
	// PromptTokens is charged for every answer; 0 means 200.
	PromptTokens int64 `yaml:"prompt_tokens,omitempty" json:"prompt_tokens,omitempty" doc:"prompt tokens per answer (default 200)"`
	// CompletionTokens is charged for every answer; 0 means 50.
	CompletionTokens int64 `yaml:"completion_tokens,omitempty" json:"completion_tokens,omitempty" doc:"completion tokens per answer (default 50)"`
}

// SSEConfig is the chat-completions event stream of a fake upstream.
type SSEConfig struct {
	// Events is the number of content events before "data: [DONE]"; 0 means 10.
	Events int `yaml:"events,omitempty" json:"events,omitempty" doc:"content events before data: [DONE] (default 10)"`
	// Interval is the pause between events; 0 means 50ms.
	Interval rehearse.Duration `yaml:"interval,omitempty" json:"interval,omitempty" doc:"pause between events (default 50ms)"`
	// Model is the model name in the chunks; "" means "rehearse-fake".
	Model string `yaml:"model,omitempty" json:"model,omitempty" doc:"model name in the chunks (default rehearse-fake)"`
}

// LatencyConfig is a delay: fixed, uniform between two bounds, or drawn from
// percentiles. Exactly one of the three may be set; all zero means no delay.
type LatencyConfig struct {
	Fixed       rehearse.Duration  `yaml:"fixed,omitempty" json:"fixed,omitempty" doc:"always this delay"`
	Uniform     *UniformConfig     `yaml:"uniform,omitempty" json:"uniform,omitempty" doc:"uniform between min and max"`
	Percentiles *PercentilesConfig `yaml:"percentiles,omitempty" json:"percentiles,omitempty" doc:"drawn to match these percentiles"`
}

// UniformConfig is a uniform distribution between Min and Max.
type UniformConfig struct {
	Min rehearse.Duration `yaml:"min" json:"min"`
	Max rehearse.Duration `yaml:"max" json:"max"`
}

// PercentilesConfig is a distribution given by three percentiles. Samples are
// drawn by inverting a piecewise-linear CDF through (0, P50/2), (0.5, P50),
// (0.9, P90), (0.99, P99) and (1, P99 + (P99-P90)).
type PercentilesConfig struct {
	P50 rehearse.Duration `yaml:"p50" json:"p50"`
	P90 rehearse.Duration `yaml:"p90" json:"p90"`
	P99 rehearse.Duration `yaml:"p99" json:"p99"`
}

// HealthCheckConfig recognises the gateway's health-check requests: a request
// is one if its path is one of Paths or it carries one of Headers.
type HealthCheckConfig struct {
	// Paths are exact request paths; nil means /healthz and /health.
	Paths []string `yaml:"paths,omitempty" json:"paths,omitempty" doc:"exact request paths (default /healthz, /health)"`
	// Headers are header names whose presence marks a health check; nil
	// means X-Health-Check.
	Headers []string `yaml:"headers,omitempty" json:"headers,omitempty" doc:"header names whose presence marks a health check (default X-Health-Check)"`
}

// ProbeTagConfig recognises the gateway's half-open probes: a request is one
// if it carries Header, or its User-Agent matches UserAgent.
type ProbeTagConfig struct {
	// Header is a header name whose presence marks a probe; "" means
	// X-Breaker-Probe; "-" disables header recognition.
	Header string `yaml:"header,omitempty" json:"header,omitempty" doc:"header whose presence marks a probe (default X-Breaker-Probe; - disables)"`
	// UserAgent is a regular expression on the User-Agent; "" means
	// (?i)probe; "-" disables User-Agent recognition.
	UserAgent string `yaml:"user_agent,omitempty" json:"user_agent,omitempty" doc:"regexp on User-Agent marking a probe (default (?i)probe; - disables)"`
}

// MatchConfig narrows which requests a fault applies to. Every condition set
// must hold; the zero value matches every request.
type MatchConfig struct {
	// Path is a regular expression on the request path (unanchored; use ^ and $).
	Path string `yaml:"path,omitempty" json:"path,omitempty" doc:"regexp on the request path (unanchored)"`
	// Method is an HTTP method, case-insensitive.
	Method string `yaml:"method,omitempty" json:"method,omitempty" doc:"HTTP method"`
	// Header maps header names to regular expressions on their value; an
	// empty expression means the header must be present.
	Header map[string]string `yaml:"header,omitempty" json:"header,omitempty" doc:"header name to regexp on its value (empty: present)"`
}

// withDefaults returns u validated, with the defaults filled in. Error
// paths are relative to the upstream ("healthy.status").
func (u UpstreamConfig) withDefaults() (UpstreamConfig, error) {
	bad := func(field string, err error) error {
		return &rehearse.ConfigError{Path: field, Err: err}
	}
	if u.Name == "" {
		return u, &rehearse.ConfigError{Path: "name", Err: errors.New("missing: every upstream needs a name")}
	}
	if err := rehearse.CheckName(u.Name); err != nil {
		return u, &rehearse.ConfigError{Path: "name", Err: err}
	}
	if u.Listen == "" {
		u.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(u.Listen); err != nil {
		return u, bad("listen", fmt.Errorf("want host:port, got %q", u.Listen))
	}
	if u.Mode == "" {
		u.Mode = DefaultMode
	}
	switch u.Mode {
	case ModeFake:
		if u.Target != "" {
			return u, bad("target", errors.New("a fake upstream has no target; set mode: proxy or tcp"))
		}
	case ModeProxy:
		if _, err := rehearse.ParseHTTPURL(u.Target); err != nil {
			return u, bad("target", fmt.Errorf("proxy mode: %w", err))
		}
	case ModeTCP:
		if _, _, err := net.SplitHostPort(u.Target); err != nil {
			return u, bad("target", fmt.Errorf("tcp mode wants host:port, got %q", u.Target))
		}
	default:
		return u, bad("mode", fmt.Errorf("unknown mode %q; allowed: fake, proxy, tcp", u.Mode))
	}
	switch u.API {
	case APIAuto, APIOpenAI, APIAnthropic:
	default:
		return u, bad("api", fmt.Errorf("unknown API %q; allowed: openai, anthropic (or leave it out: by path)", u.API))
	}
	if u.API != APIAuto && u.Mode == ModeTCP {
		return u, bad("api", errors.New("a tcp upstream speaks no HTTP API"))
	}
	if u.Healthy != nil && u.Mode != ModeFake {
		return u, bad("healthy", fmt.Errorf("healthy applies to fake upstreams only, this one is %s", u.Mode))
	}
	h := HealthyConfig{}
	if u.Healthy != nil {
		h = *u.Healthy
	}
	if h.Status == 0 {
		h.Status = DefaultStatus
	}
	if h.Status < 100 || h.Status > 599 {
		return u, bad("healthy.status", fmt.Errorf("want 100-599, got %d", h.Status))
	}
	if h.BodyBytes == 0 {
		h.BodyBytes = DefaultBodyBytes
	}
	if h.BodyBytes < 0 {
		return u, bad("healthy.body_bytes", fmt.Errorf("must not be negative, got %d", h.BodyBytes))
	}
	if h.ChunkBytes == 0 {
		h.ChunkBytes = DefaultChunkBytes
	}
	if h.ChunkBytes < 0 {
		return u, bad("healthy.chunk_bytes", fmt.Errorf("must not be negative, got %d", h.ChunkBytes))
	}
	if err := h.Latency.validate(); err != nil {
		return u, bad("healthy.latency", err)
	}
	sse := SSEConfig{}
	if h.SSE != nil {
		sse = *h.SSE
	}
	if sse.Events == 0 {
		sse.Events = DefaultSSEEvents
	}
	if sse.Events < 0 {
		return u, bad("healthy.sse.events", fmt.Errorf("must not be negative, got %d", sse.Events))
	}
	if sse.Interval == 0 {
		sse.Interval = rehearse.Duration(DefaultSSEInterval)
	}
	if sse.Model == "" {
		sse.Model = DefaultSSEModel
	}
	h.SSE = &sse
	us := UsageConfig{}
	if h.Usage != nil {
		us = *h.Usage
	}
	if us.PromptTokens == 0 {
		us.PromptTokens = DefaultPromptTokens
	}
	if us.CompletionTokens == 0 {
		us.CompletionTokens = DefaultOutputTokens
	}
	if us.PromptTokens < 0 || us.CompletionTokens < 0 {
		return u, bad("healthy.usage", errors.New("token counts must not be negative"))
	}
	h.Usage = &us
	u.Healthy = &h
	hc := HealthCheckConfig{}
	if u.HealthCheck != nil {
		hc = *u.HealthCheck
	}
	if hc.Paths == nil {
		hc.Paths = DefaultHealthPaths
	}
	if hc.Headers == nil {
		hc.Headers = []string{DefaultHealthHeader}
	}
	u.HealthCheck = &hc
	pt := ProbeTagConfig{}
	if u.ProbeTag != nil {
		pt = *u.ProbeTag
	}
	if pt.Header == "" {
		pt.Header = DefaultProbeHeader
	}
	if pt.UserAgent == "" {
		pt.UserAgent = DefaultProbeUA
	}
	if pt.UserAgent != "-" {
		if _, err := regexp.Compile(pt.UserAgent); err != nil {
			return u, bad("probe_tag.user_agent", fmt.Errorf("invalid regular expression: %w", err))
		}
	}
	u.ProbeTag = &pt
	if u.SeqHeader == "" {
		u.SeqHeader = DefaultSeqHeader
	}
	if u.IdempotencyHeader == "" {
		u.IdempotencyHeader = DefaultIdemHeader
	}
	if u.DeadlineHeader == "" {
		u.DeadlineHeader = DefaultDeadlineHdr
	}
	return u, nil
}

// UnmarshalYAML decodes an upstream strictly and validates it, so that an
// invalid value is reported at its line and column.
func (u *UpstreamConfig) UnmarshalYAML(n *yaml.Node) error {
	type plain UpstreamConfig
	var p plain
	if err := decodeStrict(n, &p, ""); err != nil {
		return err
	}
	if _, err := UpstreamConfig(p).withDefaults(); err != nil {
		var ce *rehearse.ConfigError
		if errors.As(err, &ce) && ce.Line == 0 {
			at := nodeAt(n, ce.Path)
			ce.Line, ce.Col = at.Line, at.Column
		}
		return err
	}
	*u = UpstreamConfig(p)
	return nil
}

// nodeAt returns the value node at a dotted path of mapping keys under n,
// or the deepest node found on the way.
func nodeAt(n *yaml.Node, path string) *yaml.Node {
	for _, key := range strings.Split(path, ".") {
		next := fieldNode(n, key)
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

func (l *LatencyConfig) validate() error {
	if l == nil {
		return nil
	}
	set := 0
	if l.Fixed != 0 {
		set++
	}
	if l.Uniform != nil {
		set++
		if l.Uniform.Max < l.Uniform.Min {
			return fmt.Errorf("uniform: max %s is below min %s", l.Uniform.Max, l.Uniform.Min)
		}
	}
	if p := l.Percentiles; p != nil {
		set++
		if !(p.P50 <= p.P90 && p.P90 <= p.P99) {
			return fmt.Errorf("percentiles must not decrease: p50 %s, p90 %s, p99 %s", p.P50, p.P90, p.P99)
		}
	}
	if set > 1 {
		return errors.New("set one of fixed, uniform or percentiles")
	}
	return nil
}

// compiledMatch is a MatchConfig ready to test requests.
type compiledMatch struct {
	path   *regexp.Regexp
	method string
	header map[string]*regexp.Regexp
}

func (m *MatchConfig) compile() (*compiledMatch, error) {
	if m == nil {
		return nil, nil
	}
	c := &compiledMatch{method: strings.ToUpper(m.Method), header: map[string]*regexp.Regexp{}}
	if m.Path != "" {
		re, err := regexp.Compile(m.Path)
		if err != nil {
			return nil, fmt.Errorf("match.path: invalid regular expression: %w", err)
		}
		c.path = re
	}
	for name, expr := range m.Header {
		if expr == "" {
			c.header[name] = nil
			continue
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("match.header.%s: invalid regular expression: %w", name, err)
		}
		c.header[name] = re
	}
	return c, nil
}
