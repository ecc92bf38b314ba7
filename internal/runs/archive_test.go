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

// weeklyRuns makes n weekly runs of scenario ending at monday, oldest
// first, each with a real report (run.json) to index.
func weeklyRuns(t *testing.T, a Archive, scenario string, n int) []string {
	t.Helper()
	runJSON, err := os.ReadFile(filepath.Join("..", "..", "reports", "testdata", "golden", "clean.run.json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i := n - 1; i >= 0; i-- {
		d, err := a.NewRunDir(scenario, monday.Add(-time.Duration(i)*7*24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "run.json"), runJSON, 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestNewRunDir(t *testing.T) {
	a := Archive{Dir: filepath.Join(t.TempDir(), "runs")}
	local := time.Date(2026, 11, 30, 4, 0, 5, 0, time.FixedZone("CET", 3600))
	d1, err := a.NewRunDir("/x/Weekly Drill.yaml", local)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(d1) != "2026-11-30T030005Z-weekly-drill" {
		t.Errorf("run dir %q: want the UTC date and the scenario slug", filepath.Base(d1))
	}
	d2, err := a.NewRunDir("weekly-drill", local)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(d2) != "2026-11-30T030005Z.2-weekly-drill" {
		t.Errorf("second run in the same second: %q", filepath.Base(d2))
	}
	runs, err := a.Runs()
	if err != nil || len(runs) != 2 || runs[0].Dir != d1 || runs[1].Dir != d2 || runs[0].Scenario != "weekly-drill" {
		t.Fatalf("Runs = %+v, %v", runs, err)
	}
	if _, err := (Archive{}).NewRunDir("x", local); !errors.Is(err, rehearse.ErrInvalid) {
		t.Errorf("empty archive dir: %v", err)
	}
}

func TestNewRunDirConcurrent(t *testing.T) {
	a := Archive{Dir: t.TempDir()}
	const n = 8
	dirs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := a.NewRunDir("weekly", monday)
			if err != nil {
				t.Error(err)
			}
			dirs[i] = d
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
	dirs := weeklyRuns(t, a, "weekly", 4)
	removed, err := a.Finish(dirs[3], monday)
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
	// A run that failed before it started leaves nothing: its directory
	// goes, and latest stays on the last run that produced a report.
	next, _ := a.NewRunDir("weekly", monday.Add(7*24*time.Hour))
	if _, err := a.Finish(next, monday.Add(7*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Latest(); got != dirs[3] {
		t.Errorf("latest moved to a run without a report: %q", got)
	}
	if _, err := os.Stat(next); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty run directory kept: %v", err)
	}
	// The first run of a new archive failing before it started: no
	// warning about an archive with no runs, no index.
	fresh := Archive{Dir: filepath.Join(t.TempDir(), "new")}
	first, _ := fresh.NewRunDir("weekly", monday)
	if _, err := fresh.Finish(first, monday); err != nil {
		t.Errorf("a run that left nothing, in a new archive: %v", err)
	}
	if _, err := os.Stat(filepath.Join(fresh.Dir, "index.html")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("index written for an archive with no runs: %v", err)
	}
	// A run with a journal but no report is kept for reading, but is not
	// latest.
	broken, _ := a.NewRunDir("weekly", monday.Add(8*24*time.Hour))
	os.WriteFile(filepath.Join(broken, "journal.jsonl"), []byte("{}\n"), 0o644)
	if _, err := a.Finish(broken, monday.Add(8*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Latest(); got != dirs[3] {
		t.Errorf("latest moved to a run without a report: %q", got)
	}
	if _, err := os.Stat(broken); err != nil {
		t.Errorf("run with a journal removed: %v", err)
	}
}
