package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse/launchd"
)

// TestSchedulerLabelCommands drives uninstall, status and kickstart of
// both schedulers through the command line with a fake runner, and checks
// the exact launchctl/systemctl calls, including launchd's --domain.
func TestSchedulerLabelCommands(t *testing.T) {
	home, scenario, bin := scenarioFile(t)
	rec := &recorder{}
	launchdCmd := func() *cobra.Command {
		return newLaunchdCmd(launchd.WithRunner(rec.run), launchd.WithHome(home), launchd.WithUID(501))
	}
	if _, errOut, code := executeWith(t, []*cobra.Command{launchdCmd()}, "launchd", "install", "--scenario", scenario,
		"--weekly", "Mon 03:00", "--binary", bin, "--domain", "user"); code != 0 {
		t.Fatalf("install: exit %d: %s", code, errOut)
	}
	rec.calls = nil
	out, errOut, code := executeWith(t, []*cobra.Command{launchdCmd()}, "launchd", "kickstart", "--scenario", scenario, "--domain", "user")
	if code != 0 || !strings.Contains(out, "started dev.rehearse.weekly") {
		t.Fatalf("kickstart: exit %d: %s%s", code, out, errOut)
	}
	if got := strings.Join(rec.calls, "\n"); !strings.Contains(got, "launchctl kickstart -k user/501/dev.rehearse.weekly") {
		t.Errorf("kickstart argv:\n%s", got)
	}
	rec.calls = nil
	if _, errOut, code = executeWith(t, []*cobra.Command{launchdCmd()}, "launchd", "uninstall", "--label", "dev.rehearse.weekly", "--domain", "user"); code != 0 {
		t.Fatalf("uninstall: exit %d: %s", code, errOut)
	}
	if got := strings.Join(rec.calls, "\n"); !strings.Contains(got, "launchctl bootout user/501/dev.rehearse.weekly") {
		t.Errorf("uninstall argv:\n%s", got)
	}
	if _, errOut, code = executeWith(t, []*cobra.Command{launchdCmd()}, "launchd", "status", "--label", "x", "--scenario", scenario); code != 2 || !strings.Contains(errOut, "not both") {
		t.Errorf("status with --label and --scenario: exit %d: %s", code, errOut)
	}

	srec := &recorder{}
	systemdCmd := func() *cobra.Command {
		return newSystemdCmd(launchd.WithRunner(srec.run), launchd.WithHome(home))
	}
	if _, errOut, code = executeWith(t, []*cobra.Command{systemdCmd()}, "systemd", "install", "--scenario", scenario,
		"--weekly", "Mon 03:00", "--binary", bin); code != 0 {
		t.Fatalf("systemd install: exit %d: %s", code, errOut)
	}
	// The fake runner reports nothing loaded: kickstart says so plainly.
	_, errOut, code = executeWith(t, []*cobra.Command{systemdCmd()}, "systemd", "kickstart", "--scenario", scenario)
	if code != 2 || !strings.Contains(errOut, `run "rehearse systemd install" first`) {
		t.Errorf("systemd kickstart of an unloaded unit: exit %d: %s", code, errOut)
	}
	srec.calls = nil
	out, errOut, code = executeWith(t, []*cobra.Command{systemdCmd()}, "systemd", "uninstall", "--scenario", scenario)
	if code != 0 || !strings.Contains(out, "uninstalled dev.rehearse.weekly") {
		t.Fatalf("systemd uninstall: exit %d: %s%s", code, out, errOut)
	}
	if got := strings.Join(srec.calls, "\n"); !strings.Contains(got, "systemctl --user disable --now dev.rehearse.weekly.timer") {
		t.Errorf("systemd uninstall argv:\n%s", got)
	}
	if _, _, code = executeWith(t, []*cobra.Command{systemdCmd()}, "systemd", "uninstall", "--scenario", scenario, "--domain", "user"); code != 2 {
		t.Errorf("systemd has no --domain: exit %d, want 2", code)
	}
}
