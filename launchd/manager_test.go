package launchd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/runs"
)

// fakeLaunchd stands in for launchctl: it records every argv and keeps the
// state launchd would (which labels are loaded, whether one is running), so
// the Manager's decisions can be checked on any OS.
type fakeLaunchd struct {
	t *testing.T
	callLog
	loaded  map[string]bool // service target → loaded
	running bool
	fail    map[string]error // subcommand → error to return
	// failOnce makes each fail entry fail one call only.
	failOnce bool
	// noDomain is a launchd without the domain (a gui domain with no one
	// logged in at the screen): every print fails.
	noDomain bool
	// linger is how many prints still see a service after bootout, like a
	// launchd that is slow to tear the old instance down.
	linger    int
	lingering map[string]int
}

func newFakeLaunchd(t *testing.T) *fakeLaunchd {
	return &fakeLaunchd{t: t, loaded: map[string]bool{}, fail: map[string]error{}}
}

func (f *fakeLaunchd) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	argv := append([]string{name}, args...)
	f.calls = append(f.calls, argv)
	if name != launchctlPath {
		f.t.Errorf("ran %q, want %s", name, launchctlPath)
	}
	if err := f.fail[args[0]]; err != nil {
		if f.failOnce {
			delete(f.fail, args[0])
		}
		return nil, &CommandError{Argv: argv, ExitCode: 5, Err: err, Output: []byte("Bootstrap failed: 5: Input/output error")}
	}
	switch args[0] {
	case "print":
		if f.noDomain {
			out := []byte("Bad request.\nCould not find domain for " + args[1] + "\n")
			return out, &CommandError{Argv: argv, Output: out, ExitCode: 113, Err: errors.New("exit status 113")}
		}
		if strings.Count(args[1], "/") == 1 {
			return []byte(args[1] + " = {\n\ttype = gui\n}\n"), nil // the domain
		}
		if f.lingering[args[1]] > 0 {
			f.lingering[args[1]]--
			return os.ReadFile("testdata/launchctl-print-idle.txt")
		}
		if !f.loaded[args[1]] {
			out := []byte(fmt.Sprintf("Bad request.\nCould not find service %q in domain for user gui: 501\n", args[1]))
			return out, &CommandError{Argv: argv, Output: out, ExitCode: 113, Err: errors.New("exit status 113")}
		}
		file := "testdata/launchctl-print-idle.txt"
		if f.running {
			file = "testdata/launchctl-print-running.txt"
		}
		return os.ReadFile(file)
	case "bootstrap":
		// launchd reads the plist at bootstrap: it must be there and parse.
		data, err := os.ReadFile(args[2])
		if err != nil {
			f.t.Errorf("bootstrap of a missing plist: %v", err)
			return nil, err
		}
		p, err := ParsePlist(data)
		if err != nil {
			f.t.Errorf("bootstrap of an invalid plist: %v", err)
		}
		f.loaded[args[1]+"/"+p.Label] = true
	case "bootout":
		delete(f.loaded, args[1])
		f.running = false
		if f.linger > 0 {
			if f.lingering == nil {
				f.lingering = map[string]int{}
			}
			f.lingering[args[1]] = f.linger
		}
	case "enable", "kickstart":
	default:
		f.t.Errorf("unexpected launchctl %v", args)
	}
	return nil, nil
}

// callLog is what the fake launchctl and systemctl share: the argv of
// every command run, and the lock that also guards the fake's own state.
type callLog struct {
	mu    sync.Mutex
	calls [][]string
}

// takeCalls returns the argv run since the last take and forgets them.
func (l *callLog) takeCalls() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

type launchdEnv struct {
	home, bin, scenario string
	fake                *fakeLaunchd
	m                   *Manager
}

