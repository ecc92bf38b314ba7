// Package observe watches what the gateway under test says about itself
// during a rehearsal, so that the black-box analysis can be checked against
// it:
//
//   - a Scraper reads the gateway's Prometheus metrics (text format or
//     OpenMetrics, negotiated) at an interval, keeps only the selected
//     series and maps them to breaker states per dependency with a preset
//     (reference, haproxy, caddy, resilience4j, envoy, or a custom one), or
//     reads the same series from a Prometheus server's HTTP API for fleets
//     that are already scraped;
//   - a LogObserver tails the gateway's log file (JSON lines or text) for
//     gateways without an exporter, such as OpenClaw, and records the
//     state changes its patterns recognise as samples like a scrape's,
//     stamped with each line's own time;
//   - a Canary GETs the gateway's health URL at an interval;
//   - Facts describes the machine (OS, kernel, CPU, Go version, measured
//     timer granularity, TCP keepalive settings) so that a macOS run and a
//     Linux run can be compared knowing what differs underneath.
//
// Scrapers and canaries write journal.MetricsSample and journal.HealthSample
// events through a journal.Recorder, stamped with the run's journal.Clock. A
// failed scrape or health check is an event with its Error set, never a Go
// error from Run: a gateway that stops answering its metrics endpoint during
// a fault is part of what the rehearsal shows.
//
// A sample is stamped when its response has been read, that is when the
// state it carries became visible to an observer; see docs/metrics.md for
// the metrics-lag definition built on that.
package observe
