package launchd

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/halfopen/rehearse"
)

func TestExecRunner(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("sh not installed: ", err)
	}
	ctx := context.Background()
	out, err := ExecRunner(ctx, sh, "-c", "echo hello")
	if err != nil || string(out) != "hello\n" {
		t.Fatalf("out %q err %v", out, err)
	}
	out, err = ExecRunner(ctx, sh, "-c", "echo Could not find service >&2; exit 113")
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 113 || !strings.Contains(string(out), "Could not find service") {
		t.Fatalf("failing command: %v", err)
	}
	if !errors.Is(err, rehearse.ErrEnvironment) || !strings.Contains(err.Error(), "-c echo Could not find service") || !strings.Contains(err.Error(), ": Could not find service") {
		t.Errorf("error text %q", err)
	}
	_, err = ExecRunner(ctx, "rehearse-no-such-command")
	if !errors.As(err, &ce) || ce.ExitCode != -1 {
		t.Errorf("missing command: %v", err)
	}
}
