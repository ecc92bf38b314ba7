package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/launchd"
)

// unobservablePlans are scenarios that can only fail, each with the
// start of its error (file:line:col: key) and, for the scheduling
// commands, the --run-arg extras that make it so.
func unobservablePlans(t *testing.T, dir string) []struct {
	name, file, want string
	runArgs          []string
} {
	gw := "http://" + testutil.FreeAddr(t)
	fixed := testutil.FreeAddr(t)
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	storm := write("storm.yaml", "replay: {duration: 2m}\nfaults: [{type: status, upstream: search, at: 10s, for: 40s}]\nexpectations: {closes_within: 30s}\n")
	return []struct {
		name, file, want string
		runArgs          []string
	}{
		{"typo", write("typo.yaml", "replay:\n  rat: 10\n"), "typo.yaml:2:3: replay.rat: unknown field", nil},
		{"metrics", write("metrics.yaml", "gateway: {url: \""+gw+"\"}\nupstreams: [{name: search, listen: \""+fixed+"\"}]\nexpectations: {metrics_lag_max: 15s}\n"),
			"metrics.yaml:3:33: expectations.metrics_lag_max: cannot be observed", nil},
		{"fault-outlasts", write("late.yaml", "replay: {duration: 1m}\nfaults: [{type: status, upstream: search, at: 10s}]\nexpectations: {successes_to_close_min: 1}\n"),
			"late.yaml:3:40: expectations.successes_to_close_min: cannot be observed", nil},
		{"duration-flag", storm, "storm.yaml:3:31: expectations.closes_within: cannot be observed: it needs the breaker to close after the fault ends, and the replay ends at 45s (--duration 45s)",
			[]string{"--duration", "45s"}},
		{"random-ports", write("ports.yaml", "gateway: {url: \""+gw+"\"}\nupstreams: [{name: search}]\n"),
			"ports.yaml:2:13: upstreams[0]: the gateway under test (gateway.url) is configured outside rehearse", nil},
		{"bad-run-arg", storm, "--rate", []string{"--rate", "fast"}},
		{"dry-run-arg", storm, "--run-arg=--dry-run: a scheduled rehearsal would run nothing", []string{"--dry-run"}},
	}
}

// countingRunner counts the launchctl and systemctl calls, answering as a
// scheduler that has everything.
type countingRunner struct {
	mu    sync.Mutex
	calls []string
}

func (c *countingRunner) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, name+" "+strings.Join(args, " "))
	return nil, nil
}

// TestSchedulingRefusesWhatValidateRefuses: launchd and systemd print and
// install refuse, with exit 2 and the file:line:col, every plan validate
// and run --dry-run refuse — with the flags the scheduled run will have —
// before anything is written or launchctl/systemctl runs.
func TestSchedulingRefusesWhatValidateRefuses(t *testing.T) {
	home := t.TempDir()
	bin := filepath.Join(home, "bin", "rehearse")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "drills")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range unobservablePlans(t, dir) {
		t.Run(p.name, func(t *testing.T) {
			if p.runArgs == nil {
				for _, cmd := range [][]string{{"validate", p.file}, {"run", p.file, "--dry-run"}} {
					_, errOut, code := executeWith(t, nil, cmd...)
					if code != 2 || !strings.Contains(errOut, p.want) {
						t.Errorf("%s: exit %d, want 2 and %q:\n%s", cmd[0], code, p.want, errOut)
					}
				}
			} else if p.name == "duration-flag" {
				_, errOut, code := executeWith(t, nil, append([]string{"run", p.file, "--dry-run"}, p.runArgs...)...)
				if code != 2 || !strings.Contains(errOut, p.want) {
					t.Errorf("run --dry-run %q: exit %d, want 2 and %q:\n%s", p.runArgs, code, p.want, errOut)
				}
			}
			for _, sched := range []string{"launchd", "systemd"} {
				for _, verb := range []string{"print", "install"} {
					rec := &countingRunner{}
					opts := []launchd.Option{launchd.WithRunner(rec.run), launchd.WithHome(home), launchd.WithUID(501),
						launchd.WithConfigDir(filepath.Join(home, ".config"))}
					cmd := newLaunchdCmd(opts...)
					if sched == "systemd" {
						cmd = newSystemdCmd(opts...)
					}
					args := []string{sched, verb, "--scenario", p.file, "--weekly", "Mon 03:00", "--binary", bin}
					for _, a := range p.runArgs {
						args = append(args, "--run-arg="+a)
					}
					out, errOut, code := executeWith(t, []*cobra.Command{cmd}, args...)
					if code != 2 || !strings.Contains(errOut, p.want) {
						t.Errorf("%s %s: exit %d, want 2 and %q:\n%s", sched, verb, code, p.want, errOut)
					}
					if out != "" {
						t.Errorf("%s %s printed for a refused plan:\n%s", sched, verb, out)
					}
					if len(rec.calls) > 0 {
						t.Errorf("%s %s ran %q for a refused plan", sched, verb, rec.calls)
					}
					for _, d := range []string{"Library", ".config", "rehearse"} {
						if _, err := os.Stat(filepath.Join(home, d)); !errors.Is(err, os.ErrNotExist) {
							t.Errorf("%s %s wrote ~/%s for a refused plan", sched, verb, d)
						}
					}
				}
			}
		})
	}
}

