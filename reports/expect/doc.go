// Package expect is what a scenario asserts about a run and what the
// verdict says back: the expectations (the scenario's `expectations`
// section), the report section (dashboard links), and the results with
// their outcomes. It is the leaf the scenario schema imports, so that
// parsing a scenario does not compile the analysis or the renderers.
//
// An expectation's name is its YAML key; the verdict (reports/verdict)
// judges each one against the analysis.
package expect
