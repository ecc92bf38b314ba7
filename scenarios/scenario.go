package scenarios

import (
	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/gateway"
	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/internal/yamlstrict"
	"github.com/halfopen/rehearse/observe"
	"github.com/halfopen/rehearse/reports/expect"
)

// Version is the scenario schema version this package reads.
const Version = 1

// Scenario is one rehearsal, as written in a scenario file (schema v1). Keys
// are snake_case; durations are strings with units ("250ms", "5m"). Every
// field left out takes the default of ApplyDefaults; see docs/SCENARIOS.md.
type Scenario struct {
	// Version is the schema version; 0 (absent) means 1.
	Version int `yaml:"version,omitempty" json:"version" doc:"schema version (1)"`
	// Name identifies the scenario in reports and the run archive; empty
	// means the file name without its extension.
	Name string `yaml:"name,omitempty" json:"name" doc:"scenario name (default: the file name)"`
	// Description says what the drill rehearses, for the report.
	Description string `yaml:"description,omitempty" json:"description,omitempty" doc:"what the drill rehearses, shown in the report"`
	// Seed drives every random decision of the run (per-request fault
	// probabilities); nil means DefaultSeed. Same seed, same decisions.
	Seed *int64 `yaml:"seed,omitempty" json:"seed" doc:"seed of every random decision (default 1)"`
	// Gateway is the gateway under test.
	Gateway GatewaySpec `yaml:"gateway,omitempty" json:"gateway" doc:"the gateway under test"`
	// Replay is the traffic sent to the gateway.
	Replay ReplaySpec `yaml:"replay,omitempty" json:"replay" doc:"the traffic replayed into the gateway"`
	// Upstreams are the dependencies the harness serves to the gateway.
	Upstreams []inject.UpstreamConfig `yaml:"upstreams,omitempty" json:"upstreams" doc:"the gateway's dependencies, served by the harness"`
	// Faults is the fault timeline.
	Faults []inject.FaultSpec `yaml:"faults,omitempty" json:"faults,omitempty" doc:"the fault timeline"`
	// Expectations are what the run asserts; nil asserts nothing (exit 0
	// whenever the run completes).
	Expectations *expect.Expectations `yaml:"expectations,omitempty" json:"expectations,omitempty" doc:"what the run asserts; each becomes a JUnit test case"`
	// Report is what the report adds for its readers (dashboard links).
	Report *expect.ReportSpec `yaml:"report,omitempty" json:"report,omitempty" doc:"what the report adds for its readers: dashboard links for the run's window"`

	// File is the path the scenario was read from ("" for a built-in drill
	// or bytes).
	File string `yaml:"-" json:"-"`
	// AllowRemote lets the scenario's listeners (upstreams, the built-in
	// gateway) bind beyond loopback. It comes from the command line
	// (--allow-remote), never from the file: a file someone hands over
	// must not open the machine to the network by itself.
	AllowRemote bool `yaml:"-" json:"-"`
	// Builtin is the drill name when the scenario is a built-in drill.
	Builtin string `yaml:"-" json:"-"`
	// positions maps field paths to their place in the file, for
	// validation messages.
	positions map[string]yamlstrict.Pos
	// flags maps the paths a command-line flag set (Overrides.Apply) to
	// the flag, so that an error in such a value names the flag, not the
	// place in the file the flag replaced.
	flags map[string]string
}

