package inject

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/wait"
	"github.com/halfopen/rehearse/journal"
)

// SlowBodyParams are the params of the "slow_body" fault.
type SlowBodyParams struct {
	// Bytes is how many body bytes are sent at a time; 0 means 16.
	Bytes int `yaml:"bytes,omitempty" json:"bytes,omitempty"`
	// Interval is the pause between two sends; 0 means 100ms.
	Interval rehearse.Duration `yaml:"interval,omitempty" json:"interval,omitempty"`
}

// slowBodyFault sends the headers on time and then dribbles the body: Bytes
// bytes, flushed, then a pause of Interval, so the client's body read
// deadline (not its header deadline) is what fires.
type slowBodyFault struct {
	bytes    int
	interval time.Duration
}

func newSlowBody(p *SlowBodyParams) (Fault, error) {
	f := &slowBodyFault{bytes: p.Bytes, interval: p.Interval.D()}
	if f.bytes == 0 {
		f.bytes = 16
	}
	if f.bytes < 0 {
		return nil, fmt.Errorf("bytes: must be positive, got %d", p.Bytes)
	}
	if f.interval == 0 {
		f.interval = 100 * time.Millisecond
	}
	return f, nil
}

func (f *slowBodyFault) Describe() string {
	return fmt.Sprintf("body at %d bytes every %s", f.bytes, f.interval)
}

func (f *slowBodyFault) ServeHTTP(x *Exchange, next http.Handler) {
	ctx := x.Context()
	first := true
	// The pacing is ours: the headers go out at once, whatever the
	// healthy handler does next.
	bw := &bodyWriter{base: x.W, flushHeader: true}
	bw.write = func(p []byte) (int, error) {
		written := 0
		for len(p) > 0 {
			if !first && !wait.For(ctx, f.interval) {
				x.SetOutcome(journal.OutcomeUpstreamGone)
				return written, errors.Join(errCut, ctx.Err())
			}
			first = false
			n := min(f.bytes, len(p))
			m, err := x.W.Write(p[:n])
			written += m
			if err != nil {
				return written, err
			}
			bw.Flush()
			p = p[n:]
		}
		return written, nil
	}
	next.ServeHTTP(bw, x.R)
}
