package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

// cooldownDrill is issue 31's drill: a 1 s storm on search that opens the
// breaker once; it half-opens after the cooldown (the only setting the two
// sides differ in, %s) and closes after three probes 200 ms apart. Only
// search's requests are replayed, 50 a second: each moment is read to
// 20 ms.
const cooldownDrill = `
name: cooldown
gateway:
  builtin:
    config:
      breaker: {cooldown: %s, cooldown_max: 10s, consecutive_failures: 3, min_samples: 5, window: 2s,
                probe_interval: 200ms, probe_jitter: 0s, successes_to_close: 3}
      retry: {max_attempts: 1}
  metrics: {interval: 250ms}
  health: {interval: 500ms}
replay:
  rate: 50
  duration: 8s
  filter: {path: "^/tools/search"}
faults:
  - {name: storm, type: status, upstream: search, at: 500ms, for: 1s, params: {code: 503}}
`

var (
	coolOnce sync.Once
	coolRoot string
	coolErr  error
)

// cooldownSets runs, once per test binary, the cooldown drill with 2 s
// (two2a, two2b, and again two2c, two2d) and with 5 s (five5a, five5b),
// three at a time, with the real binary built without the race detector.
func cooldownSets(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("cooldown drills (6 runs of 8 s) skipped in -short mode")
	}
	bin := rehearseBinary(t)
	coolOnce.Do(func() {
		if coolRoot, coolErr = os.MkdirTemp("", "rehearse-cooldown-"); coolErr != nil {
			return
		}
		var jobs [][2]string // dir, cooldown
		for _, d := range []string{"two2a", "two2b", "five5a", "five5b", "two2c", "two2d"} {
			cd := "2s"
			if strings.HasPrefix(d, "five") {
				cd = "5s"
			}
			jobs = append(jobs, [2]string{d, cd})
		}
		for i := 0; i < len(jobs); i += 3 {
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for k, j := range jobs[i:min(i+3, len(jobs))] {
				wg.Go(func() { errs[k] = runDrill(bin, coolRoot, j[0], fmt.Sprintf(cooldownDrill, j[1])) })
			}
			wg.Wait()
			if coolErr = errors.Join(errs...); coolErr != nil {
				return
			}
		}
	})
	if coolErr != nil {
		t.Fatal(coolErr)
	}
	return coolRoot
}

// runDrill writes a scenario and runs it into root/dir; a failed
// expectation (exit 1) is still a run.
func runDrill(bin, root, dir, src string) error {
	file := filepath.Join(root, dir+".yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		return err
	}
	out, err := exec.Command(bin, "run", file, "--out", filepath.Join(root, dir), "--quiet").CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == rehearse.ExitExpectations) {
		return fmt.Errorf("%s: %w\n%s", dir, err, out)
	}
	return nil
}

func in(root string, dirs ...string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = filepath.Join(root, d)
	}
	return out
}

type gateJSON struct {
	Flagged   int `json:"flagged"`
	Unjudged  int `json:"unjudged"`
	Judgeable int `json:"judgeable"`
	Figures   []struct {
		Key    string   `json:"key"`
		Group  string   `json:"group"`
		Delta  *float64 `json:"difference"`
		Lo     *float64 `json:"ci_low"`
		Hi     *float64 `json:"ci_high"`
		Flag   bool     `json:"flagged"`
		Judged bool     `json:"judged"`
	} `json:"figures"`
}

func gate(t *testing.T, args ...string) (gateJSON, string, int) {
	t.Helper()
	out, errOut, code := executeWith(t, nil, append([]string{"report", "compare", "--format", "json"}, args...)...)
	var c gateJSON
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("exit %d, json: %v\n%s\n%s", code, err, out, errOut)
	}
	return c, errOut, code
}

