package rehearsal

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/reports/expect"
	"github.com/halfopen/rehearse/scenarios"
)

// parse builds a scenario from YAML for a test.
func parse(t testing.TB, src string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse(filepath.Join(t.TempDir(), "s.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

var runFiles = []string{"journal.jsonl", "run.json", "report.html", "report.md", "timeline.svg", "timeline.png", "junit.xml"}

func checkRunDir(t *testing.T, dir string) []journal.Event {
	t.Helper()
	for _, f := range runFiles {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	events, torn, err := journal.ReadFile(filepath.Join(dir, "journal.jsonl"))
	if err != nil || torn {
		t.Fatalf("journal: torn=%v err=%v", torn, err)
	}
	if len(events) == 0 || events[0].Kind() != journal.KindRunStart || events[len(events)-1].Kind() != journal.KindRunEnd {
		t.Fatalf("journal does not open with run.start and close with run.end (%d events)", len(events))
	}
	return events
}

func count(events []journal.Event, k journal.Kind) int {
	n := 0
	for _, e := range events {
		if e.Kind() == k {
			n++
		}
	}
	return n
}

// TestRunShortStorm runs a compressed 503 storm against the built-in
// gateway: the whole pipeline on real loopback sockets.
func TestRunShortStorm(t *testing.T) {
	sc := parse(t, `
name: short-storm
gateway:
  builtin:
    config:
      breaker: {cooldown: 1s, consecutive_failures: 3, min_samples: 5, window: 5s}
  metrics: {interval: 500ms}
  health: {interval: 500ms}
replay:
  rate: 20
  duration: 6s
faults:
  - {name: storm, type: status, upstream: search, at: 1s, for: 2s, params: {code: 503}}
expectations:
  upstreams: [search]
  max_probes_in_flight: 1
`)
	dir := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), sc, Options{OutDir: dir})
	skipIfStalled(t, res, err)
	if err != nil {
		// The reference gateway probes one at a time: the verdict must be
		// met, not merely evaluated.
		t.Fatalf("run: %v (expectations %+v)", err, res.Expectations)
	}
	if res.Partial {
		t.Error("complete run marked partial")
	}
	events := checkRunDir(t, dir)
	if n := count(events, journal.KindClientRequest); n < 110 || n > 121 {
		t.Errorf("client requests = %d, want 120 (20/s for 6s)", n)
	}
	if count(events, journal.KindUpstreamRequest) == 0 || count(events, journal.KindMetricsSample) == 0 || count(events, journal.KindHealthSample) == 0 {
		t.Error("journal lacks upstream, metrics or health events")
	}
	if count(events, journal.KindFaultStart) != 1 || count(events, journal.KindFaultEnd) != 1 {
		t.Error("fault window not recorded")
	}
	if res.Replay == nil || res.Replay.Sent < 110 {
		t.Errorf("replay summary: %+v", res.Replay)
	}
	if len(res.Expectations) != 1 || res.Expectations[0].Outcome != expect.Met {
		t.Errorf("expectations: %+v, want max_probes_in_flight met", res.Expectations)
	}
	// run.start records what this build resolved for the reports: the
	// built-in gateway's settings (the scenario's cooldown, the rest
	// defaulted) and the preset's breaker series, so that a later build
	// re-renders the journal the same.
	rs := events[0].Payload.(*journal.RunStart)
	if r := rs.Resolved; r == nil || r.Gateway == nil || len(r.BreakerSeries) == 0 ||
		!slices.Contains(r.Gateway.Breaker, journal.Setting{Key: "cooldown", Value: "1s"}) ||
		!slices.Contains(r.Gateway.Breaker, journal.Setting{Key: "failure_ratio", Value: "0.6"}) {
		t.Errorf("run.start resolved %+v, want the gateway's settings and the breaker series", rs.Resolved)
	} else if res.Analysis.BuiltinGateway != r.Gateway && !slices.Equal(res.Analysis.BuiltinGateway.Breaker, r.Gateway.Breaker) {
		t.Errorf("run.json builtin_gateway %+v, want run.start's %+v", res.Analysis.BuiltinGateway, r.Gateway)
	}
	// run.json says how many Go processors the harness ran on: the
	// process's own, which the run leaves as it found them.
	if p := res.Analysis.Platform; p == nil || p.GOMAXPROCS != runtime.GOMAXPROCS(0) {
		t.Errorf("run.json platform %+v, want gomaxprocs %d", p, runtime.GOMAXPROCS(0))
	}
}

// TestRunInterrupted cancels mid-run: the journal must be complete and
// closed, the reports written (partial), and the error ErrInterrupted.
func TestRunInterrupted(t *testing.T) {
	// Nothing may be left behind: no goroutine, hence no listener, server
	// or connection of the run.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sc := parse(t, `
name: interrupted
replay: {rate: 20, duration: 1m}
faults:
  - {type: status, upstream: search, at: 500ms, params: {code: 503}}
`)
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	start := time.Now()
	res, err := Run(ctx, sc, Options{OutDir: dir})
	if !errors.Is(err, rehearse.ErrInterrupted) || rehearse.ExitCode(err) != 130 {
		t.Fatalf("err = %v, want interrupted (exit 130)", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("stopping took %s", time.Since(start))
	}
	if !res.Partial {
		t.Error("interrupted run not marked partial")
	}
	events := checkRunDir(t, dir)
	end := events[len(events)-1].Payload.(*journal.RunEnd)
	if end.Reason != journal.EndInterrupted || !end.Partial {
		t.Errorf("run.end = %+v", end)
	}
	if count(events, journal.KindFaultEnd) != 1 {
		t.Error("open fault window not closed in the journal")
	}
}

func TestUnreachableGatewayExits3Quickly(t *testing.T) {
	addr := testutil.FreeAddr(t) // nothing listens here now
	// A replay of a minute: giving up at the readiness check means the
	// replay never starts, which the journal shows whatever the load.
	sc := parse(t, `
name: unreachable
gateway:
  url: http://`+addr+`
  ready: {timeout: 1s}
upstreams: [{name: search, listen: "`+testutil.FreeAddr(t)+`"}]
replay: {duration: 1m}
`)
	dir := filepath.Join(t.TempDir(), "run")
	start := time.Now()
	_, err := Run(context.Background(), sc, Options{OutDir: dir})
	if rehearse.ExitCode(err) != 3 {
		t.Fatalf("exit %d (%v), want 3", rehearse.ExitCode(err), err)
	}
	if !strings.Contains(err.Error(), "gateway unreachable at http://"+addr) {
		t.Errorf("message: %v", err)
	}
	// One plain sentence with the cause, not Go's error chain.
	if msg := err.Error(); !strings.Contains(msg, "after 1s: connection refused;") || strings.Contains(msg, `Get "`) || strings.Contains(msg, "dial tcp") {
		t.Errorf("message is not one plain sentence with the cause: %v", err)
	}
	// Only a hang fails this bound; "quickly" is asserted on the journal.
	if d := time.Since(start); d > 45*time.Second {
		t.Errorf("took %s to give up on a 1 s readiness timeout", d)
	}
	events, _, err := journal.ReadFile(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		switch p := e.Payload.(type) {
		case *journal.Phase:
			if p.Name == "replay" {
				t.Errorf("the replay started at %s although the gateway never became ready", e.T)
			}
		case *journal.ClientRequest:
			t.Fatalf("a client request was sent (seq %d) to an unreachable gateway", p.Seq)
		}
	}
}

func TestRunRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := parse(t, `replay: {duration: 1s}`)
	_, err := Run(context.Background(), sc, Options{OutDir: dir})
	if rehearse.ExitCode(err) != 2 || !strings.Contains(err.Error(), "already holds a run") {
		t.Fatalf("err = %v", err)
	}
}

