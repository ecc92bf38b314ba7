package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/halfopen/rehearse"
)

// execute runs the command tree in-process and returns stdout, stderr and
// the exit code the process would have.
func execute(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCmd(&out, &errb)
	root.SetArgs(args)
	err := executeRoot(context.Background(), root)
	return out.String(), errb.String(), rehearse.ExitCode(err)
}

// executeErr runs the command tree in-process and returns stdout and the
// error main would print and map to the exit code.
func executeErr(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCmd(&out, &errb)
	root.SetArgs(args)
	err = executeRoot(context.Background(), root)
	return out.String(), err
}

func TestHelp(t *testing.T) {
	out, _, code := execute(t, "--help")
	if code != 0 || !strings.Contains(out, "circuit breakers") || !strings.Contains(out, "Examples:") {
		t.Fatalf("code %d, help:\n%s", code, out)
	}
}

func TestVersion(t *testing.T) {
	out, _, code := execute(t, "version")
	if code != 0 || !strings.HasPrefix(out, "rehearse ") {
		t.Fatalf("code %d out %q", code, out)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"version", "extra"},
		{"--log-level", "loud", "version"},
	} {
		if _, _, code := execute(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestCompletion(t *testing.T) {
	out, _, code := execute(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Fatalf("code %d", code)
	}
}

// TestTyposAreUsageErrors: a mistyped command or subcommand fails with
// exit 2 and a suggestion, never help and exit 0 (a typo must fail in CI).
func TestTyposAreUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "rehearse"`},
		{[]string{"rnu", "weekly"}, "did you mean run?"},
		{[]string{"report", "rendr", "x"}, `unknown command "rendr" for "rehearse report"; did you mean render?`},
		{[]string{"scenarios", "frob"}, `unknown command "frob" for "rehearse scenarios"`},
		{[]string{"launchd", "instal"}, "did you mean install?"},
	} {
		_, errOut, code := executeWith(t, nil, tt.args...)
		if code != rehearse.ExitInvalid || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
	// A group command alone still shows its help.
	if out, _, code := execute(t, "report"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("report alone: exit %d\n%s", code, out)
	}
}

func TestScenariosInitToStdout(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	out, _, code := execute(t, "scenarios", "init", "503-storm", "-o", "-")
	if code != 0 || !strings.HasPrefix(out, "# yaml-language-server: $schema=") || !strings.Contains(out, "name: 503-storm") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("-o - wrote a file named -: %v", err)
	}
}

func TestInspectBuiltinCapture(t *testing.T) {
	out, _, code := execute(t, "inspect", "builtin:agent-gateway")
	if code != 0 || !strings.Contains(out, "/tools/") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, errOut, code := executeWith(t, nil, "inspect", "builtin:nope"); code != rehearse.ExitInvalid || !strings.Contains(errOut, "built-in captures: agent-gateway") {
		t.Fatalf("unknown built-in: exit %d %s", code, errOut)
	}
}

func TestPrintChecksTheScenario(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, cmd := range []string{"launchd", "systemd"} {
		_, errOut, code := executeWith(t, nil, cmd, "print", "--scenario", missing, "--weekly", "Mon 03:00")
		if code != rehearse.ExitInvalid || !strings.Contains(errOut, "no such file") {
			t.Errorf("%s print of a missing scenario: exit %d %s", cmd, code, errOut)
		}
	}
}
