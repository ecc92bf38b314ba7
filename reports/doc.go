// Package reports is the facade rehearsal and cmd call: RenderDir reads a
// run directory's journal, analyses it, judges its expectations and writes
// every report; AnalyzeDir does the first two and writes nothing.
//
// The work is done in layers that import one way (docs/architecture.md):
//
//	num, expect        leaves: how values print; what a scenario asserts
//	analysis           journal → everything run.json says (pure)
//	verdict            analysis + expectations → outcomes
//	render             run.json, JUnit, Markdown, HTML, timeline SVG/PNG
//	compare, history   across runs
//
// Nothing lower imports anything higher, and render never imports verdict.
package reports