// noBus answers as systemctl does on a machine with no user bus.
func noBus(ctx context.Context, name string, args ...string) ([]byte, error) {
	out := []byte("Failed to connect to bus: No medium found\n")
	return out, &launchd.CommandError{Argv: append([]string{name}, args...), Output: out, ExitCode: 1, Err: errors.New("exit status 1")}
}

// TestSystemdWithoutUserBus: install says what is missing and what to do
// (exit 3) and leaves nothing scheduled; uninstall of units installed
// earlier removes them (exit 0) and says the timer could not be stopped.
func TestSystemdWithoutUserBus(t *testing.T) {
	home, scenario, bin := scenarioFile(t)
	config := filepath.Join(home, ".config")
	systemd := func(r launchd.Runner) *cobra.Command {
		return newSystemdCmd(launchd.WithRunner(r), launchd.WithHome(home), launchd.WithConfigDir(config))
	}
	_, errOut, code := executeWith(t, []*cobra.Command{systemd(noBus)}, "systemd", "install", "--scenario", scenario, "--weekly", "Mon 03:00", "--binary", bin)
	if code != 3 || !strings.Contains(errOut, "no systemd user manager for this user") || !strings.Contains(errOut, "loginctl enable-linger") ||
		!strings.Contains(errOut, "nothing was installed") {
		t.Errorf("install: exit %d, want 3 and the fix:\n%s", code, errOut)
	}
	for _, d := range []string{".config", "rehearse"} {
		if _, err := os.Stat(filepath.Join(home, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("install with no bus wrote ~/%s", d)
		}
	}
	out, _, code := executeWith(t, []*cobra.Command{systemd(noBus)}, "systemd", "list")
	if code != 0 || strings.Contains(out, "dev.rehearse.weekly") {
		t.Errorf("list after a refused install: exit %d\n%s", code, out)
	}

	rec := &countingRunner{}
	if _, errOut, code := executeWith(t, []*cobra.Command{systemd(rec.run)}, "systemd", "install", "--scenario", scenario, "--weekly", "Mon 03:00", "--binary", bin); code != 0 {
		t.Fatalf("install with a bus: exit %d: %s", code, errOut)
	}
	out, errOut, code = executeWith(t, []*cobra.Command{systemd(noBus)}, "systemd", "uninstall", "--scenario", scenario)
	if code != 0 || !strings.Contains(out, "uninstalled dev.rehearse.weekly") || !strings.Contains(out, "the timer could not be stopped") {
		t.Errorf("uninstall with no bus: exit %d\n%s%s", code, out, errOut)
	}
	if entries, _ := os.ReadDir(filepath.Join(config, "systemd", "user")); len(entries) != 0 {
		t.Errorf("uninstall with no bus left %d unit files", len(entries))
	}
}
