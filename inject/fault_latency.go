package inject

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/halfopen/rehearse/internal/wait"
	"github.com/halfopen/rehearse/journal"
)

// LatencyParams are the params of the "latency" fault: one of fixed,
// uniform or percentiles (see LatencyConfig).
type LatencyParams struct {
	LatencyConfig `yaml:",inline"`
}

// latencyFault delays the response headers (HTTP), or every chunk relayed
// to the client (tcp mode), by a delay drawn per request (per chunk).
type latencyFault struct {
	cfg LatencyConfig
}

func newLatency(p *LatencyParams) (Fault, error) {
	if err := p.LatencyConfig.validate(); err != nil {
		return nil, err
	}
	if p.LatencyConfig.isZero() {
		return nil, errors.New("set one of fixed, uniform or percentiles to a non-zero delay")
	}
	return &latencyFault{cfg: p.LatencyConfig}, nil
}

func (f *latencyFault) Describe() string {
	switch {
	case f.cfg.Uniform != nil:
		return fmt.Sprintf("delay %s-%s", f.cfg.Uniform.Min, f.cfg.Uniform.Max)
	case f.cfg.Percentiles != nil:
		return fmt.Sprintf("delay p50 %s p99 %s", f.cfg.Percentiles.P50, f.cfg.Percentiles.P99)
	}
	return fmt.Sprintf("delay %s", f.cfg.Fixed)
}

func (f *latencyFault) ServeHTTP(x *Exchange, next http.Handler) {
	if !wait.For(x.Context(), f.cfg.sample(x.Rand())) {
		x.SetOutcome(journal.OutcomeUpstreamGone)
		return
	}
	next.ServeHTTP(x.W, x.R)
}

func (f *latencyFault) ServeTCP(l *Link) {
	l.Pipe(func(w io.Writer) io.Writer {
		return writerFunc(func(p []byte) (int, error) {
			if !wait.For(l.Context(), f.cfg.sample(l.Rand())) {
				return 0, l.Context().Err()
			}
			return w.Write(p)
		})
	}, nil)
}

// writerFunc adapts a function to io.Writer.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
