package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/launchd"
)

// executeWith runs the command tree with some top-level commands replaced
// (e.g. launchd with a fake runner), in-process.
func executeWith(t *testing.T, replace []*cobra.Command, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCmd(&out, &errb)
	for _, c := range replace {
		for _, old := range root.Commands() {
			if old.Name() == c.Name() {
				root.RemoveCommand(old)
			}
		}
		wrapArgs(c)
		root.AddCommand(c)
	}
	root.SetArgs(args)
	err := executeRoot(context.Background(), root)
	if err != nil {
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), rehearse.ExitCode(err)
}

// recorder is a launchd.Runner that records argv and succeeds, except that
// `launchctl print` answers "not loaded" until something was bootstrapped.
type recorder struct {
	mu     sync.Mutex
	calls  []string
	loaded bool
}

func (r *recorder) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, strings.Join(append([]string{filepath.Base(name)}, args...), " "))
	if args[0] == "print" && strings.Count(args[1], "/") == 1 {
		return nil, nil // the domain exists
	}
	if args[0] == "print" && !r.loaded {
		return nil, &launchd.CommandError{Argv: args, ExitCode: 113, Err: os.ErrNotExist}
	}
	if args[0] == "bootstrap" {
		r.loaded = true
	}
	return nil, nil
}

