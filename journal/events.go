package journal

import (
	"encoding/json"
	"time"
)

// Kind names an event type. It is the "kind" field of every journal line.
type Kind string

// The event kinds. Each has one payload type below; see Payload.
const (
	KindRunStart          Kind = "run.start"
	KindPhase             Kind = "phase"
	KindFaultStart        Kind = "fault.start"
	KindFaultEnd          Kind = "fault.end"
	KindClientRequest     Kind = "client.request"
	KindUpstreamRequest   Kind = "upstream.request"
	KindMetricsSample     Kind = "metrics.sample"
	KindHealthSample      Kind = "health.sample"
	KindPlatformSample    Kind = "platform.sample"
	KindBreakerTransition Kind = "breaker.transition"
	KindLog               Kind = "log"
	KindRunEnd            Kind = "run.end"
)

// Payload is the kind-specific part of an event. The payload's fields are
// written flat beside "t" and "kind".
type Payload interface {
	Kind() Kind
}

// Event is one journal line: a run time and a payload.
type Event struct {
	// T is the time of the event since the run's start (monotonic).
	T time.Duration
	// Payload holds the typed fields; its Kind is the event's kind.
	Payload Payload
}

// Kind returns the event's kind, or "" when it has no payload.
func (e Event) Kind() Kind {
	if e.Payload == nil {
		return ""
	}
	return e.Payload.Kind()
}

// factories maps each known kind to a constructor of its payload, for the
// reader. It is the one list of kinds: adding a kind means adding it here.
var factories = map[Kind]func() Payload{
	KindRunStart:          func() Payload { return new(RunStart) },
	KindPhase:             func() Payload { return new(Phase) },
	KindFaultStart:        func() Payload { return new(FaultStart) },
	KindFaultEnd:          func() Payload { return new(FaultEnd) },
	KindClientRequest:     func() Payload { return new(ClientRequest) },
	KindUpstreamRequest:   func() Payload { return new(UpstreamRequest) },
	KindMetricsSample:     func() Payload { return new(MetricsSample) },
	KindHealthSample:      func() Payload { return new(HealthSample) },
	KindPlatformSample:    func() Payload { return new(PlatformSample) },
	KindBreakerTransition: func() Payload { return new(BreakerTransition) },
	KindLog:               func() Payload { return new(Log) },
	KindRunEnd:            func() Payload { return new(RunEnd) },
}

// Kinds returns every known kind.
func Kinds() []Kind {
	out := make([]Kind, 0, len(factories))
	for k := range factories {
		out = append(out, k)
	}
	return out
}

// RunStart opens every journal: what was run, where, and with which seed.
type RunStart struct {
	RunID    string `json:"run_id"`
	Scenario string `json:"scenario"`
	// ScenarioFile is the path the scenario was read from; empty for a
	// built-in drill.
	ScenarioFile string `json:"scenario_file,omitempty"`
	Seed         int64  `json:"seed"`
	// WallStart is the wall-clock instant of t = 0.
	WallStart time.Time `json:"wall_start"`
	// TimeZone is the harness machine's local zone (LocalZone): an IANA
	// name, or a "+hh:mm" offset when no name could be found; empty in
	// journals written before it was recorded.
	TimeZone string `json:"time_zone,omitempty"`
	// Version is the harness version.
	Version string `json:"version,omitempty"`
	// Target is the gateway under test (base URL).
	Target string `json:"target,omitempty"`
	// Rate is the replay rate in requests per second; 0 for original timing.
	Rate float64 `json:"rate,omitempty"`
	// Duration is the planned replay duration.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Upstreams lists the names of the upstreams the harness serves.
	Upstreams []string `json:"upstreams,omitempty"`
	// Platform holds the facts about the machine the run is on.
	Platform *Platform `json:"platform,omitempty"`
	// Config is the compiled scenario, for the record; nil when unknown.
	Config json.RawMessage `json:"config,omitempty"`
	// ScenarioDigest identifies the drill (scenarios.Scenario.Digest):
	// runs with equal digests did the same thing to their gateways, so a
	// comparison of them compares like with like. Empty when unknown.
	ScenarioDigest string `json:"scenario_digest,omitempty"`
	// Resolved is what this build decided for the scenario that the
	// reports show and a later build might decide otherwise: the built-in
	// gateway's breaker settings with its defaults applied, and the
	// metric series the metrics preset reads. Recorded so that the
	// journal renders the same with any later build; nil in journals
	// written before it was recorded (the reports then say what they
	// assumed).
	Resolved *Resolved `json:"resolved,omitempty"`
}

