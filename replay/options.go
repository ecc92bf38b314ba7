package replay

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/journal"
)

// Defaults used when an Options field is zero; the command's flags use them
// as their default values.
const (
	DefaultRate           = 10.0
	DefaultDuration       = 5 * time.Minute
	DefaultMaxInFlight    = 1024
	DefaultDeadline       = 10 * time.Second
	DefaultConnectTimeout = 3 * time.Second
	DefaultLateThreshold  = 5 * time.Millisecond
	DefaultMaxLateness    = 100 * time.Millisecond
	DefaultDrainTimeout   = 5 * time.Second
	DefaultSeqHeader      = "X-Rehearse-Seq"
	DefaultRunHeader      = "X-Rehearse-Run"
	DefaultSpeed          = 1.0
)

// TransportEnv names the environment variable that chooses the transport
// of http:// targets for every replay of the process: "net/http" sets
// Options.StdTransport, "direct" (or unset) leaves it as it is.
const TransportEnv = "REHEARSE_REPLAY_TRANSPORT"

// Timing modes (Options.Timing).
const (
	// TimingRate sends request i at start + i/Rate.
	TimingRate = "rate"
	// TimingOriginal keeps the capture's own spacing, divided by Speed.
	TimingOriginal = "original"
)

// DefaultFastFail is the fast-fail rule of the shared conventions: a
// response of status 400 or above carrying the X-Breaker-State header, or
// whose JSON body has error.code == "dependency_unavailable".
var DefaultFastFail = FastFailRule{
	Header:    "X-Breaker-State",
	JSONField: "error.code",
	JSONValue: "dependency_unavailable",
}

// Options configures a Replayer. The scenario's replay section compiles to
// it; every zero value means the documented default.
type Options struct {
	// Target is the base URL of the gateway under test (scheme and host;
	// a path, if any, is prefixed to every request path). Required.
	Target *url.URL
	// Rate is the number of requests per second in TimingRate mode;
	// fractional rates such as 0.5 are allowed. Zero means DefaultRate.
	Rate float64
	// Duration is how long to send; requests due at or after it are not
	// sent. Zero means DefaultDuration, or no limit when Once is set.
	Duration time.Duration
	// Once stops after every request of the corpus was scheduled once,
	// instead of looping the corpus until Duration ends.
	Once bool
	// Timing is TimingRate (default when empty) or TimingOriginal.
	Timing string
	// Speed divides the capture's spacing in TimingOriginal mode (2 is
	// twice as fast). Zero means DefaultSpeed.
	Speed float64
	// Schedule is where the sends of TimingRate fall: ScheduleFixed
	// (default when empty) on the grid i/Rate, SchedulePoisson with
	// exponential gaps, ScheduleJittered uniformly within each slot
	// (random_pacer.go). Only TimingRate has one.
	Schedule string
	// Seed seeds a random Schedule (a scenario's seed): the same seed,
	// the same send times.
	Seed int64
	// KeepHeaders names response headers whose values each
	// client.request event records (journal.ClientRequest.Headers): a
	// gateway's chosen-target header, say. At most MaxKeepHeaders names,
	// none a secret header (internal/redact); see keep.go.
	KeepHeaders []string
	// MaxInFlight caps the requests in flight; a request due while the cap
	// is reached is dropped and recorded. Zero means DefaultMaxInFlight.
	MaxInFlight int
	// Deadline bounds each exchange, from the send to the last body byte.
	// Zero means DefaultDeadline.
	Deadline time.Duration
	// ConnectTimeout bounds connection establishment (only with the
	// replayer's own transport). Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// DrainTimeout is how long Run waits for requests in flight after its
	// context is cancelled before aborting them. Zero means
	// DefaultDrainTimeout.
	DrainTimeout time.Duration
	// SeqHeader names the sequence stamp header. Empty means
	// DefaultSeqHeader.
	SeqHeader string
	// RunID is sent in the RunHeader header on every request; empty sends
	// no run header.
	RunID string
	// RunHeader names the run id header. Empty means DefaultRunHeader.
	RunHeader string
	// PreserveHost keeps the captured Host header instead of the target's
	// host (for gateways that route on Host).
	PreserveHost bool
	// AllowWrites permits replaying POST, PUT, PATCH and DELETE requests;
	// without it New refuses a corpus holding any.
	AllowWrites bool
	// Routes map request paths to upstream names and route templates, in
	// order; the first match wins. Nil maps nothing: the route label is
	// the request path.
	Routes []RouteMap
	// FastFail recognises the gateway's breaker fast-fail responses. The
	// zero value means DefaultFastFail.
	FastFail FastFailRule
	// LateThreshold is the send lateness beyond which a request counts as
	// late. Zero means DefaultLateThreshold.
	LateThreshold time.Duration
	// MaxLateness bounds catch-up after a stall: a slot reached later
	// than this after its due time, while the next slot is due too, is
	// dropped as missed instead of being sent in a burst. Zero means
	// DefaultMaxLateness.
	MaxLateness time.Duration
	// IdempotencyKeys stamps a key of its own on a share of the writes,
	// for drills on write retries. The zero value stamps none.
	IdempotencyKeys IdempotencyKeys
	// Identity says where the sequence stamp goes in each request's body
	// as well as in SeqHeader, for gateways that forward no client header
	// (identity.go). The zero value stamps the last user message of
	// OpenAI- and Anthropic-shaped chat requests.
	Identity Identity
	// DeadlineHeader, when set, announces each request's deadline to the
	// gateway in this header, in milliseconds (e.g.
	// X-Request-Timeout-Ms), so that a gateway can order its own
	// deadline below the client's.
	DeadlineHeader string
	// Transport sends the requests. Nil means the replayer's own transport
	// (keep-alive, no compression, no HTTP/2, idle pool sized to
	// MaxInFlight), which also tells connect errors apart precisely: for
	// http:// targets one that writes each request and reads its response
	// on the sender's goroutine, for https:// ones net/http's
	// http.Transport.
	Transport http.RoundTripper
	// Warmup makes this replay a warm-up (a scenario's replay.warmup):
	// every client.request it records is marked warmup, and its sequence
	// numbers start at journal.WarmupSeqBase, so that the analysis scores
	// none of it and tells its upstream calls apart.
	Warmup bool
	// StdTransport makes the replayer's own transport net/http's
	// http.Transport for http:// targets too (to compare the two; the
	// outcomes are the same). The environment variable
	// REHEARSE_REPLAY_TRANSPORT=net/http sets it for every replay of the
	// process.
	StdTransport bool
}