// GatewaySpec is the gateway under test: a URL, or the built-in reference
// gateway, and how to observe it.
type GatewaySpec struct {
	// URL is the base URL of your gateway. Exactly one of URL and Builtin.
	URL string `yaml:"url,omitempty" json:"url,omitempty" doc:"base URL of the gateway under test (or use builtin)"`
	// Builtin runs the built-in reference gateway in the harness, wired to
	// the scenario's upstreams.
	Builtin *BuiltinSpec `yaml:"builtin,omitempty" json:"builtin,omitempty" doc:"run the built-in reference gateway"`
	// Metrics is where and how to read the gateway's metrics; nil means
	// none for a URL gateway, and the reference preset on /metrics for the
	// built-in one.
	Metrics *observe.ScrapeConfig `yaml:"metrics,omitempty" json:"metrics,omitempty" doc:"metrics scraping and breaker-state preset"`
	// Log is the gateway's log file, tailed for breaker states as an
	// alternative (or addition) to Metrics, for gateways without an
	// exporter (OpenClaw); nil means none.
	Log *observe.LogConfig `yaml:"log,omitempty" json:"log,omitempty" doc:"the gateway's log file, tailed for breaker states (an alternative to metrics)"`
	// Health is the gateway's health URL, probed as a canary; nil means
	// none for a URL gateway and /healthz for the built-in one.
	Health *observe.HealthConfig `yaml:"health,omitempty" json:"health,omitempty" doc:"health canary"`
	// FastFail recognises the gateway's breaker rejections; nil means the
	// reference gateway's (header X-Breaker-State, or JSON error.code =
	// dependency_unavailable).
	FastFail *FastFailSpec `yaml:"fast_fail,omitempty" json:"fast_fail,omitempty" doc:"how to recognise a breaker fast-fail response"`
	// Ready is the readiness check before the replay starts.
	Ready *ReadySpec `yaml:"ready,omitempty" json:"ready,omitempty" doc:"readiness check before the replay starts"`
}

// BuiltinSpec runs one or more built-in reference gateways.
type BuiltinSpec struct {
	// Instances is the number of gateway instances; 0 means 1. With more
	// than one, the replay is spread round-robin over them and they share
	// half-open probe leases through Redis.
	Instances int `yaml:"instances,omitempty" json:"instances,omitempty" doc:"number of gateway instances (default 1); more than one needs redis"`
	// Redis is "" (no coordination), "auto" (start a redis-server on a
	// free loopback port for the run) or a redis:// URL.
	Redis string `yaml:"redis,omitempty" json:"redis,omitempty" doc:"fleet coordination: auto (start redis-server) or a redis:// URL"`
	// RedisUpstream names a tcp-mode upstream placed between the gateways
	// and Redis, so that faults on it partition the fleet from Redis. Its
	// target is filled in by the harness when Redis is "auto".
	RedisUpstream string `yaml:"redis_upstream,omitempty" json:"redis_upstream,omitempty" doc:"tcp upstream in front of Redis, for partition faults"`
	// Config is the gateway's configuration (breaker parameters, retries,
	// model providers…); upstream URLs are filled in by the harness.
	Config gateway.Config `yaml:"config,omitempty" json:"config" doc:"reference gateway configuration (see docs/gateway.md)"`
}

