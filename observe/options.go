package observe

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// Option configures a Scraper or a Canary.
type Option func(*options)

type options struct {
	recorder  journal.Recorder
	clock     *journal.Clock
	client    *http.Client
	logger    *slog.Logger
	upstreams map[string]bool
	// newTicker makes the interval ticker; tests replace it to drive
	// intervals without sleeping.
	newTicker func(d time.Duration) (<-chan time.Time, func())
	// ownClient is set when the client is ours, so its idle connections
	// are closed when Run returns.
	ownClient bool
	// maxBytes bounds a metrics response (MaxScrapeBytes).
	maxBytes int64
	// now reads the wall clock (for Prometheus query times).
	now func() time.Time
}

// WithRecorder sets where samples are recorded. Default: journal.Discard.
func WithRecorder(r journal.Recorder) Option { return func(o *options) { o.recorder = r } }

// WithClock sets the run clock that stamps samples and converts
// Prometheus timestamps to run time. Default: a clock started at
// construction.
func WithClock(c *journal.Clock) Option { return func(o *options) { o.clock = c } }

// WithHTTPClient sets the HTTP client. Default: a client of its own with
// keep-alive (one connection reused across scrapes, as Prometheus does) and
// no redirects followed. Timeouts come from the config, per request.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.client = c } }

// WithLogger sets the logger. Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithUpstreams names the harness's upstreams, so that a gateway
// dependency of the same name maps to its upstream without a
// DependencyMap entry.
func WithUpstreams(names ...string) Option {
	return func(o *options) {
		o.upstreams = make(map[string]bool, len(names))
		for _, n := range names {
			o.upstreams[n] = true
		}
	}
}

// sampleEvery calls sample at once and then at every tick of interval
// until ctx is done, recording each sample on the run clock when it is
// taken; then it returns nil. A sample cut short by the end of the run is
// not recorded: it says nothing of the gateway. A sample slower than the
// interval delays the next one instead of piling samples up (a ticker
// drops the ticks it could not deliver).
func (o options) sampleEvery(ctx context.Context, interval time.Duration, sample func() journal.Payload) error {
	tick, stop := o.newTicker(interval)
	defer stop()
	for {
		p := sample()
		if ctx.Err() != nil {
			return nil
		}
		o.recorder.RecordAt(o.clock.Now(), p)
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
		}
	}
}

func buildOptions(opts []Option, tlsCfg *tls.Config) options {
	o := options{
		recorder: journal.Discard,
		logger:   slog.Default(),
		newTicker: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		},
		now:      time.Now,
		maxBytes: MaxScrapeBytes,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = journal.NewClock(time.Now())
	}
	if o.client == nil {
		o.ownClient = true
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 2
		if tlsCfg != nil {
			tr.TLSClientConfig = tlsCfg
		}
		o.client = &http.Client{
			Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	return o
}

// release closes the idle keep-alive connections of a client of our own,
// so a finished Run leaves no connection or goroutine behind.
func (o *options) release() {
	if o.ownClient {
		o.client.CloseIdleConnections()
	}
}
