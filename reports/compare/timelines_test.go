package compare

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/render"
)

// readAnalysis is a compared run's analysis, read again from its
// directory.
func readAnalysis(t *testing.T, dir string) *analysis.Analysis {
	t.Helper()
	a, err := analysis.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestCompareTimelinesPNG decodes compare-timelines.png: it is the
// comparison's drawing at PNGScale, its lower part the second side's
// timeline pixel for pixel as that run's own drawing over the aligned
// window, and the upper part is the first side's.
func TestCompareTimelinesPNG(t *testing.T) {
	c, err := CompareDirs(runDir(t, "clean"), runDir(t, "haproxy"), [2]string{"a", "b"}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteComparison(dir, c); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, CompareTimelinesPNGFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	d := compareTimelines(c)
	if img.Bounds() != image.Rect(0, 0, int(d.W*render.PNGScale), int(d.H*render.PNGScale)) {
		t.Fatalf("PNG %v, want the drawing's %v×%v at scale %v", img.Bounds(), d.W, d.H, render.PNGScale)
	}
	a, bb := readAnalysis(t, c.Runs[0][0].Dir), readAnalysis(t, c.Runs[1][0].Dir)
	oa, ob := firstFault(a), firstFault(bb)
	pre, post := max(oa, ob), max(a.Run.DurationS-oa, bb.Run.DurationS-ob)
	second := render.TimelineDrawing(bb, render.SVGOptions{Width: 1200, From: ob - pre, To: ob + post, Origin: ob,
		Title: "b — " + bb.Run.RunID + " (t = 0 at the first fault)"})
	first := render.TimelineDrawing(a, render.SVGOptions{Width: 1200, From: oa - pre, To: oa + post, Origin: oa,
		Title: "a — " + a.Run.RunID + " (t = 0 at the first fault)"})
	if first.H+10+second.H != d.H {
		t.Fatalf("height %v, want %v + 10 + %v", d.H, first.H, second.H)
	}
	for _, part := range []struct {
		what string
		d    *image.RGBA
		top  int
	}{
		{"first side", first.Raster(render.PNGScale), 0},
		{"second side", second.Raster(render.PNGScale), int((first.H + 10) * render.PNGScale)},
	} {
		differ := 0
		bounds := part.d.Bounds()
		for y := 0; y < bounds.Dy(); y++ {
			for x := 0; x < bounds.Dx(); x++ {
				if color.RGBAModel.Convert(img.At(x, y+part.top)) != part.d.RGBAAt(x, y) {
					differ++
				}
			}
		}
		if differ > 0 {
			t.Errorf("%s: %d pixels differ from its own timeline drawn alone", part.what, differ)
		}
	}
}

// runDir is a run directory holding the facade's testdata/NAME.jsonl as
// its journal: all a comparison reads.
func runDir(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, analysis.JournalFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
