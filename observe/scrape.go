package observe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/journal"
)

// AcceptHeader is sent with every scrape in FormatAuto. It offers both
// exposition formats but prefers the Prometheus text format over
// OpenMetrics 1.0.0 and 0.0.1: expfmt's OpenMetrics decoder (v0.73) is a
// generic ABNF parser that takes milliseconds per line on a loaded machine,
// where the text parser takes microseconds, and it refuses the OpenMetrics
// that client_golang writes for its own Go collector (a gauge and a counter
// family both named go_memstats_alloc_bytes once _total is dropped). An
// exporter that only speaks OpenMetrics still gets it. The protobuf format
// is not asked for (it is decoded if a server sends it anyway).
const AcceptHeader = "text/plain;version=0.0.4;q=1," +
	"application/openmetrics-text;version=1.0.0;q=0.5," +
	"application/openmetrics-text;version=0.0.1;q=0.4,*/*;q=0.1"

// acceptFor returns the Accept header for a ScrapeConfig.Format.
func acceptFor(format string) string {
	switch format {
	case FormatText:
		return "text/plain;version=0.0.4,*/*;q=0.1"
	case FormatOpenMetrics:
		return "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75"
	}
	return AcceptHeader
}

// MaxScrapeBytes bounds the size of a metrics response; a larger one is a
// failed scrape, not an unbounded read.
const MaxScrapeBytes = 32 << 20

// ErrScrape is wrapped by every failed scrape (transport error, HTTP
// status, unparsable exposition, Prometheus API error). It is an
// environment failure (rehearse.ErrEnvironment) when returned by
// ScrapeOnce; in Run it becomes the sample's Error.
var ErrScrape = errors.New("scrape failed")

// ScrapeError describes a failed scrape.
type ScrapeError struct {
	// URL is the scraped URL, with any password redacted.
	URL string
	// Status is the HTTP status when one was received, else 0.
	Status int
	Err    error
}

// Error implements error.
func (e *ScrapeError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("scrape %s: HTTP %d: %v", e.URL, e.Status, e.Err)
	}
	return fmt.Sprintf("scrape %s: %v", e.URL, e.Err)
}

// Unwrap returns the cause.
func (e *ScrapeError) Unwrap() error { return e.Err }

// Is reports ErrScrape and rehearse.ErrEnvironment.
func (e *ScrapeError) Is(target error) bool {
	return target == ErrScrape || target == rehearse.ErrEnvironment
}

// Scraper reads the gateway's metrics at an interval and records one
// journal.MetricsSample per scrape, with the selected series and the
// breaker states its preset derives from them.
type Scraper struct {
	c      *compiled
	o      options
	res    resolver
	source string
	prom   *promSource
	// failing is set while scrapes fail (Run's goroutine only).
	failing bool
}

// NewScraper checks cfg and returns a Scraper. Errors wrap
// rehearse.ErrInvalid and name the offending field.
func NewScraper(cfg ScrapeConfig, opts ...Option) (*Scraper, error) {
	c, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	s := &Scraper{c: c, o: buildOptions(opts, c.tls)}
	s.res = resolver{depMap: c.cfg.DependencyMap, upstreams: s.o.upstreams}
	if c.cfg.PromQuery != nil {
		s.prom, err = newPromSource(c, s.o)
		if err != nil {
			return nil, err
		}
		s.source = s.prom.source
	} else {
		s.source = redactURL(c.cfg.URL)
	}
	return s, nil
}

// Config returns the scraper's configuration with defaults filled in.
func (s *Scraper) Config() ScrapeConfig { return s.c.cfg }

// Source returns the name samples carry in their Source field: the scraped
// URL (or the Prometheus server's), password redacted.
func (s *Scraper) Source() string { return s.source }

