//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/num"
	"github.com/halfopen/rehearse/reports/render"
)

// The three ways a run ends without its gateway being judged, each with a
// real `rehearse run` subprocess: interrupted (Ctrl-C), a harness frozen
// for 10 s (SIGSTOP, SIGCONT), a gateway under test killed mid-run. Each
// checks stdout, junit.xml, report.md and run.json; the history subtest
// indexes the three.

// unjudgedRuns are the run directories the tests below leave for the
// history test: name → directory, under the test binary's directory
// (TestMain removes it). The three runs write it side by side.
var (
	unjudgedMu   sync.Mutex
	unjudgedRuns = map[string]string{}
)

func keepUnjudged(name, dir string) {
	unjudgedMu.Lock()
	defer unjudgedMu.Unlock()
	unjudgedRuns[name] = dir
}

// TestUnjudgedRuns runs the three unjudged endings side by side (each a
// real run in its own directories, on its own ports, that mostly waits
// on its timers: the frozen one sleeps 10 s), then indexes what they
// left.
func TestUnjudgedRuns(t *testing.T) {
	t.Run("runs", func(t *testing.T) {
		for name, f := range map[string]func(*testing.T){
			"CtrlCIsNotAFailure":      ctrlCIsNotAFailure,
			"FrozenHarnessCannotPass": frozenHarnessCannotPass,
			"GatewayKilledMidRun":     gatewayKilledMidRun,
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				f(t)
			})
		}
	})
	t.Run("history", unjudgedRunsHistory)
}

// keptDir is a run directory that outlives its test, for
// TestUnjudgedRunsHistory: under the binary's directory, new each call.
func keptDir(t *testing.T, name string) string {
	t.Helper()
	rehearseBinary(t)
	parent, err := os.MkdirTemp(binDir, "kept-")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(parent, name)
}

// startRun starts `rehearse run SCENARIO --out DIR --quiet` and waits until
// the journal holds want (a replayed request: the replay is under way).
func startRun(t *testing.T, bin, scenario, dir, want string) (*exec.Cmd, *testutil.SyncBuffer, *testutil.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, "run", scenario, "--out", dir, "--quiet")
	var stdout, stderr testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitJournal(t, dir, want, &stderr)
	return cmd, &stdout, &stderr
}

