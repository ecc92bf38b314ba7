package render

import (
	"fmt"
	"path/filepath"

	"github.com/halfopen/rehearse/internal/atomicfile"
	"github.com/halfopen/rehearse/reports/analysis"
)

// The files of a run directory (docs/contracts.md).
const (
	RunFile         = "run.json"
	HTMLFile        = "report.html"
	MarkdownFile    = "report.md"
	TimelineFile    = "timeline.svg"
	TimelinePNGFile = "timeline.png"
	JUnitFile       = "junit.xml"
)

// A Renderer turns a judged analysis into one file's bytes. It is a pure
// function of the analysis: the same journal renders the same bytes.
type Renderer func(*analysis.Analysis) ([]byte, error)

// A Format is one file of a run directory and the renderer that writes it.
type Format struct {
	File   string
	Render Renderer
}

// Formats is the one table of a run directory's reports, in the order
// WriteReports writes them. A new output format is a file of this package
// with its Renderer, and one entry here.
var Formats = []Format{
	{RunFile, RunJSON},
	{JUnitFile, JUnit},
	{TimelineFile, func(a *analysis.Analysis) ([]byte, error) { return TimelineSVG(a, SVGOptions{}), nil }},
	{TimelinePNGFile, func(a *analysis.Analysis) ([]byte, error) { return TimelinePNG(a, SVGOptions{}) }},
	{MarkdownFile, Markdown},
	{HTMLFile, HTML},
}

// WriteReports writes every format of an analysis into dir (which must
// exist), atomically, file by file.
func WriteReports(dir string, a *analysis.Analysis) error {
	for _, f := range Formats {
		b, err := f.Render(a)
		if err != nil {
			return fmt.Errorf("render %s: %w", f.File, err)
		}
		if err := atomicfile.Write(filepath.Join(dir, f.File), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
