//go:build !darwin

package launchd

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

// Without launchd, the launchctl operations fail clearly, before writing
// anything, and point to print and to systemd.
func TestUnsupportedWithoutLaunchd(t *testing.T) {
	home := t.TempDir()
	m, err := New(WithHome(home))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	j := Job{Binary: "/bin/sh", Scenario: "/etc/hostname", Schedule: []When{{Weekday: time.Monday, Hour: 3}}}
	_, err = m.Install(ctx, j, InstallOptions{})
	for _, e := range []error{
		err,
		func() error { _, err := m.Uninstall(ctx, "dev.rehearse.x"); return err }(),
		func() error { _, err := m.Status(ctx, "dev.rehearse.x"); return err }(),
		m.Kickstart(ctx, "dev.rehearse.x", false),
	} {
		if !errors.Is(e, ErrUnsupported) || !errors.Is(e, rehearse.ErrEnvironment) {
			t.Errorf("error %v, want ErrUnsupported", e)
			continue
		}
		if !strings.Contains(e.Error(), "rehearse launchd print") || !strings.Contains(e.Error(), "rehearse systemd") {
			t.Errorf("error %q does not point to print and systemd", e)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("unsupported install wrote %d entries in HOME", len(entries))
	}
}