// waitJournal waits up to 30 s for the run's journal to hold want.
func waitJournal(t *testing.T, dir, want string, stderr *testutil.SyncBuffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
		if bytes.Contains(data, []byte(want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal never held %s; stderr:\n%s", want, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitExit waits up to limit for the command and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration, stderr *testutil.SyncBuffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(limit):
		t.Fatalf("still running after %s; stderr:\n%s", limit, stderr.String())
	}
	return -1
}

// runFiles reads a finished run's junit.xml, report.md and run.json.
func runFiles(t *testing.T, dir string) (junit, md string, a *analysis.Analysis) {
	t.Helper()
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a = &analysis.Analysis{}
	if err := json.Unmarshal([]byte(read(render.RunFile)), a); err != nil {
		t.Fatal(err)
	}
	return read(render.JUnitFile), read(render.MarkdownFile), a
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ctrlCIsNotAFailure: Ctrl-C mid-run exited 130 with junit.xml
// failures="3" and stdout FAIL lines for expectations that had no chance
// (one "FAIL metrics_lag_max observed 1.382s want <= 15s", a value that
// met its limit). Now: exit 130, no FAIL line, "interrupted at T+…",
// every expectation skipped in JUnit with that reason, the report says
// when it was interrupted.
func ctrlCIsNotAFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	tmp := t.TempDir()
	bin := rehearseBinary(t)
	scenario := filepath.Join(tmp, "ctrl-c.yaml")
	writeFile(t, scenario, `
name: ctrl-c
replay: {rate: 20, duration: 1m}
faults:
  - {name: storm, type: status, upstream: search, at: 1s, for: 30s, params: {code: 503}}
expectations:
  upstreams: [search]
  opens_within: 20s
  closes_within: 20s
  metrics_lag_max: 15s
  replay_lateness_max: 1s
`)
	dir := keptDir(t, "interrupted")
	cmd, stdout, stderr := startRun(t, bin, scenario, dir, `"kind":"fault.start"`)
	time.Sleep(2 * time.Second) // the breaker opens; nothing closes yet
	stopExits130(t, cmd, syscall.SIGINT, stderr.String)
	out := stdout.String()
	if strings.Contains(out, "FAIL") || !regexp.MustCompile(`(?m)^  interrupted at T\+[0-9.]+ s`).MatchString(out) ||
		!strings.Contains(out, "expectations: 4 not evaluated") || lastLine(out) != "outcome: interrupted" {
		t.Errorf("stdout:\n%s", out)
	}
	junit, md, a := runFiles(t, dir)
	if !strings.Contains(junit, `failures="0"`) || strings.Contains(junit, "<failure") ||
		strings.Count(junit, `<skipped message="not evaluated: the run was interrupted at T+`) != 4 {
		t.Errorf("junit.xml:\n%s", junit)
	}
	if a.Run.InterruptedAtS == nil || !strings.Contains(md, "Run "+a.Interrupted()+" (Ctrl-C") || strings.Contains(md, "FAIL") {
		t.Errorf("run.json interrupted_at_s %v; report.md:\n%s", a.Run.InterruptedAtS, md)
	}
	keepUnjudged("interrupted", dir)
}

// frozenHarnessCannotPass: a harness frozen for 10 s (SIGSTOP, then
// SIGCONT) dropped the requests it missed, noted the stall, and exited 0
// "met", replay_lateness_max met at 233 µs: lateness counted the sent
// requests only. Now the missed sends count as late as they were, and
// the run is a harness failure naming the stall: exit 3, no FAIL line,
// JUnit one error and no failure, the report leads with the stall.
func frozenHarnessCannotPass(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary, freezing it for 10 s; skipped with -short")
	}
	tmp := t.TempDir()
	bin := rehearseBinary(t)
	scenario := filepath.Join(tmp, "frozen.yaml")
	writeFile(t, scenario, `
name: frozen
replay: {rate: 10, duration: 18s}
expectations:
  client_success_min: 0.5
  replay_lateness_max: 50ms
`)
	dir := keptDir(t, "stalled")
	cmd, stdout, stderr := startRun(t, bin, scenario, dir, `"kind":"client.request"`)
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	code := waitExit(t, cmd, 60*time.Second, stderr)
	out := stdout.String()
	if code != 3 || strings.Contains(out, "FAIL") || !strings.Contains(out, "harness failure: the harness stalled from T+") ||
		!strings.HasPrefix(lastLine(out), "outcome: harness failure: the harness stalled from T+") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	junit, md, a := runFiles(t, dir)
	st := a.Replay.Stall
	if st == nil || st.ToS-st.FromS < 9 || st.Missed < 80 {
		t.Fatalf("run.json replay.stall %+v, want about 10 s and 100 sends missed", st)
	}
	if !strings.Contains(out, fmt.Sprintf("%d sends missed", st.Missed)) {
		t.Errorf("stdout does not count the missed sends (%d):\n%s", st.Missed, out)
	}
	if p := a.Replay.LatenessMs.P99; p == nil || *p < 1000 {
		t.Errorf("lateness p99 %v ms, want the missed sends' seconds in it", p)
	} else if want := "lateness p99 " + num.MsP(p); !strings.Contains(out, want) {
		t.Errorf("stdout does not say %q (the replayer's own figure leaves the missed sends out):\n%s", want, out)
	}
	for _, e := range a.Expectations {
		if e.Name == "replay_lateness_max" && e.Outcome != "not_met" {
			t.Errorf("replay_lateness_max %s (%s), want not met", e.Outcome, e.Observed)
		}
	}
	if !strings.Contains(junit, `errors="1"`) || !strings.Contains(junit, `failures="0"`) || !strings.Contains(junit, "the harness stalled from T+") {
		t.Errorf("junit.xml:\n%s", junit)
	}
	if !strings.Contains(md, "Harness failure: the harness stalled from T+") || strings.Contains(md, "FAIL") {
		t.Errorf("report.md:\n%s", md)
	}
	if svg, err := os.ReadFile(filepath.Join(dir, render.TimelineFile)); err != nil || !bytes.Contains(svg, []byte(`class="stall"`)) {
		t.Errorf("timeline.svg does not draw the stall (%v)", err)
	}
	keepUnjudged("stalled", dir)
}