// ReplaySpec is the traffic: which capture, how fast, for how long.
type ReplaySpec struct {
	// Capture is a pcap/pcapng path (relative to the scenario file) or
	// "builtin:agent-gateway"; empty means the built-in capture.
	Capture string `yaml:"capture,omitempty" json:"capture" doc:"pcap/pcapng path relative to the scenario, or builtin:agent-gateway"`
	// Rate is requests per second (fractional allowed); 0 means 10.
	Rate float64 `yaml:"rate,omitempty" json:"rate" doc:"requests per second (default 10)"`
	// Duration is how long to replay; 0 means 5m.
	Duration rehearse.Duration `yaml:"duration,omitempty" json:"duration" doc:"how long to replay (default 5m)"`
	// Timing is "rate" (default) or "original" (the capture's own spacing
	// divided by Speed).
	Timing string `yaml:"timing,omitempty" json:"timing" doc:"rate (default) or original"`
	// Speed divides the capture's spacing in original timing; 0 means 1.
	Speed float64 `yaml:"speed,omitempty" json:"speed,omitempty" doc:"speed factor for original timing (default 1)"`
	// Schedule is where the sends of timing rate fall: "fixed" (the
	// default for timing rate: on the grid i/rate), "poisson"
	// (exponential gaps of the same mean) or "jittered" (uniformly within
	// each slot), seeded from Seed. Empty for timing original.
	Schedule string `yaml:"schedule,omitempty" json:"schedule,omitempty" doc:"timing rate only: fixed (default: request i at i/rate), poisson (exponential gaps of the same mean rate) or jittered (uniformly within each slot), seeded from seed"`
	// Warmup is traffic sent before the run's time zero, against the same
	// gateway, to bring it to its working state (a fresh AI agent
	// gateway's first turns take seconds): journaled as warm-up, scored
	// nowhere, and the faults' times count from its end. Nil means none.
	Warmup *WarmupSpec `yaml:"warmup,omitempty" json:"warmup,omitempty" doc:"traffic before time zero to warm the gateway up, not scored (default: none)"`
	// Once replays the capture once instead of looping it.
	Once bool `yaml:"once,omitempty" json:"once,omitempty" doc:"replay the capture once instead of looping"`
	// Deadline bounds each request; 0 means 10s.
	Deadline rehearse.Duration `yaml:"deadline,omitempty" json:"deadline" doc:"per-request deadline (default 10s)"`
	// MaxInFlight caps requests in flight; 0 means 1024.
	MaxInFlight int `yaml:"max_in_flight,omitempty" json:"max_in_flight" doc:"cap on requests in flight (default 1024)"`
	// AllowWrites replays POST/PUT/PATCH/DELETE even when an upstream is
	// not a fake (they are always allowed when every upstream is a fake).
	AllowWrites bool `yaml:"allow_writes,omitempty" json:"allow_writes,omitempty" doc:"replay writes even when an upstream is real"`
	// PreserveHost keeps the captured Host header.
	PreserveHost bool `yaml:"preserve_host,omitempty" json:"preserve_host,omitempty" doc:"keep the captured Host header"`
	// Filter selects requests from the capture.
	Filter *FilterSpec `yaml:"filter,omitempty" json:"filter,omitempty" doc:"which captured requests to replay"`
	// Rewrite changes requests before they are sent.
	Rewrite *RewriteSpec `yaml:"rewrite,omitempty" json:"rewrite,omitempty" doc:"header changes before sending"`
	// IdempotencyKeys stamps a key unique to each client request on a
	// share of the writes that carry none, for drills on write retries.
	IdempotencyKeys *IdempotencyKeysSpec `yaml:"idempotency_keys,omitempty" json:"idempotency_keys,omitempty" doc:"stamp idempotency keys on a share of the writes"`
	// DeadlineHeader announces each request's deadline to the gateway in
	// this header, in milliseconds (the reference gateway reads
	// X-Request-Timeout-Ms); empty announces nothing.
	DeadlineHeader string `yaml:"deadline_header,omitempty" json:"deadline_header,omitempty" doc:"header announcing the client's deadline in ms (default: none)"`
	// Identity says where the sequence stamp goes in request bodies, for
	// gateways that forward no client header (AI agent runtimes); nil
	// means body: auto.
	Identity *IdentitySpec `yaml:"identity,omitempty" json:"identity,omitempty" doc:"where the sequence stamp goes in request bodies (default: the last user message of OpenAI/Anthropic chat requests)"`
	// KeepHeaders names response headers whose values the journal keeps
	// on each answer's client.request event (a gateway's chosen-target
	// header, say); at most replay.MaxKeepHeaders, no secret header.
	KeepHeaders []string `yaml:"keep_headers,omitempty" json:"keep_headers,omitempty" doc:"response headers whose values the journal keeps on each answer (e.g. X-Chosen-Target); at most 8, values cut to 256 bytes, no secret header"`
	// Routes map request paths to upstreams, for the analysis; empty means
	// /tools/<name> → <name> and /v1/chat/completions → the primary model
	// provider (built-in gateway) for every upstream of the scenario.
	Routes []RouteSpec `yaml:"routes,omitempty" json:"routes,omitempty" doc:"request path to upstream map (default: /tools/<name> and /v1/chat/completions)"`
}

// WarmupSpec is the warm-up phase (replay.warmup): the capture replayed
// for Duration at Rate before time zero, with no fault, the same
// requests, headers and deadline as the replay.
type WarmupSpec struct {
	// Duration is how long the warm-up sends; required, above zero.
	Duration rehearse.Duration `yaml:"duration" json:"duration" doc:"how long the warm-up sends (required)"`
	// Rate is its requests per second; 0 means replay.rate (timing rate)
	// or the capture's own spacing (timing original). A warm-up at a
	// lower rate than the replay lets a gateway that starts cold come up
	// without a queue.
	Rate float64 `yaml:"rate,omitempty" json:"rate,omitempty" doc:"requests per second of the warm-up (default: replay.rate; with timing original, the capture's spacing)"`
}

