package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/analysis"
)

// The OpenClaw drills: the real OpenClaw in front of two provider fakes
// the harness serves (primary, and backup as its configured fallback),
// each drill run through the real harness (rehearsal.Run on a scenario,
// the gateway.log observer with preset openclaw) and every figure held to
// OpenClaw's own debug log. They take minutes (OpenClaw's shortest
// cooldown is 30 s and cannot be configured shorter), so they run only
// with REHEARSE_OPENCLAW_DRILLS=1 (make drills-openclaw).

const (
	openclawDrillsEnv = "REHEARSE_OPENCLAW_DRILLS"
	// ocLogName is OpenClaw's JSON log, kept in the run directory.
	ocLogName = "openclaw-debug.jsonl"
)

// ocDrill is one OpenClaw drill: the provider timeout OpenClaw is
// configured with, the replay's rate and length, and the faults (YAML
// list entries).
type ocDrill struct {
	name     string
	timeout  int // OpenClaw's timeoutSeconds for both providers
	rate     float64
	duration time.Duration
	deadline time.Duration
	faults   string
	expect   string
}

// ocRun is a drill's run: the harness's result and OpenClaw's log.
type ocRun struct {
	res   *rehearsal.Result
	lines []ocLine
	start time.Time
	// lagP90 is how long after its [model-fetch] start line a call
	// reached the fake (p90): OpenClaw's event loop lag.
	lagP90 float64
}

// runOpenClawDrill starts a fresh OpenClaw (its auth-profile state is
// per home), warms it up with one turn on healthy fakes at the drill's
// fixed ports, then runs the drill through rehearsal.Run.
func runOpenClawDrill(t *testing.T, d ocDrill) *ocRun {
	t.Helper()
	if os.Getenv(openclawDrillsEnv) != "1" {
		t.Skipf("an OpenClaw drill takes 1-2 minutes: set %s=1 (make drills-openclaw)", openclawDrillsEnv)
	}
	dir := openclawDir(t)
	if !inLoopbackNetns(t) {
		return nil
	}
	primary, backup := testutil.FreeAddr(t), testutil.FreeAddr(t)
	home := t.TempDir()
	logFile := filepath.Join(home, "openclaw.log")
	gwAddr := testutil.FreeAddr(t)
	_, port, _ := strings.Cut(gwAddr, ":")
	cfg := openclawLoggedConfig(openclawConfig(primary, backup, port), logFile)
	cfg = strings.ReplaceAll(cfg, "timeoutSeconds: 10", fmt.Sprintf("timeoutSeconds: %d", d.timeout))
	env := openclawHome(t, dir, home, cfg)
	openclawAuthProfiles(t, dir, env)
	gw := startOpenClaw(t, dir, gwAddr, env, cfg)
	warmOpenClaw(t, gwAddr, primary, backup)

	src := fmt.Sprintf(`version: 1
name: openclaw-%s
gateway:
  url: http://%s
  log: {path: %q, preset: openclaw}
replay:
  capture: builtin:ai-chat
  rate: %g
  duration: %s
  deadline: %s
  rewrite: {set: {Authorization: "Bearer %s"}}
  routes: [{prefix: /v1/chat/completions, upstream: primary}]
upstreams:
  - {name: primary, listen: %q, api: openai}
  - {name: backup, listen: %q, api: openai}
faults:
%s`, d.name, gwAddr, logFile, d.rate, d.duration, d.deadline, openclawToken, primary, backup, d.faults)
	if d.expect != "" {
		src += "expectations:\n" + d.expect
	}
	res, _ := runScenario(t, "openclaw-"+d.name, src, d.duration+d.deadline, gw)
	time.Sleep(2 * time.Second) // OpenClaw queues its file writes
	start := res.Analysis.Run.WallStart
	run := &ocRun{res: res, start: start, lines: readOpenClawLogSince(t, logFile, start)}
	// OpenClaw's log beside the journal, for REHEARSE_OPENCLAW_RECHECK.
	if b, err := os.ReadFile(logFile); err == nil {
		_ = os.WriteFile(filepath.Join(res.Dir, ocLogName), b, 0o644)
	}
	return run
}

