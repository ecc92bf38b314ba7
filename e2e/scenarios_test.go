package e2e

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/scenarios"
)

// TestHAProxyScenarioFiles validates every scenario in scenarios/haproxy/
// as `rehearse validate` does, and checks that each names the ports that
// haproxy.cfg beside it uses: the frontend, the exporter and every
// upstream a server points at. The configuration itself is checked with
// `haproxy -c` where HAProxy is installed.
func TestHAProxyScenarioFiles(t *testing.T) {
	dir := filepath.Join("..", "scenarios", "haproxy")
	cfg, err := os.ReadFile(filepath.Join(dir, "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	binds := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*bind\s+(\S+)`).FindAllStringSubmatch(string(cfg), -1) {
		binds[m[1]] = true
	}
	servers := map[string]string{} // backend → server address
	for _, m := range regexp.MustCompile(`(?m)^backend\s+(\S+)\s*\n\s*server\s+\S+\s+(\S+)`).FindAllStringSubmatch(string(cfg), -1) {
		servers[m[1]] = m[2]
	}
	if len(binds) != 2 || len(servers) != 4 {
		t.Fatalf("haproxy.cfg: binds %v, servers %v", binds, servers)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) < 6 {
		t.Fatalf("scenario files: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc, err := scenarios.Load(f)
			if err != nil {
				t.Fatalf("rehearse validate would reject it: %v", err)
			}
			g := sc.Gateway
			for _, raw := range []string{g.URL, g.Metrics.URL} {
				u, err := url.Parse(raw)
				if err != nil || !binds[u.Host] {
					t.Errorf("%s is not a bind of haproxy.cfg (%v)", raw, binds)
				}
			}
			if g.Metrics.Preset != "haproxy" {
				t.Errorf("metrics preset %q, want haproxy", g.Metrics.Preset)
			}
			if g.Ready == nil || !g.Ready.Require2xx {
				t.Error("ready.require_2xx not set: the rehearsal would start before HAProxy's checks passed")
			}
			for _, u := range sc.Upstreams {
				be := "be_" + u.Name
				if servers[be] != u.Listen {
					t.Errorf("upstream %s listens on %s, haproxy.cfg's %s calls %q", u.Name, u.Listen, be, servers[be])
				}
				if g.Metrics.DependencyMap[be] != u.Name {
					t.Errorf("dependency_map lacks %s: %s", be, u.Name)
				}
			}
		})
	}
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy not installed: the scenario files were validated, haproxy.cfg was not checked with haproxy -c")
	}
	out, err := exec.Command(bin, "-c", "-f", filepath.Join(dir, "haproxy.cfg")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "valid") {
		t.Errorf("haproxy -c: %v\n%s", err, out)
	}
}

// packFiles loads every scenario of a pack as `rehearse validate` does.
func packFiles(t *testing.T, dir string, min int) map[string]*scenarios.Scenario {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) < min {
		t.Fatalf("scenario files in %s: %v %v", dir, files, err)
	}
	out := map[string]*scenarios.Scenario{}
	for _, f := range files {
		sc, err := scenarios.Load(f)
		if err != nil {
			t.Errorf("%s: rehearse validate would reject it: %v", f, err)
			continue
		}
		out[filepath.Base(f)] = sc
	}
	return out
}

// checkSinglePack asserts what every scenario of a single-upstream pack
// needs: the gateway URL on a port the configuration listens on, the one
// upstream app on the port the configuration proxies to, every route to
// it, readiness that waits for 2xx.
func checkSinglePack(t *testing.T, name string, scs map[string]*scenarios.Scenario, listens map[string]bool, app string) {
	t.Helper()
	for f, sc := range scs {
		g := sc.Gateway
		if u, err := url.Parse(g.URL); err != nil || !listens[u.Host] {
			t.Errorf("%s: gateway url %s is not one %s listens on (%v)", f, g.URL, name, listens)
		}
		if len(sc.Upstreams) != 1 || sc.Upstreams[0].Name != "app" || sc.Upstreams[0].Listen != app {
			t.Errorf("%s: upstreams %+v, want app on %s", f, sc.Upstreams, app)
		}
		if r := sc.Replay.Routes; len(r) != 1 || r[0].Prefix != "/" || r[0].Upstream != "app" {
			t.Errorf("%s: routes %+v, want every route to app", f, r)
		}
		if g.Ready == nil || !g.Ready.Require2xx {
			t.Errorf("%s: ready.require_2xx not set", f)
		}
	}
}

// TestNginxScenarioFiles validates scenarios/nginx/ against its
// nginx.conf, which `nginx -t` checks where nginx is installed.
func TestNginxScenarioFiles(t *testing.T) {
	dir := filepath.Join("..", "scenarios", "nginx")
	cfg, err := os.ReadFile(filepath.Join(dir, "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	listens := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*listen\s+([^;\s]+);`).FindAllStringSubmatch(string(cfg), -1) {
		listens[m[1]] = true
	}
	m := regexp.MustCompile(`(?m)^\s*server\s+(\S+)\s+max_fails=\d+\s+fail_timeout=`).FindStringSubmatch(string(cfg))
	if m == nil || len(listens) != 3 {
		t.Fatalf("nginx.conf: listens %v, primary server %v", listens, m)
	}
	checkSinglePack(t, "nginx.conf", packFiles(t, dir, 6), listens, m[1])
	bin, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx not installed: the scenario files were validated, nginx.conf was not checked with nginx -t")
	}
	abs, _ := filepath.Abs(filepath.Join(dir, "nginx.conf"))
	out, err := exec.Command(bin, "-t", "-e", "stderr", "-p", t.TempDir(), "-c", abs).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "test is successful") {
		t.Errorf("nginx -t: %v\n%s", err, out)
	}
}

// TestCaddyScenarioFiles validates scenarios/caddy/ against its
// Caddyfiles, which `caddy adapt` checks where Caddy is installed.
func TestCaddyScenarioFiles(t *testing.T) {
	dir := filepath.Join("..", "scenarios", "caddy")
	var app string
	listens := map[string]bool{}
	for _, f := range []string{"Caddyfile", "Caddyfile.active"} {
		cfg, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^http://(\S+) \{`).FindAllStringSubmatch(string(cfg), -1) {
			listens[m[1]] = true
		}
		if m := regexp.MustCompile(`(?m)^\s*reverse_proxy\s+(\S+)\s+\{`).FindStringSubmatch(string(cfg)); m != nil {
			app = m[1]
		}
	}
	if len(listens) != 1 || app == "" {
		t.Fatalf("Caddyfiles: sites %v, upstream %q", listens, app)
	}
	scs := packFiles(t, dir, 6)
	checkSinglePack(t, "the Caddyfiles", scs, listens, app)
	for f, sc := range scs {
		if m := sc.Gateway.Metrics; m == nil || m.Preset != "caddy" || m.DependencyMap[app] != "app" {
			t.Errorf("%s: metrics %+v, want the caddy preset with %s mapped to app", f, m, app)
		}
	}
	bin, err := exec.LookPath("caddy")
	if err != nil {
		t.Skip("caddy not installed: the scenario files were validated, the Caddyfiles were not checked with caddy adapt")
	}
	for _, f := range []string{"Caddyfile", "Caddyfile.active"} {
		if out, err := exec.Command(bin, "adapt", "--config", filepath.Join(dir, f), "--adapter", "caddyfile").CombinedOutput(); err != nil {
			t.Errorf("caddy adapt %s: %v\n%s", f, err, out)
		}
	}
}
