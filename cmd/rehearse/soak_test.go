//go:build linux

package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestArchiveSoak is issue 32's soak: overlapping short runs of two
// scenarios whose directories share a slug, into one archive with --keep
// 3, random ones killed with SIGKILL at random moments (recording,
// writing reports, doing the archive's bookkeeping, or already gone).
// Then: every run directory is complete or explicitly killed (and the
// index says so), no run that finished was lost except to retention
// with three newer complete runs of its scenario, no process is left, and
// latest pointed at a complete run at every observation. 20 runs; 6 with
// -short. The seed is logged; SOAK_SEED replays one.
func TestArchiveSoak(t *testing.T) {
	t.Parallel() // real processes in its own directories; waits on their timers
	n := 20
	if testing.Short() {
		n = 6
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SOAK_SEED"); s != "" {
		fmt.Sscan(s, &seed)
	}
	t.Logf("seed %d (SOAK_SEED=%d to replay)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	tmp := t.TempDir()
	archive := filepath.Join(tmp, "archive")
	scenarios := []string{
		tinyScenario(t, filepath.Join(tmp, "payments", "weekly.yaml"), ""),
		tinyScenario(t, filepath.Join(tmp, "search", "weekly.yaml"), ""),
	}
	run := func(sc string) *proc {
		return startRehearse(t, "run", sc, "--archive", archive, "--keep", "3", "--quiet")
	}

	stop := make(chan struct{})
	var watch sync.WaitGroup
	var torn []string
	observed := 0
	watch.Add(1)
	go func() {
		defer watch.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if msg, ok := checkLatest(archive); !ok {
				torn = append(torn, msg)
			} else if msg == "" {
				observed++
			}
		}
	}()

	type started struct {
		p      *proc
		sc     string
		killed bool
	}
	var all []started
	var kills sync.WaitGroup
	for i := range n {
		sc := scenarios[rng.IntN(len(scenarios))]
		s := started{p: run(sc), sc: sc}
		// One run in three is killed, anywhere from its start to past
		// its end (a run takes about 2 s here).
		if rng.IntN(3) == 0 {
			s.killed = true
			delay := time.Duration(100+rng.IntN(2900)) * time.Millisecond
			kills.Add(1)
			go func(p *proc) {
				defer kills.Done()
				select {
				case <-p.done:
				case <-time.After(delay):
					p.cmd.Process.Signal(syscall.SIGKILL)
				}
			}(s.p)
		}
		all = append(all, s)
		if i < n-1 {
			time.Sleep(time.Duration(150+rng.IntN(300)) * time.Millisecond)
		}
	}
	kills.Wait()
	finished := map[string]string{} // run directory → scenario, for runs that exited 0
	sigkilled := 0
	for _, s := range all {
		code := s.p.wait(t)
		switch {
		case code == 0:
			dir := strings.TrimPrefix(firstLineWith(s.p.stdout.String(), "run complete: "), "run complete: ")
			if dir == "" {
				t.Errorf("a run exited 0 without naming its directory:\n%s", s.p.stdout.String())
			}
			finished[dir] = s.sc
		case code == -1 && s.killed:
			sigkilled++
		default:
			t.Errorf("run %v: exit %d\n%s\n%s", s.p.cmd.Args, code, s.p.stdout.String(), s.p.stderr.String())
		}
	}
	// One last run of each scenario, uninterrupted, settles retention
	// over everything the killed runs left.
	for _, sc := range scenarios {
		p := run(sc)
		if code := p.wait(t); code != 0 {
			t.Fatalf("settling run: exit %d\n%s", code, p.stderr.String())
		}
		finished[strings.TrimPrefix(firstLineWith(p.stdout.String(), "run complete: "), "run complete: ")] = sc
	}
	close(stop)
	watch.Wait()
	if len(torn) > 0 {
		t.Errorf("latest was torn at %d of its observations, e.g. %s", len(torn), torn[0])
	}
	if observed == 0 {
		t.Error("latest was never observed pointing at a run")
	}
	checkNoProcessUses(t, archive)

	// What is left: complete runs, and killed runs the index marks so.
	index, _ := os.ReadFile(filepath.Join(archive, "index.md"))
	complete := map[string][]string{} // scenario → its complete runs, oldest first
	killed := map[string][]string{}
	for _, dir := range archiveRuns(t, archive) {
		sc := scenarioOf(t, dir)
		name := filepath.Base(dir)
		switch {
		case isComplete(dir):
			complete[sc] = append(complete[sc], dir)
			if !strings.Contains(string(index), "["+name+"]("+name+"/report.md)") {
				t.Errorf("complete run %s is not linked from the index", name)
			}
		default:
			killed[sc] = append(killed[sc], dir)
			if !strings.Contains(string(index), "| "+name+" | killed") || strings.Contains(string(index), "("+name+"/") {
				t.Errorf("run %s is not complete and the index does not mark it killed, unlinked", name)
			}
		}
	}
	for _, sc := range scenarios {
		c, k := complete[sc], killed[sc]
		if len(c) == 0 || len(c) > 3 {
			t.Errorf("%s: %d complete runs kept with --keep 3", sc, len(c))
			continue
		}
		if len(k) > 3 {
			t.Errorf("%s: %d killed runs kept with --keep 3", sc, len(k))
		}
		for _, d := range k {
			if d < c[0] {
				t.Errorf("%s: killed run %s kept while the complete run before %s was pruned", sc, filepath.Base(d), filepath.Base(c[0]))
			}
		}
	}
	// No run that finished was lost: each is still here, or retention
	// pruned it for three newer complete runs of its own scenario.
	for dir, sc := range finished {
		if _, err := os.Stat(dir); err == nil {
			if !isComplete(dir) {
				t.Errorf("finished run %s is not complete", filepath.Base(dir))
			}
			continue
		}
		newer := 0
		for _, d := range complete[sc] {
			if d > dir {
				newer++
			}
		}
		if newer < 3 {
			t.Errorf("finished run %s of %s is gone with only %d newer complete runs of it", filepath.Base(dir), sc, newer)
		}
	}
	if msg, ok := checkLatest(archive); !ok || msg != "" {
		t.Errorf("latest at the end: %s", msg)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(archive, ".pruning-*")); len(leftovers) > 0 {
		t.Errorf("half-pruned runs left: %v", leftovers)
	}
	t.Logf("%d runs (%d finished, %d ended by SIGKILL), %d observations of latest; kept: complete %d+%d, killed %d+%d",
		n, len(finished)-len(scenarios), sigkilled, observed, len(complete[scenarios[0]]), len(complete[scenarios[1]]), len(killed[scenarios[0]]), len(killed[scenarios[1]]))
}