// Run scrapes immediately, then every interval, recording each sample,
// until ctx is done; then it returns nil. A failed scrape is recorded as a
// sample with Error set and the next one goes ahead on schedule: Run itself
// has no failure of its own. A scrape slower than the interval delays the
// next one instead of piling scrapes up.
func (s *Scraper) Run(ctx context.Context) error {
	defer s.o.release()
	if s.prom != nil && s.c.cfg.PromQuery.Mode == PromModeQueryRange {
		return s.prom.runRange(ctx, s)
	}
	return s.o.sampleEvery(ctx, s.c.cfg.Interval.D(), func() journal.Payload {
		sample, err := s.ScrapeOnce(ctx)
		if ctx.Err() == nil {
			// A scrape cut short by the end of the run is not a
			// failure of the gateway.
			s.logOutcome(err)
		}
		return sample
	})
}

// logOutcome warns when scrapes start failing and says when they recover,
// once each, so a console shows a dead metrics endpoint without a line per
// interval.
func (s *Scraper) logOutcome(err error) {
	switch {
	case err != nil && !s.failing:
		s.failing = true
		s.o.logger.Warn("metrics scrape failing; recording failed samples until it recovers", "source", s.source, "err", err)
	case err != nil:
		s.o.logger.Debug("metrics scrape failed", "source", s.source, "err", err)
	case s.failing:
		s.failing = false
		s.o.logger.Info("metrics scrape recovered", "source", s.source)
	}
}

// StateMetric returns the name of the metric the preset reads breaker
// states from, for messages such as "no openclaw_breaker_state series".
func (s *Scraper) StateMetric() string { return s.c.mapping.metric }

// ScrapeOnce scrapes now and returns the sample without recording it. The
// sample is never nil; when the scrape failed, its Error is set and the
// same error (a *ScrapeError, wrapping ErrScrape and
// rehearse.ErrEnvironment) is returned, so a caller can use ScrapeOnce as a
// preflight check. With a Prometheus source it runs an instant query.
func (s *Scraper) ScrapeOnce(ctx context.Context) (*journal.MetricsSample, error) {
	start := time.Now()
	var (
		series []journal.Series
		err    error
	)
	if s.prom != nil {
		series, err = s.prom.instant(ctx, s.o.now())
	} else {
		series, err = s.scrapeHTTP(ctx)
	}
	sample := &journal.MetricsSample{Source: s.source, Took: time.Since(start)}
	if err != nil {
		sample.Error = err.Error()
		return sample, err
	}
	sample.Series = series
	sample.States = s.c.mapping.States(series, s.res)
	return sample, nil
}

func (s *Scraper) scrapeHTTP(ctx context.Context) ([]journal.Series, error) {
	fail := func(status int, err error) error {
		return &ScrapeError{URL: s.source, Status: status, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.c.cfg.Timeout.D())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.c.cfg.URL, nil)
	if err != nil {
		return nil, fail(0, err)
	}
	for k, v := range s.c.headers {
		req.Header[k] = v
	}
	req.Header.Set("Accept", acceptFor(s.c.cfg.Format))
	// Prometheus sends it too; exporters use it to bound their own work.
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", fmt.Sprintf("%g", s.c.cfg.Timeout.D().Seconds()))
	req.Header.Set("User-Agent", "rehearse-observe/1")
	resp, err := s.o.client.Do(req)
	if err != nil {
		return nil, fail(0, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fail(resp.StatusCode, errors.New("want HTTP 200"))
	}
	body := &limitedReader{r: resp.Body, n: s.o.maxBytes}
	series, err := parseExposition(body, resp.Header, s.c.keep)
	if body.exceeded {
		return nil, fail(resp.StatusCode, fmt.Errorf("response larger than %d bytes", s.o.maxBytes))
	}
	if err != nil {
		return nil, fail(resp.StatusCode, err)
	}
	return series, nil
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the
// method and URL that ScrapeError already names.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("timed out: %w", ue.Err)
		}
		return ue.Err
	}
	return err
}