// warmOpenClaw sends one turn through OpenClaw on healthy fakes at the
// drill's ports, closed before the drill's own start there: a fresh
// OpenClaw's first turn takes 7-17 s (it loads its agent runtime), which
// would otherwise be the drill's first seconds.
func warmOpenClaw(t *testing.T, gwAddr, primary, backup string) {
	t.Helper()
	ups := []inject.UpstreamConfig{
		{Name: "primary", Listen: primary, API: inject.APIOpenAI},
		{Name: "backup", Listen: backup, API: inject.APIOpenAI},
	}
	srv, err := inject.New(ups, nil, inject.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	started := time.Now()
	turn := chatTurn(0, false)
	req, _ := http.NewRequest(turn.Method, "http://"+gwAddr+turn.Target, strings.NewReader(string(turn.Body)))
	for _, h := range turn.Header {
		req.Header.Set(h.Name, h.Value)
	}
	resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("warm-up turn: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("warm-up turn: %s", resp.Status)
	}
	t.Logf("warm-up turn answered after %v", time.Since(started).Round(time.Millisecond))
}

// readOpenClawLogSince reads OpenClaw's log in run time (seconds since
// the run's wall start), the lines before it dropped.
func readOpenClawLogSince(t *testing.T, path string, start time.Time) []ocLine {
	t.Helper()
	clock := journal.NewClock(start)
	var out []ocLine
	for _, l := range readOpenClawLog(t, path, clock) {
		if l.t >= 0 {
			out = append(out, l)
		}
	}
	return out
}

// The drills. Each runs at 1 turn a second (10 req/s saturates one
// OpenClaw on 2 cores, and a turn takes 0.5-1.5 s here), the fault 5-10 s
// in, after the warm-up turn.
var (
	// 429 with Retry-After 120 on primary for 40 s, 110 s long: OpenClaw
	// puts primary's auth profile in cooldown (30 s; it never waits out a
	// Retry-After above its 60 s maxRetryDelayMs but fails over), serves
	// the turns from backup, probes primary with the first turn after
	// the cooldown (429 again: 60 s), probes again at ~102 s (2xx) and
	// fails back.
	ocDrill429 = ocDrill{name: "429-retry-after", timeout: 10, rate: 1, duration: 110 * time.Second, deadline: 60 * time.Second,
		faults: "  - {name: quota, type: retry_after, upstream: primary, at: 10s, for: 40s, params: {after: 120s}}\n"}
	// A 503 storm on primary for 15 s: OpenClaw retries each turn in
	// place (transient same-model retry n/8, jittered exponential waits),
	// keeps no cooldown and never fails over.
	ocDrill503 = ocDrill{name: "503-storm", timeout: 10, rate: 1, duration: 40 * time.Second, deadline: 100 * time.Second,
		faults: "  - {name: storm, type: status, upstream: primary, at: 5s, for: 15s, params: {code: 503}}\n"}
	// Streams that stall after three events, past timeoutSeconds 3: the
	// give-ups at the timeout, and the streaming turns that had already
	// passed text on failing inside their 200.
	ocDrillStall = ocDrill{name: "stall-past-timeout", timeout: 3, rate: 1, duration: 40 * time.Second, deadline: 100 * time.Second,
		faults: "  - {name: stall, type: stream_cut, upstream: primary, at: 5s, for: 15s, params: {after_events: 3, then: stall}}\n"}
	// Streams reset after three events: failed streams counted failed.
	ocDrillReset = ocDrill{name: "midstream-reset", timeout: 10, rate: 1, duration: 40 * time.Second, deadline: 100 * time.Second,
		faults: "  - {name: cut, type: stream_cut, upstream: primary, at: 5s, for: 15s, params: {after_events: 3, then: rst}}\n"}
)

// TestOpenClawDrill429: open, each cooldown and its growth, each probe,
// failover to backup and fail-back, held to OpenClaw's log.
func TestOpenClawDrill429(t *testing.T) {
	r := runOpenClawDrill(t, ocDrill429)
	if r == nil {
		return
	}
	c, tr, h := r.compareCommon(t)
	ep := r.primaryEpisode(t)
	compare429(c, tr, h, ep, r.res.Analysis)
	r.finish(c, t.Name())
}

// TestOpenClawDrill503: attempts per turn and their waits, no cooldown.
func TestOpenClawDrill503(t *testing.T) {
	r := runOpenClawDrill(t, ocDrill503)
	if r == nil {
		return
	}
	c, tr, _ := r.compareCommon(t)
	ep := r.primaryEpisode(t)
	compareNoCooldown(c, tr, ep, r.res.Analysis)
	r.finish(c, t.Name())
}

// TestOpenClawDrillStall: give-ups at timeoutSeconds and streams that
// fail inside a 200.
func TestOpenClawDrillStall(t *testing.T) {
	r := runOpenClawDrill(t, ocDrillStall)
	if r == nil {
		return
	}
	c, tr, h := r.compareCommon(t)
	ep := r.primaryEpisode(t)
	compareNoCooldown(c, tr, ep, r.res.Analysis)
	compareGiveUps(c, tr, h, r.res.Analysis, float64(ocDrillStall.timeout))
	compareFailedStreams(c, tr, h)
	r.finish(c, t.Name())
}

// TestOpenClawDrillReset: streams reset mid-way, counted failed.
func TestOpenClawDrillReset(t *testing.T) {
	r := runOpenClawDrill(t, ocDrillReset)
	if r == nil {
		return
	}
	c, tr, h := r.compareCommon(t)
	ep := r.primaryEpisode(t)
	compareNoCooldown(c, tr, ep, r.res.Analysis)
	compareFailedStreams(c, tr, h)
	r.finish(c, t.Name())
}

// TestOpenClawRecheck prints a drill's table again from a kept run
// directory (REHEARSE_E2E_OUT keeps them, with OpenClaw's log as
// openclaw-debug.jsonl): REHEARSE_OPENCLAW_RECHECK=DIR go test -run
// TestOpenClawRecheck -v ./e2e. No OpenClaw needed: the analysis is made
// again from the journal by the code of the checkout, so a change to the
// analysis can be held to runs already made.
func TestOpenClawRecheck(t *testing.T) {
	dir := os.Getenv("REHEARSE_OPENCLAW_RECHECK")
	if dir == "" {
		t.Skip("set REHEARSE_OPENCLAW_RECHECK to a kept OpenClaw drill's run directory")
	}
	recheckOpenClawRun(t, dir)
}

// TestOpenClawKeptRuns holds the analysis to OpenClaw's log on four
// runs of the drills kept in testdata/openclaw (the 503 storm, the
// stall past timeoutSeconds 3 and the mid-stream reset, 2026-12-05, the
// runs whose every row was within tolerance; OpenClaw's log reduced to
// the lines the drills read), and the 429 drill (2026-12-05 03:41: its
// second cooldown, doubled, and the closing probe whose stream was still
// answering when the next turn was sent; the journal without the log
// observer's samples that carry no state, the log lines with only the
// fields the drills read): what make drills-openclaw does against the
// real OpenClaw, without it, in every make test.
func TestOpenClawKeptRuns(t *testing.T) {
	for _, name := range []string{ocDrill429.name, ocDrill503.name, ocDrillStall.name, ocDrillReset.name} {
		t.Run(name, func(t *testing.T) { recheckOpenClawRun(t, filepath.Join("testdata", "openclaw", name)) })
	}
}

func recheckOpenClawRun(t *testing.T, dir string) {
	t.Helper()
	a, err := analysis.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &ocRun{res: &rehearsal.Result{Dir: dir, Analysis: a}, start: a.Run.WallStart,
		lines: readOpenClawLogSince(t, filepath.Join(dir, ocLogName), a.Run.WallStart)}
	c, tr, h := r.compareCommon(t)
	ep := r.primaryEpisode(t)
	switch name := strings.TrimPrefix(a.Run.Scenario, "openclaw-"); name {
	case ocDrill429.name:
		compare429(c, tr, h, ep, a)
	case ocDrill503.name:
		compareNoCooldown(c, tr, ep, a)
	case ocDrillStall.name:
		compareNoCooldown(c, tr, ep, a)
		compareGiveUps(c, tr, h, a, float64(ocDrillStall.timeout))
		compareFailedStreams(c, tr, h)
	case ocDrillReset.name:
		compareNoCooldown(c, tr, ep, a)
		compareFailedStreams(c, tr, h)
	default:
		t.Fatalf("%s: not an OpenClaw drill's run (scenario %q)", dir, a.Run.Scenario)
	}
	r.finish(c, a.Run.Scenario+" "+a.Run.RunID)
}