// IdentitySpec places the sequence stamp "[rehearse:seq=N]" in request
// bodies (replay.Identity): body auto (the default) stamps the last user
// message of OpenAI- and Anthropic-shaped chat requests; json_path or
// template put it elsewhere; body off stamps none.
type IdentitySpec struct {
	Body     string `yaml:"body,omitempty" json:"body,omitempty" doc:"auto (default: the last user message of chat requests) or off"`
	JSONPath string `yaml:"json_path,omitempty" json:"json_path,omitempty" doc:"dotted path to a JSON string the stamp is appended to, e.g. input.-1.text (negative index: from the end)"`
	Template string `yaml:"template,omitempty" json:"template,omitempty" doc:"text in the captured bodies replaced by the stamp, e.g. {{rehearse_seq}}"`
}

// IdempotencyKeysSpec stamps idempotency keys on writes (replay.IdempotencyKeys).
type IdempotencyKeysSpec struct {
	Header string  `yaml:"header,omitempty" json:"header,omitempty" doc:"key header (default Idempotency-Key)"`
	Share  float64 `yaml:"share" json:"share" doc:"fraction of the writes stamped, 0..1"`
}

// FilterSpec selects captured requests; every set field must match.
type FilterSpec struct {
	Methods []string `yaml:"methods,omitempty" json:"methods,omitempty" doc:"methods to keep"`
	Path    string   `yaml:"path,omitempty" json:"path,omitempty" doc:"regexp on the request path"`
	Host    string   `yaml:"host,omitempty" json:"host,omitempty" doc:"Host to keep"`
	Port    int      `yaml:"port,omitempty" json:"port,omitempty" doc:"server port to keep"`
}

// RewriteSpec changes requests before they are sent.
type RewriteSpec struct {
	Set  map[string]string `yaml:"set,omitempty" json:"set,omitempty" doc:"headers to set"`
	Drop []string          `yaml:"drop,omitempty" json:"drop,omitempty" doc:"headers to drop"`
}

// RouteSpec maps requests to an upstream. Exactly one of Prefix and Path.
type RouteSpec struct {
	Prefix   string `yaml:"prefix,omitempty" json:"prefix,omitempty" doc:"path prefix"`
	Path     string `yaml:"path,omitempty" json:"path,omitempty" doc:"regexp on the path"`
	Upstream string `yaml:"upstream" json:"upstream" doc:"upstream the route reaches"`
	Route    string `yaml:"route,omitempty" json:"route,omitempty" doc:"route label (default: the prefix or path)"`
}

// FastFailSpec recognises a gateway's fast-fail response: a status in
// Statuses (any ≥ 400 when empty) with the Header, or the JSON field.
type FastFailSpec struct {
	Disabled  bool   `yaml:"disabled,omitempty" json:"disabled,omitempty" doc:"no fast-fail recognition"`
	Statuses  []int  `yaml:"statuses,omitempty" json:"statuses,omitempty" doc:"status codes a fast-fail may have (default: any >= 400)"`
	Header    string `yaml:"header,omitempty" json:"header,omitempty" doc:"Name or Name=value header marking a fast-fail"`
	JSONField string `yaml:"json_field,omitempty" json:"json_field,omitempty" doc:"dotted JSON path, e.g. error.code"`
	JSONValue string `yaml:"json_value,omitempty" json:"json_value,omitempty" doc:"value the JSON field must have (empty: any)"`
}

// ReadySpec is the check that the gateway answers before the replay.
type ReadySpec struct {
	// URL is polled until it answers; empty means the health URL, else
	// the gateway URL.
	URL string `yaml:"url,omitempty" json:"url,omitempty" doc:"URL polled until it answers (default: health URL or gateway URL)"`
	// Timeout is how long to wait; 0 means 5s.
	Timeout rehearse.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty" doc:"how long to wait (default 5s)"`
	// Require2xx waits for a 2xx answer instead of any answer: for a
	// gateway whose backends must be up (health checks passed) before the
	// rehearsal means anything.
	Require2xx bool `yaml:"require_2xx,omitempty" json:"require_2xx,omitempty" doc:"wait for a 2xx answer, not just any answer"`
}
