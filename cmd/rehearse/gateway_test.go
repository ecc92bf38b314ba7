package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/gateway"
	"github.com/halfopen/rehearse/internal/testutil"
)

func TestGatewayCmdErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "gw.yaml")
	os.WriteFile(bad, []byte("upstreams:\n  search:\n    url: http://127.0.0.1:1\nbreaker:\n  cooldown: 5\n"), 0o644)
	var out, errb bytes.Buffer
	root := newRootCmd(&out, &errb)
	root.SetArgs([]string{"gateway", "--config", bad})
	err := root.ExecuteContext(context.Background())
	if rehearse.ExitCode(err) != rehearse.ExitInvalid || !strings.Contains(err.Error(), bad+":5:13: breaker.cooldown:") {
		t.Fatalf("bad config: %v", err)
	}
	for _, args := range [][]string{
		{"gateway"}, // no upstreams
		{"gateway", "--upstream", "search"},
		{"gateway", "--upstream", "search=ftp://x"},
		{"gateway", "--upstream", "search=http://127.0.0.1:1", "--failure-ratio", "2"},
		// strconv.ParseFloat accepts NaN and Inf, and NaN passes every
		// comparison: the flag is refused like the YAML's .nan.
		{"gateway", "--upstream", "search=http://127.0.0.1:1", "--failure-ratio", "NaN"},
		{"gateway", "--upstream", "search=http://127.0.0.1:1", "--probe-deadline-factor", "+Inf"},
		{"gateway", "--config", filepath.Join(dir, "missing.yaml")},
		// Beyond loopback needs --allow-remote, as everywhere.
		{"gateway", "--upstream", "search=http://127.0.0.1:1", "--listen", "0.0.0.0:0"},
		{"gateway", "--upstream", "search=http://127.0.0.1:1", "--listen", ":0"},
	} {
		if _, _, code := execute(t, args...); code != rehearse.ExitInvalid {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	// A taken port is an environment failure.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, _, code := execute(t, "gateway", "--upstream", "search=http://127.0.0.1:1", "--canary-interval", "0s",
		"--listen", ln.Addr().String()); code != rehearse.ExitEnvironment {
		t.Errorf("taken port: exit %d, want 3", code)
	}
}

func TestGatewayCmdFlagsOverrideConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gw.yaml")
	os.WriteFile(path, []byte("env: staging\nupstreams:\n  search:\n    url: http://127.0.0.1:1\nbreaker:\n  cooldown: 7s\n  min_samples: 9\n"), 0o644)
	o := &gatewayCmdOptions{}
	cmd := gatewayCmd(o)
	if err := cmd.ParseFlags([]string{"--config", path, "--min-samples", "3", "--upstream", "weather=http://127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config(cmd.Flags())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Env != "staging" || cfg.Breaker.Cooldown.D() != 7*time.Second || cfg.Breaker.MinSamples != 3 ||
		len(cfg.Upstreams) != 2 || cfg.WithDefaults().Breaker.ConsecutiveFailures != gateway.DefaultConsecutiveFailures {
		t.Fatalf("config %+v", cfg)
	}
	// Optional settings: an explicit zero or false on the command line
	// wins over the file, and flags not given leave the file's values.
	os.WriteFile(path, []byte("upstreams:\n  search:\n    url: http://127.0.0.1:1\ncanary:\n  interval: 10s\nbreaker:\n  distinct_workers: true\n  probe_jitter: 20ms\n"), 0o644)
	o = &gatewayCmdOptions{}
	cmd = gatewayCmd(o)
	if err := cmd.ParseFlags([]string{"--config", path, "--canary-interval", "0s", "--distinct-workers=false"}); err != nil {
		t.Fatal(err)
	}
	if cfg, err = o.config(cmd.Flags()); err != nil {
		t.Fatal(err)
	}
	if cfg.Canary.Interval == nil || *cfg.Canary.Interval != 0 || cfg.Breaker.DistinctWorkers == nil || *cfg.Breaker.DistinctWorkers ||
		cfg.Breaker.ProbeJitter.D() != 20*time.Millisecond || cfg.FallbackOnError != nil {
		t.Fatalf("optional settings: %+v", cfg)
	}
}

func TestGatewayCmdServes(t *testing.T) {
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"from":"upstream"}`)
	})}
	uln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go up.Serve(uln)
	defer up.Close()

	var out, errb testutil.SyncBuffer
	root := newRootCmd(&out, &errb)
	root.SetArgs([]string{"gateway", "--upstream", "search=http://" + uln.Addr().String(),
		"--canary-interval", "0s", "--instance", "cmd-test", "--log-level", "warn"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	addr := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for !addr.MatchString(out.String()) {
		select {
		case err := <-done:
			t.Fatalf("gateway exited: %v\n%s", err, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no address printed:\n%s\n%s", out.String(), errb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	base := addr.FindStringSubmatch(out.String())[1]
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/tools/search")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "upstream") {
		t.Fatalf("proxied: %d %s", resp.StatusCode, body)
	}
	resp, err = c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `openclaw_breaker_state{dependency="search",env="rehearsal",region="local"} 0`) {
		t.Fatalf("metrics:\n%s", metrics)
	}
	c.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("gateway returned %v", err)
	}
}

// TestGatewayCmdBindsWhatWasAsked: --listen 0.0.0.0 (with --allow-remote)
// binds every IPv4 address and says so; it bound the dual-stack [::].
func TestGatewayCmdBindsWhatWasAsked(t *testing.T) {
	var out, errb testutil.SyncBuffer
	root := newRootCmd(&out, &errb)
	root.SetArgs([]string{"gateway", "--upstream", "search=http://127.0.0.1:1", "--canary-interval", "0s",
		"--listen", "0.0.0.0:0", "--allow-remote", "--log-level", "warn"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "listening on") {
		select {
		case err := <-done:
			t.Fatalf("gateway exited: %v\n%s", err, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no address printed:\n%s", errb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if !strings.Contains(out.String(), "listening on http://0.0.0.0:") {
		t.Fatalf("bound %q, want 0.0.0.0", out.String())
	}
}
