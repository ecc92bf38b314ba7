package rehearsal

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/scenarios"
)

// compress shortens a drill's timeline by factor so that every built-in
// drill can run end to end in a test. The gateway's own timings (cooldown,
// window) are not scaled, so the expectations are not asserted here: the
// drill's full-length run is what judges a gateway.
func compress(sc *scenarios.Scenario, factor int) {
	scale := func(d rehearse.Duration) rehearse.Duration { return d / rehearse.Duration(factor) }
	sc.Replay.Duration = scale(sc.Replay.Duration)
	for i := range sc.Faults {
		sc.Faults[i].At = scale(sc.Faults[i].At)
		sc.Faults[i].For = scale(sc.Faults[i].For)
	}
}

// TestEveryDrillRuns runs each built-in drill, compressed 40 times, against
// the built-in gateway, and checks the run directory is complete.
func TestEveryDrillRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every drill (about a minute); skipped with -short")
	}
	for _, d := range scenarios.Drills() {
		t.Run(d.Name, func(t *testing.T) {
			sc, err := scenarios.Builtin(d.Name)
			if err != nil {
				t.Fatal(err)
			}
			if b := sc.Gateway.Builtin; b != nil && b.Redis == "auto" {
				if _, err := exec.LookPath("redis-server"); err != nil {
					t.Skip("redis-server not installed (apt-get install redis-server): the fleet drill needs a real Redis")
				}
			}
			compress(sc, 40)
			if err := sc.Validate(); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), d.Name)
			start := time.Now()
			res, err := Run(context.Background(), sc, Options{OutDir: dir})
			if err != nil && !errors.Is(err, rehearse.ErrExpectations) {
				t.Fatalf("run: %v", err)
			}
			events := checkRunDir(t, dir)
			if count(events, journal.KindClientRequest) == 0 || count(events, journal.KindUpstreamRequest) == 0 {
				t.Error("no traffic recorded")
			}
			if count(events, journal.KindFaultStart) != len(sc.Faults) {
				t.Errorf("fault windows: %d started, %d planned", count(events, journal.KindFaultStart), len(sc.Faults))
			}
			if res.Partial {
				t.Error("run marked partial")
			}
			t.Logf("%s: %d events in %s", d.Name, len(events), time.Since(start).Round(time.Millisecond))
		})
	}
}
