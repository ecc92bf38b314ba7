// Package reports turns a run's journal into the truth about what each
// circuit breaker of the gateway under test did, measured from outside, and
// renders it.
//
// Analysis is black-box: it joins the calls each upstream saw
// (upstream.request), the client outcomes (client.request), the gateway's own
// metrics (metrics.sample) and health samples, and infers per upstream and
// fault episode when the breaker opened, how it probed, whether it honoured
// Retry-After and when it closed. It never reads breaker.transition events
// (white-box truth from the built-in gateway); tests use those to check the
// black-box figures. The definitions are in docs/analysis.md.
//
// Every renderer (run.json, report.html, report.md, timeline.svg, junit.xml)
// is a pure function of the journal, so RenderDir can rebuild a run's
// reports at any time.
package reports
