package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runDir makes a run directory holding one of the reports package's
// fixture journals.
func runDir(t *testing.T, parent, name, fixture string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "reports", "testdata", fixture+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "journal.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReportRender(t *testing.T) {
	root := t.TempDir()
	pass := runDir(t, root, "pass", "haproxy")
	out, errOut, code := execute(t, "report", "render", pass)
	if code != 0 || !strings.Contains(out, "0 of 0 expectations met") {
		t.Fatalf("code %d out %q err %q", code, out, errOut)
	}
	for _, f := range []string{"run.json", "report.html", "report.md", "timeline.svg", "timeline.png", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(pass, f)); err != nil {
			t.Error(err)
		}
	}
	// A run whose expectations failed exits 1, like rehearse run.
	fail := runDir(t, root, "fail", "quota-violated")
	if _, _, code := execute(t, "report", "render", fail); code != 1 {
		t.Errorf("failed expectations: exit %d, want 1", code)
	}
	// Not a run directory: invalid input.
	if _, errOut, code := execute(t, "report", "render", t.TempDir()); code != 2 {
		t.Errorf("no journal: exit %d, want 2 (%s)", code, errOut)
	}
}

func TestReportCompare(t *testing.T) {
	root := t.TempDir()
	a := runDir(t, root, "mac", "clean")
	b := runDir(t, root, "linux", "haproxy")
	out, _, code := execute(t, "report", "compare", a, b, "--label", "macOS", "--label", "linux")
	if code != 0 || !strings.Contains(out, "| group | figure | macOS | linux |") || !strings.Contains(out, "⚑") {
		t.Fatalf("code %d out:\n%s", code, out)
	}
	dst := t.TempDir()
	if _, _, code := execute(t, "report", "compare", a, b, "--out", dst); code != 0 {
		t.Fatalf("compare --out: exit %d", code)
	}
	for _, f := range []string{"compare.html", "compare.md", "compare-a.svg", "compare-b.svg"} {
		if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
			t.Error(err)
		}
	}
	if _, _, code := execute(t, "report", "compare", a, b, "--label", "x", "--label", "y", "--label", "z"); code != 2 {
		t.Errorf("three labels: exit %d, want 2", code)
	}
}

func TestReportHistory(t *testing.T) {
	root := t.TempDir()
	runDir(t, root, "2026-11-23", "clean")
	runDir(t, root, "2026-11-30", "quota-violated")
	out, _, code := execute(t, "report", "history", root)
	if code != 0 || !strings.Contains(out, "2 runs indexed") {
		t.Fatalf("code %d out %q", code, out)
	}
	md, err := os.ReadFile(filepath.Join(root, "index.md"))
	if err != nil || !strings.Contains(string(md), "2026-11-30") {
		t.Fatalf("index.md: %v\n%s", err, md)
	}
	if _, _, code := execute(t, "report", "history", filepath.Join(root, "nope")); code != 2 {
		t.Errorf("missing dir: exit %d, want 2", code)
	}
}