// TestCompareTwoRunsFlagsCooldown is issue 31's headline: two runs a side,
// cooldown 2 s against 5 s. The first probe after open moves by 3 s on
// every run; it is flagged with an interval around +3 s, nothing is left
// undecided, and --fail-on-diff exits 1.
func TestCompareTwoRunsFlagsCooldown(t *testing.T) {
	root := cooldownSets(t)
	requireOnSchedule(t, root, "two2a", "two2b", "five5a", "five5b")
	args := append(in(root, "two2a", "two2b"), "--vs")
	args = append(args, in(root, "five5a", "five5b")...)
	c, errOut, code := gate(t, append(args, "--fail-on-diff", "--fail-on-undecided")...)
	if code != 1 || !strings.Contains(errOut, "figures differ") {
		t.Fatalf("exit %d, want 1 (figures differ): %s", code, errOut)
	}
	found := false
	for _, f := range c.Figures {
		if f.Key != "first_probe_after_open_s" {
			continue
		}
		found = true
		t.Logf("first probe after open: %+.1f ms [%+.1f, %+.1f], flagged %v", *f.Delta, *f.Lo, *f.Hi, f.Flag)
		if !f.Flag || *f.Lo <= 0 || *f.Delta < 2900 || *f.Delta > 3100 || *f.Lo > *f.Delta || *f.Hi < *f.Delta {
			t.Errorf("first probe after open not flagged at about +3 s with an interval above zero: %+v", f)
		}
	}
	if !found {
		t.Fatal("no first-probe row")
	}
	if c.Unjudged != 0 || strings.Contains(errOut, "cannot be judged") {
		t.Errorf("two runs a side left %d figures undecided: %s", c.Unjudged, errOut)
	}
}

// TestCompareTwoRunsIdenticalNotFlagged: two runs a side of one
// configuration flag nothing and decide everything: exit 0 with both
// gates.
func TestCompareTwoRunsIdenticalNotFlagged(t *testing.T) {
	root := cooldownSets(t)
	requireOnSchedule(t, root, "two2a", "two2b", "two2c", "two2d")
	args := append(in(root, "two2a", "two2b"), "--vs")
	args = append(args, in(root, "two2c", "two2d")...)
	c, errOut, code := gate(t, append(args, "--fail-on-diff", "--fail-on-undecided")...)
	if code != 0 || c.Flagged != 0 || c.Unjudged != 0 {
		for _, f := range c.Figures {
			if f.Flag {
				t.Logf("flagged: %s %s %+v [%v, %v]", f.Group, f.Key, *f.Delta, *f.Lo, *f.Hi)
			}
		}
		t.Fatalf("identical configurations: exit %d, %d flagged, %d unjudged (%s)", code, c.Flagged, c.Unjudged, errOut)
	}
}

// TestCompareOneRunSaysUndecided: one run a side cannot judge figures with
// one value per run; stderr names them and says two runs a side would,
// and --fail-on-undecided turns that into exit 1.
func TestCompareOneRunSaysUndecided(t *testing.T) {
	root := cooldownSets(t)
	a, b := filepath.Join(root, "two2a"), filepath.Join(root, "five5a")
	c, errOut, code := gate(t, a, b)
	if code != 0 || c.Unjudged == 0 {
		t.Fatalf("one run a side: exit %d, %d unjudged", code, c.Unjudged)
	}
	for _, want := range []string{"cannot be judged", "2 runs a side would judge them", "first probe after open"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	_, errOut, code = gate(t, a, b, "--fail-on-undecided")
	if code != 1 || !strings.Contains(errOut, "figures cannot be judged") || !strings.Contains(errOut, "2 runs a side would judge") {
		t.Errorf("--fail-on-undecided: exit %d (%s)", code, errOut)
	}
}

// TestCompareHelpSaysTheRule: --help states the runs-a-side rule and the
// undecided gate.
func TestCompareHelpSaysTheRule(t *testing.T) {
	out, _, code := execute(t, "report", "compare", "--help")
	for _, want := range []string{"--fail-on-undecided", "Two runs a side judge every figure", "cannot be judged"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("report compare --help (exit %d) lacks %q", code, want)
		}
	}
}