// TestBadCaptureLeavesNoRunDirectory: a capture with nothing to replay is
// invalid input found before anything is created.
func TestBadCaptureLeavesNoRunDirectory(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pcap")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Parse(filepath.Join(dir, "s.yaml"), []byte("replay: {duration: 1s, capture: empty.pcap}\n"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	res, err := Run(context.Background(), sc, Options{OutDir: out})
	if rehearse.ExitCode(err) != 2 || res != nil {
		t.Fatalf("exit %d (%v), result %v", rehearse.ExitCode(err), err, res)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("run directory created for a run that never started: %v", err)
	}
}

// TestRunScheduleAndKeptHeaders runs a short storm on a jittered schedule
// with the gateway's breaker header kept: the scenario's schedule and
// seed reach the replay (every send due where the seeded pacer puts it),
// run.start's config names the schedule, and the breaker's fast-fails
// carry their X-Breaker-State value in the journal.
func TestRunScheduleAndKeptHeaders(t *testing.T) {
	sc := parse(t, `
name: jittered-storm
seed: 11
gateway:
  builtin:
    config:
      breaker: {cooldown: 5s, consecutive_failures: 3, min_samples: 5, window: 5s}
replay:
  rate: 20
  duration: 4s
  schedule: jittered
  keep_headers: [X-Breaker-State, Retry-After]
faults:
  - {name: storm, type: status, upstream: search, at: 500ms, for: 3s, params: {code: 503}}
`)
	dir := filepath.Join(t.TempDir(), "run")
	if res, err := Run(context.Background(), sc, Options{OutDir: dir}); err != nil {
		skipIfStalled(t, res, err)
		t.Fatalf("run: %v", err)
	}
	events := checkRunDir(t, dir)
	var cfg struct {
		Replay struct {
			Schedule string `json:"schedule"`
		} `json:"replay"`
	}
	if err := json.Unmarshal(events[0].Payload.(*journal.RunStart).Config, &cfg); err != nil || cfg.Replay.Schedule != "jittered" {
		t.Errorf("run.start config schedule %q (%v)", cfg.Replay.Schedule, err)
	}
	p := replay.NewJitteredPacer(20, 11)
	var reqs []*journal.ClientRequest
	var base time.Duration
	for _, e := range events {
		if ev, ok := e.Payload.(*journal.ClientRequest); ok {
			reqs = append(reqs, ev)
			if ev.Seq == 0 {
				due, _ := p.Due(0)
				base = ev.Scheduled - due
			}
		}
	}
	if len(reqs) != 80 {
		t.Errorf("%d client requests, want 80 (20/s for 4 s: one per slot)", len(reqs))
	}
	var fastFails, kept int
	for _, ev := range reqs {
		if due, _ := p.Due(ev.Seq); ev.Scheduled-base != due {
			t.Errorf("seq %d scheduled %v after the start, the seeded pacer says %v", ev.Seq, ev.Scheduled-base, due)
		}
		if ev.FastFail {
			fastFails++
			if ev.Headers["X-Breaker-State"] != "" && ev.Headers["Retry-After"] != "" {
				kept++
			}
		}
	}
	if fastFails == 0 || kept != fastFails {
		t.Errorf("%d fast-fails, %d with X-Breaker-State and Retry-After kept", fastFails, kept)
	}
}

