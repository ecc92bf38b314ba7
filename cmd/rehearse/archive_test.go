//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
)

// The archive under unattended use (issue 32): runs that overlap, are
// killed, or fail to write their reports. These run the real binary, as a
// LaunchAgent or a CI job does, and look only at what it leaves on disk.

// proc is a rehearse process under test.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr testutil.SyncBuffer
	done           chan struct{}
	err            error
}

func startRehearse(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(rehearseBinary(t), args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	return p
}

// wait waits for the process to end (bounded: only a hang fails it) and
// returns its exit code, -1 when a signal ended it.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		t.Fatalf("%v still running after 90 s; stderr:\n%s", p.cmd.Args, p.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// runRehearse runs the binary to its end.
func runRehearse(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	p := startRehearse(t, args...)
	code = p.wait(t)
	return p.stdout.String(), p.stderr.String(), code
}

// waitRecording waits until a journal matching glob, of a run directory
// not in skip, holds a client request (the replay is under way) and
// returns its run directory.
func waitRecording(t *testing.T, glob string, p *proc, skip ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		paths, _ := filepath.Glob(glob)
		for _, j := range paths {
			if slices.Contains(skip, filepath.Dir(j)) {
				continue
			}
			if data, _ := os.ReadFile(j); bytes.Contains(data, []byte(`"kind":"client.request"`)) {
				return filepath.Dir(j)
			}
		}
		select {
		case <-p.done:
			t.Fatalf("the run ended before it recorded; stdout:\n%s\nstderr:\n%s", p.stdout.String(), p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replay under way in %s; stderr:\n%s", glob, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tinyScenario(t *testing.T, path, name string) string {
	t.Helper()
	body := "replay: {rate: 20, duration: 1s}\n"
	if name != "" {
		body = "name: " + name + "\n" + body
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// archiveRuns lists the run directories in an archive, oldest first.
func archiveRuns(t *testing.T, archive string) []string {
	t.Helper()
	ents, err := os.ReadDir(archive)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && e.Name() != "logs" && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(archive, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

func countEvents(t *testing.T, journal, kind string) int {
	t.Helper()
	data, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte(`"kind":"`+kind+`"`))
}

func latestTarget(t *testing.T, archive string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(archive, "latest"))
	if err != nil {
		return ""
	}
	return filepath.Join(archive, target)
}

// Item 1: two runs into one archive with --keep 1, the shorter started
// second and finished first: its retention must not delete the longer
// run, which is still recording.
func TestArchiveRetentionSparesARecordingRun(t *testing.T) {
	t.Parallel() // real processes in its own directories; waits on their timers
	if testing.Short() {
		t.Skip("runs the binary for several seconds; skipped with -short")
	}
	tmp := t.TempDir()
	archive := filepath.Join(tmp, "archive")
	sc := tinyScenario(t, filepath.Join(tmp, "weekly.yaml"), "")
	long := startRehearse(t, "run", sc, "--archive", archive, "--keep", "1", "--quiet", "--duration", "5s")
	longDir := waitRecording(t, filepath.Join(archive, "*-weekly", "journal.jsonl"), long)

	out, errOut, code := runRehearse(t, "run", sc, "--archive", archive, "--keep", "1", "--quiet", "--duration", "1s")
	if code != 0 {
		t.Fatalf("short run: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(longDir, "journal.jsonl")); err != nil {
		t.Fatalf("the short run's retention deleted the run still recording: %v", err)
	}
	if code := long.wait(t); code != 0 {
		t.Fatalf("long run: exit %d\n%s\n%s", code, long.stdout.String(), long.stderr.String())
	}
	if n := countEvents(t, filepath.Join(longDir, "journal.jsonl"), "run.end"); n != 1 {
		t.Errorf("long run's journal: %d run.end", n)
	}
	if _, err := os.Stat(filepath.Join(longDir, "report.html")); err != nil {
		t.Errorf("long run's report: %v", err)
	}
	if got := latestTarget(t, archive); got != longDir {
		t.Errorf("latest → %s, want the run that completed last, %s", got, longDir)
	}
}

// Item 2: a second run given the --out of a run that is recording is
// refused at once (exit 3, "in use"), and nothing of the first run is
// touched; of two started together, exactly one runs.
func TestOutCannotBeShared(t *testing.T) {
	t.Parallel() // real processes in its own directories; waits on their timers
	if testing.Short() {
		t.Skip("runs the binary for several seconds; skipped with -short")
	}
	tmp := t.TempDir()
	sc := tinyScenario(t, filepath.Join(tmp, "weekly.yaml"), "")
	dir := filepath.Join(tmp, "out")
	first := startRehearse(t, "run", sc, "--out", dir, "--quiet", "--duration", "3s")
	waitRecording(t, filepath.Join(dir, "journal.jsonl"), first)
	start := time.Now()
	out, errOut, code := runRehearse(t, "run", sc, "--out", dir, "--quiet", "--duration", "1s")
	if code != 3 || !strings.Contains(errOut, "in use") || !strings.Contains(lastLine(out), "outcome: harness failure: ") {
		t.Errorf("second run into a recording --out: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the refusal took %s", d)
	}
	if code := first.wait(t); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, first.stderr.String())
	}
	journal := filepath.Join(dir, "journal.jsonl")
	if s, e := countEvents(t, journal, "run.start"), countEvents(t, journal, "run.end"); s != 1 || e != 1 {
		t.Errorf("journal holds %d run.start and %d run.end, want one run", s, e)
	}

	// Started together: one runs, the other is refused.
	both := filepath.Join(tmp, "both")
	a := startRehearse(t, "run", sc, "--out", both, "--quiet")
	b := startRehearse(t, "run", sc, "--out", both, "--quiet")
	codes := []int{a.wait(t), b.wait(t)}
	sort.Ints(codes)
	if codes[0] != 0 || codes[1] != 3 {
		t.Errorf("two runs started together into one --out: exits %v, want 0 and 3\n%s\n%s", codes, a.stderr.String(), b.stderr.String())
	}
	journal = filepath.Join(both, "journal.jsonl")
	if s := countEvents(t, journal, "run.start"); s != 1 {
		t.Errorf("journal of two runs started together holds %d run.start", s)
	}
}

// Item 3: scenarios whose names fold to one slug — two files both called
// weekly.yaml, "payments/weekly" and "search/weekly", "Weekly Drill"
// and "weekly-drill" — never prune each other's runs.
func TestArchiveRetentionPerScenario(t *testing.T) {
	t.Parallel() // real processes in its own directories; waits on their timers
	if testing.Short() {
		t.Skip("runs the binary for several seconds; skipped with -short")
	}
	tmp := t.TempDir()
	for i, pair := range [][2]string{
		{tinyScenario(t, filepath.Join(tmp, "payments", "weekly.yaml"), ""), tinyScenario(t, filepath.Join(tmp, "search", "weekly.yaml"), "")},
		{tinyScenario(t, filepath.Join(tmp, "p.yaml"), "payments/weekly"), tinyScenario(t, filepath.Join(tmp, "s.yaml"), "search/weekly")},
		{tinyScenario(t, filepath.Join(tmp, "d1.yaml"), "Weekly Drill"), tinyScenario(t, filepath.Join(tmp, "d2.yaml"), "weekly-drill")},
	} {
		archive := filepath.Join(tmp, "archive", string(rune('a'+i)))
		if out, errOut, code := runRehearse(t, "run", pair[0], "--archive", archive, "--keep", "1", "--quiet"); code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", pair[0], code, out, errOut)
		}
		mine := archiveRuns(t, archive)
		if out, errOut, code := runRehearse(t, "run", pair[1], "--archive", archive, "--keep", "1", "--quiet"); code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", pair[1], code, out, errOut)
		}
		for _, d := range mine {
			if _, err := os.Stat(filepath.Join(d, "report.html")); err != nil {
				t.Errorf("%s pruned by a run of %s: %v", d, pair[1], err)
			}
		}
		if n := len(archiveRuns(t, archive)); n != 2 {
			t.Errorf("%v: %d runs in the archive, want one of each", pair, n)
		}
	}
}

// Item 4: killed runs are marked killed in the index and never linked;
// with --keep 2 retention keeps the complete runs, never a killed run in
// place of one.
func TestArchiveKilledRuns(t *testing.T) {
	t.Parallel() // real processes in its own directories; waits on their timers
	if testing.Short() {
		t.Skip("runs the binary for several seconds; skipped with -short")
	}
	tmp := t.TempDir()
	archive := filepath.Join(tmp, "archive")
	sc := tinyScenario(t, filepath.Join(tmp, "weekly.yaml"), "")
	complete := func() string {
		t.Helper()
		out, errOut, code := runRehearse(t, "run", sc, "--archive", archive, "--keep", "2", "--quiet")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		return latestTarget(t, archive)
	}
	killed := func() string {
		t.Helper()
		before := archiveRuns(t, archive)
		p := startRehearse(t, "run", sc, "--archive", archive, "--keep", "2", "--quiet", "--duration", "30s")
		dir := waitRecording(t, filepath.Join(archive, "*-weekly", "journal.jsonl"), p, before...)
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.wait(t)
		return dir
	}
	c1 := complete()
	k1, k2 := killed(), killed()
	c2 := complete()
	for _, d := range []string{c1, c2, k1, k2} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v (want both complete runs, and the killed runs newer than the oldest of them)", filepath.Base(d), err)
		}
	}
	if got := latestTarget(t, archive); got != c2 {
		t.Errorf("latest → %s, want %s", got, c2)
	}
	index, _ := os.ReadFile(filepath.Join(archive, "index.md"))
	html, _ := os.ReadFile(filepath.Join(archive, "index.html"))
	for _, k := range []string{k1, k2} {
		name := filepath.Base(k)
		if !strings.Contains(string(index), "| "+name+" | killed") {
			t.Errorf("index.md does not mark %s killed:\n%s", name, index)
		}
		if strings.Contains(string(index), "("+name+"/") || strings.Contains(string(html), `href="`+name) {
			t.Errorf("the index links the killed run %s", name)
		}
	}
	c3 := complete()
	got := archiveRuns(t, archive)
	if want := []string{c2, c3}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("after a third complete run with --keep 2: %v, want %v (killed runs older than the oldest complete run kept go)", got, want)
	}
}

