package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/compare"

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
