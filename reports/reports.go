package reports

import (
	"encoding/json"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
	"github.com/halfopen/rehearse/reports/render"
	"github.com/halfopen/rehearse/reports/verdict"
)

// RenderDir reads DIR/journal.jsonl, analyses it, evaluates the
// expectations the journal's run.start config holds, and writes run.json,
// report.html, report.md, timeline.svg, timeline.png and junit.xml into DIR, each
// atomically (temp file, sync, rename). It returns the analysis and the
// expectation results; use Failed to turn those into an exit code. A
// missing or corrupt journal wraps rehearse.ErrInvalid; a file that cannot
// be written wraps rehearse.ErrEnvironment.
func RenderDir(dir string) (*analysis.Analysis, []expect.ExpectationResult, error) {
	a, err := verdict.AnalyzeDir(dir)
	if err != nil {
		return nil, nil, err
	}
	if err := render.WriteReports(dir, a); err != nil {
		return a, a.Expectations, err
	}
	return a, a.Expectations, nil
}

// AnalyzeDir analyses DIR/journal.jsonl and judges the expectations its
// run.start config holds (into Analysis.Expectations), writing nothing.
func AnalyzeDir(dir string) (*analysis.Analysis, error) { return verdict.AnalyzeDir(dir) }

// Resolve is what a run records in run.start (journal.Resolved) from its
// compiled scenario, so that its journal renders the same with any later
// build: the built-in gateway's settings with this build's defaults, and
// the breaker series of its metrics preset.
func Resolve(config json.RawMessage) *journal.Resolved { return analysis.Resolve(config) }
