// Package analysis turns a run's journal into everything run.json says:
// the truth about what each circuit breaker of the gateway under test did,
// measured from outside, the retry and cost figures, the replay's own
// health and the postmortem facts. It is a pure function of the journal
// (Analyze) and renders nothing.
//
// Analysis is black-box: it joins the calls each upstream saw
// (upstream.request), the client outcomes (client.request), the gateway's own
// metrics (metrics.sample) and health samples, and infers per upstream and
// fault episode when the breaker opened, how it probed, whether it honoured
// Retry-After and when it closed. It never reads breaker.transition events
// (white-box truth from the built-in gateway); tests use those to check the
// black-box figures. The definitions are in docs/analysis.md.
//
// The figure table (Figures, figures.go) is the one list of an episode's
// figures: the renderers, compare and history read it, so a new figure is
// a field of Episode and one entry there.
package analysis
