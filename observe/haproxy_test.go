package observe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

// TestHAProxyRealExporter starts a real HAProxy (2.6's built-in
// prometheus-exporter) in front of a healthy loopback upstream and a dead
// one, scrapes it with the haproxy preset, then kills the healthy upstream
// and watches its server turn open. HAProxy gets its stats listener as an
// inherited socket (bind fd@3), so no port is guessed.
func TestHAProxyRealExporter(t *testing.T) {
	bin := realServer(t, "haproxy", "install the Debian package haproxy (2.6+, with USE_PROMEX)")
	// The healthy upstream.
	upSrv, healthy := okUpstream(t)
	// A dead upstream: a port nobody listens on any more.
	dead := testutil.FreeAddr(t)

	statsFile, statsAddr := testutil.ListenerFile(t)
	metricsURL := "http://" + statsAddr + "/metrics"

	cfg := fmt.Sprintf(`global
    log stdout format raw local0 err
defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend stats
    bind fd@3
    http-request use-service prometheus-exporter if { path /metrics }
backend be_search
    server search1 %s check inter 50ms fall 1 rise 1
backend be_weather
    server weather1 %s check inter 50ms fall 1 rise 1
`, healthy, dead)
	cfgPath := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", cfgPath)
	cmd.ExtraFiles = []*os.File{statsFile}
	srv := startServer(t, cmd)
	statsFile.Close()

	clock := journal.NewClock(time.Now())
	rec := newSignalRecorder(clock)
	s, err := NewScraper(ScrapeConfig{
		URL: metricsURL, Preset: PresetHAProxy,
		Interval:      rehearse.Duration(50 * time.Millisecond),
		DependencyMap: map[string]string{"be_search": "search", "be_weather": "weather"},
	}, WithRecorder(rec), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	runScraper(t, s)

	// Search in state want, weather (no server listening) open.
	waitFor := func(want string) *journal.MetricsSample {
		t.Helper()
		return srv.awaitStates(t, rec, map[string]string{"search": want, "weather": journal.StateOpen}, 20*time.Second)
	}
	m := waitFor(journal.StateClosed)
	want := map[string]string{"be_search/search1": journal.StateClosed, "be_weather/weather1": journal.StateOpen}
	for _, b := range m.States {
		if want[b.Dependency] != b.State {
			t.Errorf("state %+v, want %s", b, want[b.Dependency])
		}
	}
	var checks int
	for _, s := range m.Series {
		if s.Name == "haproxy_server_check_up_down_total" {
			checks++
		}
	}
	if checks != 2 {
		t.Errorf("%d haproxy_server_check_up_down_total series kept, want 2", checks)
	}

	// Kill the healthy upstream: HAProxy's next check fails and the
	// server goes DOWN, which the preset reads as open.
	upSrv.Close()
	waitFor(journal.StateOpen)
}