// Resolved is run.start's record of what the build resolved (see
// RunStart.Resolved).
type Resolved struct {
	// Gateway is the built-in gateway's settings; nil for a gateway at a
	// URL.
	Gateway *ResolvedGateway `json:"gateway,omitempty"`
	// BreakerSeries are the metric series of the gateway's breaker state
	// that the metrics preset (or the custom metric) reads; empty when
	// none is read.
	BreakerSeries []string `json:"breaker_series,omitempty"`
}

// ResolvedGateway is the built-in gateway's configuration as it ran.
type ResolvedGateway struct {
	Instances int `json:"instances"`
	// Breaker is every breaker parameter by its scenario key, in the
	// configuration's order, defaults applied ("default": the breaker
	// library's own).
	Breaker []Setting `json:"breaker"`
}

// Setting is one configuration value as the scenario writes it.
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Kind implements Payload.
func (*RunStart) Kind() Kind { return KindRunStart }

// Platform describes the machine, for comparing runs across operating systems.
type Platform struct {
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Kernel string `json:"kernel,omitempty"`
	CPU    string `json:"cpu,omitempty"`
	NumCPU int    `json:"num_cpu,omitempty"`
	// GOMAXPROCS is how many processors the harness's Go runtime ran
	// goroutines on (runtime.GOMAXPROCS: NumCPU, or the GOMAXPROCS
	// environment variable, or a container's CPU limit). On a machine
	// with idle CPUs it changes the harness's own timer lateness and
	// CPU, so platform figures are compared with it beside them; 0 in
	// journals recorded before it was.
	GOMAXPROCS int    `json:"gomaxprocs,omitempty"`
	GoVersion  string `json:"go_version,omitempty"`
	Hostname   string `json:"hostname,omitempty"`
	// TimerGranularity summarises how late a short sleep wakes up.
	TimerGranularity *TimerStats `json:"timer_granularity,omitempty"`
	// TCPKeepalive holds the OS keepalive settings by their sysctl name,
	// e.g. "net.ipv4.tcp_keepalive_time" or "net.inet.tcp.keepidle".
	TCPKeepalive map[string]string `json:"tcp_keepalive,omitempty"`
}

// TimerStats summarises measured sleep lateness (how much later than asked
// a 1 ms sleep returns).
type TimerStats struct {
	Samples int           `json:"samples"`
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
	Max     time.Duration `json:"max_ns"`
}

// Phase marks the start of a named phase of the run ("warmup", "replay",
// "drain", ...).
type Phase struct {
	Name   string `json:"name"`
	Detail string `json:"detail,omitempty"`
}

// Kind implements Payload.
func (*Phase) Kind() Kind { return KindPhase }

// FaultStart marks the moment a scheduled fault becomes active on an upstream.
type FaultStart struct {
	// Name identifies the fault entry in the scenario (unique in the run).
	Name string `json:"name"`
	// Type is the fault type from the catalogue ("status", "retry_after", ...).
	Type     string `json:"type"`
	Upstream string `json:"upstream"`
	// For is the planned length of the window; 0 means until the run ends.
	For time.Duration `json:"for_ns,omitempty"`
	// Params are the fault's parameters as written in the scenario.
	Params json.RawMessage `json:"params,omitempty"`
	// Probability is the per-request probability (1 when unset).
	Probability float64 `json:"probability,omitempty"`
	// HealthChecks reports whether the gateway's health checks are faulted too.
	HealthChecks bool `json:"health_checks,omitempty"`
}