// isComplete: run.complete and every report file (what latest may point
// at).
func isComplete(dir string) bool {
	for _, f := range []string{"run.complete", "run.json", "junit.xml", "timeline.svg", "timeline.png", "report.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// checkLatest looks at latest once: ok is false when it points at a run
// that is not complete; msg is "" when it pointed at a complete run, else
// why the observation says nothing (no link yet, or it moved meanwhile).
func checkLatest(archive string) (msg string, ok bool) {
	link := filepath.Join(archive, "latest")
	before, err := os.Readlink(link)
	if err != nil {
		return "no latest yet", true
	}
	complete := isComplete(filepath.Join(archive, before))
	if after, _ := os.Readlink(link); after != before {
		return "moved while observed", true // it may have been pruned once it was not latest
	}
	if !complete {
		return "latest → " + before + ", not a complete run", false
	}
	return "", true
}

// scenarioOf is the scenario file a run directory's run.lock names.
func scenarioOf(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "run.lock"))
	if err != nil {
		t.Fatalf("run directory without run.lock: %v", err)
	}
	i := bytes.Index(data, []byte(`"scenario_file":"`))
	if i < 0 {
		t.Fatalf("%s: run.lock names no scenario file: %s", filepath.Base(dir), data)
	}
	rest := data[i+len(`"scenario_file":"`):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// checkNoProcessUses fails for any process whose command line names the
// archive: every run, killed or not, is gone, and left nothing running.
func checkNoProcessUses(t *testing.T, archive string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, _ := os.ReadFile(p)
		if bytes.Contains(data, []byte(archive)) {
			t.Errorf("process %s still running: %q", filepath.Base(filepath.Dir(p)), bytes.ReplaceAll(data, []byte{0}, []byte{' '}))
		}
	}
}

func firstLineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
