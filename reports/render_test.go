package reports

import (
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/compare"
	"github.com/halfopen/rehearse/reports/history"
	"github.com/halfopen/rehearse/reports/render"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

var update = flag.Bool("update", false, "rewrite testdata journals and golden files")

// fixtures are the hand-built journals the golden tests render.
func fixtures() map[string]func() []journal.Event {
	return map[string]func() []journal.Event{
		"clean": func() []journal.Event {
			s := base()
			s.canary, s.healthInt = true, 2*time.Second
			s.expect = []byte(`{"opens_within":"10s","probe_spacing_min":"200ms","max_probes_in_flight":1,"healthy_unaffected":true,` +
				`"closes_within":"10s","amplification_max":1.2,"metrics_lag_max":"15s","health_disagreement_max":"3m","leaked_max":0}`)
			return s.build()
		},
		"haproxy": func() []journal.Event {
			s := base()
			s.style, s.healthInt, s.threshold, s.fwdSeq = "health", 2*time.Second, 3, false
			s.metricsInt = 0
			return s.build()
		},
		"quota-violated": func() []journal.Event {
			s := base()
			s.ignoreRA, s.cooldown = true, time.Second
			s.faults = []simFault{{name: "quota", upstream: "search", typ: "retry_after", at: 10 * time.Second, for_: 10 * time.Second, retryAfter: 3 * time.Second}}
			s.expect = []byte(`{"honours_retry_after":true}`)
			return s.build()
		},
		// interrupted: the run ends at 20 s with no run.end, the breaker
		// still open (what a killed run leaves; TestInterruptedRun).
		"interrupted": func() []journal.Event {
			s := base()
			s.noEnd = true
			var cut []journal.Event
			for _, e := range s.build() {
				if e.T <= 20*time.Second {
					cut = append(cut, e)
				}
			}
			return cut
		},
		// shedder: an adaptive-throttling load shedder, no breaker
		// (shedding_test.go).
		"shedder": func() []journal.Event { return shedderEvents(1, 2) },
		"hostile": func() []journal.Event {
			s := base()
			s.upstreams = []string{`s<e>arch|x`, "weather"}
			s.faults[0].upstream = `s<e>arch|x`
			s.faults[0].name = `"><img src=x onerror=alert(1)>`
			evs := s.build()
			evs[0].Payload.(*journal.RunStart).Scenario = `<script>alert(1)</script>|*x*`
			return evs
		},
	}
}

func writeJournal(t *testing.T, path string, evs []journal.Event) {
	t.Helper()
	if err := os.WriteFile(path, encodeJournal(t, evs), 0o644); err != nil {
		t.Fatal(err)
	}
}

// encodeJournal writes the events as a journal file's bytes, each at its
// own time.
func encodeJournal(t *testing.T, evs []journal.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := journal.NewWriter(&buf, journal.NewClock(time.Now()))
	for _, e := range evs {
		w.RecordAt(e.T, e.Payload)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// renderFixture copies testdata/NAME.jsonl into a fresh run directory and
// renders it.
func renderFixture(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("testdata", name+".jsonl")
	if *update {
		writeJournal(t, src, fixtures()[name]())
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("%v (run go test -update to create the fixtures)", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, analysis.JournalFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := RenderDir(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestGolden(t *testing.T) {
	for name := range fixtures() {
		t.Run(name, func(t *testing.T) {
			dir := renderFixture(t, name)
			for _, f := range []string{render.RunFile, render.MarkdownFile, render.TimelineFile, render.HTMLFile, render.JUnitFile} {
				got, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, name+"."+f, got)
			}
		})
	}
}

// checkGolden compares got with testdata/golden/name.golden, or with -update
// writes it there. The .golden suffix (the Go convention) marks the files as
// expected output, not source: nothing serves or lints them as HTML or SVG.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", "golden", name+".golden"), got, *update)
}

func TestRenderedFilesAreWellFormed(t *testing.T) {
	dir := renderFixture(t, "clean")
	for _, f := range []string{render.TimelineFile, render.JUnitFile} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		testutil.XMLTokens(t, f, b)
	}
	var j render.JunitSuites
	b, _ := os.ReadFile(filepath.Join(dir, render.JUnitFile))
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if j.Tests != 9 || len(j.Suites[0].Cases) != 9 {
		t.Errorf("junit: %d tests, want one per expectation (9)", j.Tests)
	}
	// The page loads nothing from the network (it opens offline, attached
	// to a ticket); links a reader may follow are fine.
	html, _ := os.ReadFile(filepath.Join(dir, render.HTMLFile))
	loads := regexp.MustCompile(`(?i)(src|srcset|xlink:href)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?\s*(https?:)?//|<link[^>]+href\s*=\s*["']?\s*(https?:)?//|@import`)
	if m := loads.FindString(string(html)); m != "" {
		t.Errorf("report.html loads from the network: %q", m)
	}
	a, err := render.ReadRunJSON(filepath.Join(dir, render.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if a.Upstreams["search"].Episodes[0].OpenedAfterS == nil {
		t.Error("run.json round trip lost opened_after_s")
	}
}

func TestHostileNamesEscaped(t *testing.T) {
	dir := renderFixture(t, "hostile")
	for _, f := range []string{render.HTMLFile, render.TimelineFile} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		for _, bad := range []string{"<script>alert", "<img src=x", "<e>"} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("%s contains unescaped %q", f, bad)
			}
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, render.MarkdownFile))
	for _, bad := range []string{"<script>", "<img", "<e>", "arch|x"} {
		for i := bytes.Index(md, []byte(bad)); i >= 0; {
			if i == 0 || md[i-1] != '\\' {
				t.Errorf("report.md contains unescaped %q", bad)
				break
			}
			j := bytes.Index(md[i+1:], []byte(bad))
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
}

func TestRenderDirErrors(t *testing.T) {
	_, _, err := RenderDir(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "no journal") {
		t.Errorf("empty dir: %v", err)
	}
}

func TestTargetPasswordRedacted(t *testing.T) {
	evs := base().build()
	evs[0].Payload.(*journal.RunStart).Target = "http://ops:hunter2@127.0.0.1:8080"
	a, err := analysis.AnalyzeEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []func(*analysis.Analysis) ([]byte, error){render.RunJSON, render.Markdown, render.HTML, render.JUnit} {
		b, _ := r(a)
		if bytes.Contains(b, []byte("hunter2")) {
			t.Error("a report contains the target's password")
		}
	}
}

// TestCompareAndHistoryGolden renders the comparison and the history index
// of the fixtures and checks them against their goldens.
func TestCompareAndHistoryGolden(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"clean", "haproxy"} {
		b, err := os.ReadFile(filepath.Join("testdata", n+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(root, n), 0o755)
		if err := os.WriteFile(filepath.Join(root, n, analysis.JournalFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := compare.CompareDirs(filepath.Join(root, "clean"), filepath.Join(root, "haproxy"), [2]string{"macOS", "linux"}, compare.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Both fixtures are linux runs: the label macOS is questioned.
	if !strings.Contains(strings.Join(c.Warnings, "\n"), `label "macOS" says mac`) {
		t.Errorf("warnings %q", c.Warnings)
	}
	if c.Unjudged == 0 {
		t.Error("one run per side: single values cannot be judged")
	}
	self, err := compare.CompareDirs(filepath.Join(root, "clean"), filepath.Join(root, "clean"), [2]string{"a", "a"}, compare.CompareOptions{})
	if err != nil || self.Flagged != 0 {
		t.Errorf("a run compared with itself: %v, %+v", err, self)
	}
	if err := compare.WriteComparison(root, c); err != nil {
		t.Fatal(err)
	}
	h, err := history.History(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Runs) != 2 {
		t.Fatalf("history: %d runs", len(h.Runs))
	}
	if err := history.WriteHistory(root, h); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"compare.html", "compare.md", "compare.json", compare.CompareTimelinesFile, "index.html", "index.md"} {
		got, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		// compare.json names the run directories as given.
		checkGolden(t, f, bytes.ReplaceAll(got, []byte(root), []byte("ROOT")))
	}
}