// Kind implements Payload.
func (*FaultStart) Kind() Kind { return KindFaultStart }

// FaultEnd marks the end of a fault window.
type FaultEnd struct {
	Name     string `json:"name"`
	Upstream string `json:"upstream"`
	// Applied counts the requests the fault was applied to.
	Applied int64 `json:"applied"`
}

// Kind implements Payload.
func (*FaultEnd) Kind() Kind { return KindFaultEnd }

// Outcome classifies how a request ended, from the side that recorded it.
// Outcomes are data, not errors: a reset caused by a fault is a result.
type Outcome string

// Client-side outcome classes (ClientRequest.Outcome).
const (
	OutcomeOK                 Outcome = "ok"                   // 1xx-3xx status, body complete
	OutcomeHTTP4xx            Outcome = "http_4xx"             // 4xx other than a recognised fast-fail
	OutcomeHTTP5xx            Outcome = "http_5xx"             // 5xx other than a recognised fast-fail
	OutcomeFastFail           Outcome = "fast_fail"            // the gateway's breaker rejected the call
	OutcomeConnectRefused     Outcome = "connect_refused"      // ECONNREFUSED
	OutcomeConnectTimeout     Outcome = "connect_timeout"      // no connection within the deadline
	OutcomeResetBeforeHdrs    Outcome = "reset_before_headers" // connection reset or closed, no status line
	OutcomeHeadersTimeout     Outcome = "headers_timeout"      // deadline fired before any header byte
	OutcomeCutMidBody         Outcome = "cut_mid_body"         // reset/EOF after headers, body incomplete
	OutcomeDeadlineMidBody    Outcome = "deadline_mid_body"    // deadline fired while reading the body
	OutcomeTruncated          Outcome = "truncated"            // clean EOF short of Content-Length
	OutcomeMalformed          Outcome = "malformed"            // unparseable response
	OutcomeStreamError        Outcome = "stream_error"         // a 2xx event stream carried an error event
	OutcomeStreamCut          Outcome = "stream_cut"           // a 2xx event stream ended without its terminal event
	OutcomeDropped            Outcome = "dropped"              // never sent: the in-flight cap was reached
	OutcomeError              Outcome = "error"                // any other transport error
	OutcomeUpstreamComplete   Outcome = "completed"            // upstream side: response fully written
	OutcomeUpstreamReset      Outcome = "reset"                // upstream side: connection reset by the fault
	OutcomeUpstreamCut        Outcome = "cut"                  // upstream side: body cut by the fault (FIN)
	OutcomeUpstreamStalled    Outcome = "stalled"              // upstream side: held until the client gave up
	OutcomeUpstreamGone       Outcome = "client_gone"          // upstream side: the gateway hung up first
	OutcomeUpstreamErrorEvent Outcome = "error_event"          // upstream side: a 200 stream ended by an error event (stream_error fault)
)

