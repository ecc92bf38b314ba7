// Package verdict judges a run: it reads the analysis (reports/analysis)
// against the scenario's expectations (reports/expect) and says, for each
// expectation, met, not met or not observable, with what was seen.
//
// The renderers never import it: they print the results it leaves in
// Analysis.Expectations.
package verdict
