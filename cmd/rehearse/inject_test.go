package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
)

func TestInjectTypes(t *testing.T) {
	out, _, code := execute(t, "inject", "types")
	if code != 0 || !strings.Contains(out, "stream_cut") || !strings.Contains(out, "retry_after") {
		t.Fatalf("code %d:\n%s", code, out)
	}
}

func TestInjectServeBadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.yaml")
	os.WriteFile(path, []byte("upstreams:\n  - name: search\nfaults:\n  - type: status\n    upstream: search\n    params: {cod: 503}\n"), 0o644)
	_, _, code := execute(t, "inject", "serve", "--config", path)
	if code != rehearse.ExitInvalid {
		t.Fatalf("exit %d, want 2", code)
	}
	var out, errb bytes.Buffer
	root := newRootCmd(&out, &errb)
	root.SetArgs([]string{"inject", "serve", "--config", path})
	err := root.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), path+":6:14: faults[0].params.cod: unknown field") {
		t.Fatalf("error %v", err)
	}
	if _, _, code := execute(t, "inject", "serve"); code != rehearse.ExitInvalid {
		t.Fatalf("missing --config: exit %d", code)
	}
}

func TestInjectServeRefusesRemoteAddresses(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "up.yaml")
	os.WriteFile(good, []byte("upstreams:\n  - name: search\n"), 0o644)
	remote := filepath.Join(dir, "remote.yaml")
	os.WriteFile(remote, []byte("upstreams:\n  - name: search\n    listen: 0.0.0.0:0\n"), 0o644)
	for _, args := range [][]string{
		{"inject", "serve", "--config", good, "--control", "0.0.0.0:0"},
		{"inject", "serve", "--config", good, "--control", ":0"},
		{"inject", "serve", "--config", remote},
	} {
		_, errOut, code := executeWith(t, nil, args...)
		if code != rehearse.ExitInvalid || !strings.Contains(errOut, "--allow-remote") {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
}

func TestInjectServe(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "up.yaml")
	jpath := filepath.Join(dir, "journal.jsonl")
	os.WriteFile(cfg, []byte("seed: 3\nupstreams:\n  - name: search\n"), 0o644)
	var out, errb testutil.SyncBuffer
	root := newRootCmd(&out, &errb)
	root.SetArgs([]string{"inject", "serve", "--config", cfg, "--journal", jpath, "--log-level", "warn"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	ctl := regexp.MustCompile(`control\s+(http://\S+)`)
	up := regexp.MustCompile(`upstream\s+search\s+fake\s+(http://\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for !ctl.MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no addresses printed:\n%s\n%s", out.String(), errb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctlURL := ctl.FindStringSubmatch(out.String())[1]
	upURL := up.FindStringSubmatch(out.String())[1]
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Post(ctlURL+"/faults", "application/json", strings.NewReader(`{"type":"status","upstream":"search","params":{"code":502}}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("add fault: %v %v", err, resp)
	}
	resp.Body.Close()
	resp, err = c.Get(upURL + "/tools/search")
	if err != nil || resp.StatusCode != 502 {
		t.Fatalf("faulted request: %v %v", err, resp)
	}
	resp.Body.Close()
	resp, err = c.Get(ctlURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `rehearse_inject_faults_applied_total{fault="search-status",upstream="search"} 1`) {
		t.Fatalf("metrics:\n%s", metrics)
	}
	c.CloseIdleConnections()
	cancel()
	if err := <-done; rehearse.ExitCode(err) != rehearse.ExitInterrupted {
		t.Fatalf("serve stopped by a signal returned %v (exit %d), want exit 130", err, rehearse.ExitCode(err))
	}
	j, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{`"kind":"run.start"`, `"kind":"fault.start"`, `"kind":"upstream.request"`, `"kind":"fault.end"`, `"kind":"run.end"`} {
		if !strings.Contains(string(j), kind) {
			t.Errorf("journal lacks %s:\n%s", kind, j)
		}
	}
}

// startInjectServe runs `inject serve` with args until the test ends and
// returns what it printed once the control line is there.
func startInjectServe(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb testutil.SyncBuffer
	root := newRootCmd(&out, &errb)
	root.SetArgs(append([]string{"inject", "serve", "--log-level", "warn"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for !regexp.MustCompile(`control\s+http://\S+`).MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no control address printed:\n%s\n%s", out.String(), errb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return out.String()
}

// getFaults asks url's /faults with an optional bearer token.
func getFaults(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/faults", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestInjectServeToken: a control API other machines can reach
// (--allow-remote) gets a generated token, printed once, and refuses
// requests without it; on loopback REHEARSE_CONTROL_TOKEN sets one, which
// is required and never printed.
func TestInjectServeToken(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "up.yaml")
	os.WriteFile(cfg, []byte("upstreams:\n  - name: search\n"), 0o644)

	out := startInjectServe(t, "--config", cfg, "--control", "0.0.0.0:0", "--allow-remote")
	m := regexp.MustCompile(`control\s+http://\S+:(\d+) `).FindStringSubmatch(out)
	tok := regexp.MustCompile(`token\s+([0-9a-f]{32})\s`).FindStringSubmatch(out)
	if m == nil || tok == nil {
		t.Fatalf("no port or generated token printed:\n%s", out)
	}
	url := "http://127.0.0.1:" + m[1]
	if code := getFaults(t, url, ""); code != 401 {
		t.Errorf("remote API without the token: %d, want 401", code)
	}
	if code := getFaults(t, url, tok[1]); code != 200 {
		t.Errorf("remote API with the printed token: %d, want 200", code)
	}

	t.Setenv("REHEARSE_CONTROL_TOKEN", "env-token-5ecret")
	out = startInjectServe(t, "--config", cfg)
	url = regexp.MustCompile(`control\s+(http://\S+)`).FindStringSubmatch(out)[1]
	if strings.Contains(out, "env-token-5ecret") || !strings.Contains(out, "required") {
		t.Errorf("the token given is printed, or its requirement is not:\n%s", out)
	}
	if code := getFaults(t, url, ""); code != 401 {
		t.Errorf("without the environment's token: %d, want 401", code)
	}
	if code := getFaults(t, url, "env-token-5ecret"); code != 200 {
		t.Errorf("with the environment's token: %d, want 200", code)
	}
}
