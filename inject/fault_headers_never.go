package inject

import (
	"fmt"
	"net/http"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// HeadersNeverParams are the params of the "headers_never" fault.
type HeadersNeverParams struct {
	// Max bounds the hold: after it the connection is closed without a
	// byte. 0 means hold until the client gives up or the server closes.
	Max rehearse.Duration `yaml:"max,omitempty" json:"max,omitempty"`
}

// headersNeverFault reads the request and never answers: the client's
// response-header deadline is what ends the exchange.
type headersNeverFault struct{ max rehearse.Duration }

func newHeadersNever(p *HeadersNeverParams) (Fault, error) {
	return &headersNeverFault{max: p.Max}, nil
}

func (f *headersNeverFault) Describe() string {
	if f.max > 0 {
		return fmt.Sprintf("no response headers for %s", f.max)
	}
	return "no response headers, ever"
}

func (f *headersNeverFault) ServeHTTP(x *Exchange, _ http.Handler) {
	drain(x.R)
	x.SetOutcome(journal.OutcomeUpstreamStalled)
	if holdUntilGone(x.Context(), f.max.D()) {
		return
	}
	// Max elapsed: hang up without a byte.
	if conn, err := x.Hijack(); err == nil {
		conn.Close()
	}
}
