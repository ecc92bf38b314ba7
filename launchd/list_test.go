package launchd

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestList(t *testing.T) {
	e := newLaunchdEnv(t)
	ctx := context.Background()
	j := e.job()
	j.Caffeinate = true
	if _, err := e.m.Install(ctx, j, InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	j2 := e.job()
	j2.Label = "com.example.drill"
	j2.Schedule = []When{{Daily: true, Hour: 4}}
	if _, err := e.m.Install(ctx, j2, InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	// Agents that are not rehearsals, and junk, are not listed.
	dir := filepath.Dir(e.m.PlistPath("x"))
	other, _ := Plist{Label: "com.example.backup", ProgramArguments: []string{"/usr/bin/rsync", "-a"}}.Render()
	_ = os.WriteFile(filepath.Join(dir, "com.example.backup.plist"), other, 0o644)
	_ = os.WriteFile(filepath.Join(dir, "broken.plist"), []byte("<plist"), 0o644)

	got, err := e.m.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Label != "com.example.drill" || got[1].Label != "dev.rehearse.weekly" ||
		got[1].Scenario != e.scenario || !reflect.DeepEqual(got[0].Schedule, j2.Schedule) || got[1].Archive == "" {
		t.Fatalf("List = %+v", got)
	}
	var b strings.Builder
	_ = FormatEntries(&b, got)
	if !strings.Contains(b.String(), "dev.rehearse.weekly") || !strings.Contains(b.String(), "daily 04:00") {
		t.Errorf("format:\n%s", b.String())
	}

	d, err := NewSystemd(WithRunner((&fakeSystemctl{}).run), WithHome(e.home), WithConfigDir(filepath.Join(e.home, ".config")))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := d.List(); err != nil || len(got) != 0 {
		t.Fatalf("empty systemd List = %v, %v", got, err)
	}
	if _, err := d.Install(ctx, e.job(), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = d.List()
	if err != nil || len(got) != 1 || got[0].Label != "dev.rehearse.weekly" || got[0].Scenario != e.scenario ||
		!reflect.DeepEqual(got[0].Schedule, []When{{Weekday: time.Monday, Hour: 3}}) {
		t.Fatalf("systemd List = %+v, %v", got, err)
	}
}
