package inject

import (
	"net/http"

	"github.com/halfopen/rehearse/journal"
)

// AbortParams are the params of the "abort" fault; it has none.
type AbortParams struct{}

// abortFault aborts the handler with http.ErrAbortHandler before any byte:
// net/http closes the connection the way it does when a real handler
// panics. The client usually sees EOF ("server closed connection"), not a
// reset; use the reset fault for a real RST.
type abortFault struct{}

func newAbort(*AbortParams) (Fault, error) { return abortFault{}, nil }

func (abortFault) Describe() string { return "handler abort before any byte" }

func (abortFault) ServeHTTP(x *Exchange, _ http.Handler) {
	drain(x.R)
	x.SetOutcome(journal.OutcomeUpstreamCut)
	panic(http.ErrAbortHandler)
}
