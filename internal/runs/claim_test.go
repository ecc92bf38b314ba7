package runs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

var week = 7 * 24 * time.Hour

// Retention never deletes a run that is recording: the oldest run of the
// scenario holds its claim while three newer runs complete with --keep 1.
func TestPruneSparesRecordingRun(t *testing.T) {
	if !lockSupported {
		t.Skip("no file locks on this platform: a recording run reads as unknown, which retention never deletes either")
	}
	a := Archive{Dir: t.TempDir(), Keep: 1}
	id := Identity{Scenario: "weekly", File: "/s/weekly.yaml"}
	long := recordingRun(t, a, id, monday.Add(-3*week))
	var done []string
	for i := 2; i >= 0; i-- {
		done = append(done, completeRun(t, a, id, monday.Add(-time.Duration(i)*week)))
	}
	removed, err := a.Prune(monday)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(removed, done[:2]) {
		t.Errorf("removed %v, want the two older complete runs %v", removed, done[:2])
	}
	if !exists(filepath.Join(long.Dir(), "journal.jsonl")) {
		t.Fatal("retention deleted a run that is recording")
	}
	// Once it dies without completing, it is a killed run, older than
	// the complete run kept: pruned.
	long.Release()
	if st := StateOf(long.Dir()); st != Killed {
		t.Fatalf("run whose process let go without completing: %v, want killed", st)
	}
	removed, _ = a.Prune(monday)
	if !reflect.DeepEqual(removed, []string{long.Dir()}) {
		t.Errorf("removed %v, want the killed run", removed)
	}
}

// Two runs never share one directory: the second claim fails at once,
// saying why, and nothing of the first run changes.
func TestClaimDirRefusesASecondRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	first, err := ClaimDir(dir, Identity{Scenario: "weekly"})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	journal := filepath.Join(dir, "journal.jsonl")
	if err := os.WriteFile(journal, []byte("{\"kind\":\"run.start\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lock, _ := os.ReadFile(filepath.Join(dir, LockFile))
	start := time.Now()
	_, err = ClaimDir(dir, Identity{Scenario: "other"})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusal took %s", d)
	}
	if rehearse.ExitCode(err) != 3 || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "choose another --out") {
		t.Fatalf("second claim while the first records: %v (exit %d), want exit 3 saying it is in use", err, rehearse.ExitCode(err))
	}
	if lockSupported && !strings.Contains(err.Error(), "pid ") {
		t.Errorf("the refusal does not name the run holding it: %v", err)
	}
	if got, _ := os.ReadFile(journal); string(got) != "{\"kind\":\"run.start\"}\n" {
		t.Errorf("the first run's journal changed: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, LockFile)); string(got) != string(lock) {
		t.Errorf("the first run's run.lock changed")
	}
	// Over, the run still owns its directory: invalid input (exit 2).
	first.Release()
	if _, err := ClaimDir(dir, Identity{Scenario: "other"}); rehearse.ExitCode(err) != 2 || !strings.Contains(err.Error(), "already holds a run") {
		t.Errorf("claim of a finished run's directory: %v", err)
	}
	// So does a run from before run.lock (a journal only).
	old := t.TempDir()
	os.WriteFile(filepath.Join(old, "journal.jsonl"), nil, 0o644)
	if _, err := ClaimDir(old, Identity{Scenario: "x"}); rehearse.ExitCode(err) != 2 {
		t.Errorf("claim of a directory with a journal: %v", err)
	}
}

