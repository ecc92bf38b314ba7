package main

import (
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/halfopen/rehearse/gateway"
	"github.com/halfopen/rehearse/internal/testutil"
)

// capturedSecrets are the credentials on the wire of testdata/secrets.pcap
// (scripts/capturegen -mode secrets): an Authorization header, a Cookie,
// an X-Api-Key, and api_key and access_token query parameters; then the
// password in an absolute-form target's user info, a Proxy-Authorization
// header, and user info in a target Go's URL parser refuses.
var capturedSecrets = []string{"sk-captured-bearer-5ecret", "captured-cookie-5ecret", "captured-xkey-5ecret", "captured-query-5ecret", "captured-access-5ecret",
	"captured-userinfo-5ecret", "captured-proxy-5ecret", "captured-rawurl-5ecret"}

// hookRecorder is a webhook receiver keeping every payload.
type hookRecorder struct {
	mu     sync.Mutex
	bodies []string
}

func (h *hookRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.bodies = append(h.bodies, string(b))
	h.mu.Unlock()
}

func (h *hookRecorder) all() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.bodies, "\n")
}

// grepSecrets fails for every secret found in any file under dir or in
// one of the texts.
func grepSecrets(t *testing.T, dir string, secrets []string, texts map[string]string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds the secret %q", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 6 {
		t.Fatalf("only %d files under %s: the run wrote less than a run directory", files, dir)
	}
	for name, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the secret %q:\n%s", name, s, text)
			}
		}
	}
}

// TestRunWritesNoSecret is a real rehearsal (loopback, a few seconds)
// whose every input carries a credential: the capture (Authorization,
// Cookie, X-Api-Key, api_key and access_token queries), the scenario's
// replay.rewrite.set (the documented way to give the gateway a test
// token), a gateway URL with user info (also in the health and metrics
// URLs), a metrics api_key and an Authorization header on the scrape, and
// a webhook whose path is its secret. Not one of them may appear in any
// file of the run directory or the archive, on stdout or stderr (debug
// log level), or in the webhook's payload; and the credentials still work
// (the gateway is reached through its URL with user info).
func TestRunWritesNoSecret(t *testing.T) {
	dir, written := t.TempDir(), t.TempDir() // the inputs, what the run writes
	capture, err := os.ReadFile(filepath.Join("testdata", "secrets.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets.pcap"), capture, 0o644); err != nil {
		t.Fatal(err)
	}

	// The built-in gateway, run as a gateway under test of its own
	// (reached by URL), calling the harness's upstreams at fixed ports.
	search, weather := testutil.FreeAddr(t), testutil.FreeAddr(t)
	gw, err := gateway.New(gateway.Config{Upstreams: map[string]gateway.UpstreamConfig{
		"search": {URL: "http://" + search}, "weather": {URL: "http://" + weather},
	}}, gateway.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gw.Serve(ln)
	defer gw.Close()
	gwAddr := ln.Addr().String()

	hook := &hookRecorder{}
	hooks := httptest.NewServer(hook)
	defer hooks.Close()

	injected := []string{"gw-pass-5ecret", "metrics-key-5ecret", "metrics-hdr-5ecret", "rewrite-bearer-5ecret", "rewrite-xkey-5ecret", "hook-path-5ecret"}
	scenario := filepath.Join(dir, "secrets.yaml")
	src := fmt.Sprintf(`name: secrets
gateway:
  url: http://admin:gw-pass-5ecret@%[1]s
  health: {url: "http://admin:gw-pass-5ecret@%[1]s/healthz", interval: 500ms}
  metrics:
    url: "http://admin:gw-pass-5ecret@%[1]s/metrics?api_key=metrics-key-5ecret"
    preset: reference
    interval: 500ms
    headers: {Authorization: "Bearer metrics-hdr-5ecret"}
upstreams:
  - {name: search, listen: "%[2]s"}
  - {name: weather, listen: "%[3]s"}
replay:
  capture: secrets.pcap
  duration: 3s
  rewrite:
    set: {Authorization: "Bearer rewrite-bearer-5ecret", X-Api-Key: rewrite-xkey-5ecret}
faults:
  - {name: outage, type: status, upstream: search, at: 1s, for: 1s, params: {code: 503}}
expectations:
  client_success_min: 0.3
`, gwAddr, search, weather)
	if err := os.WriteFile(scenario, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(written, "archive")
	junit := filepath.Join(written, "ci", "junit.xml")
	out, errOut, code := execute(t, "run", scenario, "--archive", archive, "--junit", junit, "--quiet", "--log-level", "debug",
		"--notify", hooks.URL+"/hook-path-5ecret")
	if code != 0 {
		t.Fatalf("exit %d: the credentials must still work\n%s\n%s", code, out, errOut)
	}
	secrets := append(append([]string{}, capturedSecrets...), injected...)
	grepSecrets(t, written, secrets, map[string]string{"stdout": out, "stderr": errOut, "webhook payload": hook.all()})
	if hook.all() == "" {
		t.Error("no webhook payload was received")
	}

	// The marker shows where each secret was: the record stays readable.
	matches, _ := filepath.Glob(filepath.Join(archive, "*-secrets", "journal.jsonl"))
	if len(matches) != 1 {
		t.Fatalf("journal in the archive: %v", matches)
	}
	j, _ := os.ReadFile(matches[0])
	for _, want := range []string{`"target":"http://admin:REDACTED@` + gwAddr + `"`, `"Authorization":"REDACTED"`, `"X-Api-Key":"REDACTED"`, `api_key=REDACTED`} {
		if !strings.Contains(string(j), want) {
			t.Errorf("journal lacks %s", want)
		}
	}
	// The replay reached the gateway and its upstreams, credentials and
	// all: redaction is in what is written, not in what is sent.
	if !strings.Contains(string(j), `"kind":"upstream.request"`) || !strings.Contains(string(j), `"kind":"metrics.sample"`) {
		t.Error("the journal has no upstream request or metrics sample: the credentialed URLs did not work")
	}
}

// TestHarnessFailureWritesNoSecret: an unreachable gateway given with a
// password. The error names the URL in the journal, report, junit.xml,
// stdout, stderr and webhook; the password is in none of them.
func TestHarnessFailureWritesNoSecret(t *testing.T) {
	dir, written := t.TempDir(), t.TempDir()
	hook := &hookRecorder{}
	hooks := httptest.NewServer(hook)
	defer hooks.Close()
	scenario := filepath.Join(dir, "down.yaml")
	src := "name: down\ngateway: {url: \"http://ops:down-pass-5ecret@127.0.0.1:1/?token=down-token-5ecret\", ready: {timeout: 1s}}\nupstreams: [{name: search, listen: \"" + testutil.FreeAddr(t) + "\"}]\nreplay: {duration: 2s}\nexpectations: {client_success_min: 0.9}\n"
	if err := os.WriteFile(scenario, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := execute(t, "run", scenario, "-o", filepath.Join(written, "run"), "--quiet", "--log-level", "debug", "--notify", hooks.URL)
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errOut)
	}
	secrets := []string{"down-pass-5ecret", "down-token-5ecret"}
	grepSecrets(t, written, secrets, map[string]string{"stdout": out, "stderr": errOut, "webhook payload": hook.all()})
	if !strings.Contains(out, "ops:REDACTED@127.0.0.1:1") {
		t.Errorf("the outcome does not name the gateway (redacted):\n%s", out)
	}
}
