package runs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

var monday = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// weeklyRuns makes n complete weekly runs of scenario ending at monday,
// oldest first, each with a real report (run.json) to index.
func weeklyRuns(t *testing.T, a Archive, scenario string, n int) []string {
	t.Helper()
	var dirs []string
	for i := n - 1; i >= 0; i-- {
		dirs = append(dirs, completeRun(t, a, Identity{Scenario: scenario}, monday.Add(-time.Duration(i)*7*24*time.Hour)))
	}
	return dirs
}

// completeRun makes one complete run of id started at start: its report
// files, marked complete, released.
func completeRun(t *testing.T, a Archive, id Identity, start time.Time) string {
	t.Helper()
	c := recordingRun(t, a, id, start)
	writeReports(t, c.Dir())
	// The index reads run.json (the journal is a placeholder).
	os.Remove(filepath.Join(c.Dir(), "journal.jsonl"))
	if err := c.Complete(); err != nil {
		t.Fatal(err)
	}
	c.Release()
	return c.Dir()
}

// recordingRun makes a run of id started at start that is recording: its
// claim held (released when the test ends), a journal, no report.
func recordingRun(t *testing.T, a Archive, id Identity, start time.Time) *Claim {
	t.Helper()
	c, err := a.NewRun(id, start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	if err := os.WriteFile(filepath.Join(c.Dir(), "journal.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// killedRun makes a run that died while recording: a journal, no report,
// its lock free.
func killedRun(t *testing.T, a Archive, id Identity, start time.Time) string {
	t.Helper()
	c := recordingRun(t, a, id, start)
	c.Release()
	return c.Dir()
}

// writeReports writes the whole set of report files into dir, run.json a
// real one.
func writeReports(t *testing.T, dir string) {
	t.Helper()
	runJSON, err := os.ReadFile(filepath.Join("..", "..", "reports", "testdata", "golden", "clean.run.json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range ReportFiles {
		data := []byte("report\n")
		if name == "run.json" {
			data = runJSON
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestNewRun(t *testing.T) {
	a := Archive{Dir: filepath.Join(t.TempDir(), "runs")}
	local := time.Date(2026, 11, 30, 4, 0, 5, 0, time.FixedZone("CET", 3600))
	id := Identity{Scenario: "Weekly Drill", File: "/x/Weekly Drill.yaml"}
	c1, err := a.NewRun(id, local)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Release()
	if filepath.Base(c1.Dir()) != "2026-11-30T030005Z-weekly-drill" {
		t.Errorf("run dir %q: want the UTC date and the scenario slug", filepath.Base(c1.Dir()))
	}
	c2, err := a.NewRun(id, local)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Release()
	if filepath.Base(c2.Dir()) != "2026-11-30T030005Z.2-weekly-drill" {
		t.Errorf("second run in the same second: %q", filepath.Base(c2.Dir()))
	}
	runs, err := a.Runs()
	if err != nil || len(runs) != 2 || runs[0].Dir != c1.Dir() || runs[1].Dir != c2.Dir() || runs[0].Scenario != "weekly-drill" {
		t.Fatalf("Runs = %+v, %v", runs, err)
	}
	if r := runs[0]; r.State != Recording || !r.Held || r.Identity != id {
		t.Errorf("a run being recorded: %+v", r)
	}
	if _, err := (Archive{}).NewRun(id, local); !errors.Is(err, rehearse.ErrInvalid) {
		t.Errorf("empty archive dir: %v", err)
	}
}

func TestNewRunConcurrent(t *testing.T) {
	a := Archive{Dir: t.TempDir()}
	const n = 8
	dirs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := a.NewRun(Identity{Scenario: "weekly"}, monday)
			if err != nil {
				t.Error(err)
				return
			}
			c.Release()
			dirs[i] = c.Dir()
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] {
			t.Fatalf("two runs share %s", d)
		}
		seen[d] = true
	}
}

func TestPruneKeepCount(t *testing.T) {
	a := Archive{Dir: t.TempDir(), Keep: 3}
	dirs := weeklyRuns(t, a, "weekly", 6)
	other := weeklyRuns(t, a, "ci-503", 2)
	// Things that are not runs are never touched.
	foreign := filepath.Join(a.Dir, "notes")
	_ = os.Mkdir(foreign, 0o755)
	_ = os.Mkdir(filepath.Join(a.Dir, "logs"), 0o755)

	removed, err := a.Prune(monday)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(removed, dirs[:3]) {
		t.Errorf("removed %v\nwant %v", removed, dirs[:3])
	}
	for _, d := range append(dirs[3:], other...) {
		if !exists(d) {
			t.Errorf("%s was pruned", d)
		}
	}
	for _, d := range dirs[:3] {
		if exists(d) {
			t.Errorf("%s survived", d)
		}
	}
	if !exists(foreign) || !exists(filepath.Join(a.Dir, "logs")) {
		t.Error("prune removed a directory that is not a run")
	}
}

func TestPruneKeepFor(t *testing.T) {
	a := Archive{Dir: t.TempDir(), KeepFor: 2*7*24*time.Hour + time.Hour}
	dirs := weeklyRuns(t, a, "weekly", 5)
	removed, err := a.Prune(monday)
	if err != nil {
		t.Fatal(err)
	}
	// Runs 0, 1 and 2 weeks old stay.
	if !reflect.DeepEqual(removed, dirs[:2]) {
		t.Errorf("removed %v\nwant %v", removed, dirs[:2])
	}

	// Either limit keeps a run: 1 by count, 3 weeks by age → the union.
	b := Archive{Dir: t.TempDir(), Keep: 1, KeepFor: 3 * 7 * 24 * time.Hour}
	dirs = weeklyRuns(t, b, "weekly", 6)
	removed, _ = b.Prune(monday.Add(time.Hour))
	if !reflect.DeepEqual(removed, dirs[:3]) {
		t.Errorf("union: removed %v\nwant %v", removed, dirs[:3])
	}
}

func TestPruneKeepsNewestAndLatest(t *testing.T) {
	a := Archive{Dir: t.TempDir(), KeepFor: 24 * time.Hour}
	dirs := weeklyRuns(t, a, "weekly", 3)
	// The schedule stopped months ago: age alone would delete everything.
	if err := a.UpdateLatest(dirs[0]); err != nil {
		t.Fatal(err)
	}
	removed, err := a.Prune(monday.Add(90 * 24 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(removed, dirs[1:2]) {
		t.Errorf("removed %v, want only %v (newest and latest stay)", removed, dirs[1:2])
	}

	none := Archive{Dir: t.TempDir()}
	weeklyRuns(t, none, "weekly", 3)
	if removed, err := none.Prune(monday); err != nil || len(removed) != 0 {
		t.Errorf("no limits pruned %v, %v", removed, err)
	}
}

func TestUpdateLatest(t *testing.T) {
	a := Archive{Dir: t.TempDir()}
	dirs := weeklyRuns(t, a, "weekly", 2)
	for _, d := range dirs {
		if err := a.UpdateLatest(d); err != nil {
			t.Fatal(err)
		}
		target, err := os.Readlink(filepath.Join(a.Dir, LatestName))
		if err != nil || target != filepath.Base(d) {
			t.Fatalf("latest → %q, %v; want relative %q", target, err, filepath.Base(d))
		}
		if got, _ := a.Latest(); got != d {
			t.Errorf("Latest = %q, want %q", got, d)
		}
		if _, err := os.Stat(filepath.Join(a.Dir, LatestName, "run.json")); err != nil {
			t.Errorf("latest does not resolve: %v", err)
		}
	}
	entries, _ := os.ReadDir(a.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".latest") {
			t.Errorf("temporary link left behind: %s", e.Name())
		}
	}
	// A run outside the archive gets an absolute link.
	outside := t.TempDir()
	if err := a.UpdateLatest(outside); err != nil {
		t.Fatal(err)
	}
	if target, _ := os.Readlink(filepath.Join(a.Dir, LatestName)); target != outside {
		t.Errorf("outside run linked as %q", target)
	}
	// A real directory called latest is not replaced.
	b := Archive{Dir: t.TempDir()}
	_ = os.Mkdir(filepath.Join(b.Dir, LatestName), 0o755)
	if err := b.UpdateLatest(dirs[0]); err == nil || !strings.Contains(err.Error(), "not a symlink") {
		t.Errorf("replaced a real directory: %v", err)
	}
}

func TestFinish(t *testing.T) {
	a := Archive{Dir: t.TempDir(), Keep: 2}
	dirs := weeklyRuns(t, a, "weekly", 3)
	c := recordingRun(t, a, Identity{Scenario: "weekly"}, monday.Add(time.Hour))
	writeReports(t, c.Dir())
	if err := c.Complete(); err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, c.Dir())
	removed, err := a.Finish(c, monday)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(removed, dirs[:2]) {
		t.Errorf("removed %v", removed)
	}
	if got, _ := a.Latest(); got != dirs[3] {
		t.Errorf("latest %q", got)
	}
	if _, err := os.Stat(filepath.Join(a.Dir, "index.html")); err != nil {
		t.Errorf("history index not written: %v", err)
	}
	// Finish let go of the run.
	if st := StateOf(dirs[3]); st != Complete {
		t.Errorf("finished run: %v", st)
	}
	// A run that failed before it started leaves nothing: its directory
	// goes, and latest stays on the last run that produced a report.
	next, _ := a.NewRun(Identity{Scenario: "weekly"}, monday.Add(7*24*time.Hour))
	next.Abandon()
	if _, err := a.Finish(next, monday.Add(7*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Latest(); got != dirs[3] {
		t.Errorf("latest moved to a run without a report: %q", got)
	}
	if _, err := os.Stat(next.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty run directory kept: %v", err)
	}
	// The first run of a new archive failing before it started: no
	// warning about an archive with no runs, no index.
	fresh := Archive{Dir: filepath.Join(t.TempDir(), "new")}
	first, _ := fresh.NewRun(Identity{Scenario: "weekly"}, monday)
	first.Abandon()
	if _, err := fresh.Finish(first, monday); err != nil {
		t.Errorf("a run that left nothing, in a new archive: %v", err)
	}
	if _, err := os.Stat(filepath.Join(fresh.Dir, "index.html")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("index written for an archive with no runs: %v", err)
	}
	// A run with a journal but no report is kept for reading, but is not
	// latest.
	broken := recordingRun(t, a, Identity{Scenario: "weekly"}, monday.Add(8*24*time.Hour))
	if _, err := a.Finish(broken, monday.Add(8*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Latest(); got != dirs[3] {
		t.Errorf("latest moved to a run without a report: %q", got)
	}
	if _, err := os.Stat(broken.Dir()); err != nil {
		t.Errorf("run with a journal removed: %v", err)
	}
}