// gatewayKilledMidRun: the gateway under test (here rehearse's
// reference gateway, a process of its own behind gateway.url) is killed
// mid-run; every later request is refused by the OS. The report blamed
// the breaker ("never closed") and said nothing of the gateway being
// gone. Now: exit 3, the outcome line and the report name the moment and
// the refused requests, JUnit has one error and no failure.
func gatewayKilledMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary and a gateway; skipped with -short")
	}
	tmp := t.TempDir()
	bin := rehearseBinary(t)
	ups := map[string]string{}
	for _, n := range []string{"search", "weather", "vectors", "llm-primary", "llm-fallback"} {
		ups[n] = testutil.FreeAddr(t)
	}
	gwAddr := testutil.FreeAddr(t)
	gwCfg := filepath.Join(tmp, "gateway.yaml")
	writeFile(t, gwCfg, fmt.Sprintf(`
primary: llm-primary
fallback: llm-fallback
upstreams:
  search: {url: http://%s}
  weather: {url: http://%s}
  vectors: {url: http://%s}
  llm-primary: {url: http://%s, kind: model}
  llm-fallback: {url: http://%s, kind: model}
`, ups["search"], ups["weather"], ups["vectors"], ups["llm-primary"], ups["llm-fallback"]))
	gw := exec.Command(bin, "gateway", "--config", gwCfg, "--listen", gwAddr, "--canary-interval", "0s", "--log-level", "warn")
	var gwOut testutil.SyncBuffer
	gw.Stdout, gw.Stderr = &gwOut, &gwOut
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Process.Kill(); _ = gw.Wait() })

	scenario := filepath.Join(tmp, "gone.yaml")
	writeFile(t, scenario, fmt.Sprintf(`
name: gateway-killed
gateway: {url: http://%s}
upstreams:
  - {name: search, listen: "%s"}
  - {name: weather, listen: "%s"}
  - {name: vectors, listen: "%s"}
  - {name: llm-primary, listen: "%s"}
  - {name: llm-fallback, listen: "%s"}
replay: {rate: 20, duration: 14s}
faults:
  - {name: storm, type: status, upstream: search, at: 1s, for: 3s, params: {code: 503}}
expectations:
  upstreams: [search]
  opens_within: 5s
  closes_within: 8s
  client_success_min: 0.9
`, gwAddr, ups["search"], ups["weather"], ups["vectors"], ups["llm-primary"], ups["llm-fallback"]))
	dir := keptDir(t, "gone")
	cmd, stdout, stderr := startRun(t, bin, scenario, dir, `"kind":"fault.start"`)
	time.Sleep(4 * time.Second)
	if err := gw.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code := waitExit(t, cmd, 60*time.Second, stderr)
	out := stdout.String()
	gone := regexp.MustCompile(`the gateway stopped answering at T\+[0-9.]+ s: \d+ of \d+ requests refused by the OS`)
	if code != 3 || strings.Contains(out, "FAIL") || !gone.MatchString(out) ||
		!strings.HasPrefix(lastLine(out), "outcome: harness failure: the gateway stopped answering at T+") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\ngateway:\n%s", code, out, stderr.String(), gwOut.String())
	}
	junit, md, a := runFiles(t, dir)
	if g := a.Run.GatewayGone; g == nil || g.Refused < 20 {
		t.Fatalf("run.json run.gateway_gone %+v", g)
	}
	if !strings.Contains(junit, `errors="1"`) || !strings.Contains(junit, `failures="0"`) || !gone.MatchString(junit) {
		t.Errorf("junit.xml:\n%s", junit)
	}
	if !strings.Contains(md, "Gateway gone: the gateway stopped answering at T+") || strings.Contains(md, "FAIL") {
		t.Errorf("report.md:\n%s", md)
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.Contains(line, "never closed") && !strings.Contains(line, "stopped answering") {
			t.Errorf("report.md blames the breaker: %s", line)
		}
	}
	keepUnjudged("gone", dir)
}

// unjudgedRunsHistory indexes the runs the three tests above left (each
// in its own directory, moved under one): each is listed as not judged,
// with why, and left out of the trends.
func unjudgedRunsHistory(t *testing.T) {
	if len(unjudgedRuns) != 3 {
		t.Skipf("needs the runs of TestUnjudgedRuns/runs: Ctrl-C, frozen harness, gateway killed (have %d)", len(unjudgedRuns))
	}
	root := t.TempDir()
	for name, dir := range unjudgedRuns {
		if err := os.Rename(dir, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := execute(t, "report", "history", root)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	md, err := os.ReadFile(filepath.Join(root, "index.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| not judged: interrupted at T+", "| not judged: harness failure: the harness stalled from T+",
		"| not judged: harness failure: the gateway stopped answering at T+", "1 run left out of the trends"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("index.md does not say %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), " met") {
		t.Errorf("index.md gives an unjudged run a verdict:\n%s", md)
	}
	// report render says the same of each, with run's exit codes.
	for name, want := range map[string]struct {
		code int
		says string
	}{
		"interrupted": {0, "expectations not evaluated (interrupted at T+"},
		"stalled":     {3, "expectations not evaluated (harness failure: the harness stalled from T+"},
		"gone":        {3, "expectations not evaluated (harness failure: the gateway stopped answering at T+"},
	} {
		out, errOut, code := execute(t, "report", "render", filepath.Join(root, name))
		if code != want.code || !strings.Contains(out, want.says) {
			t.Errorf("report render %s: exit %d, want %d; stdout %q stderr %q", name, code, want.code, out, errOut)
		}
	}
}
