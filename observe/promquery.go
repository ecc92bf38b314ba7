package observe

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/halfopen/rehearse/journal"
)

// promSource reads series from a Prometheus server's HTTP API with
// client_golang's API client.
type promSource struct {
	api    promv1.API
	query  string
	step   time.Duration
	source string
	metric string // the mapping's metric, for results without __name__
	custom bool   // the query is the user's own
	o      options
	c      *compiled
}

func newPromSource(c *compiled, o options) (*promSource, error) {
	pq := c.cfg.PromQuery
	hc := o.client
	if len(c.headers) > 0 {
		cp := *o.client
		base := cp.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		cp.Transport = headerTransport{base: base, h: c.headers}
		hc = &cp
	}
	client, err := api.NewClient(api.Config{Address: pq.URL, Client: hc})
	if err != nil {
		return nil, cfgErr("prom_query.url", "%w", err)
	}
	p := &promSource{
		api:    promv1.NewAPI(client),
		query:  pq.Query,
		step:   pq.Step.D(),
		metric: c.mapping.metric,
		custom: pq.Query != "",
		o:      o,
		c:      c,
	}
	if p.query == "" {
		p.query = DefaultPromQuery(c.keepSrc, pq.Selector)
	}
	endpoint := "/api/v1/query"
	if pq.Mode == PromModeQueryRange {
		endpoint = "/api/v1/query_range"
	}
	p.source = strings.TrimSuffix(redactURL(pq.URL), "/") + endpoint
	return p, nil
}

// headerTransport adds the configured headers to Prometheus API requests.
type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// DefaultPromQuery is the PromQL selector for a set of metric-name patterns
// (RE2, anchored by PromQL) and optional extra matchers, e.g.
// {__name__=~"openclaw_breaker_state|…",job="gateway"}.
func DefaultPromQuery(namePatterns []string, selector string) string {
	q := fmt.Sprintf(`{__name__=~%q`, strings.Join(namePatterns, "|"))
	if s := strings.TrimSpace(selector); s != "" {
		q += "," + s
	}
	return q + "}"
}

func (p *promSource) fail(err error) error {
	return &ScrapeError{URL: p.source, Err: unwrapURLError(err)}
}

// instant runs the query at ts.
func (p *promSource) instant(ctx context.Context, ts time.Time) ([]journal.Series, error) {
	ctx, cancel := context.WithTimeout(ctx, p.c.cfg.Timeout.D())
	defer cancel()
	v, warnings, _, err := p.api.Query(ctx, p.query, ts)
	if err != nil {
		return nil, p.fail(err)
	}
	p.warn(warnings)
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, p.fail(fmt.Errorf("query returned a %s, want an instant vector", v.Type()))
	}
	out := make([]journal.Series, 0, len(vec))
	for _, smp := range vec {
		if finite(float64(smp.Value)) {
			out = append(out, p.series(smp.Metric, float64(smp.Value)))
		}
	}
	sortSeries(out)
	return out, nil
}

func (p *promSource) warn(w promv1.Warnings) {
	if len(w) > 0 {
		p.o.logger.Warn("prometheus query warnings", "source", p.source, "warnings", strings.Join(w, "; "))
	}
}

// series converts one result; a user query that drops __name__ (an
// aggregation) is taken to be the preset's metric.
func (p *promSource) series(m model.Metric, v float64) journal.Series {
	s := journal.Series{Name: string(m[model.MetricNameLabel]), Value: v}
	if s.Name == "" && p.custom {
		s.Name = p.metric
	}
	for k, val := range m {
		if k == model.MetricNameLabel {
			continue
		}
		if s.Labels == nil {
			s.Labels = make(map[string]string, len(m))
		}
		s.Labels[string(k)] = string(val)
	}
	return s
}

// rangeSamples runs the query over [start, end] and returns one sample per
// evaluation step, with its wall time, in time order.
func (p *promSource) rangeSamples(ctx context.Context, s *Scraper, start, end time.Time) ([]time.Time, []*journal.MetricsSample, error) {
	ctx, cancel := context.WithTimeout(ctx, p.c.cfg.Timeout.D())
	defer cancel()
	began := time.Now()
	v, warnings, _, err := p.api.QueryRange(ctx, p.query, promv1.Range{Start: start, End: end, Step: p.step})
	if err != nil {
		return nil, nil, p.fail(err)
	}
	took := time.Since(began)
	p.warn(warnings)
	mat, ok := v.(model.Matrix)
	if !ok {
		return nil, nil, p.fail(fmt.Errorf("query_range returned a %s, want a range vector", v.Type()))
	}
	byTime := map[model.Time][]journal.Series{}
	for _, stream := range mat {
		for _, pair := range stream.Values {
			if !finite(float64(pair.Value)) {
				continue
			}
			byTime[pair.Timestamp] = append(byTime[pair.Timestamp], p.series(stream.Metric, float64(pair.Value)))
		}
	}
	times := make([]model.Time, 0, len(byTime))
	for t := range byTime {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	walls := make([]time.Time, 0, len(times))
	samples := make([]*journal.MetricsSample, 0, len(times))
	for _, t := range times {
		series := byTime[t]
		sortSeries(series)
		walls = append(walls, t.Time())
		samples = append(samples, &journal.MetricsSample{
			Source: p.source,
			Series: series,
			States: s.c.mapping.States(series, s.res),
			Took:   took,
		})
	}
	return walls, samples, nil
}

// runRange polls query_range every interval over the steps evaluated since
// the previous poll, and records each step at its evaluation time on the
// run clock. A failed poll is recorded as a sample with Error at the
// moment of the poll, and its steps are fetched by the next one.
func (p *promSource) runRange(ctx context.Context, s *Scraper) error {
	tick, stop := p.o.newTicker(s.c.cfg.Interval.D())
	defer stop()
	next := p.o.now().Truncate(time.Millisecond)
	for {
		now := p.o.now()
		if !now.Before(next) {
			walls, samples, err := p.rangeSamples(ctx, s, next, now)
			if ctx.Err() != nil {
				return nil
			}
			s.logOutcome(err)
			if err != nil {
				p.o.recorder.RecordAt(p.o.clock.Now(), &journal.MetricsSample{Source: p.source, Error: err.Error()})
			} else {
				for i, smp := range samples {
					p.o.recorder.RecordAt(p.o.clock.At(walls[i]), smp)
				}
				if len(walls) > 0 {
					next = walls[len(walls)-1].Add(p.step)
				} else {
					// Nothing evaluated yet (no data): move on by whole
					// steps so the grid stays aligned.
					for !next.After(now) {
						next = next.Add(p.step)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		}
	}
}
