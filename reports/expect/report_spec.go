package expect

import (
	"fmt"
	"strings"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
)

// ReportSpec is the scenario's `report` section: what the report adds
// for the people who read it.
type ReportSpec struct {
	// Links turns dashboards into links for the run's exact window.
	Links *ReportLinks `yaml:"links,omitempty" json:"links,omitempty" doc:"dashboard links for the run's window"`
}

// ReportLinks are dashboards the report links to, each for the run's
// time window, so that a postmortem carries the metrics panel beside the
// timeline.
type ReportLinks struct {
	// Grafana is a dashboard URL. "{from}" and "{to}" in it are replaced
	// by the window in Unix milliseconds; without them the from and to
	// query parameters are set.
	Grafana string `yaml:"grafana,omitempty" json:"grafana,omitempty" doc:"Grafana dashboard URL; {from}/{to} (Unix ms) or the from/to parameters are set to the run's window"`
	// Prometheus is a Prometheus server's base URL; the report links a
	// graph of the breaker series the gateway's metrics preset reads.
	Prometheus string `yaml:"prometheus,omitempty" json:"prometheus,omitempty" doc:"Prometheus base URL; the report links graphs of the preset's breaker series for the run's window"`
}

// Validate checks that every link is an absolute http(s) URL.
func (r *ReportSpec) Validate() error {
	if r == nil || r.Links == nil {
		return nil
	}
	for name, v := range map[string]string{"links.grafana": r.Links.Grafana, "links.prometheus": r.Links.Prometheus} {
		if v == "" {
			continue
		}
		// Checked with its placeholders filled, named as written.
		if _, err := rehearse.ParseHTTPURL(strings.NewReplacer("{from}", "0", "{to}", "0").Replace(v)); err != nil {
			return &rehearse.ConfigError{Path: name, Err: fmt.Errorf("%q: want an absolute http:// or https:// URL", redact.URL(v))}
		}
	}
	return nil
}
