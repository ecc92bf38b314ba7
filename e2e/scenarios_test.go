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
