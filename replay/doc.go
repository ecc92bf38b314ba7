// Package replay is the sending side of a rehearsal: it replays captured
// HTTP requests into a gateway at a fixed open-loop rate (or at the
// capture's original timing), and classifies every response precisely.
//
// The pipeline is source → rewrite → pacer → sender → journal. The pacer
// decides when request i is due, independently of responses (open loop):
// the replayer never waits for a response before sending the next request,
// never shifts the schedule after a stall (coordinated omission) and never
// sends a catch-up burst. A request that starts later than the lateness
// threshold is recorded as late; a request whose slot passed while the
// replayer was stalled, or that would exceed the in-flight cap, is recorded
// as dropped. Every request, sent or dropped, produces one
// journal.ClientRequest event, and the Summary carries the replayer's own
// accuracy: an HDR histogram of send lateness and the achieved rate for
// every second of the run.
//
// The sender writes each request to an http:// target and reads its
// response on its own goroutine (the direct transport, direct.go: net/http's
// serialisation, parsing and keep-alive rules without its per-connection
// goroutines); https:// targets go through net/http's transport.
//
// Requests come from package replay/capture; see docs/replay.md for the
// pacing model, the outcome classes and the safety rule for writes.
package replay
