package inject

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"golang.org/x/time/rate"

	"github.com/halfopen/rehearse/journal"
)

// Bandwidth directions (tcp mode).
const (
	DirDown = "down" // towards the client (the gateway)
	DirUp   = "up"   // towards the real upstream
	DirBoth = "both"
)

// BandwidthParams are the params of the "bandwidth" fault.
type BandwidthParams struct {
	// BytesPerSecond is the rate limit; required.
	BytesPerSecond int `yaml:"bytes_per_second" json:"bytes_per_second"`
	// Direction (tcp mode) is "down" (default: towards the gateway), "up"
	// or "both". HTTP mode limits the response body.
	Direction string `yaml:"direction,omitempty" json:"direction,omitempty"`
}

// bandwidthFault limits the byte rate with a token bucket
// (golang.org/x/time/rate) whose burst is a tenth of a second's worth.
type bandwidthFault struct {
	bps       int
	direction string
}

func newBandwidth(p *BandwidthParams) (Fault, error) {
	if p.BytesPerSecond <= 0 {
		return nil, fmt.Errorf("bytes_per_second: want a positive rate, got %d", p.BytesPerSecond)
	}
	d := p.Direction
	if d == "" {
		d = DirDown
	}
	switch d {
	case DirDown, DirUp, DirBoth:
	default:
		return nil, fmt.Errorf("direction: unknown %q; allowed: down, up, both", p.Direction)
	}
	return &bandwidthFault{bps: p.BytesPerSecond, direction: d}, nil
}

func (f *bandwidthFault) Describe() string {
	return fmt.Sprintf("%d bytes/s %s", f.bps, f.direction)
}

// limit wraps w so that writes keep to the rate.
func (f *bandwidthFault) limit(ctx context.Context, w io.Writer) io.Writer {
	burst := max(1, f.bps/10)
	lim := rate.NewLimiter(rate.Limit(f.bps), burst)
	// Start with an empty bucket so the first burst is paced too.
	lim.AllowN(time.Now(), burst)
	return writerFunc(func(p []byte) (int, error) {
		written := 0
		for len(p) > 0 {
			n := min(len(p), burst)
			if err := lim.WaitN(ctx, n); err != nil {
				return written, errors.Join(errCut, err)
			}
			m, err := w.Write(p[:n])
			written += m
			if err != nil {
				return written, err
			}
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			p = p[n:]
		}
		return written, nil
	})
}

func (f *bandwidthFault) ServeHTTP(x *Exchange, next http.Handler) {
	lw := f.limit(x.Context(), x.W)
	bw := &bodyWriter{base: x.W, flushHeader: true, write: lw.Write}
	next.ServeHTTP(bw, x.R)
	if x.Context().Err() != nil {
		x.SetOutcome(journal.OutcomeUpstreamGone)
	}
}

func (f *bandwidthFault) ServeTCP(l *Link) {
	var down, up func(io.Writer) io.Writer
	wrap := func(w io.Writer) io.Writer { return f.limit(l.Context(), w) }
	if f.direction != DirUp {
		down = wrap
	}
	if f.direction != DirDown {
		up = wrap
	}
	l.Pipe(down, up)
}
