package inject

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// Stream cut endings.
const (
	// EndRST resets the connection: the client's read fails with
	// ECONNRESET ("connection reset by peer").
	EndRST = "rst"
	// EndFIN closes the connection cleanly mid-body: the client sees an
	// unexpected EOF.
	EndFIN = "fin"
	// EndStall stops sending and holds the connection until the client
	// gives up: the client's body read deadline fires.
	EndStall = "stall"
)

// StreamCutParams are the params of the "stream_cut" fault. Exactly one of
// AfterBytes, AfterPercent and AfterEvents must be set.
type StreamCutParams struct {
	// AfterBytes cuts after this many body bytes.
	AfterBytes int64 `yaml:"after_bytes,omitempty" json:"after_bytes,omitempty"`
	// AfterPercent cuts after this percentage (0-100) of the body. The body
	// length must be known: a Content-Length, or announced by the fake
	// upstream for its chunked and SSE bodies; a proxied body of unknown
	// length passes uncut.
	AfterPercent float64 `yaml:"after_percent,omitempty" json:"after_percent,omitempty"`
	// AfterEvents cuts after this many server-sent events (each ended by a
	// blank line), e.g. in the middle of a chat-completions stream.
	AfterEvents int `yaml:"after_events,omitempty" json:"after_events,omitempty"`
	// Then is how the cut ends: "rst" (default), "fin" or "stall".
	Then string `yaml:"then,omitempty" json:"then,omitempty"`
}

// streamCutFault lets the healthy response start and ends it part-way.
type streamCutFault struct {
	p        StreamCutParams
	then     string
	warnOnce sync.Once
}

func newStreamCut(p *StreamCutParams) (Fault, error) {
	set := 0
	for _, b := range []bool{p.AfterBytes != 0, p.AfterPercent != 0, p.AfterEvents != 0} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, errors.New("set exactly one of after_bytes, after_percent, after_events")
	}
	if p.AfterBytes < 0 || p.AfterEvents < 0 {
		return nil, errors.New("after_bytes and after_events must be positive")
	}
	if p.AfterPercent < 0 || p.AfterPercent >= 100 {
		return nil, fmt.Errorf("after_percent: want more than 0 and less than 100, got %v", p.AfterPercent)
	}
	f := &streamCutFault{p: *p, then: p.Then}
	if f.then == "" {
		f.then = EndRST
	}
	switch f.then {
	case EndRST, EndFIN, EndStall:
	default:
		return nil, fmt.Errorf("then: unknown %q; allowed: rst, fin, stall", p.Then)
	}
	return f, nil
}

func (f *streamCutFault) Describe() string {
	switch {
	case f.p.AfterBytes > 0:
		return fmt.Sprintf("cut after %d bytes, then %s", f.p.AfterBytes, f.then)
	case f.p.AfterEvents > 0:
		return fmt.Sprintf("cut after %d events, then %s", f.p.AfterEvents, f.then)
	}
	return fmt.Sprintf("cut at %v%%, then %s", f.p.AfterPercent, f.then)
}

func (f *streamCutFault) ServeHTTP(x *Exchange, next http.Handler) {
	limit := int64(-1)
	var written int64
	events := 0
	cut := false
	bw := &bodyWriter{base: x.W}
	bw.header = func(code int) int {
		switch {
		case f.p.AfterBytes > 0:
			limit = f.p.AfterBytes
		case f.p.AfterPercent > 0:
			if n := x.BodyLength(); n >= 0 {
				limit = int64(float64(n) * f.p.AfterPercent / 100)
			} else {
				f.warnOnce.Do(func() {
					x.Warn(fmt.Sprintf("fault %s: response body of unknown length (no Content-Length): after_percent cannot cut it, it passes whole; use after_bytes or after_events", x.Fault))
				})
			}
		}
		return code
	}
	bw.write = func(p []byte) (int, error) {
		if cut {
			return 0, errCut
		}
		allowed := len(p)
		if f.p.AfterEvents > 0 {
			for i := 0; i < len(p); {
				j := bytes.Index(p[i:], []byte("\n\n"))
				if j < 0 {
					break
				}
				i += j + 2
				events++
				if events == f.p.AfterEvents {
					allowed = i
					break
				}
			}
		} else if limit >= 0 {
			allowed = int(min(int64(len(p)), limit-written))
		}
		n, err := x.W.Write(p[:allowed])
		written += int64(n)
		if err != nil {
			return n, err
		}
		if (f.p.AfterEvents > 0 && events >= f.p.AfterEvents) || (limit >= 0 && written >= limit) {
			cut = true
			f.end(x)
			return n, errCut
		}
		return n, nil
	}
	next.ServeHTTP(bw, x.R)
	if !cut && limit == 0 {
		// An empty body: the cut point is at the start.
		cut = true
		f.end(x)
	}
}

// end ends the response after the bytes written so far.
func (f *streamCutFault) end(x *Exchange) {
	if f.then == EndStall {
		x.W.(http.Flusher).Flush()
		drain(x.R)
		holdUntilGone(x.Context(), 0)
		x.SetOutcome(journal.OutcomeUpstreamStalled)
		return
	}
	conn := x.cutConn()
	if f.then == EndRST {
		awaitAcked(conn, 250*time.Millisecond)
		resetConn(conn)
		x.SetOutcome(journal.OutcomeUpstreamReset)
		return
	}
	conn.Close()
	x.SetOutcome(journal.OutcomeUpstreamCut)
}
