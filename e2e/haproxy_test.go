// Package e2e rehearses real third-party gateways end to end: the harness's
// upstreams, a real gateway process started by the test on free loopback
// ports, the conductor (rehearsal.Run) and the black-box analysis. The
// figures the analysis measures are held to the gateway's own
// configuration, so these tests prove the measurements true on a gateway the
// harness did not build.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/rehearsal"
)

// haproxyTiming is the check and breaker configuration every HAProxy drill
// runs with: the values the measured figures are held to. They are shorter
// than production values so a drill takes seconds, and chosen so that each
// one can be told apart in the measurements:
//   - inter 1s: the check interval while UP; long enough that, at the
//     drills' traffic rate, passive detection (observe layer7) usually
//     acts before three failed checks. Either detector may win a drill
//     whose checks are faulted too; the assertions read HAProxy's log to
//     know which one did and hold the count to that detector's setting.
//   - fastinter 300ms: after on-error mark-down and while rising; half of
//     downinter so a spacing of one is never mistaken for the other.
//   - downinter 600ms: the check spacing while fully DOWN.
//   - rise 2, fall 3, error-limit 5: small, distinct numbers.
//   - timeout server 1s, timeout check 400ms: the slow drill's 2 s latency
//     is past both.
type haproxyTiming struct {
	Inter, FastInter, DownInter time.Duration
	Rise, Fall, ErrorLimit      int
	TimeoutServer, TimeoutCheck time.Duration
	// Retries, when set, are HAProxy's L7 retries ("retries N", "retry-on
	// RetryOn", "option redispatch"), without passive observation, so
	// that the server stays UP and every failed request is retried.
	Retries int
	RetryOn string
}

var defaultTiming = haproxyTiming{
	Inter: time.Second, FastInter: 300 * time.Millisecond, DownInter: 600 * time.Millisecond,
	Rise: 2, Fall: 3, ErrorLimit: 5,
	TimeoutServer: time.Second, TimeoutCheck: 400 * time.Millisecond,
}

// upstreamNames are the drills' upstreams; llm-primary serves
// /v1/chat/completions.
var upstreamNames = []string{"search", "weather", "vectors", "llm-primary"}

// haproxy is one running HAProxy with its addresses and its log.
type haproxy struct {
	FrontURL   string
	MetricsURL string
	ReadyURL   string
	Upstreams  map[string]string // upstream name → host:port HAProxy calls
	Timing     haproxyTiming
	Config     string

	*proc // the running HAProxy and what it printed
}

// logLine is one line HAProxy printed, stamped when the test read it.
type logLine struct {
	At   time.Time
	Text string
}

// needHAProxy skips the test when HAProxy is absent or tests are short.
func needHAProxy(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy not installed: install the Debian package haproxy (2.6+, built with USE_PROMEX; .ci/run does) to run the HAProxy end-to-end tests")
	}
	if testing.Short() {
		t.Skip("starts a real haproxy and runs timed rehearsals; skipped with -short")
	}
	return bin
}

// haproxyConfig renders the configuration: one backend per upstream behind
// a path_beg frontend, HTTP health checks on /healthz, passive layer-7
// observation that marks the server down after error-limit consecutive
// errors, a JSON 503 with X-Breaker-State when no server is available, and
// the Prometheus exporter on its own frontend. Frontends bind inherited
// sockets: fd@3 traffic, fd@4 metrics.
func haproxyConfig(tm haproxyTiming, upstreams map[string]string) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }
	observe := fmt.Sprintf(" observe layer7 error-limit %d on-error mark-down", tm.ErrorLimit)
	retries := ""
	if tm.Retries > 0 {
		observe = ""
		retries = fmt.Sprintf("    retries %d\n    retry-on %s\n    option redispatch\n", tm.Retries, tm.RetryOn)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `global
    # No log target: in the foreground (-db) HAProxy still prints its
    # state changes ("[WARNING] ... Server be_search/s1 is DOWN, reason:
    # ...") on stderr, which the test reads as the white-box truth.

defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server %s
    timeout check %s
    option httpchk GET /healthz
    default-server check inter %s fastinter %s downinter %s rise %d fall %d%s
    # HAProxy's own 503 (no server UP) becomes a recognisable fast-fail;
    # 503s that the servers send are forwarded unchanged.
    http-error status 503 content-type application/json hdr X-Breaker-State open lf-string "{\"error\":{\"code\":\"dependency_unavailable\",\"dependency\":\"%%b\",\"message\":\"No server is available to handle this request.\"}}"
%s
frontend fe_rehearse
    bind fd@3
    # Ready only while every backend has a server UP.
    monitor-uri /haproxy-ready
`, ms(tm.TimeoutServer), ms(tm.TimeoutCheck), ms(tm.Inter), ms(tm.FastInter), ms(tm.DownInter), tm.Rise, tm.Fall, observe, retries)
	for _, n := range upstreamNames {
		fmt.Fprintf(&b, "    monitor fail if { nbsrv(be_%s) lt 1 }\n", n)
	}
	for _, n := range upstreamNames {
		prefix := "/tools/" + n
		if n == "llm-primary" {
			prefix = "/v1/chat/completions"
		}
		fmt.Fprintf(&b, "    use_backend be_%s if { path_beg %s }\n", n, prefix)
	}
	b.WriteString(`
frontend fe_stats
    bind fd@4
    http-request use-service prometheus-exporter if { path /metrics }
`)
	for _, n := range upstreamNames {
		fmt.Fprintf(&b, "\nbackend be_%s\n    server s1 %s\n", n, upstreams[n])
	}
	return b.String()
}

