package render

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
)

// BenchmarkTimeline draws the timeline of a 5-minute, five-upstream weekly
// run (the testdata fixture) and encodes it: the drawing alone, the SVG
// and the PNG (at PNGScale), so that docs/benchmarks.md can say what the
// PNG adds to rendering a run directory.
func BenchmarkTimeline(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "clean.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, analysis.JournalFile), raw, 0o644); err != nil {
		b.Fatal(err)
	}
	a, err := analysis.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("drawing", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			TimelineDrawing(a, SVGOptions{})
		}
	})
	b.Run("svg", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			n = len(TimelineSVG(a, SVGOptions{}))
		}
		b.ReportMetric(float64(n), "bytes")
	})
	b.Run("png", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			p, err := TimelinePNG(a, SVGOptions{})
			if err != nil {
				b.Fatal(err)
			}
			n = len(p)
		}
		b.ReportMetric(float64(n), "bytes")
	})
}
