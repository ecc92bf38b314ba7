package observe

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/halfopen/rehearse/journal"
)

// MaxHealthDetail caps HealthSample.Detail, in bytes: enough for a health
// endpoint's summary ("search: down"), not a whole page.
const MaxHealthDetail = 256

// Canary GETs the gateway's health URL at an interval and records one
// journal.HealthSample per check.
type Canary struct {
	cfg    HealthConfig
	rule   healthyRule
	o      options
	source string
}

// NewCanary checks cfg and returns a Canary. Errors wrap
// rehearse.ErrInvalid and name the offending field.
func NewCanary(cfg HealthConfig, opts ...Option) (*Canary, error) {
	c, rule, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	return &Canary{cfg: c, rule: rule, o: buildOptions(opts, rule.tls), source: redactURL(c.URL)}, nil
}

// Config returns the canary's configuration with defaults filled in.
func (c *Canary) Config() HealthConfig { return c.cfg }

// Run checks immediately, then every interval, recording each sample, until
// ctx is done; then it returns nil. An unhealthy or failed check is a
// sample, not an error.
func (c *Canary) Run(ctx context.Context) error {
	defer c.o.release()
	return c.o.sampleEvery(ctx, c.cfg.Interval.D(), func() journal.Payload { return c.Check(ctx) })
}

// Check runs one health check now and returns its sample without recording
// it. A transport failure or timeout is a sample with Error set.
func (c *Canary) Check(ctx context.Context) *journal.HealthSample {
	s := &journal.HealthSample{URL: c.source}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout.D())
	defer cancel()
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.URL, nil)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	req.Header.Set("User-Agent", "rehearse-canary/1")
	for k, v := range c.rule.headers {
		req.Header[k] = v
	}
	resp, err := c.o.client.Do(req)
	if err != nil {
		s.Latency = time.Since(start)
		s.Error = unwrapURLError(err).Error()
		return s
	}
	defer resp.Body.Close()
	s.Status = resp.StatusCode
	s.Healthy = c.rule.healthy(resp.StatusCode)
	// Read a little for the detail, then drain a bounded amount so the
	// connection can be reused; a huge body is not waited for.
	buf := make([]byte, 4<<10)
	n, rerr := readUpTo(resp.Body, buf)
	if rerr == nil {
		_, rerr = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	}
	s.Latency = time.Since(start)
	if rerr != nil {
		// The status line arrived but the body did not: the endpoint
		// is not answering properly, whatever its status said.
		s.Healthy = false
		s.Error = "reading body: " + unwrapURLError(rerr).Error()
	}
	s.Detail = excerpt(buf[:n], MaxHealthDetail)
	return s
}

// readUpTo fills buf from r until it is full or r ends; a clean end (EOF)
// is not an error, a body cut short (io.ErrUnexpectedEOF from a short
// Content-Length, a reset) is.
func readUpTo(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// excerpt returns at most max bytes of b as valid UTF-8 on one line, with
// "…" when cut. Reports escape it; this only keeps it short and readable.
func excerpt(b []byte, max int) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
