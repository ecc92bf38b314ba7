package observe

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/journal"
)

// Defaults used when a config leaves a field zero. Command-line flags use
// them as their defaults.
const (
	// DefaultScrapeInterval is the scrape interval: the reference gateway's
	// SLO signals are scraped every 5 s in production (docs/gateway.md).
	DefaultScrapeInterval = 5 * time.Second
	// DefaultMaxScrapeTimeout caps the default scrape timeout (the interval)
	// like Prometheus' own default scrape_timeout.
	DefaultMaxScrapeTimeout = 10 * time.Second
	// DefaultHealthInterval is the health canary's interval.
	DefaultHealthInterval = time.Second
	// DefaultHealthTimeout caps the default health-check timeout (the
	// interval).
	DefaultHealthTimeout = 2 * time.Second
	// DefaultPreset is the preset used when none is named: the built-in
	// reference gateway's metrics.
	DefaultPreset = "reference"
	// DefaultPromQueryMode is the Prometheus API endpoint used by default.
	DefaultPromQueryMode = PromModeQuery
)

// DefaultHealthyStatus is the status classes a health check counts as
// healthy when HealthConfig.HealthyStatus is empty.
var DefaultHealthyStatus = []string{"2xx"}

// Modes of PromQueryConfig.Mode.
const (
	// PromModeQuery runs an instant query (/api/v1/query) every interval:
	// each sample is the value Prometheus holds at that moment.
	PromModeQuery = "query"
	// PromModeQueryRange runs a range query (/api/v1/query_range) every
	// interval over the time since the previous one: each sample is stamped
	// with the time Prometheus scraped it.
	PromModeQueryRange = "query_range"
)

// Exposition formats of ScrapeConfig.Format.
const (
	FormatAuto        = "auto"
	FormatText        = "text"
	FormatOpenMetrics = "openmetrics"
)

