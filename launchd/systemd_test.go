package launchd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

func TestSystemdGolden(t *testing.T) {
	for _, tc := range goldenJobs() {
		t.Run(tc.name, func(t *testing.T) {
			j := resolve(t, tc.job)
			svc, tmr := j.SystemdUnits()
			golden(t, tc.name+".service.golden", svc)
			golden(t, tc.name+".timer.golden", tmr)

			// ExecStart reads back as the job's arguments, quoting and all.
			ex := unitValues(svc)["ExecStart"]
			if len(ex) != 1 || !reflect.DeepEqual(splitExec(ex[0]), j.Args()) {
				t.Errorf("ExecStart %q splits to %q, want %q", ex, splitExec(ex[0]), j.Args())
			}
			var sched []When
			for _, v := range unitValues(tmr)["OnCalendar"] {
				w, ok := parseOnCalendar(v)
				if !ok {
					t.Errorf("OnCalendar %q does not parse back", v)
				}
				sched = append(sched, w)
			}
			if !reflect.DeepEqual(sched, j.Schedule) {
				t.Errorf("schedule %v, want %v", sched, j.Schedule)
			}
		})
	}
}

func TestQuoteUnit(t *testing.T) {
	for _, s := range []string{"plain", "with space", `back\slash`, `"quoted"`, "100%", "$HOME", "semi;colon", "new\nline", "", "it's"} {
		q := quoteUnit(s, true)
		if got := splitExec(q); len(got) != 1 || got[0] != s {
			t.Errorf("quoteUnit(%q) = %s splits to %q", s, q, got)
		}
	}
}

// TestSystemdAnalyze checks the generated units with systemd's own parser
// and the calendar expressions with its calendar parser.
func TestSystemdAnalyze(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: ", err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("sh not installed: ", err)
	}
	dir := t.TempDir()
	j := fullJob()
	j.Binary = sh // verify checks that ExecStart's program exists
	j.WorkingDirectory = dir
	j.Label = "rehearse-verify-test"
	j = resolve(t, j)
	svc, tmr := j.SystemdUnits()
	svcPath, tmrPath := filepath.Join(dir, j.Label+".service"), filepath.Join(dir, j.Label+".timer")
	_ = os.WriteFile(svcPath, svc, 0o644)
	_ = os.WriteFile(tmrPath, tmr, 0o644)
	var stderr bytes.Buffer
	cmd := exec.Command(sa, "verify", svcPath, tmrPath)
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=warning")
	if err := cmd.Run(); err != nil || strings.Contains(stderr.String(), j.Label) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, stderr.String())
	}
	for _, w := range j.Schedule {
		out, err := exec.Command(sa, "calendar", w.OnCalendar()).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Normalized form: "+w.OnCalendar()) {
			t.Errorf("calendar %q: %v\n%s", w.OnCalendar(), err, out)
		}
	}
}

// fakeSystemctl records argv and answers `show` from a small state.
type fakeSystemctl struct {
	callLog
	loaded bool
	active string // service ActiveState
	// noBus answers every call as systemctl does with no user bus.
	noBus bool
	// fail makes a subcommand fail.
	fail map[string]bool
}

func (f *fakeSystemctl) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	argv := append([]string{name}, args...)
	f.calls = append(f.calls, argv)
	if f.noBus {
		out := []byte("Failed to connect to bus: No medium found\n")
		return out, &CommandError{Argv: argv, Output: out, ExitCode: 1, Err: errors.New("exit status 1")}
	}
	if len(args) > 1 && f.fail[args[1]] {
		out := []byte("Failed to enable unit: Unit file " + args[len(args)-1] + " is masked.\n")
		return out, &CommandError{Argv: argv, Output: out, ExitCode: 1, Err: errors.New("exit status 1")}
	}
	if len(args) > 2 && args[1] == "show" && strings.HasPrefix(args[2], "--property=") {
		return []byte("Version=252.30\n"), nil // the manager itself
	}
	if len(args) > 1 && args[1] == "show" {
		load := "not-found"
		if f.loaded {
			load = "loaded"
		}
		if strings.HasSuffix(args[2], ".timer") {
			return []byte("LoadState=" + load + "\nActiveState=active\nNextElapseUSecRealtime=Mon 2026-12-07 03:00:00 UTC\n"), nil
		}
		active := f.active
		if active == "" {
			active = "inactive"
		}
		return []byte("LoadState=" + load + "\nActiveState=" + active + "\nSubState=dead\nExecMainPID=0\nExecMainStatus=1\nExecMainExitTimestamp=Mon 2026-11-30 03:05:12 UTC\n"), nil
	}
	if len(args) > 1 && (args[1] == "enable" || args[1] == "daemon-reload") {
		f.loaded = true
	}
	return nil, nil
}

func sc(args ...string) []string { return append([]string{"systemctl", "--user"}, args...) }

