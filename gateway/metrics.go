package gateway

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names (the contract of docs/contracts.md, prefix openclaw_breaker_). Labels are
// dependency, region and env, plus from/to on transitions, class on
// failures and result on probes: all of small, fixed cardinality.
const (
	MetricState        = "openclaw_breaker_state"
	MetricTransitions  = "openclaw_breaker_transitions_total"
	MetricRejections   = "openclaw_breaker_rejections_total"
	MetricProbeLatency = "openclaw_breaker_probe_latency_ms"
	// MetricProbeLatencySeconds is the same histogram in Prometheus' base
	// unit. The _ms name is the documented contract that dashboards and
	// alerts already query, so it stays; the _seconds series beside it is
	// what Prometheus naming asks for (and what histogram_quantile users
	// expect), so new queries need no unit conversion.
	MetricProbeLatencySeconds = "openclaw_breaker_probe_latency_seconds"
	MetricRetryAfterSkips     = "openclaw_breaker_retry_after_skips_total"
	MetricProbes              = "openclaw_breaker_probes_total"
	MetricUpstreamCalls       = "openclaw_breaker_upstream_requests_total"
	MetricUpstreamFails       = "openclaw_breaker_upstream_failures_total"
	MetricRetries             = "openclaw_breaker_retries_total"
	MetricFallbacks           = "openclaw_breaker_fallbacks_total"
	MetricCanaryUp            = "openclaw_breaker_canary_up"
	MetricCoordUp             = "openclaw_breaker_coord_up"
	MetricCoordErrors         = "openclaw_breaker_coord_errors_total"
	MetricCoordDenied         = "openclaw_breaker_coord_lease_denied_total"
)

// ProbeLatencyBuckets are the buckets of openclaw_breaker_probe_latency_ms:
// 25 ms to 2 s.
var ProbeLatencyBuckets = []float64{25, 50, 100, 250, 500, 1000, 2000}

// probeLatencySecondsBuckets are ProbeLatencyBuckets in seconds.
func probeLatencySecondsBuckets() []float64 {
	out := make([]float64, len(ProbeLatencyBuckets))
	for i, ms := range ProbeLatencyBuckets {
		out[i] = ms / 1000
	}
	return out
}

var depLabels = []string{"dependency", "region", "env"}

type metrics struct {
	state        *prometheus.GaugeVec
	transitions  *prometheus.CounterVec
	rejections   *prometheus.CounterVec
	probeLatency *prometheus.HistogramVec
	probeSeconds *prometheus.HistogramVec
	skips        *prometheus.CounterVec
	probes       *prometheus.CounterVec
	calls        *prometheus.CounterVec
	failures     *prometheus.CounterVec
	retries      *prometheus.CounterVec
	fallbacks    *prometheus.CounterVec
	canaryUp     *prometheus.GaugeVec
	coordUp      prometheus.Gauge
	coordErrors  prometheus.Counter
	coordDenied  *prometheus.CounterVec
}

func newMetrics(env string) *metrics {
	// Every series but the coordinator's is per dependency, region and
	// env, plus its own labels; the constructors say it once.
	labels := func(extra ...string) []string { return append(slices.Clone(depLabels), extra...) }
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels(extra...))
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels())
	}
	histogram := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels())
	}
	// The coordinator is one per process, not per dependency.
	fleet := prometheus.Labels{"env": env}
	return &metrics{
		state:       gauge(MetricState, "Circuit breaker state per dependency: 0 closed, 1 half-open, 2 open."),
		transitions: counter(MetricTransitions, "Circuit breaker state changes.", "from", "to"),
		rejections:  counter(MetricRejections, "Calls failed fast by an open or half-open breaker, without an upstream call."),
		probeLatency: histogram(MetricProbeLatency, "Time to response headers of half-open probes, in milliseconds.",
			ProbeLatencyBuckets),
		probeSeconds: histogram(MetricProbeLatencySeconds, "Time to response headers of half-open probes, in seconds (the same observations as "+MetricProbeLatency+").",
			probeLatencySecondsBuckets()),
		skips:     counter(MetricRetryAfterSkips, "Calls not sent because the upstream's Retry-After pause was in force (a quota pause, not a failure)."),
		probes:    counter(MetricProbes, "Half-open probes sent, by result (success, failure, neutral).", "result"),
		calls:     counter(MetricUpstreamCalls, "Calls sent to upstreams, retries and probes included."),
		failures:  counter(MetricUpstreamFails, "Failed upstream calls by class (http_5xx, rate_limited, refused, reset, headers_timeout, deadline, cut_mid_body, malformed).", "class"),
		retries:   counter(MetricRetries, "Retries of idempotent calls."),
		fallbacks: counter(MetricFallbacks, "Chat requests served by the fallback provider, labelled by the provider that was skipped or failed."),
		canaryUp:  gauge(MetricCanaryUp, "Result of the last synthetic canary per dependency: 1 up, 0 down."),
		coordUp: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricCoordUp, ConstLabels: fleet,
			Help: "1 while the fleet coordinator (Redis) answers, 0 while probing falls back to local spacing."}),
		coordErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricCoordErrors, ConstLabels: fleet,
			Help: "Failed calls to the fleet coordinator."}),
		coordDenied: counter(MetricCoordDenied, "Probes withheld because another gateway of the fleet holds the probe lease."),
	}
}

func (m *metrics) collectors(coord bool) []prometheus.Collector {
	cs := []prometheus.Collector{m.state, m.transitions, m.rejections, m.probeLatency, m.probeSeconds, m.skips,
		m.probes, m.calls, m.failures, m.retries, m.fallbacks, m.canaryUp}
	if coord {
		cs = append(cs, m.coordUp, m.coordErrors, m.coordDenied)
	}
	return cs
}

func (m *metrics) register(r prometheus.Registerer, coord bool) error {
	for _, c := range m.collectors(coord) {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