// ScrapeConfig says where and how to read the gateway's metrics: it is the
// scenario's gateway.metrics section. Exactly one of URL and PromQuery is
// set.
type ScrapeConfig struct {
	// URL is the gateway's metrics endpoint, e.g.
	// "http://127.0.0.1:8080/metrics".
	URL string `yaml:"url,omitempty" json:"url,omitempty"`
	// Interval between scrapes; zero means DefaultScrapeInterval.
	Interval rehearse.Duration `yaml:"interval,omitempty" json:"interval,omitempty"`
	// Timeout of one scrape; zero means the interval, at most
	// DefaultMaxScrapeTimeout.
	Timeout rehearse.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Format is the exposition format to ask for: FormatAuto (empty:
	// negotiate, the text format preferred, see AcceptHeader), FormatText
	// or FormatOpenMetrics (only OpenMetrics; slower to parse, and types
	// such as stateset and info are not supported by the parser).
	Format string `yaml:"format,omitempty" json:"format,omitempty"`
	// Preset names the breaker-state mapping (see Presets); empty means
	// DefaultPreset, or "custom" when Custom is set.
	Preset string `yaml:"preset,omitempty" json:"preset,omitempty"`
	// Custom is the mapping of the "custom" preset.
	Custom *CustomPreset `yaml:"custom,omitempty" json:"custom,omitempty"`
	// Keep lists extra series to keep in each sample, by metric name or by
	// a regular expression matched against the whole name. Histograms and
	// summaries are matched by their series names (…_bucket, …_sum,
	// …_count).
	Keep []string `yaml:"keep,omitempty" json:"keep,omitempty"`
	// DependencyMap maps the gateway's name for a dependency (the preset's
	// dependency label, or one part of it, e.g. HAProxy's backend) to the
	// harness upstream name, when they differ.
	DependencyMap map[string]string `yaml:"dependency_map,omitempty" json:"dependency_map,omitempty"`
	// PromQuery reads the series from a Prometheus server instead of
	// scraping the gateway.
	PromQuery *PromQueryConfig `yaml:"prom_query,omitempty" json:"prom_query,omitempty"`
	// Headers are added to every request, to the gateway or to the
	// Prometheus API (e.g. Authorization). "${VAR}" in a value is replaced
	// by the environment variable VAR, so scenario files need not hold
	// secrets; values are never recorded.
	Headers HeaderMap `yaml:"headers,omitempty" json:"headers,omitempty"`
	// TLS configures https URLs; nil means the system's roots.
	TLS *TLSConfig `yaml:"tls,omitempty" json:"tls,omitempty"`
}

// TLSConfig says how to trust an https metrics, Prometheus or health
// endpoint. It applies to the client the package builds itself, not to one
// given with WithHTTPClient.
type TLSConfig struct {
	// CAFile is a PEM file of CA certificates to trust instead of the
	// system's (an internal CA, a self-signed gateway).
	CAFile string `yaml:"ca_file,omitempty" json:"ca_file,omitempty"`
	// ServerName overrides the name checked against the certificate.
	ServerName string `yaml:"server_name,omitempty" json:"server_name,omitempty"`
	// InsecureSkipVerify accepts any certificate. For throwaway test
	// gateways only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify,omitempty" json:"insecure_skip_verify,omitempty"`
}

// tlsConfig loads t; field names in errors are below "tls.".
func (t *TLSConfig) tlsConfig() (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	c := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &rehearse.ConfigError{Path: "tls.ca_file", Err: err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, cfgErr("tls.ca_file", "%s holds no PEM certificate", t.CAFile)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// HeaderMap holds request headers from a config file: name → value, with
// "${VAR}" expanded from the environment when used. Its JSON form redacts
// the values, because configs are recorded in the journal (run.start) and
// a header is where credentials live.
type HeaderMap map[string]string

// Redacted is the JSON value of every header in a HeaderMap: the one
// marker of everything rehearse writes (redact.Marker).
const Redacted = redact.Marker

// MarshalJSON writes the header names with redacted values.
func (h HeaderMap) MarshalJSON() ([]byte, error) {
	if h == nil {
		return []byte("null"), nil
	}
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = Redacted
	}
	return json.Marshal(out)
}

// PromQueryConfig reads the gateway's series from a Prometheus server's HTTP
// API, for fleets that are already scraped.
type PromQueryConfig struct {
	// URL is the Prometheus server's base URL, e.g. "http://prom:9090".
	URL string `yaml:"url" json:"url"`
	// Query is the PromQL expression; empty means a selector of the
	// preset's metrics and Keep, narrowed by Selector.
	Query string `yaml:"query,omitempty" json:"query,omitempty"`
	// Selector adds label matchers to the default query, e.g.
	// `job="gateway", env="staging"`. Ignored when Query is set.
	Selector string `yaml:"selector,omitempty" json:"selector,omitempty"`
	// Mode is PromModeQuery or PromModeQueryRange; empty means
	// DefaultPromQueryMode.
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty"`
	// Step is the resolution of range queries; zero means the interval.
	Step rehearse.Duration `yaml:"step,omitempty" json:"step,omitempty"`
}

// CustomPreset maps a gateway's own metric to breaker states. Either the
// metric's value encodes the state (Values), or one series per state
// carries a state label and the value 1 marks the current one (StateLabel
// and States, "one-hot").
type CustomPreset struct {
	// Metric is the series name, e.g. "mygw_breaker_state".
	Metric string `yaml:"metric" json:"metric"`
	// DependencyLabels are the labels naming the dependency; several are
	// joined with "/". Empty means ["dependency"].
	DependencyLabels []string `yaml:"dependency_labels,omitempty" json:"dependency_labels,omitempty"`
	// Values maps a value ("0", "1", "2") to a state (closed, half_open,
	// open). Value mode.
	Values map[string]string `yaml:"values,omitempty" json:"values,omitempty"`
	// StateLabel is the label holding the state name. One-hot mode.
	StateLabel string `yaml:"state_label,omitempty" json:"state_label,omitempty"`
	// States maps a StateLabel value to a state. One-hot mode; matched
	// without regard to case.
	States map[string]string `yaml:"states,omitempty" json:"states,omitempty"`
	// Otherwise is the state of a value (or state label value) not listed;
	// empty means such series say nothing.
	Otherwise string `yaml:"otherwise,omitempty" json:"otherwise,omitempty"`
}

// HealthConfig says how to check the gateway's health URL.
type HealthConfig struct {
	// URL is the gateway's health endpoint, e.g. "http://127.0.0.1:8080/healthz".
	URL string `yaml:"url" json:"url"`
	// Interval between checks; zero means DefaultHealthInterval.
	Interval rehearse.Duration `yaml:"interval,omitempty" json:"interval,omitempty"`
	// Timeout of one check; zero means the interval, at most
	// DefaultHealthTimeout.
	Timeout rehearse.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// HealthyStatus lists the statuses counted as healthy: a code ("204")
	// or a class ("2xx"). Empty means DefaultHealthyStatus. Redirects are
	// not followed, so a 3xx is unhealthy unless listed.
	HealthyStatus []string `yaml:"healthy_status,omitempty" json:"healthy_status,omitempty"`
	// Headers are added to every check (e.g. a token the endpoint needs).
	// "${VAR}" in a value is replaced by the environment variable VAR;
	// values are never recorded.
	Headers HeaderMap `yaml:"headers,omitempty" json:"headers,omitempty"`
	// TLS configures an https URL; nil means the system's roots.
	TLS *TLSConfig `yaml:"tls,omitempty" json:"tls,omitempty"`
}

// cfgErr is a configuration error: a *rehearse.ConfigError
// (rehearse.ErrInvalid, exit 2) whose Path is the YAML path below the
// section, e.g. "custom.values"; a scenario puts it in place.
func cfgErr(field, format string, args ...any) error {
	return &rehearse.ConfigError{Path: field, Err: fmt.Errorf(format, args...)}
}

// Validate checks c without changing it. Errors name the field (YAML path
// below gateway.metrics) and wrap rehearse.ErrInvalid.
func (c ScrapeConfig) Validate() error {
	_, err := c.compile()
	return err
}

// pollTimes is the one rule for a poller's zero interval and timeout (the
// scraper's, the canary's): the interval defaults to defInterval, the
// timeout to the interval capped at maxTimeout, so that a poll given no
// timeout never outlasts the next one.
func pollTimes(interval, timeout rehearse.Duration, defInterval, maxTimeout time.Duration) (rehearse.Duration, rehearse.Duration) {
	if interval == 0 {
		interval = rehearse.Duration(defInterval)
	}
	if timeout == 0 {
		timeout = min(interval, rehearse.Duration(maxTimeout))
	}
	return interval, timeout
}

// withDefaults returns c with its zero fields set to their defaults.
func (c ScrapeConfig) withDefaults() ScrapeConfig {
	c.Interval, c.Timeout = pollTimes(c.Interval, c.Timeout, DefaultScrapeInterval, DefaultMaxScrapeTimeout)
	if c.Preset == "" {
		c.Preset = DefaultPreset
		if c.Custom != nil {
			c.Preset = PresetCustom
		}
	}
	if c.PromQuery != nil {
		pq := *c.PromQuery
		if pq.Mode == "" {
			pq.Mode = DefaultPromQueryMode
		}
		if pq.Step == 0 {
			pq.Step = c.Interval
		}
		c.PromQuery = &pq
	}
	return c
}

// compiled is a validated ScrapeConfig, ready to use.
type compiled struct {
	cfg     ScrapeConfig // with defaults
	mapping *mapping
	keep    []*regexp.Regexp
	keepSrc []string // every kept name or pattern, for PromQL
	headers http.Header
	tls     *tls.Config
}

func (c ScrapeConfig) compile() (*compiled, error) {
	c = c.withDefaults()
	switch {
	case c.URL == "" && c.PromQuery == nil:
		return nil, cfgErr("url", "required (or prom_query)")
	case c.URL != "" && c.PromQuery != nil:
		return nil, cfgErr("url", "set either url or prom_query, not both")
	case c.URL != "":
		if _, err := rehearse.ParseHTTPURL(c.URL); err != nil {
			return nil, &rehearse.ConfigError{Path: "url", Err: err}
		}
	}
	if c.Timeout > c.Interval {
		return nil, cfgErr("timeout", "%s is longer than the interval %s", c.Timeout, c.Interval)
	}
	switch c.Format {
	case "", FormatAuto, FormatText, FormatOpenMetrics:
	default:
		return nil, cfgErr("format", "unknown format %q (want %s, %s or %s)", c.Format, FormatAuto, FormatText, FormatOpenMetrics)
	}
	out := &compiled{cfg: c}
	if c.Preset == PresetCustom {
		if c.Custom == nil {
			return nil, cfgErr("custom", "required by preset \"custom\"")
		}
		m, err := c.Custom.compile()
		if err != nil {
			return nil, err
		}
		out.mapping = m
	} else {
		if c.Custom != nil {
			return nil, cfgErr("custom", "only allowed with preset \"custom\" (preset is %q)", c.Preset)
		}
		p, ok := presets[c.Preset]
		if !ok {
			return nil, cfgErr("preset", "unknown preset %q (want one of: %s)", c.Preset, strings.Join(Presets(), ", "))
		}
		out.mapping = p.mapping
		for _, name := range p.extra {
			out.keep = append(out.keep, regexp.MustCompile("^"+regexp.QuoteMeta(name)+"$"))
			out.keepSrc = append(out.keepSrc, regexp.QuoteMeta(name))
		}
	}
	out.keep = append(out.keep, regexp.MustCompile("^"+regexp.QuoteMeta(out.mapping.metric)+"$"))
	out.keepSrc = append(out.keepSrc, regexp.QuoteMeta(out.mapping.metric))
	for i, k := range c.Keep {
		re, err := regexp.Compile("^(?:" + k + ")$")
		if err != nil {
			return nil, cfgErr(fmt.Sprintf("keep[%d]", i), "invalid regular expression %q: %w", k, err)
		}
		out.keep = append(out.keep, re)
		out.keepSrc = append(out.keepSrc, k)
	}
	for k, v := range c.DependencyMap {
		if k == "" || v == "" {
			return nil, cfgErr("dependency_map", "empty name in %q: %q", k, v)
		}
	}
	h, err := compileHeaders(c.Headers)
	if err != nil {
		return nil, err
	}
	out.headers = h
	if out.tls, err = c.TLS.tlsConfig(); err != nil {
		return nil, err
	}
	if pq := c.PromQuery; pq != nil {
		if pq.URL == "" {
			return nil, cfgErr("prom_query.url", "required")
		}
		if _, err := rehearse.ParseHTTPURL(pq.URL); err != nil {
			return nil, &rehearse.ConfigError{Path: "prom_query.url", Err: err}
		}
		if pq.Mode != PromModeQuery && pq.Mode != PromModeQueryRange {
			return nil, cfgErr("prom_query.mode", "unknown mode %q (want %s or %s)", pq.Mode, PromModeQuery, PromModeQueryRange)
		}
		if pq.Query != "" && pq.Selector != "" {
			return nil, cfgErr("prom_query.selector", "not used when query is set; put the matchers in the query")
		}
		if strings.ContainsAny(pq.Selector, "{}") {
			return nil, cfgErr("prom_query.selector", "write the matchers without braces, e.g. job=\"gateway\"")
		}
	}
	return out, nil
}

var metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

func validState(s string) bool {
	return s == journal.StateClosed || s == journal.StateHalfOpen || s == journal.StateOpen
}

const stateList = "closed, half_open or open"

func (p *CustomPreset) compile() (*mapping, error) {
	if p.Metric == "" {
		return nil, cfgErr("custom.metric", "required")
	}
	if !metricNameRE.MatchString(p.Metric) {
		return nil, cfgErr("custom.metric", "invalid metric name %q", p.Metric)
	}
	m := &mapping{metric: p.Metric, depLabels: p.DependencyLabels, otherwise: p.Otherwise}
	if len(m.depLabels) == 0 {
		m.depLabels = []string{"dependency"}
	}
	for i, l := range m.depLabels {
		if l == "" {
			return nil, cfgErr(fmt.Sprintf("custom.dependency_labels[%d]", i), "empty label name")
		}
	}
	if p.Otherwise != "" && !validState(p.Otherwise) {
		return nil, cfgErr("custom.otherwise", "unknown state %q (want %s)", p.Otherwise, stateList)
	}
	oneHot := p.StateLabel != "" || len(p.States) > 0
	switch {
	case oneHot && len(p.Values) > 0:
		return nil, cfgErr("custom.values", "set either values (value mode) or state_label and states (one-hot mode), not both")
	case oneHot:
		if p.StateLabel == "" {
			return nil, cfgErr("custom.state_label", "required with states")
		}
		if len(p.States) == 0 && p.Otherwise == "" {
			return nil, cfgErr("custom.states", "required with state_label")
		}
		m.stateLabel = p.StateLabel
		m.states = make(map[string]string, len(p.States))
		for _, k := range slices.Sorted(maps.Keys(p.States)) {
			v := p.States[k]
			if !validState(v) {
				return nil, cfgErr("custom.states."+k, "unknown state %q (want %s)", v, stateList)
			}
			m.states[strings.ToLower(k)] = v
		}
	default:
		if len(p.Values) == 0 && p.Otherwise == "" {
			return nil, cfgErr("custom.values", "required: map each value to a state, e.g. {0: closed, 1: half_open, 2: open}")
		}
		m.values = make(map[float64]string, len(p.Values))
		for _, k := range slices.Sorted(maps.Keys(p.Values)) {
			v := p.Values[k]
			f, err := strconv.ParseFloat(strings.TrimSpace(k), 64)
			if err != nil {
				return nil, cfgErr("custom.values", "key %q is not a number", k)
			}
			if !validState(v) {
				return nil, cfgErr("custom.values."+k, "unknown state %q (want %s)", v, stateList)
			}
			m.values[f] = v
		}
	}
	return m, nil
}

// healthyRule is a compiled HealthConfig.HealthyStatus.
type healthyRule struct {
	codes   map[int]bool
	classes map[int]bool
	headers http.Header
	tls     *tls.Config
}

func (r healthyRule) healthy(code int) bool { return r.codes[code] || r.classes[code/100] }

// Validate checks c without changing it.
func (c HealthConfig) Validate() error {
	_, _, err := c.compile()
	return err
}

// withDefaults returns c with its zero fields set to their defaults.
func (c HealthConfig) withDefaults() HealthConfig {
	c.Interval, c.Timeout = pollTimes(c.Interval, c.Timeout, DefaultHealthInterval, DefaultHealthTimeout)
	if len(c.HealthyStatus) == 0 {
		c.HealthyStatus = DefaultHealthyStatus
	}
	return c
}

func (c HealthConfig) compile() (HealthConfig, healthyRule, error) {
	c = c.withDefaults()
	r := healthyRule{codes: map[int]bool{}, classes: map[int]bool{}}
	if c.URL == "" {
		return c, r, cfgErr("url", "required")
	}
	if _, err := rehearse.ParseHTTPURL(c.URL); err != nil {
		return c, r, &rehearse.ConfigError{Path: "url", Err: err}
	}
	if c.Timeout > c.Interval {
		return c, r, cfgErr("timeout", "%s is longer than the interval %s", c.Timeout, c.Interval)
	}
	for i, s := range c.HealthyStatus {
		s = strings.ToLower(strings.TrimSpace(s))
		if len(s) == 3 && strings.HasSuffix(s, "xx") && s[0] >= '1' && s[0] <= '5' {
			r.classes[int(s[0]-'0')] = true
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 || n > 599 {
			return c, r, cfgErr(fmt.Sprintf("healthy_status[%d]", i), "%q is not a status code (100-599) or class (2xx)", c.HealthyStatus[i])
		}
		r.codes[n] = true
	}
	h, err := compileHeaders(c.Headers)
	if err != nil {
		return c, r, err
	}
	r.headers = h
	if r.tls, err = c.TLS.tlsConfig(); err != nil {
		return c, r, err
	}
	return c, r, nil
}

var envRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// compileHeaders checks header names and expands ${VAR} in values from the
// environment; an unset variable is an error, not an empty credential.
func compileHeaders(in map[string]string) (http.Header, error) {
	if len(in) == 0 {
		return nil, nil
	}
	h := make(http.Header, len(in))
	for _, k := range slices.Sorted(maps.Keys(in)) {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, cfgErr("headers", "invalid header name %q", k)
		}
		var missing string
		v := envRefRE.ReplaceAllStringFunc(in[k], func(ref string) string {
			name := envRefRE.FindStringSubmatch(ref)[1]
			val, ok := os.LookupEnv(name)
			if !ok && missing == "" {
				missing = name
			}
			return val
		})
		if missing != "" {
			return nil, cfgErr("headers."+k, "environment variable %s is not set", missing)
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			return nil, cfgErr("headers."+k, "invalid header value (control characters)")
		}
		h.Set(k, v)
	}
	return h, nil
}