func newLaunchdEnv(t *testing.T, opts ...Option) *launchdEnv {
	t.Helper()
	home := t.TempDir()
	bin := filepath.Join(home, "bin", "rehearse")
	scenario := filepath.Join(home, "drills", "weekly.yaml")
	for p, mode := range map[string]os.FileMode{bin: 0o755, scenario: 0o644} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
	}
	fake := newFakeLaunchd(t)
	clock := func() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) }
	m, err := New(append([]Option{WithRunner(fake.run), WithHome(home), WithUID(501), WithClock(clock), WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &launchdEnv{home: home, bin: bin, scenario: scenario, fake: fake, m: m}
}

// install installs e.job() with the default options, as the tests of
// what comes after an install start.
func (e *launchdEnv) install(t *testing.T) {
	t.Helper()
	if _, err := e.m.Install(context.Background(), e.job(), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *launchdEnv) job() Job {
	return Job{Binary: e.bin, Scenario: e.scenario, Keep: 12, Schedule: []When{{Weekday: time.Monday, Hour: 3}}}
}

func argv(s ...string) []string { return append([]string{launchctlPath}, s...) }

func TestInstallFresh(t *testing.T) {
	e := newLaunchdEnv(t)
	res, err := e.m.Install(context.Background(), e.job(), InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.home, "Library", "LaunchAgents", "dev.rehearse.weekly.plist")
	want := [][]string{
		argv("print", "gui/501"),
		argv("print", "gui/501/dev.rehearse.weekly"),
		argv("enable", "gui/501/dev.rehearse.weekly"),
		argv("bootstrap", "gui/501", path),
	}
	if got := e.fake.takeCalls(); !reflect.DeepEqual(got, want) {
		t.Errorf("argv:\n got %q\nwant %q", got, want)
	}
	if !res.Changed || res.Replaced || !reflect.DeepEqual(res.Files, []string{path}) {
		t.Errorf("result %+v", res)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wantData, _ := res.Job.Plist().Render()
	if string(data) != string(wantData) {
		t.Errorf("written plist differs from the rendered one")
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("plist mode %v", fi.Mode().Perm())
	}
	// launchd opens the log files itself: their directory must exist.
	if _, err := os.Stat(filepath.Join(e.home, "rehearse", "runs", LogsDir)); err != nil {
		t.Errorf("logs directory not created: %v", err)
	}
	// No temporary files are left next to the plist.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("LaunchAgents holds %d entries", len(entries))
	}

	// Installing the same job again changes nothing and runs only print.
	res, err = e.m.Install(context.Background(), e.job(), InstallOptions{})
	if err != nil || res.Changed {
		t.Fatalf("reinstall: %+v, %v", res, err)
	}
	if got := e.fake.takeCalls(); !reflect.DeepEqual(got, want[:2]) {
		t.Errorf("reinstall argv %q", got)
	}
}

func TestInstallRefusesDifferentAgent(t *testing.T) {
	e := newLaunchdEnv(t)
	ctx := context.Background()
	e.install(t)
	path := e.m.PlistPath("dev.rehearse.weekly")
	before, _ := os.ReadFile(path)
	e.fake.takeCalls()

	other := e.job()
	other.Schedule = []When{{Weekday: time.Friday, Hour: 22}}
	_, err := e.m.Install(ctx, other, InstallOptions{})
	if !errors.Is(err, ErrExists) || !errors.Is(err, rehearse.ErrInvalid) || !strings.Contains(err.Error(), "differs in StartCalendarInterval; pass --force") {
		t.Fatalf("error = %v", err)
	}
	after, _ := os.ReadFile(path)
	if string(after) != string(before) {
		t.Error("refused install still changed the plist")
	}
	if got := e.fake.takeCalls(); len(got) != 2 || got[0][1] != "print" || got[1][1] != "print" {
		t.Errorf("refused install ran %q", got)
	}

	res, err := e.m.Install(ctx, other, InstallOptions{Force: true})
	if err != nil || !res.Replaced {
		t.Fatalf("force: %+v, %v", res, err)
	}
	want := [][]string{
		argv("print", "gui/501"),
		argv("print", "gui/501/dev.rehearse.weekly"),
		argv("bootout", "gui/501/dev.rehearse.weekly"),
		argv("print", "gui/501/dev.rehearse.weekly"), // gone yet?
		argv("enable", "gui/501/dev.rehearse.weekly"),
		argv("bootstrap", "gui/501", path),
	}
	if got := e.fake.takeCalls(); !reflect.DeepEqual(got, want) {
		t.Errorf("force argv:\n got %q\nwant %q", got, want)
	}
	p, _ := os.ReadFile(path)
	if back, _ := ParsePlist(p); back.StartCalendarInterval[0].Hour != 22 {
		t.Errorf("forced plist not written: %+v", back)
	}

	// An unreadable file in the way is "different" too.
	if err := os.WriteFile(path, []byte("not a plist"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Install(ctx, e.job(), InstallOptions{}); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "not a valid plist") {
		t.Errorf("garbage plist: %v", err)
	}
}

func TestInstallBootstrapFailureRollsBack(t *testing.T) {
	e := newLaunchdEnv(t)
	e.fake.fail["bootstrap"] = errors.New("exit status 5")
	_, err := e.m.Install(context.Background(), e.job(), InstallOptions{})
	if err == nil || !errors.Is(err, rehearse.ErrEnvironment) || !strings.Contains(err.Error(), "Input/output error") || !strings.Contains(err.Error(), "--domain user") {
		t.Fatalf("error = %v", err)
	}
	if _, err := os.Stat(e.m.PlistPath("dev.rehearse.weekly")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a plist that launchd refused was left to load at next login: %v", err)
	}
}

func TestInstallChecksFiles(t *testing.T) {
	e := newLaunchdEnv(t)
	j := e.job()
	j.Scenario = filepath.Join(e.home, "missing.yaml")
	if _, err := e.m.Install(context.Background(), j, InstallOptions{}); !errors.Is(err, rehearse.ErrInvalid) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing scenario: %v", err)
	}
	j = e.job()
	j.Binary = e.scenario // not executable
	if _, err := e.m.Install(context.Background(), j, InstallOptions{}); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Errorf("non-executable binary: %v", err)
	}
	if len(e.fake.takeCalls()) != 0 {
		t.Error("launchctl ran for an install that failed its checks")
	}
}

func TestUserDomain(t *testing.T) {
	e := newLaunchdEnv(t, WithDomain("user"))
	if _, err := e.m.Install(context.Background(), e.job(), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	got := e.fake.takeCalls()
	if got[0][2] != "user/501" || got[3][1] != "bootstrap" || got[3][2] != "user/501" {
		t.Errorf("argv %q", got)
	}
	if _, err := New(WithDomain("system"), WithRunner(e.fake.run)); !errors.Is(err, rehearse.ErrInvalid) {
		t.Errorf("system domain: %v", err)
	}
}

func TestUninstall(t *testing.T) {
	e := newLaunchdEnv(t)
	ctx := context.Background()
	e.install(t)
	e.fake.takeCalls()
	done, err := e.m.Uninstall(ctx, "dev.rehearse.weekly")
	if err != nil || !done {
		t.Fatalf("uninstall: %v, %v", done, err)
	}
	want := [][]string{argv("print", "gui/501/dev.rehearse.weekly"), argv("bootout", "gui/501/dev.rehearse.weekly")}
	if got := e.fake.takeCalls(); !reflect.DeepEqual(got, want) {
		t.Errorf("argv:\n got %q\nwant %q", got, want)
	}
	if _, err := os.Stat(e.m.PlistPath("dev.rehearse.weekly")); !errors.Is(err, os.ErrNotExist) {
		t.Error("plist not removed")
	}
	// Again: nothing to do, not an error, no bootout.
	done, err = e.m.Uninstall(ctx, "dev.rehearse.weekly")
	if err != nil || done {
		t.Errorf("second uninstall: %v, %v", done, err)
	}
	if got := e.fake.takeCalls(); len(got) != 1 {
		t.Errorf("second uninstall argv %q", got)
	}
	if _, err := e.m.Uninstall(ctx, "../../etc/passwd"); !errors.Is(err, rehearse.ErrInvalid) {
		t.Errorf("path in label: %v", err)
	}
}

func TestStatus(t *testing.T) {
	e := newLaunchdEnv(t)
	ctx := context.Background()
	if _, err := e.m.Status(ctx, "dev.rehearse.weekly"); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("status before install: %v", err)
	}
	res, err := e.m.Install(ctx, e.job(), InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := runs.Archive{Dir: res.Job.Archive}
	claim, _ := a.NewRun(runs.Identity{Scenario: "weekly"}, time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC))
	claim.Release()
	run := claim.Dir()
	_ = a.UpdateLatest(run)
	e.fake.takeCalls()

	st, err := e.m.Status(ctx, "dev.rehearse.weekly")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.fake.takeCalls(); !reflect.DeepEqual(got, [][]string{argv("print", "gui/501/dev.rehearse.weekly")}) {
		t.Errorf("argv %q", got)
	}
	if !st.Installed || !st.Loaded || st.State != "not running" || st.LastExit != "(never exited)" || st.PID != 0 {
		t.Errorf("status %+v", st)
	}
	if want := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC); !st.NextRun.Equal(want) {
		t.Errorf("next run %v, want %v", st.NextRun, want)
	}
	if st.Archive != res.Job.Archive || st.LatestRun != run {
		t.Errorf("archive %q latest %q", st.Archive, st.LatestRun)
	}

	if st.LatestVerdict != "no run.json: the run did not finish; see the error log" {
		t.Errorf("verdict without run.json: %q", st.LatestVerdict)
	}
	runJSON := `{"schema":"rehearse.run/v1","run":{"partial":true,"end_reason":"interrupted"},"expectations":[{"name":"opens","passed":true},{"name":"closes","passed":false}]}`
	if err := os.WriteFile(filepath.Join(run, "run.json"), []byte(runJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	e.fake.running = true
	st, _ = e.m.Status(ctx, "dev.rehearse.weekly")
	if st.LatestVerdict != "1 of 2 expectations met; partial run (interrupted)" {
		t.Errorf("verdict %q", st.LatestVerdict)
	}
	if st.State != "running" || st.PID != 4242 || st.Runs != 4 || st.LastExit != "1" {
		t.Errorf("running status %+v", st)
	}
	var b strings.Builder
	if err := st.Format(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"state:      running (pid 4242)", "last exit:  1 (an expectation failed)", "schedule:   Mon 03:00 (local time)", "next run:   Mon 2026-12-07 03:00 UTC", "latest run: " + run, "verdict:    1 of 2 expectations met"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, b.String())
		}
	}
}

func TestKickstart(t *testing.T) {
	e := newLaunchdEnv(t)
	ctx := context.Background()
	if err := e.m.Kickstart(ctx, "dev.rehearse.weekly", false); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "rehearse launchd install") {
		t.Fatalf("kickstart before install: %v", err)
	}
	e.install(t)
	e.fake.takeCalls()
	if err := e.m.Kickstart(ctx, "dev.rehearse.weekly", false); err != nil {
		t.Fatal(err)
	}
	want := [][]string{argv("print", "gui/501/dev.rehearse.weekly"), argv("kickstart", "-k", "gui/501/dev.rehearse.weekly")}
	if got := e.fake.takeCalls(); !reflect.DeepEqual(got, want) {
		t.Errorf("argv:\n got %q\nwant %q", got, want)
	}
	// A rehearsal in progress is not killed unless asked.
	e.fake.running = true
	if err := e.m.Kickstart(ctx, "dev.rehearse.weekly", false); !errors.Is(err, ErrRunning) || !strings.Contains(err.Error(), "pid 4242") {
		t.Errorf("kickstart while running: %v", err)
	}
	if got := e.fake.takeCalls(); len(got) != 1 {
		t.Errorf("argv %q", got)
	}
	if err := e.m.Kickstart(ctx, "dev.rehearse.weekly", true); err != nil {
		t.Fatal(err)
	}
	if got := e.fake.takeCalls(); !reflect.DeepEqual(got, want) {
		t.Errorf("restart argv %q", got)
	}
}

