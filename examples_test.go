package rehearse

import (
	"os"
	"strings"
	"testing"
)

// TestCrossPlatformWorkflowInDocs keeps the workflow shown in
// docs/cross-platform.md identical to examples/ci/cross-platform.yml, the
// file CI lints with actionlint.
func TestCrossPlatformWorkflowInDocs(t *testing.T) {
	want, err := os.ReadFile("examples/ci/cross-platform.yml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("docs/cross-platform.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatal("docs/cross-platform.md has no yaml block")
	}
	if block != string(want) {
		t.Error("the workflow in docs/cross-platform.md differs from examples/ci/cross-platform.yml: copy the file into the doc")
	}
}