// TestRunWarmup: a warm-up of 1 s at 10/s before a 2 s replay at 20/s
// against the built-in gateway. The journal holds the warm-up between
// its phase and time zero (the "replay" phase), every warm-up request
// marked and numbered from journal.WarmupSeqBase; the fault counts from
// time zero; the analysis scores the replay alone and sums the warm-up
// up apart.
func TestRunWarmup(t *testing.T) {
	sc := parse(t, `
name: warm
gateway:
  builtin: {}
replay:
  rate: 20
  duration: 2s
  warmup: {duration: 1s, rate: 10}
faults:
  - {name: storm, type: status, upstream: search, at: 500ms, for: 1s, params: {code: 503}}
`)
	dir := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), sc, Options{OutDir: dir})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	events := checkRunDir(t, dir)
	var warmAt, zero, faultAt time.Duration = -1, -1, -1
	for _, e := range events {
		switch p := e.Payload.(type) {
		case *journal.Phase:
			switch p.Name {
			case "warmup":
				warmAt = e.T
			case "replay":
				zero = e.T
			}
		case *journal.FaultStart:
			faultAt = e.T
		}
	}
	// The warm-up's ten sends are due in its first 900 ms; time zero
	// comes when the last has been answered.
	if warmAt < 0 || zero < warmAt+900*time.Millisecond {
		t.Fatalf("phases: warm-up at %v, time zero at %v", warmAt, zero)
	}
	var warm, scored int
	for _, e := range events {
		switch p := e.Payload.(type) {
		case *journal.ClientRequest:
			if p.Warmup {
				warm++
				if p.Seq < journal.WarmupSeqBase || p.Scheduled < warmAt || p.Done > zero {
					t.Errorf("warm-up request seq %d scheduled %v done %v, warm-up %v–%v", p.Seq, p.Scheduled, p.Done, warmAt, zero)
				}
			} else {
				scored++
				if p.Seq >= journal.WarmupSeqBase || p.Scheduled < zero {
					t.Errorf("scored request seq %d scheduled %v before time zero %v", p.Seq, p.Scheduled, zero)
				}
			}
		}
	}
	if faultAt < zero+500*time.Millisecond || faultAt > zero+700*time.Millisecond {
		t.Errorf("fault at %v, time zero %v: want 500 ms after time zero", faultAt, zero)
	}
	if warm != 10 || scored != 40 {
		t.Errorf("%d warm-up and %d scored requests, want 10 and 40", warm, scored)
	}
	a := res.Analysis
	if a.Replay.Due != 40 || a.Warmup == nil || a.Warmup.Requests != 10 || a.Warmup.Outcomes["ok"] != 10 || a.Warmup.UpstreamCalls < 10 {
		t.Errorf("replay %+v, warm-up %+v", a.Replay, a.Warmup)
	}
	if b := a.Phases["before"]; b == nil || b.StartS < zero.Seconds()-0.001 {
		t.Errorf("phase before %+v starts before time zero %v", b, zero)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "timeline.svg"))
	if err != nil || !strings.Contains(string(svg), `class="warmup"`) {
		t.Errorf("timeline.svg lacks the warm-up band (%v)", err)
	}
}

