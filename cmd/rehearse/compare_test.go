package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/reports/render"
)

// compareDrill is a short storm whose closing takes eight probes, so that
// each run has seven probe intervals. Only search's requests are replayed,
// 50 a second, so that a probe (carried by a client request) waits at most
// 20 ms for one, and the harness stays light enough under -race on a busy
// machine.
const compareDrill = `
name: %s
gateway:
  builtin:
    config:
      breaker: {cooldown: 500ms, cooldown_max: 1s, consecutive_failures: 3, min_samples: 5, window: 2s,
                probe_interval: %s, probe_jitter: 0s, successes_to_close: 8}
      retry: {max_attempts: 1}
  metrics: {interval: 250ms}
  health: {interval: 500ms}
replay:
  rate: 50
  duration: %s
  filter: {path: "^/tools/search"}
faults:
  - {name: storm, type: status, upstream: search, at: %s, for: 1s, params: {code: 503}}
`

// runsASide is the runs a side of the probe-interval comparisons: a
// difference of 15 % of the probe spacing is some six run spreads, which
// three runs a side clear only narrowly with 25 figures sharing 95 % and
// four clear with room (docs/cross-platform.md, "How many runs a side").
const runsASide = 4

var (
	setsOnce sync.Once
	setsRoot string
	setsErr  error
)

// drillSets runs, once per test binary, four runs of the drill with
// probe_interval 400ms (a1..a4), four with 460ms (b1..b4), four more with
// 400ms (c1..c3), and one run of another drill (other: the fault later),
// three at a time. The runs are made by the real binary, built without the
// race detector: what is measured is the gateway's timing as a user's
// rehearse sees it, not an instrumented harness's on a busy machine.
func drillSets(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("comparison drills (13 runs of 6 s) skipped in -short mode")
	}
	bin := rehearseBinary(t)
	setsOnce.Do(func() {
		setsRoot, setsErr = os.MkdirTemp("", "rehearse-compare-")
		if setsErr != nil {
			return
		}
		type job struct{ dir, src string }
		var jobs []job
		for i := 1; i <= runsASide; i++ {
			jobs = append(jobs,
				job{fmt.Sprintf("a%d", i), fmt.Sprintf(compareDrill, "storm", "400ms", "6s", "500ms")},
				job{fmt.Sprintf("b%d", i), fmt.Sprintf(compareDrill, "storm", "460ms", "6s", "500ms")},
				job{fmt.Sprintf("c%d", i), fmt.Sprintf(compareDrill, "storm", "400ms", "6s", "500ms")})
		}
		jobs = append(jobs, job{"other", fmt.Sprintf(compareDrill, "late-storm", "400ms", "4s", "1s")})
		for i := 0; i < len(jobs); i += 3 {
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for k, j := range jobs[i:min(i+3, len(jobs))] {
				wg.Add(1)
				go func() {
					defer wg.Done()
					file := filepath.Join(setsRoot, j.dir+".yaml")
					if err := os.WriteFile(file, []byte(j.src), 0o644); err != nil {
						errs[k] = err
						return
					}
					out, err := exec.Command(bin, "run", file, "--out", filepath.Join(setsRoot, j.dir), "--quiet").CombinedOutput()
					var ee *exec.ExitError
					if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == rehearse.ExitExpectations) {
						errs[k] = fmt.Errorf("%s: %w\n%s", j.dir, err, out)
					}
				}()
			}
			wg.Wait()
			if setsErr = errors.Join(errs...); setsErr != nil {
				return
			}
		}
	})
	if setsErr != nil {
		t.Fatal(setsErr)
	}
	return setsRoot
}

// requireOnSchedule skips a test of timing differences when a run could
// not keep its own schedule: the comparison measures the gateway's timing,
// and a harness on a machine far beyond its cores measured its own
// lateness instead (and says so in run.json).
func requireOnSchedule(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		d = filepath.Base(d)
		a, err := render.ReadRunJSON(filepath.Join(root, d, render.RunFile))
		if err != nil {
			t.Fatal(err)
		}
		if p := a.Replay.LatenessMs.P99; a.Replay.Dropped > a.Replay.Due/20 || (p != nil && *p > 100) {
			t.Skipf("machine overloaded: run %s could not keep its schedule (send lateness p99 %v ms, %d of %d requests dropped); the comparison would measure the harness, not the gateway",
				d, fmtPtr(p), a.Replay.Dropped, a.Replay.Due)
		}
	}
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f", *p)
}