// ClientRequest is one request sent (or due and not sent) by the replayer,
// and how it ended as the client saw it.
type ClientRequest struct {
	Seq    uint64 `json:"seq"`
	Method string `json:"method"`
	// Route is the request path (query removed), or the route template when
	// the scenario maps routes.
	Route string `json:"route"`
	// Upstream is the upstream the route maps to, when the scenario says.
	Upstream string `json:"upstream,omitempty"`
	// Scheduled is when the request was due; Sent when its first byte went
	// out; HeadersAt when the response headers arrived; Done when the
	// exchange ended. Zero means it did not happen.
	Scheduled time.Duration `json:"scheduled"`
	Sent      time.Duration `json:"sent,omitempty"`
	HeadersAt time.Duration `json:"headers_at,omitempty"`
	Done      time.Duration `json:"done,omitempty"`
	// Latency is Done - Scheduled: what a user would have waited, immune to
	// coordinated omission. Service is Done - Sent.
	Latency time.Duration `json:"latency_ns,omitempty"`
	Service time.Duration `json:"service_ns,omitempty"`
	Status  int           `json:"status,omitempty"`
	// Bytes is the number of response body bytes received.
	Bytes int64 `json:"bytes,omitempty"`
	// Expected is the announced body length (Content-Length); -1 when unknown.
	Expected int64 `json:"expected,omitempty"`
	// Fraction is Bytes/Expected for a cut body when Expected is known.
	Fraction float64 `json:"fraction,omitempty"`
	// SSEEvents counts the server-sent events received on a stream.
	SSEEvents int     `json:"sse_events,omitempty"`
	Outcome   Outcome `json:"outcome"`
	// FastFail reports that the response matched the gateway's fast-fail rule.
	FastFail bool `json:"fast_fail,omitempty"`
	// FastFailCode is the gateway's error code when it gave one.
	FastFailCode string `json:"fast_fail_code,omitempty"`
	// Late reports that the send started later than the lateness threshold.
	Late bool `json:"late,omitempty"`
	// Error is the transport error text, for outcomes other than ok/http.
	Error string `json:"error,omitempty"`
	// Resent are the moments (run time) at which the replayer's HTTP
	// transport sent the request again, each on a new connection, after a
	// reused one failed before any response byte (Go's Transport re-sends
	// idempotent requests so). Each is a physical send the gateway may
	// forward: the request went out 1+len(Resent) times.
	Resent []time.Duration `json:"resent,omitempty"`
	// IdempotencyKey reports that the request carried an idempotency key
	// header (replay.idempotency_keys, or the capture's own).
	IdempotencyKey bool `json:"idempotency_key,omitempty"`
	// Deadline is the client's deadline for this request (send to last
	// body byte); zero when unknown.
	Deadline time.Duration `json:"deadline_ns,omitempty"`
	// BodyStamp reports that the request's body carried its sequence
	// stamp ([rehearse:seq=N], replay.identity) besides the header: an
	// upstream call of a gateway that forwards no header can still be
	// attributed, and when none is, the stamp did not survive the
	// gateway (rather than was never sent).
	BodyStamp bool `json:"body_stamp,omitempty"`
	// Headers holds the response headers the scenario names
	// (replay.keep_headers) that the answer carried: canonical name →
	// value, several values joined by ", ", each cut to 256 bytes. Absent
	// when the answer carried none of them (or none was asked for: the
	// run.start config says which were); never a secret header, and
	// every value passes the redaction rule.
	Headers map[string]string `json:"headers,omitempty"`
	// Warmup marks a request of the warm-up (replay.warmup): sent before
	// the run's time zero to bring the gateway to its working state, and
	// scored nowhere. Its sequence number is WarmupSeqBase or above.
	Warmup bool `json:"warmup,omitempty"`
}

// WarmupSeqBase is the first sequence number of the warm-up's requests.
// The scored replay numbers its requests from 0 and the warm-up from
// here, so that an upstream call carrying a number (forwarded header or
// body stamp) tells by the number alone which phase it belongs to, even
// when a gateway still calls for a warm-up request after time zero.
// 2^40 is more than 30 years of sends at 1,000/s.
const WarmupSeqBase uint64 = 1 << 40

// Kind implements Payload.
func (*ClientRequest) Kind() Kind { return KindClientRequest }

// Sends is how many times the request went out on the wire: 0 when it was
// never sent (dropped), else 1 + its re-sends.
func (r *ClientRequest) Sends() int {
	if r.Sent == 0 && r.Outcome == OutcomeDropped {
		return 0
	}
	return 1 + len(r.Resent)
}

