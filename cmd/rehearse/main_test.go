package main

import (
	"bytes"
	"context"
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
	err := root.ExecuteContext(context.Background())
	return out.String(), errb.String(), rehearse.ExitCode(err)
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
