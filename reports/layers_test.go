package reports

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layers is the order of the reports' packages (docs/architecture.md):
// each may import only packages listed before it, and render never
// imports verdict.
var layers = []string{"num", "expect", "analysis", "verdict", "render", "compare", "history", "."}

// TestLayers: the reports' packages import one way. A change that makes
// a lower layer reach up (the renderers into the verdict, the analysis
// into a renderer) fails here, before it becomes a cycle someone works
// around.
func TestLayers(t *testing.T) {
	const mod = "github.com/halfopen/rehearse/reports"
	for i, l := range layers {
		pkg, err := build.ImportDir(filepath.Join(".", l), 0)
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		for _, imp := range pkg.Imports {
			rest, ok := strings.CutPrefix(imp, mod+"/")
			if !ok {
				continue
			}
			j := slices.Index(layers, rest)
			switch {
			case j < 0:
				t.Errorf("%s imports %s, which is in no layer", l, imp)
			case j >= i:
				t.Errorf("%s imports %s, a layer at or above it", l, rest)
			case l == "render" && rest == "verdict":
				t.Errorf("render imports verdict: the renderers print outcomes, they do not judge")
			}
		}
	}
}