// startHAProxy starts `haproxy -db -f cfg` in the foreground with its two
// listeners inherited, and stops it by PID when the test ends (also on
// failure). HAProxy's output is kept, stamped, for the assertions and for
// failure messages.
func startHAProxy(t *testing.T, tm haproxyTiming) *haproxy {
	t.Helper()
	bin := needHAProxy(t)
	h := &haproxy{Upstreams: map[string]string{}, Timing: tm}
	for _, n := range upstreamNames {
		h.Upstreams[n] = testutil.FreeAddr(t)
	}
	front, frontAddr := testutil.ListenerFile(t)
	stats, statsAddr := testutil.ListenerFile(t)
	frontURL, statsURL := "http://"+frontAddr, "http://"+statsAddr
	h.FrontURL, h.MetricsURL, h.ReadyURL = frontURL, statsURL+"/metrics", frontURL+"/haproxy-ready"
	h.Config = haproxyConfig(tm, h.Upstreams)
	cfgPath := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(h.Config), 0o600); err != nil {
		t.Fatal(err)
	}
	// Check the configuration first: a clear message beats a dead process.
	check := exec.Command(bin, "-c", "-f", cfgPath)
	check.ExtraFiles = []*os.File{front, stats}
	if out, err := check.CombinedOutput(); err != nil {
		front.Close()
		stats.Close()
		t.Fatalf("haproxy -c rejects the generated configuration: %v\n%s\n%s", err, out, h.Config)
	}
	cmd := exec.Command(bin, "-db", "-f", cfgPath)
	cmd.ExtraFiles = []*os.File{front, stats}
	h.proc = startCmd(t, "haproxy", cmd, func() string { return h.Config })
	front.Close()
	stats.Close()
	return h
}

// serverChangeRE matches HAProxy's state-change lines, e.g.
// "Server be_search/s1 is DOWN, reason: Health analyze, info: ...".
var serverChangeRE = regexp.MustCompile(`Server be_([^/]+)/s1 is (UP|DOWN)(?:, reason: ([^,]+))?`)

// serverChange is one state change HAProxy reported (the white-box truth).
type serverChange struct {
	At       time.Time
	Upstream string
	State    string // "UP" or "DOWN"
	Reason   string
	Line     string
}

// Changes returns HAProxy's state changes for one upstream.
func (h *haproxy) Changes(upstream string) []serverChange {
	var out []serverChange
	for _, l := range h.Lines() {
		m := serverChangeRE.FindStringSubmatch(l.Text)
		if m == nil || m[1] != upstream {
			continue
		}
		out = append(out, serverChange{At: l.At, Upstream: m[1], State: m[2], Reason: m[3], Line: l.Text})
	}
	return out
}

// drill is one HAProxy rehearsal: the scenario's faults, rate and length.
type drill struct {
	Name     string
	Rate     float64
	Duration time.Duration
	Faults   string // YAML list items, indented by two spaces
	Expect   string // YAML expectations block body, indented by two spaces
}

// scenarioYAML renders a drill against a running HAProxy.
func (h *haproxy) scenarioYAML(d drill) string {
	var b strings.Builder
	fmt.Fprintf(&b, `version: 1
name: haproxy-%s
gateway:
  url: %s
  metrics:
    url: %s
    preset: haproxy
    interval: 250ms
    dependency_map: {be_search: search, be_weather: weather, be_vectors: vectors, be_llm-primary: llm-primary}
  health:
    url: %s
    interval: 250ms
  fast_fail: {statuses: [503], header: X-Breaker-State=open}
  ready: {url: %s, require_2xx: true, timeout: 10s}
replay:
  rate: %g
  duration: %s
  deadline: 5s
upstreams:
`, d.Name, h.FrontURL, h.MetricsURL, h.ReadyURL, h.ReadyURL, d.Rate, d.Duration)
	for _, n := range upstreamNames {
		fmt.Fprintf(&b, "  - {name: %s, listen: \"%s\"}\n", n, h.Upstreams[n])
	}
	b.WriteString("faults:\n" + d.Faults)
	if d.Expect != "" {
		b.WriteString("expectations:\n" + d.Expect)
	}
	return b.String()
}

// rehearseHAProxy runs a drill through rehearsal.Run against a fresh
// HAProxy and returns the result; a failed expectation is returned for the
// caller to judge (the drill's own assertions are more precise).
func rehearseHAProxy(t *testing.T, d drill) (*haproxy, *rehearsal.Result, error) {
	t.Helper()
	return rehearseHAProxyWith(t, defaultTiming, d)
}

// rehearseHAProxyWith is rehearseHAProxy with HAProxy's own settings.
func rehearseHAProxyWith(t *testing.T, tm haproxyTiming, d drill) (*haproxy, *rehearsal.Result, error) {
	t.Helper()
	h := startHAProxy(t, tm)
	res, err := runScenario(t, "haproxy-"+d.Name, h.scenarioYAML(d), d.Duration, h.proc)
	return h, res, err
}
