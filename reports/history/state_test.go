package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/reports/render"
)

// HistoryOptions.State sets runs aside unread: listed with their state,
// never linked, never in a group; hidden directories are never runs.
func TestHistoryStateSetsRunsAside(t *testing.T) {
	root := t.TempDir()
	runJSON, err := os.ReadFile(filepath.Join("..", "testdata", "golden", "clean.run.json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"done", "killed", ".pruning-old"} {
		os.Mkdir(filepath.Join(root, d), 0o755)
		if err := os.WriteFile(filepath.Join(root, d, render.RunFile), runJSON, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := HistoryWith(root, HistoryOptions{State: func(name string) string {
		if name == "killed" {
			return "killed: no report"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 2 || len(h.NoReport) != 1 || len(h.Groups) != 1 || len(h.Groups[0].Runs) != 1 {
		t.Fatalf("runs %d, set aside %d, groups %d", len(h.Runs), len(h.NoReport), len(h.Groups))
	}
	md := string(HistoryMarkdown(h))
	if !strings.Contains(md, "| killed | killed: no report |") || strings.Contains(md, "(killed/") || strings.Contains(md, "pruning") {
		t.Errorf("markdown:\n%s", md)
	}
	html, err := HistoryHTML(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "<td>killed</td><td>killed: no report</td>") || strings.Contains(string(html), `href="killed/`) {
		t.Errorf("html does not list the killed run unlinked:\n%s", html)
	}
}
