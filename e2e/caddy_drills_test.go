package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports"
)

// The Caddy drills: one upstream, app, behind reverse_proxy's passive
// health checks (caddyTiming), 20 req/s of the bundled capture for 10–12 s;
// the fault starts 3 s into the replay and lasts 5 s. Every figure is held
// to Caddy's own record: its debug log of upstream round trips and health
// events, checked in turn against the admin API's fails counter.

// checkCaddy holds the app episode to Caddy's record and logs the table.
func checkCaddy(t *testing.T, g *caddyGW, res *rehearsal.Result, s caddyState, shape string, want *int) *reports.Episode {
	t.Helper()
	ua := res.Analysis.Upstreams["app"]
	if ua == nil || len(ua.Episodes) != 1 {
		t.Fatalf("want one episode on app, analysis has %+v", ua)
	}
	ep := ua.Episodes[0]
	polls := g.checkPolls(t, s, res.Analysis.Run.WallStart)
	// Calls let through one at a time while unhealthy: the analysis reads
	// them as Caddy's expiries (each its own cycle) when the close showed
	// a timer, else as probes; the log is read the same way.
	truth := caddyTruth(t, s, ep.StartS, !strings.Contains(ep.Shape, "expiry"))
	c := &comparer{t: t}
	tm := g.Timing
	c.note("configuration", fmt.Sprintf("max_fails=%d fail_duration=%s unhealthy_status 5xx 429, response_header_timeout=%s, active checks every %s", tm.MaxFails, tm.FailDuration, tm.HeaderTimeout, tm.HealthInterval), "—")
	c.note("Caddy's log against its admin API", fmt.Sprintf("%d polls agree", polls), "—")
	c.note("shape", shape, ep.Shape+": "+ep.ShapeEvidence)
	c.note("statement", "—", ep.Statement)
	// Passive health checks count no successes: the figure must be null.
	// With active checks, one passing check makes it healthy again.
	compareCycles(c, ep, truth, want)
	if ep.Leaked != 0 {
		t.Errorf("leaked %d", ep.Leaked)
	}
	c.log(t.Name())
	return ep
}

// TestCaddyPassiveStorm: 503 to everything, no active checks. Caddy
// remembers each failure for fail_duration; at max_fails it stops
// forwarding. Each expiry lets one call through, which fails and trips it
// again, until the storm ends: then the first expiry closes it for good.
func TestCaddyPassiveStorm(t *testing.T) {
	t.Parallel()
	g, res, s := caddyDrill(t, caddyPassive, singleDrill{
		Name: "503-storm-passive", Rate: 20, Duration: 12 * time.Second,
		Faults: "  - {name: app-503, type: status, upstream: app, at: 3s, for: 5s, params: {code: 503}}\n",
	})
	checkCaddy(t, g, res, s, "passive expiry", nil)
}

// TestCaddyPassiveChecksHealthy: the same storm with active health checks
// that keep passing (the fault spares them). The checks do not close the
// breaker, the expiry does: the analysis must not put the close at a
// passing check.
func TestCaddyPassiveChecksHealthy(t *testing.T) {
	t.Parallel()
	tm := caddyPassive
	tm.HealthInterval, tm.HealthTimeout = 300*time.Millisecond, 200*time.Millisecond
	g, res, s := caddyDrill(t, tm, singleDrill{
		Name: "503-storm-checks-healthy", Rate: 20, Duration: 12 * time.Second,
		Faults: "  - {name: app-503, type: status, upstream: app, at: 3s, for: 5s, params: {code: 503}}\n",
	})
	checkCaddy(t, g, res, s, "passive expiry (health checks pass throughout)", nil)
}