// Retention is per scenario identity: scenarios whose names fold to one
// directory slug ("payments/weekly" and "search/weekly"; two files both
// called weekly.yaml; "Weekly Drill" and "weekly-drill") never prune each
// other, and a run's --keep applies to its own scenario only.
func TestRetentionPerScenario(t *testing.T) {
	for _, pair := range [][2]Identity{
		{{Scenario: "payments/weekly"}, {Scenario: "search/weekly"}},
		{{Scenario: "weekly", File: "/p/weekly.yaml"}, {Scenario: "weekly", File: "/s/weekly.yaml"}},
		{{Scenario: "Weekly Drill"}, {Scenario: "weekly-drill"}},
	} {
		a := Archive{Dir: t.TempDir(), Keep: 1}
		if Slug(pair[0].Scenario) != Slug(pair[1].Scenario) {
			t.Fatalf("%v: the slugs differ; the case tests nothing", pair)
		}
		mine := []string{
			completeRun(t, a, pair[0], monday.Add(-2*week)),
			completeRun(t, a, pair[0], monday.Add(-week)),
		}
		c := recordingRun(t, a, pair[1], monday)
		writeReports(t, c.Dir())
		if err := c.Complete(); err != nil {
			t.Fatal(err)
		}
		removed, err := a.Finish(c, monday)
		if err != nil || len(removed) != 0 {
			t.Errorf("%v: a run of %v pruned %v (%v)", pair, pair[1], removed, err)
		}
		for _, d := range mine {
			if !exists(d) {
				t.Errorf("%v: %s was pruned by another scenario's run", pair, filepath.Base(d))
			}
		}
	}
}

// An archive from before run.lock keeps working: its runs (a journal whose
// run.start names the scenario, and the reports) are grouped with the new
// runs of their scenario and pruned by them; another scenario's old runs
// with the same slug are not.
func TestRetentionOfAnOldArchive(t *testing.T) {
	a := Archive{Dir: t.TempDir(), Keep: 1}
	mine := Identity{Scenario: "weekly", File: "/p/weekly.yaml"}
	theirs := Identity{Scenario: "weekly", File: "/s/weekly.yaml"}
	old := func(id Identity, start time.Time) string {
		dir := filepath.Join(a.Dir, DirName(id.Scenario, start, 1))
		if _, err := os.Stat(dir); err == nil {
			dir = filepath.Join(a.Dir, DirName(id.Scenario, start, 2))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		line := `{"t":1,"kind":"run.start","scenario":"` + id.Scenario + `","scenario_file":"` + id.File + `"}` + "\n"
		os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte(line), 0o644)
		writeReports(t, dir)
		return dir
	}
	mineOld := old(mine, monday.Add(-2*week))
	theirsOld := old(theirs, monday.Add(-2*week))
	if st := StateOf(mineOld); st != Complete {
		t.Fatalf("a reported run from before run.complete: %v", st)
	}
	c := recordingRun(t, a, mine, monday)
	writeReports(t, c.Dir())
	c.Complete()
	removed, err := a.Finish(c, monday)
	if err != nil || !reflect.DeepEqual(removed, []string{mineOld}) {
		t.Errorf("removed %v (%v), want this scenario's old run %s only", removed, err, filepath.Base(mineOld))
	}
	if !exists(theirsOld) {
		t.Error("another scenario's old run was pruned")
	}
}

