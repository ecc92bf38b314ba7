package inject

import (
	"maps"
	"slices"
)

// factory builds one fault type from its params. newParams returns a
// pointer to the type's zero params struct; build validates params (the
// same pointer type), fills in defaults and returns the fault.
type factory struct {
	newParams func() any
	build     func(params any) (Fault, error)
	// summary is one line for listings (rehearse inject types, the control
	// API).
	summary string
}

// entry makes a factory from a typed builder.
func entry[P any](summary string, build func(p *P) (Fault, error)) factory {
	return factory{
		summary:   summary,
		newParams: func() any { return new(P) },
		build:     func(p any) (Fault, error) { return build(p.(*P)) },
	}
}

// registry is the one list of fault types, by their YAML type name. Adding a
// fault means adding a file with its params, its type and a line here (see
// docs/FAULTS.md).
var registry = map[string]factory{
	"status":        entry("respond with a status code, body and headers", newStatus),
	"retry_after":   entry("respond 429 (or another status) with an exact Retry-After, in seconds or as an HTTP-date", newRetryAfter),
	"latency":       entry("delay the response headers (HTTP) or every chunk (tcp) by a fixed or sampled delay", newLatency),
	"slow_body":     entry("dribble the body: N bytes every interval", newSlowBody),
	"stream_cut":    entry("cut the body after N bytes, a percentage, or N SSE events; then rst, fin or stall", newStreamCut),
	"stream_error":  entry("send the first N events of a stream, then an error event in the provider's shape; the 200 ends cleanly", newStreamError),
	"headers_never": entry("read the request and never answer, until the client gives up", newHeadersNever),
	"reset":         entry("reset the connection (TCP RST) before any response byte", newReset),
	"abort":         entry("abort the handler (net/http closes the connection) before any response byte", newAbort),
	"refuse":        entry("close the listener for the window: new connections get ECONNREFUSED", newRefuse),
	"truncate":      entry("announce a Content-Length longer than the body, then close", newTruncate),
	"malformed":     entry("answer with a malformed status line", newMalformed),
	"blackhole":     entry("accept and read, never answer nor forward", newBlackhole),
	"bandwidth":     entry("limit the bytes per second relayed (tcp) or sent (HTTP)", newBandwidth),
}

// FaultTypes returns the names of the fault types, sorted.
func FaultTypes() []string { return slices.Sorted(maps.Keys(registry)) }

// FaultTypeSummary returns the one-line description of a fault type, or ""
// when the type is unknown.
func FaultTypeSummary(typ string) string { return registry[typ].summary }

// NewParams returns a new zero params struct of a fault type (a pointer,
// e.g. *StatusParams), or nil when the type is unknown: for building specs
// in Go, and for generating a schema of each type's params.
func NewParams(typ string) any {
	fac, ok := registry[typ]
	if !ok {
		return nil
	}
	return fac.newParams()
}