// TestCaddyActiveChecks: the storm reaches the health checks too. A
// failed check marks the upstream unhealthy, the first passing one after
// the storm healthy again.
func TestCaddyActiveChecks(t *testing.T) {
	t.Parallel()
	tm := caddyPassive
	tm.HealthInterval, tm.HealthTimeout = 300*time.Millisecond, 200*time.Millisecond
	g, res, s := caddyDrill(t, tm, singleDrill{
		Name: "503-storm-checks-faulted", Rate: 20, Duration: 12 * time.Second,
		Faults: "  - {name: app-503, type: status, upstream: app, at: 3s, for: 5s, health_checks: true, params: {code: 503}}\n",
	})
	checkCaddy(t, g, res, s, "active health checks", ptrInt(1))
}

// TestCaddyRetryAfter: 429 with Retry-After: 5, counted as failures
// (unhealthy_status 429); Caddy does not read Retry-After.
func TestCaddyRetryAfter(t *testing.T) {
	t.Parallel()
	g, res, s := caddyDrill(t, caddyPassive, singleDrill{
		Name: "429-retry-after", Rate: 20, Duration: 12 * time.Second,
		Faults: "  - {name: app-429, type: retry_after, upstream: app, at: 3s, for: 5s, params: {after: 5s}}\n",
	})
	ep := checkCaddy(t, g, res, s, "passive expiry", nil)
	if ep.RetryAfterHonoured == nil || *ep.RetryAfterHonoured {
		t.Errorf("retry_after_honoured = %v, want false", ep.RetryAfterHonoured)
	}
}

// TestCaddySlowPastHeaderTimeout: answers 2 s late, past
// response_header_timeout (1 s): each call is an error Caddy counts.
func TestCaddySlowPastHeaderTimeout(t *testing.T) {
	t.Parallel()
	g, res, s := caddyDrill(t, caddyPassive, singleDrill{
		Name: "slow-past-header-timeout", Rate: 20, Duration: 13 * time.Second,
		Faults: "  - {name: app-slow, type: latency, upstream: app, at: 3s, for: 5s, params: {fixed: 2s}}\n",
	})
	checkCaddy(t, g, res, s, "passive expiry", nil)
	checkHangUps(t, res, g.Timing.HeaderTimeout)
}

// TestCaddyReset: resets before any response byte: errors Caddy counts.
func TestCaddyReset(t *testing.T) {
	t.Parallel()
	g, res, s := caddyDrill(t, caddyPassive, singleDrill{
		Name: "rst-before-headers", Rate: 20, Duration: 12 * time.Second,
		Faults: "  - {name: app-rst, type: reset, upstream: app, at: 3s, for: 5s}\n",
	})
	checkCaddy(t, g, res, s, "passive expiry", nil)
}

// TestCaddyMidStreamCut: the round trip succeeded (status 200), so Caddy
// counts nothing when the body is cut.
func TestCaddyMidStreamCut(t *testing.T) {
	t.Parallel()
	g, res, s := caddyDrill(t, caddyPassive, singleDrill{
		Name: "midstream-cut", Rate: 20, Duration: 10 * time.Second,
		Healthy: "{body_bytes: 20000}",
		Faults:  "  - {name: app-cut-40, type: stream_cut, upstream: app, at: 3s, for: 5s, params: {after_percent: 40, then: rst}}\n",
	})
	ep := checkCaddy(t, g, res, s, "—", nil)
	if ep.Opened {
		t.Errorf("opened: %s", ep.Statement)
	}
}

// TestCaddySlowHealthy: the passive storm with 300 ms healthy answers.
func TestCaddySlowHealthy(t *testing.T) {
	t.Parallel()
	g, res, s := caddyDrill(t, caddyPassive, singleDrill{
		Name: "503-storm-slow-healthy", Rate: 20, Duration: 12 * time.Second,
		Healthy: "{latency: {fixed: 300ms}}",
		Faults:  "  - {name: app-503, type: status, upstream: app, at: 3s, for: 5s, params: {code: 503}}\n",
	})
	checkCaddy(t, g, res, s, "passive expiry", nil)
}