// workflow is the part of examples/ci/cross-platform.yml the gate test
// runs.
type workflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Steps []struct {
			Name  string `yaml:"name"`
			Shell string `yaml:"shell"`
			Run   string `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// step returns the run script of the step of job whose name starts with
// prefix.
func (w workflow) step(t *testing.T, job, prefix string) string {
	t.Helper()
	for _, s := range w.Jobs[job].Steps {
		if strings.HasPrefix(s.Name, prefix) {
			if s.Shell != "bash" {
				t.Fatalf("step %q runs in %q; the test runs it as GitHub runs shell: bash", s.Name, s.Shell)
			}
			return s.Run
		}
	}
	t.Fatalf("examples/ci/cross-platform.yml: job %s has no step %q", job, prefix)
	return ""
}

// TestCIWorkflowGate runs examples/ci/cross-platform.yml's own steps with
// its own run count (env REPEATS): the drill step once per runner
// (Linux and macOS, both here), the artifacts laid out as
// download-artifact lays them, then the compare step. One drill on both
// runners must pass the gate: nothing flagged, nothing undecided. The
// scenario is a short drill of this test's (SCENARIO, which the workflow
// documents as a name or a file), so that the run count is the
// workflow's and the time is not.
func TestCIWorkflowGate(t *testing.T) {
	if testing.Short() {
		t.Skip("the workflow's drills skipped in -short mode")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "ci", "cross-platform.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	repeats, err := strconv.Atoi(w.Env["REPEATS"])
	if err != nil || repeats < 1 {
		t.Fatalf("env REPEATS %q: want a run count", w.Env["REPEATS"])
	}
	drill, compareStep := w.step(t, "rehearse", "Run the drill"), w.step(t, "compare", "Compare")
	bin := rehearseBinary(t)
	root := t.TempDir()
	scenario := filepath.Join(root, "storm.yaml")
	if err := os.WriteFile(scenario, fmt.Appendf(nil, compareDrill, "storm", "400ms", "6s", "500ms"), 0o644); err != nil {
		t.Fatal(err)
	}
	// GitHub runs shell: bash as bash --noprofile --norc -eo pipefail.
	bash := func(dir, script string, env ...string) ([]byte, error) {
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append([]string{"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"),
			"SCENARIO=" + scenario, "REPEATS=" + w.Env["REPEATS"]}, env...)...)
		return cmd.CombinedOutput()
	}
	oses := []string{"Linux", "macOS"}
	errs := make([]error, len(oses))
	var wg sync.WaitGroup
	for i, runner := range oses {
		wg.Go(func() {
			dir := filepath.Join(root, "runner-"+runner)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				errs[i] = err
				return
			}
			if out, err := bash(dir, drill, "RUNNER_OS="+runner); err != nil {
				errs[i] = fmt.Errorf("%s: the drill step: %w\n%s", runner, err, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// upload-artifact uploads runs/ as runs-<OS>; download-artifact with a
	// pattern puts each artifact in runs/<artifact name>/.
	job := filepath.Join(root, "compare-job")
	for _, runner := range oses {
		dst := filepath.Join(job, "runs", "runs-"+runner)
		if err := os.CopyFS(dst, os.DirFS(filepath.Join(root, "runner-"+runner, "runs"))); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(dst)
		if len(ents) != repeats {
			t.Fatalf("%s: %d run directories, want REPEATS = %d", runner, len(ents), repeats)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		requireOnSchedule(t, dst, names...)
	}
	out, err := bash(job, compareStep)
	if err != nil {
		t.Fatalf("the compare step with REPEATS = %d failed the gate: %v\n%s", repeats, err, out)
	}
	var c gateJSON
	b, err := os.ReadFile(filepath.Join(job, "compare", "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	t.Logf("REPEATS = %d: %d figures judged, %d flagged, %d undecided", repeats, c.Judgeable, c.Flagged, c.Unjudged)
	if c.Flagged != 0 || c.Unjudged != 0 || c.Judgeable == 0 {
		t.Errorf("one drill on both runners: %d flagged, %d undecided, %d judgeable", c.Flagged, c.Unjudged, c.Judgeable)
	}
}