func TestParsePrint(t *testing.T) {
	data, err := os.ReadFile("testdata/launchctl-print-running.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := parsePrint(data)
	want := printInfo{State: "running", PID: 4242, Runs: 4, LastExit: "1"}
	if got != want {
		t.Errorf("parsePrint = %+v, want %+v", got, want)
	}
	// Newer macOS releases add the meaning after the code; a job killed by
	// a signal has no exit code.
	got = parsePrint([]byte("gui/501/x = {\n\tstate = not running\n\tlast exit code = 78: EX_CONFIG\n}\n"))
	if got.LastExit != "78: EX_CONFIG" {
		t.Errorf("LastExit %q", got.LastExit)
	}
	got = parsePrint([]byte("gui/501/x = {\n\tlast terminating signal = Terminated: 15\n}\n"))
	if got.LastExit != "signal Terminated: 15" {
		t.Errorf("LastExit %q", got.LastExit)
	}
	var b strings.Builder
	_ = Status{Label: "x", LastExit: "1: Operation not permitted"}.Format(&b)
	if !strings.Contains(b.String(), "last exit:  1: Operation not permitted (an expectation failed)") {
		t.Errorf("format:\n%s", b.String())
	}
	if got := parsePrint(nil); got != (printInfo{}) {
		t.Errorf("empty: %+v", got)
	}
}

func FuzzParsePrint(f *testing.F) {
	for _, p := range []string{"testdata/launchctl-print-running.txt", "testdata/launchctl-print-idle.txt"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("}}}\n{\n\tstate = x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = parsePrint(data)
	})
}

func TestInstallForceWaitsForBootout(t *testing.T) {
	e := newLaunchdEnv(t)
	ctx := context.Background()
	e.install(t)
	other := e.job()
	other.Keep = 3
	e.fake.linger = 2
	e.fake.takeCalls()
	if _, err := e.m.Install(ctx, other, InstallOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	var prints int
	calls := e.fake.takeCalls()
	for _, c := range calls {
		if c[1] == "print" {
			prints++
		}
	}
	// The domain, one before, then two that still see it, one that does
	// not.
	if prints != 5 || calls[len(calls)-1][1] != "bootstrap" {
		t.Errorf("argv %q", calls)
	}

	// A cancelled context stops the wait.
	e.fake.linger = 1000
	other.Keep = 4
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.m.Install(cctx, other, InstallOptions{Force: true}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v", err)
	}
}
