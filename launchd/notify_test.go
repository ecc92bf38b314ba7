package launchd

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/halfopen/rehearse"
)

// TestJobNotify: a job with a webhook passes it to every run, in the
// plist and in the systemd unit, and the file holding it is owner-only.
func TestJobNotify(t *testing.T) {
	const hook = "https://hooks.slack.com/services/T0/B0/secret"
	j := weeklyJob()
	j.Notify = hook
	r := resolve(t, j)
	args := r.Plist().ProgramArguments
	if i := slices.Index(args, "--notify"); i < 0 || i+1 >= len(args) || args[i+1] != hook {
		t.Errorf("plist ProgramArguments lack --notify URL: %q", args)
	}
	svc, _ := r.SystemdUnits()
	if !strings.Contains(string(svc), "--notify "+hook) {
		t.Errorf("systemd ExecStart lacks --notify:\n%s", svc)
	}
	if filePerm(r) != 0o600 {
		t.Error("a job holding a webhook URL must be owner-only")
	}
	if slices.Contains(resolve(t, weeklyJob()).Args(), "--notify") {
		t.Error("--notify without a webhook")
	}
	j.Notify = "hooks.slack.com/services/T0/B0/secret"
	if _, err := j.Resolve("/home/ci"); !errors.Is(err, rehearse.ErrInvalid) || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad webhook URL: %v", err)
	}
}

func TestSystemdInstallNotifyIsOwnerOnly(t *testing.T) {
	e := newLaunchdEnv(t)
	fake := &fakeSystemctl{}
	d, err := NewSystemd(WithRunner(fake.run), WithHome(e.home), WithConfigDir(filepath.Join(e.home, ".config")))
	if err != nil {
		t.Fatal(err)
	}
	j := e.job()
	j.Notify = "https://hooks.example/T0/secret"
	res, err := d.Install(t.Context(), j, InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(res.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s is %v, want 0600 (it holds the webhook URL)", res.Files[0], fi.Mode().Perm())
	}
}
