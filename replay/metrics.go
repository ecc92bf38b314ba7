package replay

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the replayer's own Prometheus collectors. Labels stay
// low-cardinality: outcome class, upstream name and route template (the
// request path only when no route map applies is never used as a label).
type metrics struct {
	requests *prometheus.CounterVec // outcome, upstream
	dropped  *prometheus.CounterVec // reason
	late     prometheus.Counter
	inFlight prometheus.Gauge
	lateness prometheus.Histogram
	latency  *prometheus.HistogramVec // upstream
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rehearse_replay_requests_total",
			Help: "Requests scheduled by the replayer, by outcome class and upstream.",
		}, []string{"outcome", "upstream"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rehearse_replay_dropped_total",
			Help: "Scheduled requests never sent, by reason (in_flight_cap, missed).",
		}, []string{"reason"}),
		late: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rehearse_replay_late_total",
			Help: "Requests sent later than the lateness threshold.",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rehearse_replay_in_flight",
			Help: "Requests in flight.",
		}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rehearse_replay_send_lateness_seconds",
			Help:    "Send lateness: actual send time minus due time.",
			Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3, 1},
		}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rehearse_replay_latency_seconds",
			Help:    "Request latency from the due time to the end of the exchange, by upstream.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{"upstream"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.dropped, m.late, m.inFlight, m.lateness, m.latency} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("replay: metrics already registered on this registerer (one replayer per registry): %w", err)
			}
			return nil, fmt.Errorf("replay: register metrics: %w", err)
		}
	}
	return m, nil
}
