// Package inject serves the upstreams of a rehearsal and makes them misbehave
// on schedule.
//
// Each upstream is one loopback listener that the gateway under test calls:
// a fake dependency (JSON, chunked or OpenAI-style SSE responses with a
// latency distribution), an HTTP reverse proxy in front of a real upstream,
// or a TCP proxy for non-HTTP dependencies such as Redis. Faults from the
// catalogue (see FaultTypes and docs/FAULTS.md) are applied per request
// within a time window, filtered by path, method and header, by first-N,
// every-Nth and a per-request probability drawn from the scenario's seed, so
// that two runs with the same seed make the same decisions.
//
// The Server records one journal.UpstreamRequest per request and a
// journal.FaultStart/FaultEnd pair per fault window, and exports Prometheus
// metrics on the registerer it is given. Faults are data: a reset or a cut is
// a recorded outcome, never a Go error; errors mean the harness itself cannot
// go on (a port is taken, a config is invalid).
//
// HTTP upstreams (fake and proxy) serve each gateway connection on a fast
// path first (fastpath.go, fastfake.go): one goroutine per connection, the
// head parsed in place, and a request no active fault could target answered
// or relayed there with the bytes net/http would send. A request a fault
// could target, and anything unusual, is handed over unread with its
// connection to net/http's server, where every fault acts.
//
// A fault is a small type in its own file. The server never switches on
// concrete fault types: a fault says what it needs through the interfaces it
// implements (HTTPFault, ConnFault, TCPFault, ListenerFault).
package inject
