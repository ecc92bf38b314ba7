package inject

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus collectors. Labels are low
// cardinality: upstream, fault name, outcome class.
type metrics struct {
	requests *prometheus.CounterVec
	applied  *prometheus.CounterVec
	inFlight *prometheus.GaugeVec
	active   *prometheus.GaugeVec
}

func newMetrics() *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rehearse_inject_requests_total",
			Help: "Requests (tcp: connections) served by the harness's upstreams, by how they ended.",
		}, []string{"upstream", "outcome"}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rehearse_inject_faults_applied_total",
			Help: "Requests (tcp: connections) a fault was applied to.",
		}, []string{"upstream", "fault"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rehearse_inject_in_flight",
			Help: "Requests (tcp: connections) in flight on an upstream.",
		}, []string{"upstream"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rehearse_inject_fault_active",
			Help: "1 while a fault's window is open.",
		}, []string{"upstream", "fault"}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{m.requests, m.applied, m.inFlight, m.active} {
		errs = append(errs, r.Register(c))
	}
	return errors.Join(errs...)
}
