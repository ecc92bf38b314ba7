package observe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

// okUpstream serves "ok" on a loopback listener until the test ends (or
// the test closes it, to kill the upstream) and returns its address.
func okUpstream(t *testing.T) (*http.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return srv, ln.Addr().String()
}

// realServer returns the path of the real server binary name, for a test
// that runs it, and marks the test parallel; it skips the test when the
// binary is not installed (install says how to get it) and with -short.
func realServer(t *testing.T, name, install string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed: %s to run this test", name, install)
	}
	if testing.Short() {
		t.Skipf("starts a real %s; skipped with -short", name)
	}
	t.Parallel()
	return bin
}

// runScraper runs s until the test ends.
func runScraper(t *testing.T, s *Scraper) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// server is a real server binary the test started (Caddy, HAProxy,
// Prometheus).
type server struct {
	name   string
	out    *testutil.SyncBuffer // its output, safe to read while it runs
	exited <-chan error         // its end, if it stops by itself
}

// startServer starts a real server binary in the foreground and kills it
// when the test ends.
func startServer(t *testing.T, cmd *exec.Cmd) *server {
	t.Helper()
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-ch
	})
	return &server{name: filepath.Base(cmd.Path), out: out, exited: ch}
}

// awaitStates reads rec's samples until one has every upstream of want in
// its state, and returns that sample. It fails the test when the server
// exits first or no sample matches within timeout. Scrape errors while the
// server starts (connection refused) are samples too, and do not match.
func (srv *server) awaitStates(t *testing.T, rec *signalRecorder, want map[string]string, timeout time.Duration) *journal.MetricsSample {
	t.Helper()
	deadline := time.After(timeout)
	var last *journal.MetricsSample
	for {
		select {
		case p := <-rec.ch:
			last = p.(*journal.MetricsSample)
			got := map[string]string{}
			for _, b := range last.States {
				got[b.Upstream] = b.State
			}
			matched := true
			for up, st := range want {
				matched = matched && got[up] == st
			}
			if matched {
				return last
			}
		case err := <-srv.exited:
			t.Fatalf("%s exited: %v\n%s", srv.name, err, srv.out.String())
		case <-deadline:
			t.Fatalf("never saw states %v within %s; last sample %+v\n%s output:\n%s", want, timeout, last, srv.name, srv.out.String())
		}
	}
}

// TestCaddyRealExporter runs a real Caddy (2.6, Debian package) with
// active health checks in front of a healthy loopback upstream and a dead
// one, and reads their state from its admin /metrics with the caddy preset.
// Caddy refreshes caddy_reverse_proxy_upstreams_healthy only every 10 s
// (before the first refresh every upstream reads healthy), so this test
// takes that long.
func TestCaddyRealExporter(t *testing.T) {
	bin := realServer(t, "caddy", "apt-get install caddy (Debian)")
	_, healthy := okUpstream(t)
	dead := testutil.FreeAddr(t)
	admin, site := testutil.FreeAddr(t), testutil.FreeAddr(t)

	dir := t.TempDir()
	caddyfile := fmt.Sprintf(`{
	admin %s
	auto_https off
	servers {
		metrics
	}
}
http://%s {
	reverse_proxy %s %s {
		health_uri /
		health_interval 100ms
		health_timeout 1s
	}
}
`, admin, site, healthy, dead)
	cfgPath := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfgPath, []byte(caddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfgPath, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	srv := startServer(t, cmd)

	rec := newSignalRecorder(nil)
	s, err := NewScraper(ScrapeConfig{
		URL: "http://" + admin + "/metrics", Preset: PresetCaddy,
		Interval:      rehearse.Duration(250 * time.Millisecond),
		DependencyMap: map[string]string{healthy: "search", dead: "weather"},
	}, WithRecorder(rec))
	if err != nil {
		t.Fatal(err)
	}
	runScraper(t, s)

	srv.awaitStates(t, rec, map[string]string{"search": journal.StateClosed, "weather": journal.StateOpen}, 40*time.Second)
}
