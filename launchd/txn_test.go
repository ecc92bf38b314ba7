package launchd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

// leftBehind lists what exists under home besides the binary and the
// scenario the test environment made: what an install left there.
func leftBehind(t *testing.T, e *launchdEnv) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(e.home, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch p {
		case e.home, e.bin, e.scenario, filepath.Dir(e.bin), filepath.Dir(e.scenario):
			return nil
		}
		out = append(out, strings.TrimPrefix(p, e.home+string(filepath.Separator)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestInstallUnreachableDomainWritesNothing: with no gui domain (nobody
// logged in at the screen), install says so and what to do before it
// writes anything.
func TestInstallUnreachableDomainWritesNothing(t *testing.T) {
	e := newLaunchdEnv(t)
	e.fake.noDomain = true
	_, err := e.m.Install(context.Background(), e.job(), InstallOptions{})
	if !errors.Is(err, ErrUnreachable) || rehearse.ExitCode(err) != rehearse.ExitEnvironment {
		t.Fatalf("error = %v, want ErrUnreachable, exit 3", err)
	}
	for _, want := range []string{"launchd has no domain gui/501", "logged in at the Mac's screen", "--domain user", "nothing was installed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %v", want, err)
		}
	}
	if left := leftBehind(t, e); len(left) > 0 {
		t.Errorf("a refused install left %q", left)
	}
	if calls := e.fake.takeCalls(); len(calls) != 1 {
		t.Errorf("launchctl ran %q; want the domain's print only", calls)
	}
}

// TestInstallFailureLeavesNothing: whichever launchctl step refuses the
// agent, the plist, the archive's log directory and every directory the
// install created are gone again.
func TestInstallFailureLeavesNothing(t *testing.T) {
	for _, step := range []string{"enable", "bootstrap"} {
		t.Run(step, func(t *testing.T) {
			e := newLaunchdEnv(t)
			e.fake.fail[step] = errors.New("exit status 5")
			_, err := e.m.Install(context.Background(), e.job(), InstallOptions{})
			if !errors.Is(err, rehearse.ErrEnvironment) || !strings.Contains(err.Error(), "(nothing was installed)") {
				t.Fatalf("error = %v", err)
			}
			if left := leftBehind(t, e); len(left) > 0 {
				t.Errorf("a failed install left %q", left)
			}
			entries, err := e.m.List()
			if err != nil || len(entries) != 0 {
				t.Errorf("list after a failed install: %v %v", entries, err)
			}
		})
	}
}

// TestForcedInstallFailurePutsTheOldAgentBack: a --force install that
// launchd refuses leaves the agent it replaced, written and loaded, as it
// was.
func TestForcedInstallFailurePutsTheOldAgentBack(t *testing.T) {
	e := newLaunchdEnv(t)
	ctx := context.Background()
	e.install(t)
	path := e.m.PlistPath("dev.rehearse.weekly")
	old, _ := os.ReadFile(path)
	e.fake.takeCalls()

	other := e.job()
	other.Schedule = []When{{Weekday: time.Friday, Hour: 22}}
	e.fake.fail["bootstrap"] = errors.New("exit status 5")
	e.fake.failOnce = true
	_, err := e.m.Install(ctx, other, InstallOptions{Force: true})
	if err == nil || !strings.Contains(err.Error(), "the previous files were put back") {
		t.Fatalf("error = %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(old) {
		t.Errorf("the replaced plist was not put back:\n%s", got)
	}
	calls := e.fake.takeCalls()
	if last := calls[len(calls)-1]; last[1] != "bootstrap" || last[3] != path {
		t.Errorf("the replaced agent was not loaded again: %q", calls)
	}
	if !e.fake.loaded["gui/501/dev.rehearse.weekly"] {
		t.Error("the replaced agent is not loaded")
	}
}

// TestUninstallBootoutFailureRemovesThePlist: when launchd refuses the
// bootout, uninstall still removes the plist and says the agent could not
// be unloaded.
func TestUninstallBootoutFailureRemovesThePlist(t *testing.T) {
	e := newLaunchdEnv(t)
	e.install(t)
	e.fake.fail["bootout"] = errors.New("exit status 5")
	done, err := e.m.Uninstall(context.Background(), "dev.rehearse.weekly")
	if !done || !errors.Is(err, ErrNotStopped) || !strings.Contains(err.Error(), "launchctl bootout gui/501/dev.rehearse.weekly") {
		t.Fatalf("uninstall = %v, %v", done, err)
	}
	if _, err := os.Stat(e.m.PlistPath("dev.rehearse.weekly")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plist left: %v", err)
	}
}

// systemdEnv is a Systemd on a fake systemctl, in a fresh home.
func systemdEnv(t *testing.T, fake *fakeSystemctl) (*launchdEnv, *Systemd) {
	t.Helper()
	e := newLaunchdEnv(t)
	d, err := NewSystemd(WithRunner(fake.run), WithHome(e.home), WithConfigDir(filepath.Join(e.home, ".config")))
	if err != nil {
		t.Fatal(err)
	}
	return e, d
}

// TestSystemdNoBusWritesNothing: on a machine with no user bus, install
// says what is missing and what to do, and writes no unit (list shows
// nothing scheduled).
func TestSystemdNoBusWritesNothing(t *testing.T) {
	fake := &fakeSystemctl{noBus: true}
	e, d := systemdEnv(t, fake)
	_, err := d.Install(context.Background(), e.job(), InstallOptions{})
	if !errors.Is(err, ErrUnreachable) || rehearse.ExitCode(err) != rehearse.ExitEnvironment {
		t.Fatalf("error = %v, want ErrUnreachable, exit 3", err)
	}
	for _, want := range []string{"no systemd user manager for this user", "Failed to connect to bus", "loginctl enable-linger", "XDG_RUNTIME_DIR=/run/user/", "nothing was installed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %v", want, err)
		}
	}
	if left := leftBehind(t, e); len(left) > 0 {
		t.Errorf("an install with no bus left %q", left)
	}
	if calls := fake.takeCalls(); len(calls) != 1 {
		t.Errorf("systemctl ran %q; want one reachability check", calls)
	}
	if entries, err := d.List(); err != nil || len(entries) != 0 {
		t.Errorf("list: %v %v", entries, err)
	}
}

// TestSystemdFailureRollsBack: a failed enable removes new units (and
// what the install created) or puts replaced ones back, and reloads.
func TestSystemdFailureRollsBack(t *testing.T) {
	fake := &fakeSystemctl{fail: map[string]bool{"enable": true}}
	e, d := systemdEnv(t, fake)
	ctx := context.Background()
	_, err := d.Install(ctx, e.job(), InstallOptions{})
	if err == nil || !strings.Contains(err.Error(), "is masked") || !strings.Contains(err.Error(), "(nothing was installed)") {
		t.Fatalf("error = %v", err)
	}
	if left := leftBehind(t, e); len(left) > 0 {
		t.Errorf("a failed install left %q", left)
	}
	calls := fake.takeCalls()
	if last := calls[len(calls)-1]; last[2] != "daemon-reload" {
		t.Errorf("no reload after the rollback: %q", calls)
	}

	fake.fail = nil
	res, err := d.Install(ctx, e.job(), InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svcPath, tmrPath := d.UnitPaths(res.Job.Label)
	oldSvc, _ := os.ReadFile(svcPath)
	oldTmr, _ := os.ReadFile(tmrPath)
	other := e.job()
	other.Schedule = []When{{Daily: true, Hour: 1}}
	fake.fail = map[string]bool{"enable": true}
	_, err = d.Install(ctx, other, InstallOptions{Force: true})
	if err == nil || !strings.Contains(err.Error(), "the previous files were put back") {
		t.Fatalf("forced install: %v", err)
	}
	if svc, _ := os.ReadFile(svcPath); string(svc) != string(oldSvc) {
		t.Error("the replaced service was not put back")
	}
	if tmr, _ := os.ReadFile(tmrPath); string(tmr) != string(oldTmr) {
		t.Error("the replaced timer was not put back")
	}
}

// TestSystemdUninstallNoBus: uninstall removes the units even when the
// user manager cannot be reached, and says the timer was not stopped.
func TestSystemdUninstallNoBus(t *testing.T) {
	fake := &fakeSystemctl{}
	e, d := systemdEnv(t, fake)
	ctx := context.Background()
	if _, err := d.Install(ctx, e.job(), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	fake.noBus = true
	done, err := d.Uninstall(ctx, "dev.rehearse.weekly")
	if !done || !errors.Is(err, ErrNotStopped) || !strings.Contains(err.Error(), "the timer could not be stopped") ||
		!strings.Contains(err.Error(), "loginctl enable-linger") {
		t.Fatalf("uninstall = %v, %v", done, err)
	}
	svcPath, tmrPath := d.UnitPaths("dev.rehearse.weekly")
	for _, p := range []string{svcPath, tmrPath} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	if done, err := d.Uninstall(ctx, "dev.rehearse.weekly"); done || err != nil {
		t.Errorf("second uninstall: %v %v", done, err)
	}
}

// TestSystemdRealNoBus runs the real systemctl where it cannot reach a
// user manager (a container, su without a session): the install is
// refused before anything is written.
func TestSystemdRealNoBus(t *testing.T) {
	if _, err := exec.LookPath(systemctlName); err != nil {
		t.Skip("systemctl not installed: ", err)
	}
	out, err := exec.Command(systemctlName, "--user", "show", "--property=Version").CombinedOutput()
	if err == nil || !noUserBus(out) {
		t.Skipf("systemctl --user reaches a user manager here (%v: %s); this checks the machine without one", err, out)
	}
	e := newLaunchdEnv(t)
	d, err := NewSystemd(WithHome(e.home), WithConfigDir(filepath.Join(e.home, ".config")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Install(context.Background(), e.job(), InstallOptions{})
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "loginctl enable-linger") {
		t.Fatalf("error = %v", err)
	}
	if left := leftBehind(t, e); len(left) > 0 {
		t.Errorf("left %q", left)
	}
}
