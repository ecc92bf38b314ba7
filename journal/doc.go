// Package journal is the one shared record of a rehearsal: a typed event
// model and an append-only JSON Lines file, journal.jsonl, that every
// component writes to and every report is computed from.
//
// Every line is one event: {"t": <ns since run start>, "kind": "...", ...}
// followed by the fields of that kind, flat. Times inside an event
// (scheduled, sent, done, ...) are also nanoseconds since the run's start,
// read from the same monotonic Clock, so events from the replayer, the
// upstreams and the observer line up exactly.
//
// The Writer is safe for concurrent use, buffers, and flushes at least once a
// second and on Close, so a crash loses at most a second of events. The
// Reader streams a journal back, tolerates a torn last line (a run killed
// mid-write) and reports any other corruption with its line number.
package journal
