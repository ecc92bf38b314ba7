package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/halfopen/rehearse/gateway"
	"github.com/halfopen/rehearse/internal/testutil"
)

// secretsCapture is testdata/secrets.pcap (its README says how it was
// recorded): every credential of capturedSecrets on the wire.
var secretsCapture = filepath.Join("testdata", "secrets.pcap")

// TestInspectHidesCapturedCredentials: inspect, in every format and with
// --stats, prints none of the capture's credentials, the password of an
// absolute-form target's user info and a Proxy-Authorization included;
// --show-secrets prints them (so the capture does hold them).
func TestInspectHidesCapturedCredentials(t *testing.T) {
	var shown strings.Builder
	for _, args := range [][]string{
		{"inspect", secretsCapture},
		{"inspect", secretsCapture, "--stats"},
		{"inspect", secretsCapture, "--format", "jsonl"},
	} {
		out, errOut, code := execute(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		for _, s := range capturedSecrets {
			if strings.Contains(out+errOut, s) {
				t.Errorf("%v prints %q:\n%s\n%s", args, s, out, errOut)
			}
		}
		if !strings.Contains(out, "http://agent:REDACTED@") {
			t.Errorf("%v: the absolute-form target is not shown redacted:\n%s", args, out)
		}
		shown.WriteString(out)
	}
	if !strings.Contains(shown.String(), `"Proxy-Authorization":["REDACTED"]`) {
		t.Errorf("jsonl lacks the redacted Proxy-Authorization:\n%s", shown.String())
	}
	out, _, _ := execute(t, "inspect", secretsCapture, "--format", "jsonl", "--show-secrets")
	for _, s := range capturedSecrets {
		if !strings.Contains(out, s) {
			t.Errorf("--show-secrets does not show %q: the capture lost it", s)
		}
	}
}

// sentRecorder is a loopback target keeping every request's target and
// headers as received.
type sentRecorder struct {
	mu   sync.Mutex
	reqs []string
	auth []string
}

func (s *sentRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	b.WriteString(r.Method + " " + r.RequestURI + "\n")
	_ = r.Header.Write(&b)
	s.mu.Lock()
	s.reqs = append(s.reqs, b.String())
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
}

func (s *sentRecorder) snapshot() (reqs, auth []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...), append([]string(nil), s.auth...)
}

func serveRecorder(t *testing.T) (*sentRecorder, string) {
	rec := &sentRecorder{}
	_, u := serveHandler(t, rec)
	return rec, u
}

// TestReplaySendsNoCapturedCredential: `rehearse replay` of a capture
// full of credentials sends none of them (each value is REDACTED, as in
// `rehearse run`), sends a --set-header credential exactly as written,
// writes neither, and sends the captured ones with --send-credentials.
func TestReplaySendsNoCapturedCredential(t *testing.T) {
	const testToken = "Bearer replay-test-token-5ecret"
	rec, target := serveRecorder(t)
	dir := t.TempDir()
	out, errOut, code := execute(t, "replay", secretsCapture, "--target", target, "--once", "--rate", "50",
		"--allow-writes", "--quiet", "--out", dir, "--set-header", "Authorization: "+testToken, "--log-level", "debug")
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	reqs, auth := rec.snapshot()
	if len(reqs) < 10 {
		t.Fatalf("the target saw %d requests", len(reqs))
	}
	all := strings.Join(reqs, "\n")
	for _, s := range capturedSecrets {
		if strings.Contains(all, s) {
			t.Errorf("a captured credential %q was sent:\n%s", s, all)
		}
	}
	for _, want := range []string{"Cookie: REDACTED", "X-Api-Key: REDACTED", "api_key=REDACTED", "access_token=REDACTED"} {
		if !strings.Contains(all, want) {
			t.Errorf("the requests sent lack %q:\n%s", want, all)
		}
	}
	for i, a := range auth {
		if a != testToken {
			t.Errorf("request %d: Authorization %q, want the --set-header value as written", i, a)
		}
	}
	texts := map[string]string{"stdout": out, "stderr": errOut}
	for _, name := range []string{"journal.jsonl", "summary.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		texts[name] = string(b)
	}
	for name, text := range texts {
		for _, s := range append([]string{"replay-test-token-5ecret"}, capturedSecrets...) {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %q", name, s)
			}
		}
	}

	// On request, the captured credentials are sent as captured.
	rec, target = serveRecorder(t)
	if _, errOut, code := execute(t, "replay", secretsCapture, "--target", target, "--once", "--rate", "50",
		"--allow-writes", "--quiet", "--send-credentials"); code != 0 {
		t.Fatalf("--send-credentials: exit %d: %s", code, errOut)
	}
	reqs, _ = rec.snapshot()
	all = strings.Join(reqs, "\n")
	for _, s := range capturedSecrets[:5] { // headers and query parameters; user info and Proxy-Authorization are never forwarded
		if !strings.Contains(all, s) {
			t.Errorf("--send-credentials did not send %q", s)
		}
	}
	if strings.Contains(all, "REDACTED") {
		t.Errorf("--send-credentials still redacts:\n%s", all)
	}
}