// IdempotencyKeys stamps idempotency keys on writes (POST, PUT, PATCH,
// DELETE) that carry none: the key is unique to the client request
// ("rehearse-<run>-<seq>"), so a gateway retrying it sends the same key
// again. Which writes get one is decided by the sequence number alone, so
// runs with the same corpus stamp the same requests.
type IdempotencyKeys struct {
	// Header is the key's header; empty means Idempotency-Key. It is also
	// the header whose presence the journal records.
	Header string `json:"header,omitempty"`
	// Share is the fraction of writes stamped, 0..1.
	Share float64 `json:"share,omitempty"`
}

// DefaultIdempotencyHeader is the header of IdempotencyKeys by default.
const DefaultIdempotencyHeader = "Idempotency-Key"

// stamps reports whether write seq gets a key: a hash of seq against the
// share, so that the stamped writes are spread evenly over the corpus.
func (k IdempotencyKeys) stamps(seq uint64) bool {
	if k.Share <= 0 {
		return false
	}
	x := seq + 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	x ^= x >> 31
	return float64(x>>11)/float64(1<<53) < k.Share
}

// RouteMap maps the requests whose path matches to an upstream and a route
// template. Exactly one of Prefix and Pattern is set.
type RouteMap struct {
	// Prefix matches paths starting with it.
	Prefix string `json:"prefix,omitempty"`
	// Pattern is a regular expression (RE2) matched against the path.
	Pattern string `json:"pattern,omitempty"`
	// Upstream is the upstream name the route reaches ("search", ...).
	Upstream string `json:"upstream,omitempty"`
	// Route is the route template used as label ("/tools/{name}"); empty
	// means the Prefix or Pattern itself.
	Route string `json:"route,omitempty"`

	re *regexp.Regexp
}