// TestMain removes the shared drill runs and binary after the package's
// tests.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{setsRoot, coolRoot, binDir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

func side(root, prefix string) []string {
	var out []string
	for i := 1; i <= runsASide; i++ {
		out = append(out, filepath.Join(root, fmt.Sprintf("%s%d", prefix, i)))
	}
	return out
}

type cmpJSON struct {
	Flagged int `json:"flagged"`
	Figures []struct {
		Key   string   `json:"key"`
		Group string   `json:"group"`
		Lo    *float64 `json:"ci_low"`
		Hi    *float64 `json:"ci_high"`
		Flag  bool     `json:"flagged"`
	} `json:"figures"`
	Config []struct {
		Key string   `json:"key"`
		A   []string `json:"a"`
		B   []string `json:"b"`
	} `json:"config_differences"`
	Warnings []string `json:"warnings"`
}

func compareJSON(t *testing.T, args ...string) (cmpJSON, string, int) {
	t.Helper()
	out, errOut, code := execute(t, append([]string{"report", "compare", "--format", "json"}, args...)...)
	var c cmpJSON
	if code == 0 || code == 1 {
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("json: %v\n%s", err, out)
		}
	}
	return c, errOut, code
}

// TestCompareFlagsProbeInterval is the headline: the same drill with probe
// intervals 15 % apart, four runs each, is flagged on probe spacing with
// an interval excluding zero, and --fail-on-diff exits 1.
func TestCompareFlagsProbeInterval(t *testing.T) {
	root := drillSets(t)
	requireOnSchedule(t, root, append(side(root, "a"), side(root, "b")...)...)
	args := append(side(root, "a"), "--vs")
	args = append(args, side(root, "b")...)
	c, errOut, code := compareJSON(t, append(args, "--fail-on-diff", "--label", "p400", "--label", "p460")...)
	if code != 1 {
		md, _, _ := execute(t, append([]string{"report", "compare"}, args...)...)
		t.Fatalf("exit %d, want 1 (%s)\n%s", code, errOut, md)
	}
	found := false
	for _, f := range c.Figures {
		if f.Key == "probe_interval_s.p50" { // probe spacing: every interval
			found = true
			t.Logf("probe spacing: difference in [%v, %v] ms, flagged %v", *f.Lo, *f.Hi, f.Flag)
			if !f.Flag || f.Lo == nil || *f.Lo <= 0 {
				t.Errorf("probe spacing not flagged with an interval above zero: %+v", f)
			}
		}
	}
	if !found {
		t.Fatal("no probe spacing row")
	}
	if len(c.Config) != 1 || !strings.HasSuffix(c.Config[0].Key, "breaker.probe_interval") || c.Config[0].A[0] != "400ms" || c.Config[0].B[0] != "460ms" {
		t.Errorf("configuration differences: %+v", c.Config)
	}
	// The Markdown and HTML say the same, and the timelines they refer to
	// are written.
	dst := t.TempDir()
	if _, _, code := execute(t, append(append([]string{"report", "compare"}, args...), "--out", dst)...); code != 0 {
		t.Fatalf("--out without --fail-on-diff: exit %d", code)
	}
	md, err := os.ReadFile(filepath.Join(dst, "compare.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"probe spacing", "⚑ beyond noise", "## Why might these differ", "probe_interval", "](compare-timelines.svg)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("compare.md lacks %q", want)
		}
	}
	for _, f := range []string{"compare.html", "compare.json", "compare-timelines.svg"} {
		if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestCompareIdenticalConfigNothingFlagged compares two sets of four runs
// of one configuration: nothing is flagged, exit 0 with --fail-on-diff.
func TestCompareIdenticalConfigNothingFlagged(t *testing.T) {
	root := drillSets(t)
	requireOnSchedule(t, root, append(side(root, "a"), side(root, "c")...)...)
	args := append(side(root, "a"), "--vs")
	args = append(args, side(root, "c")...)
	c, errOut, code := compareJSON(t, append(args, "--fail-on-diff")...)
	if code != 0 || c.Flagged != 0 {
		md, _, _ := execute(t, append([]string{"report", "compare"}, args...)...)
		t.Log(md)
		for _, f := range c.Figures {
			if f.Flag {
				t.Logf("flagged: %s %s [%v, %v]", f.Group, f.Key, *f.Lo, *f.Hi)
			}
		}
		t.Fatalf("identical configurations: exit %d, %d flagged (%s)", code, c.Flagged, errOut)
	}
	if len(c.Config) != 0 {
		t.Errorf("configuration differences between identical configurations: %+v", c.Config)
	}
}

// TestCompareRefusesDifferentDrills: another drill is refused with exit 2,
// and compared with --force, saying so.
func TestCompareRefusesDifferentDrills(t *testing.T) {
	root := drillSets(t)
	other := filepath.Join(root, "other")
	_, errOut, code := executeWith(t, nil, "report", "compare", filepath.Join(root, "a1"), other)
	if code != 2 || !strings.Contains(errOut, "different drills") || !strings.Contains(errOut, "--force") {
		t.Fatalf("different drills: exit %d (%s)", code, errOut)
	}
	c, _, code := compareJSON(t, filepath.Join(root, "a1"), other, "--force")
	if code != 0 || len(c.Warnings) == 0 || !strings.HasPrefix(c.Warnings[0], "FORCED") {
		t.Fatalf("--force: exit %d, warnings %v", code, c.Warnings)
	}
	// One run per side says it cannot separate noise.
	if !strings.Contains(strings.Join(c.Warnings, "\n"), "one run per side") {
		t.Errorf("warnings %v", c.Warnings)
	}
	// An archive holding both drills, filtered to one scenario, compares.
	arch := t.TempDir()
	for _, d := range []string{"a1", "a2", "other"} {
		if err := os.CopyFS(filepath.Join(arch, d), os.DirFS(filepath.Join(root, d))); err != nil {
			t.Fatal(err)
		}
	}
	if _, errOut, code := executeWith(t, nil, "report", "compare", arch, "--vs", filepath.Join(root, "c1")); code != 2 || !strings.Contains(errOut, "--scenario") {
		t.Errorf("unfiltered archive of two drills: exit %d (%s)", code, errOut)
	}
	if _, errOut, code := execute(t, "report", "compare", arch, "--vs", filepath.Join(root, "c1"), "--scenario", "storm"); code != 0 {
		t.Errorf("archive filtered to storm: exit %d (%s)", code, errOut)
	}
}

// TestHistorySeparatesScenarios: an archive with two scenarios shows two
// groups, each with its own trends.
func TestHistorySeparatesScenarios(t *testing.T) {
	root := drillSets(t)
	arch := t.TempDir()
	for _, d := range []string{"a1", "a2", "a3", "other"} {
		if err := os.CopyFS(filepath.Join(arch, d), os.DirFS(filepath.Join(root, d))); err != nil {
			t.Fatal(err)
		}
	}
	if _, errOut, code := execute(t, "report", "history", arch); code != 0 {
		t.Fatalf("history: exit %d (%s)", code, errOut)
	}
	md, err := os.ReadFile(filepath.Join(arch, "index.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	if !strings.Contains(s, "2 scenarios") || !strings.Contains(s, "## storm · ") || !strings.Contains(s, "## late-storm · ") {
		t.Fatalf("index.md does not group by scenario:\n%s", s)
	}
	storm := s[strings.Index(s, "## storm · "):]
	if !strings.Contains(storm, "3 runs") || !strings.Contains(storm, "search: probe interval p50") {
		t.Errorf("storm group:\n%s", storm)
	}
	late := s[strings.Index(s, "## late-storm · "):strings.Index(s, "## storm · ")]
	if !strings.Contains(late, "1 run") || strings.Contains(late, "a1") {
		t.Errorf("late-storm group mixes runs:\n%s", late)
	}
}