// limitedReader is io.LimitReader that remembers hitting the limit, so a
// cut-off exposition is reported as too large rather than as a parse error.
type limitedReader struct {
	r        io.Reader
	n        int64
	exceeded bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		// Probe one byte: exactly n bytes is fine, more is not.
		var b [1]byte
		if k, _ := l.r.Read(b[:]); k > 0 {
			l.exceeded = true
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

// ErrContentType is returned for a response that is not an exposition
// format (an HTML page, JSON): usually a wrong URL.
var ErrContentType = errors.New("not a Prometheus exposition")

// parseExposition decodes a metrics response (format from its
// Content-Type) and returns the series whose names match keep, sorted.
func parseExposition(r io.Reader, h http.Header, keep []*regexp.Regexp) ([]journal.Series, error) {
	format := expfmt.ResponseFormat(h)
	if format == expfmt.FmtUnknown {
		ct := h.Get("Content-Type")
		mt, _, _ := mime.ParseMediaType(ct)
		switch {
		case ct == "", mt == "text/plain":
			// No or an unversioned type: old exporters send plain
			// text; read it as the text format.
			format = expfmt.FmtText
		default:
			return nil, fmt.Errorf("%w: content type %q", ErrContentType, ct)
		}
	}
	// Accept UTF-8 metric and label names; the legacy charset is a subset.
	format = format.WithEscapingScheme(model.NoEscaping)
	dec := expfmt.NewDecoder(r, format)
	var out []journal.Series
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("parse %s exposition: %w", formatName(format), err)
		}
		out = appendFamily(out, &mf, keep)
	}
	sortSeries(out)
	return out, nil
}

func formatName(f expfmt.Format) string {
	switch f.FormatType() {
	case expfmt.TypeOpenMetrics:
		return "OpenMetrics"
	case expfmt.TypeProtoDelim:
		return "protobuf"
	}
	return "text"
}

func kept(name string, keep []*regexp.Regexp) bool {
	for _, re := range keep {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// appendFamily flattens a family into series the way the text format
// writes them (histograms as _bucket/_sum/_count, summaries as quantiles,
// _sum and _count) and appends those that keep selects.
func appendFamily(out []journal.Series, mf *dto.MetricFamily, keep []*regexp.Regexp) []journal.Series {
	name := mf.GetName()
	add := func(n string, m *dto.Metric, v float64, extra ...string) {
		// JSON has no NaN or infinities, and one unencodable event would
		// stop the journal: such values are not kept (HAProxy writes NaN
		// for the counters of a disabled server, for example).
		if !finite(v) || !kept(n, keep) {
			return
		}
		var labels map[string]string
		if len(m.GetLabel()) > 0 || len(extra) > 0 {
			labels = make(map[string]string, len(m.GetLabel())+len(extra)/2)
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(extra); i += 2 {
				labels[extra[i]] = extra[i+1]
			}
		}
		out = append(out, journal.Series{Name: n, Labels: labels, Value: v})
	}
	for _, m := range mf.GetMetric() {
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			// expfmt names an OpenMetrics counter family by its
			// sample name (with _total), as the text format does.
			add(name, m, m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			add(name, m, m.GetGauge().GetValue())
		case dto.MetricType_UNTYPED:
			add(name, m, m.GetUntyped().GetValue())
		case dto.MetricType_SUMMARY:
			sm := m.GetSummary()
			for _, q := range sm.GetQuantile() {
				add(name, m, q.GetValue(), "quantile", model.FloatString(q.GetQuantile()).String())
			}
			add(name+"_sum", m, sm.GetSampleSum())
			add(name+"_count", m, float64(sm.GetSampleCount()))
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				add(name+"_bucket", m, float64(b.GetCumulativeCount()), "le", formatLE(b.GetUpperBound()))
			}
			add(name+"_bucket", m, float64(h.GetSampleCount()), "le", "+Inf")
			add(name+"_sum", m, h.GetSampleSum())
			add(name+"_count", m, float64(h.GetSampleCount()))
		}
	}
	return out
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func formatLE(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return model.FloatString(f).String()
}

func sortSeries(s []journal.Series) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Name != s[j].Name {
			return s[i].Name < s[j].Name
		}
		return labelKey(s[i].Labels) < labelKey(s[j].Labels)
	})
}

func labelKey(l map[string]string) string {
	keys := slices.Sorted(maps.Keys(l))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(l[k])
		b.WriteByte(0)
	}
	return b.String()
}

// redactURL hides user info and credential-like query parameters in a
// URL, for Source fields and messages: they end up in journals and
// reports.
func redactURL(s string) string { return redact.URL(s) }