// UpstreamRequest is one request the gateway made to an upstream served by
// the harness, as the upstream saw it. The event's T is the arrival time.
type UpstreamRequest struct {
	Upstream string `json:"upstream"`
	Method   string `json:"method"`
	Path     string `json:"path"`
	// Seq is the client sequence stamp if the gateway forwarded it.
	Seq *uint64 `json:"seq,omitempty"`
	// SeqFrom says where Seq was read: SeqFromHeader (the sequence
	// header the gateway forwarded) or SeqFromBody (the stamp the
	// replayer wrote into the request body, found in the call's body: a
	// gateway that builds its own upstream request). Empty without a
	// Seq, and in journals recorded before the field (header then).
	SeqFrom string `json:"seq_from,omitempty"`
	// Remote is the gateway's address for this connection (ip:port): it
	// tells workers and connections apart.
	Remote    string `json:"remote,omitempty"`
	UserAgent string `json:"user_agent,omitempty"`
	// ProbeTag is the value of the probe tag header (or the matched
	// User-Agent) when the gateway marked the request as a probe.
	ProbeTag string `json:"probe_tag,omitempty"`
	// HealthCheck reports that the request matched the health-check rule.
	HealthCheck bool `json:"health_check,omitempty"`
	// Fault is the name of the fault applied, empty when served healthy.
	Fault     string `json:"fault,omitempty"`
	FaultType string `json:"fault_type,omitempty"`
	// InFlight is the number of requests in flight on this upstream at
	// arrival, this one included.
	InFlight int `json:"in_flight"`
	Status   int `json:"status,omitempty"`
	// RetryAfter is the Retry-After advertised in the response, if any.
	RetryAfter time.Duration `json:"retry_after_ns,omitempty"`
	// Bytes counts response body bytes written: handed to the connection
	// without an error (a write that failed, or bytes net/http held when
	// its flush failed, are not counted).
	Bytes int64 `json:"bytes,omitempty"`
	// HeadersAt is when the upstream released its response head to the
	// gateway's connection, stamped just before the bytes were written:
	// the gateway cannot have read the answer's status earlier (a breaker
	// cannot have counted its success before it). A head net/http held
	// until the handler returned left with the rest of the answer: Done
	// then. Zero when no head was sent (a reset, a hang-up before the
	// answer) and in journals recorded before the field.
	HeadersAt time.Duration `json:"headers_at,omitempty"`
	// Done is when the exchange ended.
	Done    time.Duration `json:"done,omitempty"`
	Outcome Outcome       `json:"outcome"`
	// Delivered reports, of a call the gateway hung up on (client_gone),
	// that the answer's content had all been written before the hang-up:
	// only the transport's end marker (an event stream's terminal event,
	// "data: [DONE]" or message_stop, after the last content event and
	// the usage) was left unwritten. A gateway that has read every event
	// it needs may close at once; that is the caller finishing, not a
	// give-up. Bytes then counts what was written, the marker not
	// included. False in journals recorded before the field.
	Delivered bool `json:"delivered,omitempty"`
	// IdempotencyKey is a fingerprint ("sha256:" and 12 hex digits) of
	// the request's idempotency key header, empty when it had none: it
	// tells whether attempts of one client request carried the same key
	// without writing the key.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Budget is the deadline the gateway announced to the upstream (its
	// deadline header, in ms); zero when none was announced.
	Budget time.Duration `json:"budget_ns,omitempty"`
	// PromptTokens and CompletionTokens are the usage the upstream charged
	// for this call (a fake model provider charges when it starts writing
	// its answer, whether or not the answer is received); zero when the
	// call cost no tokens or the upstream does not report usage.
	PromptTokens     int64 `json:"prompt_tokens,omitempty"`
	CompletionTokens int64 `json:"completion_tokens,omitempty"`
}

// Where an UpstreamRequest's Seq was read (UpstreamRequest.SeqFrom).
const (
	SeqFromHeader = "header"
	SeqFromBody   = "body"
)

// Kind implements Payload.
func (*UpstreamRequest) Kind() Kind { return KindUpstreamRequest }

// MetricsSample is one scrape of the gateway's metrics, reduced to the
// selected series and, where a preset applies, breaker states.
type MetricsSample struct {
	Source string `json:"source"`
	// Origin says where the states came from: OriginLog for a line of
	// the gateway's log (Source is then the log file), empty for a
	// metrics scrape or a Prometheus query. Readers that predate it
	// ignore it, and a sample from a log reads like any other.
	Origin string `json:"origin,omitempty"`
	// Series are the selected raw series.
	Series []Series `json:"series,omitempty"`
	// States are breaker states derived by the preset, one per dependency.
	States []BreakerState `json:"states,omitempty"`
	// Took is the scrape duration.
	Took  time.Duration `json:"took_ns,omitempty"`
	Error string        `json:"error,omitempty"`
}

