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
	out, errOut, code := execute(t, "report", "compare", a, b, "--label", "macOS", "--label", "linux")
	if code != 0 || !strings.Contains(out, "| figure | n macOS | median macOS (p10 – p90) | n linux |") || !strings.Contains(out, "cannot tell") {
		t.Fatalf("code %d out:\n%s", code, out)
	}
	// Without --out no picture is written, and the text does not refer to one.
	if strings.Contains(out, "](compare-timelines.svg)") || !strings.Contains(errOut, `label "macOS" says mac`) {
		t.Errorf("stdout refers to an unwritten picture, or no label warning on stderr (%q)", errOut)
	}
	dst := filepath.Join(t.TempDir(), "new")
	if _, _, code := execute(t, "report", "compare", a, "--vs", b, "--out", dst); code != 0 {
		t.Fatalf("compare --out: exit %d", code)
	}
	for _, f := range []string{"compare.html", "compare.md", "compare.json", "compare-timelines.svg"} {
		if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
			t.Error(err)
		}
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"three labels", []string{a, b, "--label", "x", "--label", "y", "--label", "z"}},
		{"three runs without --vs", []string{a, b, a}},
		{"empty side", []string{a, "--vs"}},
		{"bad format", []string{a, b, "--format", "xml"}},
		{"unknown threshold key", []string{a, b, "--threshold", "nope=5ms"}},
		{"bad threshold value", []string{a, b, "--threshold", "probe_interval_s.p50=fast"}},
		{"no such directory", []string{a, filepath.Join(root, "nope")}},
		{"not a run", []string{a, t.TempDir()}},
		{"NaN level", []string{a, b, "--level", "NaN"}},
	} {
		if _, errOut, code := executeWith(t, nil, append([]string{"report", "compare"}, c.args...)...); code != 2 {
			t.Errorf("%s: exit %d, want 2 (%s)", c.name, code, errOut)
		}
	}
	if out, _, code := execute(t, "report", "compare", "--help"); code != 0 || !strings.Contains(out, "--fail-on-diff") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
	// Thresholds parse per unit.
	th, err := parseThresholds([]string{"probe_interval_s.p50=5ms", "probe_interval_s.p50=1%", "failures_before_open=2", "amplification=0.1"})
	if err != nil || th["probe_interval_s.p50"].Abs != 5 || th["probe_interval_s.p50"].Rel != 0.01 || th["failures_before_open"].Abs != 2 || th["amplification"].Abs != 0.1 {
		t.Errorf("thresholds %+v, %v", th, err)
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