// TestRunInterruptedDuringWarmup: Ctrl-C during the warm-up ends the run
// there, interrupted (exit 130) with its journal closed and its reports
// written; no fault started, nothing was scored, and the report says the
// run ended during the warm-up.
func TestRunInterruptedDuringWarmup(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sc := parse(t, `
name: interrupted-warmup
replay: {rate: 20, duration: 1m, warmup: {duration: 1m, rate: 10}}
faults:
  - {type: status, upstream: search, at: 500ms, params: {code: 503}}
`)
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	res, err := Run(ctx, sc, Options{OutDir: dir})
	if !errors.Is(err, rehearse.ErrInterrupted) || rehearse.ExitCode(err) != 130 {
		t.Fatalf("err = %v, want interrupted (exit 130)", err)
	}
	events := checkRunDir(t, dir)
	if end := events[len(events)-1].Payload.(*journal.RunEnd); end.Reason != journal.EndInterrupted {
		t.Errorf("run.end = %+v", end)
	}
	if count(events, journal.KindFaultStart) != 0 {
		t.Error("a fault started during the warm-up")
	}
	a := res.Analysis
	if a.Warmup == nil || a.Warmup.Requests == 0 || a.Replay.Due != 0 {
		t.Fatalf("warm-up %+v, replay %+v", a.Warmup, a.Replay)
	}
	if !strings.Contains(strings.Join(a.Notes, " "), "the run ended during the warm-up") {
		t.Errorf("notes %q", a.Notes)
	}
}