// A run counts as complete only with run.complete and every report file;
// one without (killed, or its reports failed) is never latest, is listed
// as killed in the index, unlinked, and retention never keeps it in place
// of a complete run.
func TestKilledRuns(t *testing.T) {
	if !lockSupported {
		t.Skip("no file locks on this platform: a killed run reads as unknown")
	}
	a := Archive{Dir: t.TempDir(), Keep: 2}
	id := Identity{Scenario: "weekly"}
	c1 := completeRun(t, a, id, monday.Add(-4*week))
	k1 := killedRun(t, a, id, monday.Add(-3*week))
	// Every report file, but the run died before it marked itself
	// complete (or the marker could not be written): not complete.
	k2c := recordingRun(t, a, id, monday.Add(-2*week))
	writeReports(t, k2c.Dir())
	k2 := k2c.Dir()
	removed, err := a.Finish(k2c, monday)
	if err != nil || len(removed) != 0 {
		t.Fatalf("removed %v (%v)", removed, err)
	}
	if st := StateOf(k2); st != Killed {
		t.Fatalf("a run with its reports and no run.complete: %v, want killed", st)
	}
	if got, _ := a.Latest(); got != "" {
		t.Errorf("latest points at %s, a run that never completed", got)
	}
	index, _ := os.ReadFile(filepath.Join(a.Dir, "index.md"))
	html, _ := os.ReadFile(filepath.Join(a.Dir, "index.html"))
	for _, k := range []string{k1, k2} {
		name := filepath.Base(k)
		if !strings.Contains(string(index), "| "+name+" | killed: ") {
			t.Errorf("index.md does not list %s as killed:\n%s", name, index)
		}
		if strings.Contains(string(index), "("+name+"/") || strings.Contains(string(html), `href="`+name) {
			t.Errorf("the index links the killed run %s", name)
		}
	}
	if !strings.Contains(string(index), "("+filepath.Base(c1)+"/report.md)") {
		t.Errorf("index.md does not link the complete run:\n%s", index)
	}

	// --keep 2: the complete runs stay (the killed ones count for
	// nothing), and the killed runs newer than the oldest complete run
	// kept stay beside them.
	c2 := completeRun(t, a, id, monday.Add(-week))
	if removed, _ := a.Prune(monday); len(removed) != 0 {
		t.Errorf("removed %v; want c1 and c2 kept, and k1, k2 (newer than c1)", removed)
	}
	// A third complete run: c1 goes, and with it every killed run older
	// than c2, the oldest complete run kept.
	c3 := completeRun(t, a, id, monday)
	removed, _ = a.Prune(monday)
	if want := []string{c1, k1, k2}; !reflect.DeepEqual(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for _, d := range []string{c2, c3} {
		if !exists(d) {
			t.Errorf("complete run %s pruned", filepath.Base(d))
		}
	}

	// Killed runs newer than every complete run: only the newest --keep
	// of them stay.
	var ks []string
	for i := 1; i <= 3; i++ {
		ks = append(ks, killedRun(t, a, id, monday.Add(time.Duration(i)*time.Hour)))
	}
	removed, _ = a.Prune(monday.Add(4 * time.Hour))
	if !reflect.DeepEqual(removed, ks[:1]) {
		t.Errorf("removed %v, want the oldest of three killed runs", removed)
	}
}

// What bookkeeping killed half-way leaves is swept by the next: a run
// renamed for pruning, a temporary link, a run directory never claimed.
func TestSweep(t *testing.T) {
	a := Archive{Dir: t.TempDir(), Keep: 1}
	keep := completeRun(t, a, Identity{Scenario: "weekly"}, monday)
	leftovers := []string{
		filepath.Join(a.Dir, pruningPrefix+"2026-11-02T030000Z-weekly"),
		filepath.Join(a.Dir, DirName("weekly", monday.Add(-week), 1)),
	}
	os.MkdirAll(filepath.Join(leftovers[0], "x"), 0o755)
	os.Mkdir(leftovers[1], 0o755)
	tmpLink := filepath.Join(a.Dir, ".latest.tmp-abc")
	os.Symlink(keep, tmpLink)
	notes := filepath.Join(a.Dir, "notes")
	os.Mkdir(notes, 0o755)
	if _, err := a.Prune(monday); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(leftovers, tmpLink) {
		if exists(p) {
			t.Errorf("%s left behind", filepath.Base(p))
		}
	}
	if !exists(keep) || !exists(notes) {
		t.Error("sweep removed a run or a directory that is not one")
	}
}

func TestCompleteNeedsEveryReport(t *testing.T) {
	c, err := ClaimDir(t.TempDir(), Identity{Scenario: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	writeReports(t, c.Dir())
	os.Remove(filepath.Join(c.Dir(), "report.html"))
	if err := c.Complete(); err == nil || !errors.Is(err, rehearse.ErrEnvironment) {
		t.Fatalf("Complete without report.html: %v", err)
	}
	if exists(filepath.Join(c.Dir(), CompleteFile)) {
		t.Fatal("marked complete without report.html")
	}
	writeReports(t, c.Dir())
	if err := c.Complete(); err != nil {
		t.Fatal(err)
	}
	// A report file lost afterwards: no longer complete.
	os.Remove(filepath.Join(c.Dir(), "timeline.png"))
	c.Release()
	if st := StateOf(c.Dir()); st != Killed {
		t.Errorf("a run missing a report file: %v", st)
	}
}