// tokenFront is a token-protected gateway: it answers 401 to any request
// without exactly its Authorization value and passes the others to the
// gateway behind it. It counts the replayed requests (those stamped with
// X-Rehearse-Seq) that came with and without the token.
type tokenFront struct {
	want        string
	next        http.Handler
	mu          sync.Mutex
	with, wrong int
	wrongAuth   []string
}

func (f *tokenFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ok := r.Header.Get("Authorization") == f.want
	if r.Header.Get("X-Rehearse-Seq") != "" {
		f.mu.Lock()
		if ok {
			f.with++
		} else {
			f.wrong++
			if len(f.wrongAuth) < 5 {
				f.wrongAuth = append(f.wrongAuth, r.Header.Get("Authorization"))
			}
		}
		f.mu.Unlock()
	}
	if !ok {
		http.Error(w, "missing or wrong token", http.StatusUnauthorized)
		return
	}
	f.next.ServeHTTP(w, r)
}

// TestRewriteSetSendsTokenWritesNone is issue 28's token-protected
// gateway: a rehearsal whose replay.rewrite.set gives the gateway its
// token (over the capture's own Authorization). Every replayed request
// reaches the gateway with exactly that token (none answered 401), and
// the token is in no file of the run directory nor on stdout or stderr.
func TestRewriteSetSendsTokenWritesNone(t *testing.T) {
	const token = "gw-token-5ecret-7f3a9c"
	dir, written := t.TempDir(), t.TempDir()
	capture, err := os.ReadFile(secretsCapture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets.pcap"), capture, 0o644); err != nil {
		t.Fatal(err)
	}
	search, weather := testutil.FreeAddr(t), testutil.FreeAddr(t)
	gw, err := gateway.New(gateway.Config{Upstreams: map[string]gateway.UpstreamConfig{
		"search": {URL: "http://" + search}, "weather": {URL: "http://" + weather},
	}}, gateway.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	gwLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gw.Serve(gwLn)
	defer gw.Close()
	gwURL, _ := url.Parse("http://" + gwLn.Addr().String())
	front := &tokenFront{want: "Bearer " + token, next: httputil.NewSingleHostReverseProxy(gwURL)}
	_, frontURL := serveHandler(t, front)

	scenario := filepath.Join(dir, "token.yaml")
	src := fmt.Sprintf(`name: token
gateway: {url: "%s"}
upstreams:
  - {name: search, listen: "%s"}
  - {name: weather, listen: "%s"}
replay:
  capture: secrets.pcap
  rate: 10
  duration: 3s
  rewrite:
    set: {Authorization: "Bearer %s"}
expectations:
  client_success_min: 0.5
`, frontURL, search, weather, token)
	if err := os.WriteFile(scenario, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := execute(t, "run", scenario, "-o", filepath.Join(written, "run"), "--quiet", "--log-level", "debug")
	front.mu.Lock()
	with, wrong, wrongAuth := front.with, front.wrong, front.wrongAuth
	front.mu.Unlock()
	if wrong > 0 || with < 10 {
		t.Errorf("the gateway saw %d replayed requests with the token and %d without (Authorization %q)", with, wrong, wrongAuth)
	}
	if code != 0 {
		t.Errorf("exit %d: the token must open the gateway\n%s\n%s", code, out, errOut)
	}
	grepSecrets(t, written, []string{token}, map[string]string{"stdout": out, "stderr": errOut})
	j, _ := os.ReadFile(filepath.Join(written, "run", "journal.jsonl"))
	if strings.Contains(string(j), `"status":401`) {
		t.Error("the journal holds 401 answers")
	}
	if !strings.Contains(string(j), `"Authorization":"REDACTED"`) {
		t.Error("the journal does not record the rewrite, redacted")
	}
}

// serveHandler serves h on a loopback port until the test ends.
func serveHandler(t *testing.T, h http.Handler) (string, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), "http://" + ln.Addr().String()
}

// TestReportLinksWriteNoSecret: a scenario's report.links dashboards
// with an api_key in their query, after a Grafana variable holding quotes
// and a Prometheus one holding a space (where a query in free text ends),
// are written with the key REDACTED in journal.jsonl, run.json,
// report.md and report.html, and the links are still there.
func TestReportLinksWriteNoSecret(t *testing.T) {
	dir, written := t.TempDir(), t.TempDir()
	scenario := filepath.Join(dir, "links.yaml")
	src := `name: links
upstreams: [{name: search}]
replay: {duration: 1s}
report:
  links:
    grafana: 'https://grafana.example/d/abc?var-q=rate(x{job="api"}[5m])&api_key=graf-key-5ecret&orgId=1'
    prometheus: "https://user:prom-pass-5ecret@prom.example/?x=a b&api_key=prom-key-5ecret"
`
	if err := os.WriteFile(scenario, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(written, "run")
	out, errOut, code := execute(t, "run", scenario, "-o", run, "--quiet", "--log-level", "debug")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	grepSecrets(t, written, []string{"graf-key-5ecret", "prom-key-5ecret", "prom-pass-5ecret"}, map[string]string{"stdout": out, "stderr": errOut})
	for _, f := range []string{"run.json", "report.md", "report.html"} {
		b, err := os.ReadFile(filepath.Join(run, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "grafana.example/d/abc") || !strings.Contains(string(b), "api_key=REDACTED") {
			t.Errorf("%s lacks the Grafana link with its key redacted", f)
		}
	}
}