func TestSystemdInstallUninstall(t *testing.T) {
	e := newLaunchdEnv(t) // for the home, binary and scenario
	fake := &fakeSystemctl{}
	d, err := NewSystemd(WithRunner(fake.run), WithHome(e.home), WithConfigDir(filepath.Join(e.home, ".config")),
		WithClock(func() time.Time { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC) }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := d.Install(ctx, e.job(), InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svcPath := filepath.Join(e.home, ".config", "systemd", "user", "dev.rehearse.weekly.service")
	tmrPath := filepath.Join(e.home, ".config", "systemd", "user", "dev.rehearse.weekly.timer")
	if !reflect.DeepEqual(res.Files, []string{svcPath, tmrPath}) || !res.Changed {
		t.Errorf("result %+v", res)
	}
	want := [][]string{sc("show", "--property=Version"), sc("daemon-reload"), sc("enable", "--now", "dev.rehearse.weekly.timer")}
	if got := fake.takeCalls(); !reflect.DeepEqual(got, want) {
		t.Errorf("argv:\n got %q\nwant %q", got, want)
	}
	svc, tmr := res.Job.SystemdUnits()
	if got, _ := os.ReadFile(svcPath); !bytes.Equal(got, svc) {
		t.Error("service file differs from the rendered unit")
	}
	if got, _ := os.ReadFile(tmrPath); !bytes.Equal(got, tmr) {
		t.Error("timer file differs from the rendered unit")
	}

	// Same job again: no rewrite; reload and (re-)enable the timer.
	if res, err = d.Install(ctx, e.job(), InstallOptions{}); err != nil || res.Changed {
		t.Fatalf("reinstall %+v %v", res, err)
	}
	if got := fake.takeCalls(); !reflect.DeepEqual(got, want) {
		t.Errorf("reinstall argv %q", got)
	}

	// A different job is refused, with the keys that differ.
	other := e.job()
	other.Schedule = []When{{Daily: true, Hour: 1}}
	_, err = d.Install(ctx, other, InstallOptions{})
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "dev.rehearse.weekly.timer differs in OnCalendar") {
		t.Fatalf("different job: %v", err)
	}
	if len(fake.takeCalls()) != 0 {
		t.Error("refused install ran systemctl")
	}
	if res, err = d.Install(ctx, other, InstallOptions{Force: true}); err != nil || !res.Replaced {
		t.Fatalf("force %+v %v", res, err)
	}
	if got := fake.takeCalls(); !reflect.DeepEqual(got, want) {
		t.Errorf("force argv %q", got)
	}

	st, err := d.Status(ctx, "dev.rehearse.weekly")
	if err != nil {
		t.Fatal(err)
	}
	wantShow := [][]string{
		sc("show", "dev.rehearse.weekly.timer", "--property=LoadState,ActiveState,NextElapseUSecRealtime"),
		sc("show", "dev.rehearse.weekly.service", "--property=LoadState,ActiveState,SubState,ExecMainPID,ExecMainStatus,ExecMainExitTimestamp"),
	}
	if got := fake.takeCalls(); !reflect.DeepEqual(got, wantShow) {
		t.Errorf("status argv %q", got)
	}
	if !st.Installed || !st.Loaded || st.LastExit != "1" || st.NextRunText != "Mon 2026-12-07 03:00:00 UTC" ||
		!reflect.DeepEqual(st.Schedule, other.Schedule) || st.Archive != res.Job.Archive || st.State != "timer active, service inactive (dead)" {
		t.Errorf("status %+v", st)
	}

	if err := d.Kickstart(ctx, "dev.rehearse.weekly", false); err != nil {
		t.Fatal(err)
	}
	if got := fake.takeCalls(); !reflect.DeepEqual(got[1], sc("start", "--no-block", "dev.rehearse.weekly.service")) {
		t.Errorf("kickstart argv %q", got)
	}
	fake.active = "activating"
	if err := d.Kickstart(ctx, "dev.rehearse.weekly", false); !errors.Is(err, ErrRunning) {
		t.Errorf("kickstart while running: %v", err)
	}
	fake.takeCalls()
	if err := d.Kickstart(ctx, "dev.rehearse.weekly", true); err != nil {
		t.Fatal(err)
	}
	if got := fake.takeCalls(); !reflect.DeepEqual(got[1], sc("restart", "--no-block", "dev.rehearse.weekly.service")) {
		t.Errorf("restart argv %q", got)
	}

	done, err := d.Uninstall(ctx, "dev.rehearse.weekly")
	if err != nil || !done {
		t.Fatalf("uninstall %v %v", done, err)
	}
	wantUn := [][]string{sc("disable", "--now", "dev.rehearse.weekly.timer"), sc("daemon-reload")}
	if got := fake.takeCalls(); !reflect.DeepEqual(got, wantUn) {
		t.Errorf("uninstall argv %q", got)
	}
	for _, p := range []string{svcPath, tmrPath} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not removed", p)
		}
	}
	if done, err := d.Uninstall(ctx, "dev.rehearse.weekly"); done || err != nil || len(fake.takeCalls()) != 0 {
		t.Errorf("second uninstall %v %v", done, err)
	}
	fake.loaded = false
	if _, err := d.Status(ctx, "dev.rehearse.weekly"); !errors.Is(err, ErrNotInstalled) || !errors.Is(err, rehearse.ErrInvalid) {
		t.Errorf("status after uninstall: %v", err)
	}
}

func TestSystemdMissingSystemctl(t *testing.T) {
	run := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return ExecRunner(ctx, "rehearse-no-such-systemctl", args...)
	}
	e := newLaunchdEnv(t)
	d, err := NewSystemd(WithRunner(run), WithHome(e.home), WithConfigDir(filepath.Join(e.home, ".config")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Install(context.Background(), e.job(), InstallOptions{})
	if !errors.Is(err, rehearse.ErrEnvironment) || !strings.Contains(err.Error(), `on macOS use "rehearse launchd"`) {
		t.Errorf("error %v", err)
	}
}

func FuzzSplitExec(f *testing.F) {
	f.Add("/usr/bin/rehearse run \"/a b/c.yaml\" --archive 100%%")
	f.Add(`"\"x\\y\n"`)
	f.Fuzz(func(t *testing.T, s string) {
		words := splitExec(s)
		// What we quote, we read back.
		for _, w := range words {
			if got := splitExec(quoteUnit(w, true)); len(got) != 1 || got[0] != w {
				t.Fatalf("word %q quotes to %s, reads back %q", w, quoteUnit(w, true), got)
			}
		}
	})
}
