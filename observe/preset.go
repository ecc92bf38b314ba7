package observe

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/halfopen/rehearse/journal"
)

// Preset names.
const (
	PresetReference    = "reference"
	PresetHAProxy      = "haproxy"
	PresetCaddy        = "caddy"
	PresetResilience4j = "resilience4j"
	PresetEnvoy        = "envoy"
	PresetCustom       = "custom"
)

// mapping turns the series of one metric into breaker states. It is either
// value mode (values) or one-hot mode (stateLabel and states).
type mapping struct {
	metric    string
	depLabels []string
	// values maps a series value to a state (value mode).
	values map[float64]string
	// stateLabel and states map a label value (lower case) to a state
	// (one-hot mode: the series whose value is non-zero is the current one).
	stateLabel string
	states     map[string]string
	// otherwise is the state of a value or label value not listed; empty
	// means the series says nothing.
	otherwise string
}

// preset is a named mapping plus the extra series worth keeping with it.
type preset struct {
	mapping *mapping
	extra   []string
	doc     string
}

// presets is the one registry of built-in presets; docs/metrics.md
// describes each.
var presets = map[string]preset{
	PresetReference: {
		doc: "the built-in reference gateway (openclaw_breaker_state: 0 closed, 1 half-open, 2 open)",
		mapping: &mapping{
			metric:    "openclaw_breaker_state",
			depLabels: []string{"dependency"},
			values:    map[float64]string{0: journal.StateClosed, 1: journal.StateHalfOpen, 2: journal.StateOpen},
		},
		extra: []string{
			"openclaw_breaker_transitions_total",
			"openclaw_breaker_rejections_total",
			"openclaw_breaker_retry_after_skips_total",
			"openclaw_breaker_probes_total",
			"openclaw_breaker_probe_latency_ms_count",
			"openclaw_breaker_probe_latency_ms_sum",
		},
	},
	PresetHAProxy: {
		doc: "HAProxy's prometheus-exporter (haproxy_server_status one-hot: UP closed; DOWN, MAINT, DRAIN, NOLB open)",
		mapping: &mapping{
			metric:     "haproxy_server_status",
			depLabels:  []string{"proxy", "server"},
			stateLabel: "state",
			// A server that gets no new load-balanced traffic is "open"
			// from the harness's point of view, whatever put it there:
			// failed checks (DOWN), an operator (MAINT, DRAIN) or a
			// disable-on-404/agent answer (NOLB). HAProxy has no
			// half-open state: its health checks are the probes.
			states: map[string]string{
				"up":    journal.StateClosed,
				"down":  journal.StateOpen,
				"maint": journal.StateOpen,
				"drain": journal.StateOpen,
				"nolb":  journal.StateOpen,
			},
		},
		extra: []string{
			"haproxy_server_check_up_down_total",
			"haproxy_server_check_failures_total",
			"haproxy_server_downtime_seconds_total",
		},
	},
	PresetCaddy: {
		doc: "Caddy's reverse proxy (caddy_reverse_proxy_upstreams_healthy: 1 closed, 0 open)",
		mapping: &mapping{
			metric:    "caddy_reverse_proxy_upstreams_healthy",
			depLabels: []string{"upstream"},
			values:    map[float64]string{1: journal.StateClosed, 0: journal.StateOpen},
		},
	},
	PresetResilience4j: {
		doc: "resilience4j via Micrometer (resilience4j_circuitbreaker_state one-hot by state)",
		mapping: &mapping{
			metric:     "resilience4j_circuitbreaker_state",
			depLabels:  []string{"name"},
			stateLabel: "state",
			// disabled and metrics_only let every call through: closed.
			states: map[string]string{
				"closed":       journal.StateClosed,
				"open":         journal.StateOpen,
				"half_open":    journal.StateHalfOpen,
				"forced_open":  journal.StateOpen,
				"disabled":     journal.StateClosed,
				"metrics_only": journal.StateClosed,
			},
		},
		extra: []string{
			"resilience4j_circuitbreaker_not_permitted_calls_total",
			"resilience4j_circuitbreaker_failure_rate",
			"resilience4j_circuitbreaker_buffered_calls",
		},
	},
	PresetEnvoy: {
		doc: "Envoy outlier detection (envoy_cluster_outlier_detection_ejections_active: 0 closed, more open)",
		mapping: &mapping{
			metric:    "envoy_cluster_outlier_detection_ejections_active",
			depLabels: []string{"envoy_cluster_name"},
			values:    map[float64]string{0: journal.StateClosed},
			otherwise: journal.StateOpen,
		},
		extra: []string{
			"envoy_cluster_outlier_detection_ejections_enforced_total",
			"envoy_cluster_membership_healthy",
			"envoy_cluster_membership_total",
		},
	},
}