func (m *RouteMap) match(path string) bool {
	if m.re != nil {
		return m.re.MatchString(path)
	}
	return strings.HasPrefix(path, m.Prefix)
}

func (m *RouteMap) label() string {
	switch {
	case m.Route != "":
		return m.Route
	case m.Pattern != "":
		return m.Pattern
	default:
		return m.Prefix
	}
}

// FastFailRule recognises a gateway's fast-fail response (its breaker
// rejecting the call without an upstream call). A response matches when
// its status is in Statuses (or, with Statuses empty, is 400 or above) and
// either the Header or the JSON field matches; with neither Header nor
// JSONField set, the status alone decides.
type FastFailRule struct {
	// Disabled turns fast-fail recognition off.
	Disabled bool `json:"disabled,omitempty"`
	// Statuses lists the status codes a fast-fail may have; empty means
	// any status of 400 or above.
	Statuses []int `json:"statuses,omitempty"`
	// Header is "Name" (present with any value) or "Name=value"
	// (case-insensitive value).
	Header string `json:"header,omitempty"`
	// JSONField is a dotted path into a JSON object body ("error.code");
	// JSONValue is the value it must have (empty: any value). The field's
	// value is reported as the fast-fail code.
	JSONField string `json:"json_field,omitempty"`
	JSONValue string `json:"json_value,omitempty"`
}

func (f FastFailRule) isZero() bool {
	return !f.Disabled && len(f.Statuses) == 0 && f.Header == "" && f.JSONField == "" && f.JSONValue == ""
}

// withDefaults returns o with every zero field set to its default, and
// checks the result.
func (o Options) withDefaults() (Options, error) {
	if o.Target == nil || o.Target.Host == "" {
		return o, fmt.Errorf("%w: replay: a target URL with a host is required (e.g. http://127.0.0.1:8080)", rehearse.ErrInvalid)
	}
	if o.Target.Scheme != "http" && o.Target.Scheme != "https" {
		return o, fmt.Errorf("%w: replay: target %q: scheme must be http or https", rehearse.ErrInvalid, redact.URL(o.Target.String()))
	}
	switch v := os.Getenv(TransportEnv); v {
	case "", "direct":
	case "net/http":
		o.StdTransport = true
	default:
		return o, fmt.Errorf("%w: replay: %s=%q: want \"direct\" or \"net/http\"", rehearse.ErrInvalid, TransportEnv, v)
	}
	o.Timing = cmp.Or(o.Timing, TimingRate)
	if o.Timing != TimingRate && o.Timing != TimingOriginal {
		return o, fmt.Errorf("%w: replay: timing %q: want %q or %q", rehearse.ErrInvalid, o.Timing, TimingRate, TimingOriginal)
	}
	if !(o.Rate >= 0) || !(o.Speed >= 0) || math.IsInf(o.Speed, 1) || o.Duration < 0 || o.MaxInFlight < 0 || o.Deadline < 0 ||
		o.ConnectTimeout < 0 || o.DrainTimeout < 0 || o.LateThreshold < 0 || o.MaxLateness < 0 {
		// !(x >= 0) refuses NaN too, which a flag can give ("--rate NaN"):
		// it passes every comparison and then cannot be journaled.
		return o, fmt.Errorf("%w: replay: rate, speed, duration, max in flight, deadline and thresholds must be finite and not negative", rehearse.ErrInvalid)
	}
	// A zero field is unset (negatives were refused above): its default.
	o.Rate = cmp.Or(o.Rate, DefaultRate)
	if o.Rate > 1e6 {
		return o, fmt.Errorf("%w: replay: rate %g/s is above the supported 1000000/s", rehearse.ErrInvalid, o.Rate)
	}
	o.Speed = cmp.Or(o.Speed, DefaultSpeed)
	o.Schedule = cmp.Or(o.Schedule, ScheduleFixed)
	if !slices.Contains(Schedules(), o.Schedule) {
		return o, fmt.Errorf("%w: replay: schedule %q: want fixed, poisson or jittered", rehearse.ErrInvalid, o.Schedule)
	}
	if o.Schedule != ScheduleFixed && o.Timing != TimingRate {
		return o, fmt.Errorf("%w: replay: schedule %q applies to timing %q; timing %q keeps the capture's own spacing", rehearse.ErrInvalid, o.Schedule, TimingRate, o.Timing)
	}
	keep, err := checkKeepHeaders(o.KeepHeaders)
	if err != nil {
		return o, err
	}
	o.KeepHeaders = keep
	if o.Duration == 0 && !o.Once {
		o.Duration = DefaultDuration
	}
	o.MaxInFlight = cmp.Or(o.MaxInFlight, DefaultMaxInFlight)
	o.Deadline = cmp.Or(o.Deadline, DefaultDeadline)
	o.ConnectTimeout = cmp.Or(o.ConnectTimeout, DefaultConnectTimeout)
	o.DrainTimeout = cmp.Or(o.DrainTimeout, DefaultDrainTimeout)
	o.LateThreshold = cmp.Or(o.LateThreshold, DefaultLateThreshold)
	o.MaxLateness = cmp.Or(o.MaxLateness, DefaultMaxLateness)
	if o.MaxLateness < o.LateThreshold {
		return o, fmt.Errorf("%w: replay: max lateness %v is below the late threshold %v", rehearse.ErrInvalid, o.MaxLateness, o.LateThreshold)
	}
	o.SeqHeader = cmp.Or(o.SeqHeader, DefaultSeqHeader)
	o.RunHeader = cmp.Or(o.RunHeader, DefaultRunHeader)
	o.IdempotencyKeys.Header = cmp.Or(o.IdempotencyKeys.Header, DefaultIdempotencyHeader)
	if sh := o.IdempotencyKeys.Share; sh < 0 || sh > 1 || sh != sh {
		return o, fmt.Errorf("%w: replay: idempotency key share must be between 0 and 1, got %g", rehearse.ErrInvalid, sh)
	}
	if err := o.Identity.check(); err != nil {
		return o, err
	}
	o.Identity.Body = cmp.Or(o.Identity.Body, IdentityAuto)
	if o.FastFail.isZero() {
		o.FastFail = DefaultFastFail
	}
	routes := make([]RouteMap, len(o.Routes))
	for i, m := range o.Routes {
		if (m.Prefix == "") == (m.Pattern == "") {
			return o, fmt.Errorf("%w: replay: routes[%d]: set exactly one of prefix and pattern", rehearse.ErrInvalid, i)
		}
		if m.Pattern != "" {
			re, err := regexp.Compile(m.Pattern)
			if err != nil {
				return o, fmt.Errorf("%w: replay: routes[%d]: pattern: %w", rehearse.ErrInvalid, i, err)
			}
			m.re = re
		}
		routes[i] = m
	}
	o.Routes = routes
	return o, nil
}

