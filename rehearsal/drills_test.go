package rehearsal

import (
	"context"
	"encoding/xml"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/gateway"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/expect"
	"github.com/halfopen/rehearse/scenarios"
)

// compress shortens a drill's timeline by factor so that every built-in
// drill can run end to end in a test. The gateway's own timings (cooldown,
// window) are not scaled, so the expectations are not asserted on
// compressed runs: TestDrillVerdicts (make drills) runs every drill at its
// full length and asserts every expectation.
func compress(sc *scenarios.Scenario, factor int) {
	scale := func(d rehearse.Duration) rehearse.Duration { return d / rehearse.Duration(factor) }
	sc.Replay.Duration = scale(sc.Replay.Duration)
	for i := range sc.Faults {
		sc.Faults[i].At = scale(sc.Faults[i].At)
		sc.Faults[i].For = scale(sc.Faults[i].For)
	}
}

// builtinDrill returns the built-in drill name, and what the machine lacks
// to run it ("" when nothing): the fleet drill needs a real Redis.
func builtinDrill(t *testing.T, name string) (sc *scenarios.Scenario, missing string) {
	t.Helper()
	sc, err := scenarios.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	// The AI drills (ai-*) fix their providers' ports (127.0.0.1:9101,
	// 9102) for an external AI gateway's configuration to name. The
	// built-in gateway is given its upstreams' addresses by the harness,
	// so here they take free ports: make drills runs two drills at once,
	// and a fixed port may be taken on a shared machine.
	for i, u := range sc.Upstreams {
		if strings.HasPrefix(u.Listen, "127.0.0.1:") && !strings.HasSuffix(u.Listen, ":0") {
			sc.Upstreams[i].Listen = "127.0.0.1:0"
		}
	}
	if b := sc.Gateway.Builtin; b != nil && b.Redis == "auto" {
		if _, err := exec.LookPath("redis-server"); err != nil {
			missing = "redis-server not installed (apt-get install redis-server): the fleet drill needs a real Redis"
		}
	}
	return sc, missing
}

// TestEveryDrillRuns runs each built-in drill, compressed 40 times, against
// the built-in gateway, and checks the run directory is complete. The
// drills run side by side (as make drills runs them): each mostly waits
// on its replay's timers, takes free ports and writes its own directory,
// and what is checked here (a complete run directory) does not depend on
// timing; a run the machine stalled is skipped, not failed.
func TestEveryDrillRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every drill (about a minute); skipped with -short")
	}
	t.Parallel()
	for _, d := range scenarios.Drills() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			sc, missing := builtinDrill(t, d.Name)
			if missing != "" {
				t.Skip(missing)
			}
			compress(sc, 40)
			if err := sc.Validate(); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), d.Name)
			start := time.Now()
			res, err := Run(context.Background(), sc, Options{OutDir: dir})
			skipIfStalled(t, res, err)
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

// drillsEnv names the directory make drills keeps the run directories in;
// TestDrillVerdicts runs only when it is set.
const drillsEnv = "REHEARSE_DRILLS_OUT"