// Kind implements Payload.
func (*MetricsSample) Kind() Kind { return KindMetricsSample }

// OriginLog is MetricsSample.Origin for a sample read from the gateway's
// log file rather than its metrics.
const OriginLog = "log"

// Series is one metric sample.
type Series struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
}

// Breaker states, as reported by metrics or transitions.
const (
	StateClosed   = "closed"
	StateHalfOpen = "half_open"
	StateOpen     = "open"
)

// BreakerState is a breaker's state for one dependency, as a metrics preset
// reads it.
type BreakerState struct {
	// Dependency is the upstream name as the gateway labels it.
	Dependency string `json:"dependency"`
	// Upstream is the harness upstream it maps to, when known.
	Upstream string `json:"upstream,omitempty"`
	State    string `json:"state"`
}

// HealthSample is one probe of the gateway's health URL.
type HealthSample struct {
	URL     string        `json:"url"`
	Status  int           `json:"status,omitempty"`
	Healthy bool          `json:"healthy"`
	Latency time.Duration `json:"latency_ns,omitempty"`
	Error   string        `json:"error,omitempty"`
	// Detail is a short excerpt of the body (e.g. which checks failed).
	Detail string `json:"detail,omitempty"`
}

// Kind implements Payload.
func (*HealthSample) Kind() Kind { return KindHealthSample }

// PlatformSample is a measurement of the machine taken during the run, so
// that a comparison can tell a platform's timers from a moment's load: the
// lateness of a burst of short sleeps, and the load average.
type PlatformSample struct {
	// Timer summarises the burst; nil when no sleep completed.
	Timer *TimerStats `json:"timer,omitempty"`
	// Load1 is the one-minute load average (runnable processes, including
	// the harness and the gateway); nil where the OS does not say.
	Load1 *float64 `json:"load1,omitempty"`
}

// Kind implements Payload.
func (*PlatformSample) Kind() Kind { return KindPlatformSample }

// BreakerTransition is a state change reported from inside a gateway that
// the harness runs in-process (the built-in reference gateway). It is
// white-box ground truth, used to check the black-box analysis; reports
// never depend on it.
type BreakerTransition struct {
	Gateway    string `json:"gateway,omitempty"`
	Dependency string `json:"dependency"`
	From       string `json:"from"`
	To         string `json:"to"`
	Reason     string `json:"reason,omitempty"`
}

// Kind implements Payload.
func (*BreakerTransition) Kind() Kind { return KindBreakerTransition }

// Log is a message from the harness worth keeping with the run.
type Log struct {
	Level  string `json:"level"`
	Source string `json:"source,omitempty"`
	Msg    string `json:"msg"`
}

// Kind implements Payload.
func (*Log) Kind() Kind { return KindLog }

// RunEnd closes a journal. A journal without one is from a run that died.
type RunEnd struct {
	// Reason is "completed", "interrupted" or "failed".
	Reason string `json:"reason"`
	// Partial reports that the run stopped before its planned end.
	Partial bool   `json:"partial,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Kind implements Payload.
func (*RunEnd) Kind() Kind { return KindRunEnd }

// Run end reasons.
const (
	EndCompleted   = "completed"
	EndInterrupted = "interrupted"
	EndFailed      = "failed"
)

// Unknown holds an event of a kind this version does not know, so that a
// newer journal still reads.
type Unknown struct {
	KindName Kind
	Raw      json.RawMessage
}

// Kind implements Payload.
func (u *Unknown) Kind() Kind { return u.KindName }

// MarshalJSON writes the raw fields back.
func (u *Unknown) MarshalJSON() ([]byte, error) { return u.Raw, nil }
