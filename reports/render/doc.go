// Package render writes a judged analysis as the files of a run directory:
// run.json, junit.xml, report.md, report.html and the timeline (SVG and
// PNG). Each format is one file and one entry of Formats; every renderer
// is a pure function of the analysis, so a run's reports can be rebuilt
// from its journal at any time.
//
// It imports the analysis and the expectation results, never the verdict
// logic: what passed was decided before rendering.
package render