// TestDrillVerdicts runs every built-in drill at its full length against
// the built-in gateway, two at a time (go test -parallel 2), and fails for
// every expectation that is not met, with its message. It is `make drills`
// (about 25 minutes of run time, half that two at a time) and runs in CI
// after make test; plain go test skips it. The weekly drill is the one
// `make rehearse` runs, so its verdict is checked here too; retry-storm
// runs a second time on the naive gateway, which must fail every one of
// its expectations.
func TestDrillVerdicts(t *testing.T) {
	root := os.Getenv(drillsEnv)
	if root == "" {
		t.Skip("full-length drills (about 25 minutes of run time): run them with make drills")
	}
	for _, d := range scenarios.Drills() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			sc, missing := builtinDrill(t, d.Name)
			if missing != "" {
				// make drills judges every drill: a missing tool is a failure, not a skip.
				t.Fatal(missing)
			}
			if sc.Expectations.IsZero() {
				t.Fatal("the drill sets no expectations: it cannot judge a gateway")
			}
			dir := filepath.Join(root, d.Name)
			// Warnings and errors only: the verdicts are the output.
			quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			res, err := Run(context.Background(), sc, Options{OutDir: dir, Logger: quiet})
			if res == nil {
				t.Fatalf("run: %v", err)
			}
			if res.Analysis != nil && !res.Analysis.Judged() {
				// make drills judges every drill: a run that judged
				// nothing (a stalled harness on an overloaded machine)
				// fails with its cause, not with its expectations.
				t.Fatalf("the drill judged nothing: %v", err)
			}
			for _, e := range res.Expectations {
				if !e.Passed {
					t.Errorf("%s %s: observed %s, want %s: %s", e.Name, e.Outcome, e.Observed, e.Want, e.Message)
				}
			}
			if err != nil && !errors.Is(err, rehearse.ErrExpectations) {
				t.Errorf("run: %v", err)
			}
			if res.Partial {
				t.Error("run marked partial")
			}
			if len(res.Expectations) == 0 {
				t.Error("no expectation was evaluated")
			}
			t.Logf("%s: %d expectations evaluated; run directory %s", d.Name, len(res.Expectations), dir)
		})
	}
	// The retry-storm drill again on the naive gateway (fixed 200 ms
	// retries ×3 of every call, no deadline, no breaker: the gateway the
	// practice warns about): every expectation the reference meets must
	// fail on it, for the reason its message states, or the drill cannot
	// tell the two apart — all but no_lockstep_retries, which the send
	// grid explains on both (below).
	t.Run("retry-storm-naive", func(t *testing.T) {
		t.Parallel()
		sc, err := scenarios.Builtin("retry-storm")
		if err != nil {
			t.Fatal(err)
		}
		sc.Gateway.Builtin.Config.Mode = gateway.ModeNaive
		sc.Name += "-" + gateway.ModeNaive
		dir := filepath.Join(root, sc.Name)
		quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		res, err := Run(context.Background(), sc, Options{OutDir: dir, Logger: quiet})
		if res == nil {
			t.Fatalf("run: %v", err)
		}
		if !errors.Is(err, rehearse.ErrExpectations) {
			t.Errorf("run: %v, want the expectations error", err)
		}
		if len(res.Expectations) == 0 {
			t.Fatal("no expectation was evaluated")
		}
		for _, e := range res.Expectations {
			if e.Name == "no_lockstep_retries" && e.Passed && strings.Contains(e.Message, "from the replay's send schedule") {
				// The naive gateway's fixed 200 ms waits are two of the
				// replay's 100 ms send intervals: its retries meet other
				// requests' retries on the send grid, as often as the
				// schedule alone makes them (docs/analysis.md, lockstep
				// against the send grid). That is not lockstep, and the
				// figure must say so rather than blame the gateway.
				t.Logf("naive: %s met, the coincidences are the send grid's: %s", e.Name, e.Message)
				continue
			}
			if e.Passed || e.Outcome != expect.NotMet {
				t.Errorf("%s %s on the naive gateway (observed %s, want %s): the drill does not tell it from the reference: %s", e.Name, e.Outcome, e.Observed, e.Want, e.Message)
				continue
			}
			t.Logf("naive: %s not met: %s", e.Name, e.Message)
		}
	})
}

// TestStormAgainstNeverProbingGateway runs the 503-storm drill (compressed)
// against a gateway that opens and then never probes: the built-in
// gateway with an hour's cooldown and no canary health checks. Every
// expectation about probes and the close (the drill's, and
// successes_to_close_min) must fail as not observable, naming what was not
// observed, in the results and in junit.xml, and the run exits 1.
func TestStormAgainstNeverProbingGateway(t *testing.T) {
	t.Parallel() // waits on a compressed drill's timers; free ports, own directory
	if testing.Short() {
		t.Skip("runs a compressed drill (about 15 s); skipped with -short")
	}
	sc, err := scenarios.Builtin("503-storm")
	if err != nil {
		t.Fatal(err)
	}
	compress(sc, 8)
	cfg := &sc.Gateway.Builtin.Config
	cfg.Breaker.Cooldown = rehearse.Duration(time.Hour)
	cfg.Breaker.CooldownMax = rehearse.Duration(time.Hour)
	cfg.Canary.Interval = new(rehearse.Duration) // zero: no canary
	// The drill's expectations, and the close's count of successes.
	two := 2
	sc.Expectations.SuccessesToCloseMin = &two
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), sc, Options{OutDir: dir})
	if !errors.Is(err, rehearse.ErrExpectations) || rehearse.ExitCode(err) != rehearse.ExitExpectations {
		t.Fatalf("run: %v, want the expectations error (exit %d)", err, rehearse.ExitExpectations)
	}
	got := map[string]expect.ExpectationResult{}
	for _, e := range res.Expectations {
		got[e.Name] = e
	}
	if e := got["opens_within"]; e.Outcome != expect.Met {
		t.Fatalf("the gateway did not open as the test needs: %+v", e)
	}
	missing := map[string]string{
		"max_probes_in_flight":   "search episode 1 (search-503): the breaker never probed",
		"probe_spacing_min":      "search episode 1 (search-503): the breaker never probed",
		"closes_within":          "search episode 1 (search-503): the breaker never closed",
		"metrics_lag_max":        "search episode 1 (search-503) close: the breaker never closed",
		"successes_to_close_min": "search episode 1 (search-503): the breaker never closed",
	}
	for name, want := range missing {
		e := got[name]
		if e.Passed || e.Outcome != expect.NotObservable || !strings.Contains(e.Message, want) {
			t.Errorf("%s: %+v, want not observable naming %q", name, e, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, c := range doc.Cases {
		want, ok := missing[c.Name]
		if c.Failure != nil {
			failed++
		}
		if ok && (c.Failure == nil || c.Failure.Type != "not_observable" || !strings.Contains(c.Failure.Message, want)) {
			t.Errorf("junit.xml case %s: %+v, want a not_observable failure naming %q", c.Name, c.Failure, want)
		}
	}
	if doc.Failures != failed || failed < len(missing) {
		t.Errorf("junit.xml: %d failures (%d cases failed), want at least %d", doc.Failures, failed, len(missing))
	}
}