// Option configures a Replayer beyond its Options: the things it is
// connected to rather than what it does.
type Option func(*config)

type config struct {
	rec      journal.Recorder
	clock    *journal.Clock
	pacer    Pacer
	reg      prometheus.Registerer
	progress func(Progress)
	waiter   waiter
}

// WithRecorder sets where the client.request events go. The default
// discards them (the Summary is still computed).
func WithRecorder(rec journal.Recorder) Option { return func(c *config) { c.rec = rec } }

// WithClock sets the run's clock, so that event times share the run's time
// base. The default starts a clock when Run starts.
func WithClock(clock *journal.Clock) Option { return func(c *config) { c.clock = clock } }

// WithPacer replaces the pacer built from Options.Timing, Rate and Speed.
func WithPacer(p Pacer) Option { return func(c *config) { c.pacer = p } }

// WithRegisterer registers the replayer's Prometheus collectors on reg.
// Without it no metrics are registered.
func WithRegisterer(reg prometheus.Registerer) Option { return func(c *config) { c.reg = reg } }

// WithProgress draws a one-line progress display on w, refreshed four
// times a second. The caller decides whether w is a terminal; without this
// option nothing is drawn.
func WithProgress(w io.Writer) Option { return func(c *config) { c.progress = drawOn(w) } }

// WithProgressFunc calls fn with the running count four times a second
// while Run sends, and once more (Final set) when the replay has ended:
// for a display that shows more than the replay (rehearse run's status
// line). It replaces WithProgress.
func WithProgressFunc(fn func(Progress)) Option { return func(c *config) { c.progress = fn } }