// Item 4: a disk that fills while the reports are written. The run is a
// harness failure, said so everywhere — exit 3, "run failed", no FAIL
// line, JUnit with an error and no failures — and it is not complete:
// latest stays on the last complete run, and the index, once it can be
// written, marks the run killed.
func TestReportsOnAFullDisk(t *testing.T) {
	t.Parallel() // real processes in its own directories; waits on their timers
	if testing.Short() {
		t.Skip("runs the binary for several seconds; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (mount -t tmpfs -o size=1m) to fill")
	}
	tmp := t.TempDir()
	disk := filepath.Join(tmp, "disk")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); a full disk cannot be made", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", disk).Run() })
	archive := filepath.Join(disk, "archive")
	sc := tinyScenario(t, filepath.Join(tmp, "weekly.yaml"), "")
	if out, errOut, code := runRehearse(t, "run", sc, "--archive", archive, "--quiet"); code != 0 {
		t.Fatalf("first run: exit %d\n%s\n%s", code, out, errOut)
	}
	first := latestTarget(t, archive)

	// Room for the journal (~20 KB) and the first reports, not for
	// timeline.png (~75 KB) and what follows it.
	filler := fillDisk(t, disk, 96<<10)
	junit := filepath.Join(tmp, "ci", "junit.xml") // a CI workspace, on another disk
	out, errOut, code := runRehearse(t, "run", sc, "--archive", archive, "--quiet", "--junit", junit)
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "run failed: ") || strings.Contains(out, "run complete") || strings.Contains(out, "FAIL") || strings.Contains(out, "report: ") {
		t.Errorf("stdout does not say the run failed (or lists a verdict or a report):\n%s", out)
	}
	if l := lastLine(out); !strings.HasPrefix(l, "outcome: harness failure: ") || !strings.Contains(l, "writing reports") || !strings.Contains(l, "no space left") {
		t.Errorf("outcome line %q", l)
	}
	data, err := os.ReadFile(junit)
	if err != nil || !bytes.Contains(data, []byte(`errors="1"`)) || !bytes.Contains(data, []byte(`failures="0"`)) || !bytes.Contains(data, []byte(`type="harness"`)) {
		t.Errorf("junit (%v):\n%s", err, data)
	}
	if got := latestTarget(t, archive); got != first {
		t.Errorf("latest → %s, want it left on the last complete run %s", got, first)
	}
	runs := archiveRuns(t, archive)
	failed := runs[len(runs)-1]
	if _, err := os.Stat(filepath.Join(failed, "journal.jsonl")); err != nil || failed == first {
		t.Fatalf("the failed run's journal: %v (%v)", err, runs)
	}
	if _, err := os.Stat(filepath.Join(failed, "run.complete")); err == nil {
		t.Error("the failed run is marked complete")
	}

	// With room again, the next run indexes it as killed, unlinked.
	os.Remove(filler)
	if out, errOut, code := runRehearse(t, "run", sc, "--archive", archive, "--quiet"); code != 0 {
		t.Fatalf("run after the disk was freed: exit %d\n%s\n%s", code, out, errOut)
	}
	index, _ := os.ReadFile(filepath.Join(archive, "index.md"))
	name := filepath.Base(failed)
	if !strings.Contains(string(index), "| "+name+" | killed") || strings.Contains(string(index), "("+name+"/") {
		t.Errorf("index.md does not list %s as killed and unlinked:\n%s", name, index)
	}
}

// fillDisk writes a file that leaves about leave bytes free on dir's file
// system, and returns its path.
func fillDisk(t *testing.T, dir string, leave int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free <= leave {
		t.Fatalf("only %d bytes free", free)
	}
	path := filepath.Join(dir, "filler")
	if err := os.WriteFile(path, make([]byte, free-leave), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
