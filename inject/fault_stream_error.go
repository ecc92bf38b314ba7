package inject

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sync"

	"github.com/halfopen/rehearse/journal"
)

// StreamErrorParams are the params of the "stream_error" fault.
type StreamErrorParams struct {
	// AfterEvents is how many events of the healthy stream go out before
	// the error event; nil means 1 (the first chunk, which carries the
	// assistant role), 0 the error as the first event.
	AfterEvents *int `yaml:"after_events,omitempty" json:"after_events,omitempty"`
	// Type is the error's type; "" means the provider's for an overload:
	// "server_error" (OpenAI), "overloaded_error" (Anthropic).
	Type string `yaml:"type,omitempty" json:"type,omitempty"`
	// Message is the error's message; "" means "injected by rehearse:
	// stream failed".
	Message string `yaml:"message,omitempty" json:"message,omitempty"`
	// Terminal sends the stream's terminal event (data: [DONE], or
	// message_stop) after the error, as some servers and gateways do;
	// false ends the stream right after the error.
	Terminal bool `yaml:"terminal,omitempty" json:"terminal,omitempty"`
}

// streamErrorFault lets the healthy stream start, then sends an error
// event in the provider's shape instead of the rest and ends the
// response cleanly: the HTTP exchange is a complete 200, the answer has
// failed. This is how a model provider reports a failure after the
// headers are out (an overload mid-generation), and what a client must
// read inside the stream.
type streamErrorFault struct {
	p        StreamErrorParams
	after    int
	warnOnce sync.Once
}

func newStreamError(p *StreamErrorParams) (Fault, error) {
	f := &streamErrorFault{p: *p, after: 1}
	if p.AfterEvents != nil {
		f.after = *p.AfterEvents
	}
	if f.after < 0 {
		return nil, errors.New("after_events must not be negative")
	}
	if f.p.Message == "" {
		f.p.Message = "injected by rehearse: stream failed"
	}
	return f, nil
}

func (f *streamErrorFault) Describe() string {
	return fmt.Sprintf("error event after %d events", f.after)
}

// event is the error event (and the terminal, when asked) for x's API.
func (f *streamErrorFault) event(x *Exchange) []byte {
	typ := f.p.Type
	if typ == "" {
		typ = "server_error"
		if x.api == APIAnthropic {
			typ = "overloaded_error"
		}
	}
	b := streamErrorEvent(x.api, typ, f.p.Message)
	if f.p.Terminal {
		b = append(b, streamTerminal(x.api)...)
	}
	return b
}

func (f *streamErrorFault) ServeHTTP(x *Exchange, next http.Handler) {
	stream, done := false, false
	events := 0
	bw := &bodyWriter{base: x.W}
	bw.header = func(code int) int {
		ct, _, _ := mime.ParseMediaType(x.W.Header().Get("Content-Type"))
		stream = ct == "text/event-stream"
		if !stream {
			f.warnOnce.Do(func() {
				x.Warn(fmt.Sprintf("fault %s: the answer is not an event stream (the request did not ask for one): it passes whole", x.Fault))
			})
		}
		return code
	}
	fail := func() (int, error) {
		done = true
		_, err := x.W.Write(f.event(x))
		if fl, ok := x.W.(http.Flusher); ok {
			fl.Flush()
		}
		if err != nil {
			x.SetOutcome(journal.OutcomeUpstreamGone)
			return 0, err
		}
		x.SetOutcome(journal.OutcomeUpstreamErrorEvent)
		return 0, errCut
	}
	bw.write = func(p []byte) (int, error) {
		switch {
		case done:
			return 0, errCut
		case !stream:
			return x.W.Write(p)
		case events >= f.after:
			return fail()
		}
		allowed := len(p)
		for i := 0; i < len(p); {
			j := bytes.Index(p[i:], []byte("\n\n"))
			if j < 0 {
				break
			}
			i += j + 2
			if events++; events == f.after {
				allowed = i
				break
			}
		}
		n, err := x.W.Write(p[:allowed])
		if err != nil || events < f.after {
			return n, err
		}
		if _, err := fail(); !errors.Is(err, errCut) {
			return n, err
		}
		return n, errCut
	}
	next.ServeHTTP(bw, x.R)
}
