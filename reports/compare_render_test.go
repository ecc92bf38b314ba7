package reports

import (
	"encoding/json"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/compare"
	"github.com/halfopen/rehearse/reports/render"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// writtenComparison compares the clean and haproxy fixtures, compared by
// harness version, and writes the comparison into a directory.
func writtenComparison(t *testing.T, version string) (*compare.Comparison, string) {
	t.Helper()
	c, err := compare.CompareDirs(renderFixture(t, "clean"), renderFixture(t, "haproxy"), [2]string{"a", "b"}, compare.CompareOptions{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := compare.WriteComparison(dir, c); err != nil {
		t.Fatal(err)
	}
	return c, dir
}

// readAnalysis is a compared run's analysis, read again from its
// directory.
func readAnalysis(t *testing.T, dir string) *analysis.Analysis {
	t.Helper()
	a, err := AnalyzeDir(dir)
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
	c, dir := writtenComparison(t, "")
	img := readPNG(t, filepath.Join(dir, compare.CompareTimelinesPNGFile))
	d := compare.CompareTimelines(c)
	if img.Bounds() != image.Rect(0, 0, int(d.W*render.PNGScale), int(d.H*render.PNGScale)) {
		t.Fatalf("PNG %v, want the drawing's %v×%v at scale %v", img.Bounds(), d.W, d.H, render.PNGScale)
	}
	a, bb := readAnalysis(t, c.Runs[0][0].Dir), readAnalysis(t, c.Runs[1][0].Dir)
	oa, ob := compare.FirstFault(a), compare.FirstFault(bb)
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

// TestCompareMarkdownTimelinesAndDocs checks compare.md as GFM sees it:
// the PNG shown, the SVG linked, and the definitions linked for the
// version that compared, not by a path that only works in the repository.
func TestCompareMarkdownTimelinesAndDocs(t *testing.T) {
	_, dir := writtenComparison(t, "v1.4.0")
	src, err := os.ReadFile(filepath.Join(dir, "compare.md"))
	if err != nil {
		t.Fatal(err)
	}
	images, links := map[string]bool{}, map[string]bool{}
	ast.Walk(gfm.Parser().Parse(text.NewReader(src)), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch n := n.(type) {
			case *ast.Image:
				images[string(n.Destination)] = true
			case *ast.Link:
				links[string(n.Destination)] = true
			}
		}
		return ast.WalkContinue, nil
	})
	if !images[compare.CompareTimelinesPNGFile] || len(images) != 1 {
		t.Errorf("images %v, want %s alone", images, compare.CompareTimelinesPNGFile)
	}
	for _, want := range []string{compare.CompareTimelinesFile, analysis.DocsURL("v1.4.0", "analysis.md"), analysis.DocsURL("v1.4.0", "cross-platform.md")} {
		if !links[want] {
			t.Errorf("compare.md does not link %s; links %v", want, links)
		}
	}
	h, err := os.ReadFile(filepath.Join(dir, "compare.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), `href="`+analysis.DocsURL("v1.4.0", "analysis.md")+`"`) || strings.Contains(string(h), "docs/analysis.md;") {
		t.Error("compare.html's footer does not link the definitions of the comparing version")
	}
	// compare.json names the build that computed its figures.
	j, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Version string `json:"harness_version"`
	}
	if err := json.Unmarshal(j, &got); err != nil || got.Version != "v1.4.0" {
		t.Errorf("compare.json harness_version %q (%v), want v1.4.0", got.Version, err)
	}
	// Without the pictures beside it, compare.md says how to get both.
	c, _ := writtenComparison(t, "")
	md := string(compare.CompareMarkdown(c, false))
	if strings.Contains(md, "![") || !strings.Contains(md, compare.CompareTimelinesPNGFile) || !strings.Contains(md, compare.CompareTimelinesFile) {
		t.Errorf("compare.md without pictures:\n%s", md[max(0, len(md)-600):])
	}
}