// Presets returns the names of the presets, sorted, "custom" included.
func Presets() []string {
	out := append(slices.Collect(maps.Keys(presets)), PresetCustom)
	slices.Sort(out)
	return out
}

// PresetDoc returns a one-line description of a preset, or "" for an
// unknown name.
func PresetDoc(name string) string {
	if name == PresetCustom {
		return "your own metric: a value mapping or a one-hot state label (see docs/metrics.md)"
	}
	return presets[name].doc
}

// severity orders states so that the worst of several series wins.
func severity(s string) int {
	switch s {
	case journal.StateOpen:
		return 3
	case journal.StateHalfOpen:
		return 2
	case journal.StateClosed:
		return 1
	}
	return 0
}

// stateOf returns the state one series says, or "" when it says nothing.
func (m *mapping) stateOf(s journal.Series) string {
	if math.IsNaN(s.Value) {
		return ""
	}
	if m.stateLabel != "" {
		// One-hot: only the series flagged 1 names the state; the zero
		// series of the other states say nothing.
		if s.Value == 0 {
			return ""
		}
		v, ok := s.Labels[m.stateLabel]
		if !ok {
			return ""
		}
		if st, ok := m.states[strings.ToLower(v)]; ok {
			return st
		}
		return m.otherwise
	}
	if st, ok := m.values[s.Value]; ok {
		return st
	}
	return m.otherwise
}

// dependency returns the series' dependency name and its parts, or "" when
// a dependency label is missing.
func (m *mapping) dependency(s journal.Series) (string, []string) {
	parts := make([]string, 0, len(m.depLabels))
	for _, l := range m.depLabels {
		v := s.Labels[l]
		if v == "" {
			return "", nil
		}
		parts = append(parts, v)
	}
	return strings.Join(parts, "/"), parts
}

// resolver names the harness upstream of a gateway dependency.
type resolver struct {
	depMap    map[string]string
	upstreams map[string]bool
}

// upstream looks the dependency up in the map, whole then part by part;
// failing that, a dependency (or part) that is itself a known upstream name
// maps to itself.
func (r resolver) upstream(dep string, parts []string) string {
	if u, ok := r.depMap[dep]; ok {
		return u
	}
	for _, p := range parts {
		if u, ok := r.depMap[p]; ok {
			return u
		}
	}
	if r.upstreams[dep] {
		return dep
	}
	for _, p := range parts {
		if r.upstreams[p] {
			return p
		}
	}
	return ""
}

// States maps series to one breaker state per dependency, sorted by
// dependency. Several series of one dependency (regions, one-hot rows)
// resolve to the worst state among them: open, then half_open, then closed.
func (m *mapping) States(series []journal.Series, r resolver) []journal.BreakerState {
	worst := map[string]journal.BreakerState{}
	for _, s := range series {
		if s.Name != m.metric {
			continue
		}
		st := m.stateOf(s)
		if st == "" {
			continue
		}
		dep, parts := m.dependency(s)
		if dep == "" {
			continue
		}
		if cur, ok := worst[dep]; ok && severity(cur.State) >= severity(st) {
			continue
		}
		worst[dep] = journal.BreakerState{Dependency: dep, Upstream: r.upstream(dep, parts), State: st}
	}
	out := make([]journal.BreakerState, 0, len(worst))
	for _, b := range worst {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dependency < out[j].Dependency })
	return out
}

// PresetMetric returns the breaker-state series a preset reads, or "" for
// an unknown name or "custom" (whose metric is in its CustomPreset).
// Reports use it to link to the series in Prometheus for a run's window.
func PresetMetric(name string) string {
	if p, ok := presets[name]; ok && p.mapping != nil {
		return p.mapping.metric
	}
	return ""
}