func scenarioFile(t *testing.T) (home, scenario, bin string) {
	t.Helper()
	home = t.TempDir()
	scenario = filepath.Join(home, "weekly.yaml")
	bin = filepath.Join(home, "bin", "rehearse")
	if err := os.Mkdir(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scenario, []byte("name: weekly\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return home, scenario, bin
}

func TestLaunchdPrint(t *testing.T) {
	home, scenario, bin := scenarioFile(t)
	t.Setenv("HOME", home)
	out, errOut, code := execute(t, "launchd", "print", "--scenario", scenario, "--weekly", "Mon 03:00", "--weekly", "thu 4:30",
		"--binary", bin, "--keep", "8", "--keep-for", "8w", "--env", "PATH=/usr/bin:/bin")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	p, err := launchd.ParsePlist([]byte(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	archive := filepath.Join(home, "rehearse", "runs")
	wantArgs := []string{bin, "run", scenario, "--archive", archive, "--keep", "8", "--keep-for", "1344h0m0s"}
	if p.Label != "dev.rehearse.weekly" || !reflect.DeepEqual(p.ProgramArguments, wantArgs) || p.WorkingDirectory != home ||
		len(p.StartCalendarInterval) != 2 || p.EnvironmentVariables["PATH"] != "/usr/bin:/bin" || p.ProcessType != "Standard" {
		t.Errorf("plist %+v", p)
	}
	if _, err := os.Stat(filepath.Join(home, "Library")); !os.IsNotExist(err) {
		t.Error("print wrote files")
	}
}

func TestLaunchdUsageErrors(t *testing.T) {
	_, scenario, bin := scenarioFile(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"launchd", "print", "--scenario", scenario, "--weekly", "Mon 25:00", "--binary", bin}, "hour 25 out of range 0-23"},
		{[]string{"launchd", "print", "--scenario", scenario, "--weekly", "Funday 03:00", "--binary", bin}, `unknown day "Funday"`},
		{[]string{"launchd", "print", "--scenario", scenario, "--daily", "3am", "--binary", bin}, `time "3am"`},
		{[]string{"launchd", "print", "--scenario", scenario, "--binary", bin}, "no schedule"},
		{[]string{"launchd", "print", "--weekly", "Mon 03:00"}, "--scenario is required"},
		{[]string{"launchd", "print", "--scenario", scenario, "--weekly", "Mon 03:00", "--env", "API_TOKEN=x"}, "--allow-secret-env"},
		{[]string{"launchd", "print", "--scenario", scenario, "--weekly", "Mon 03:00", "--keep-for", "soon"}, `age "soon"`},
		{[]string{"launchd", "status"}, "give --label LABEL or --scenario FILE"},
		{[]string{"systemd", "print", "--scenario", scenario, "--weekly", "Mon 3am"}, `time "3am"`},
		{[]string{"launchd", "print", "extra"}, "unknown command"},
	} {
		_, errOut, code := executeWith(t, nil, tc.args...)
		if code != rehearse.ExitInvalid || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestLaunchdInstallWithFakeRunner(t *testing.T) {
	home, scenario, bin := scenarioFile(t)
	rec := &recorder{}
	cmd := newLaunchdCmd(launchd.WithRunner(rec.run), launchd.WithHome(home), launchd.WithUID(501))
	out, errOut, code := executeWith(t, []*cobra.Command{cmd}, "launchd", "install", "--scenario", scenario, "--weekly", "Mon 03:00", "--binary", bin)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	plist := filepath.Join(home, "Library", "LaunchAgents", "dev.rehearse.weekly.plist")
	want := []string{"launchctl print gui/501", "launchctl print gui/501/dev.rehearse.weekly", "launchctl enable gui/501/dev.rehearse.weekly", "launchctl bootstrap gui/501 " + plist}
	if !reflect.DeepEqual(rec.calls, want) {
		t.Errorf("argv %q\nwant %q", rec.calls, want)
	}
	if !strings.Contains(out, "installed dev.rehearse.weekly") || !strings.Contains(out, "schedule: Mon 03:00 (local time)") {
		t.Errorf("output:\n%s", out)
	}
	if _, err := os.Stat(plist); err != nil {
		t.Error(err)
	}
	cmd = newLaunchdCmd(launchd.WithRunner(rec.run), launchd.WithHome(home), launchd.WithUID(501))
	out, errOut, code = executeWith(t, []*cobra.Command{cmd}, "launchd", "list")
	if code != 0 || !strings.Contains(out, "dev.rehearse.weekly") || !strings.Contains(out, "Mon 03:00") || !strings.Contains(out, scenario) {
		t.Errorf("list: exit %d %s\n%s", code, errOut, out)
	}
	// Another schedule under the same label is refused without --force.
	cmd = newLaunchdCmd(launchd.WithRunner(rec.run), launchd.WithHome(home), launchd.WithUID(501))
	_, errOut, code = executeWith(t, []*cobra.Command{cmd}, "launchd", "install", "--scenario", scenario, "--weekly", "Tue 03:00", "--binary", bin)
	if code != rehearse.ExitInvalid || !strings.Contains(errOut, "--force") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

func TestLaunchdUnsupportedHere(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("launchctl exists on macOS; this checks the message elsewhere")
	}
	home, scenario, bin := scenarioFile(t)
	t.Setenv("HOME", home)
	_, errOut, code := executeWith(t, nil, "launchd", "install", "--scenario", scenario, "--weekly", "Mon 03:00", "--binary", bin)
	if code != rehearse.ExitEnvironment || !strings.Contains(errOut, "rehearse launchd print") || !strings.Contains(errOut, "rehearse systemd") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

func TestSystemdPrint(t *testing.T) {
	home, scenario, bin := scenarioFile(t)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	out, errOut, code := execute(t, "systemd", "print", "--scenario", scenario, "--weekly", "Mon 03:00", "--daily", "12:00", "--binary", bin)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"# ---- " + filepath.Join(home, ".config", "systemd", "user", "dev.rehearse.weekly.service"),
		"Type=oneshot",
		"ExecStart=" + bin + " run " + scenario + " --archive " + filepath.Join(home, "rehearse", "runs") + " --keep 12",
		"OnCalendar=Mon *-*-* 03:00:00\nOnCalendar=*-*-* 12:00:00\nPersistent=true",
		"WantedBy=timers.target",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestAgentArgsMatchRunFlags checks the contract between the scheduled
// command line and `rehearse run`: every flag the agent passes exists there
// and reads back the value the job meant.
func TestAgentArgsMatchRunFlags(t *testing.T) {
	j, err := launchd.Job{
		Binary: "/usr/local/bin/rehearse", Scenario: "/srv/weekly.yaml", Archive: "/srv/runs",
		Keep: 3, KeepFor: 8 * 7 * 24 * time.Hour, Schedule: []launchd.When{{Hour: 3}},
	}.Resolve("/home/ci")
	if err != nil {
		t.Fatal(err)
	}
	args := j.Args()
	if args[0] != j.Binary || args[1] != "run" {
		t.Fatalf("args %q", args)
	}
	run := newRunCmd()
	if err := run.ParseFlags(args[2:]); err != nil {
		t.Fatalf("rehearse run does not accept the agent's flags %q: %v", args[2:], err)
	}
	for name, want := range map[string]string{"archive": "/srv/runs", "keep": "3", "keep-for": (8 * 7 * 24 * time.Hour).String()} {
		f := run.Flags().Lookup(name)
		if f == nil || f.Value.String() != want {
			t.Errorf("--%s = %v, want %q", name, f, want)
		}
	}
	if got := run.Flags().Args(); !reflect.DeepEqual(got, []string{"/srv/weekly.yaml"}) {
		t.Errorf("positional args %q", got)
	}
}
