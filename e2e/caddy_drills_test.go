package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/analysis"
)

// The Caddy drills: one upstream, app, behind reverse_proxy's passive
// health checks (caddyTiming), 20 req/s of the bundled capture for 10–13 s;
// the fault starts 3 s into the replay and lasts 5 s. Every figure is held
// to Caddy's own record: its debug log of upstream round trips and health
// events, checked in turn against the admin API's fails counter.

// checkCaddy holds the app episode to Caddy's record and logs the table.
func checkCaddy(t *testing.T, g *caddyGW, res *rehearsal.Result, s caddyState, shape string, want *int) *analysis.Episode {
	t.Helper()
	ua := res.Analysis.Upstreams["app"]
	if ua == nil || len(ua.Episodes) != 1 {
		t.Fatalf("want one episode on app, analysis has %+v", ua)
	}
	ep := ua.Episodes[0]
	skipIfStalled(t, res.Analysis)
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

// caddyCase is one Caddy drill: Caddy's settings, the rehearsal, the
// shape those settings give (logged beside the analysis's), what successes_to_close must be (nil:
// passive health checks count no successes and the figure must be null),
// and the drill's own checks beyond checkCaddy's.
type caddyCase struct {
	timing    caddyTiming
	drill     singleDrill
	shape     string
	successes *int
	check     func(t *testing.T, g *caddyGW, res *rehearsal.Result, ep *analysis.Episode)
}

// caddyChecked is caddyPassive with active health checks every 300 ms.
// Their timeout (1 s) is far above what the loopback upstream takes: at
// 200 ms a loaded 2-core machine stalled one check past it (Client.Timeout
// exceeded while awaiting headers), and Caddy really marked the upstream
// unhealthy for 93 ms after the storm, a cycle of the machine's, not of
// the drill's.
var caddyChecked = func() caddyTiming {
	tm := caddyPassive
	tm.HealthInterval, tm.HealthTimeout = 300*time.Millisecond, time.Second
	return tm
}()

var caddyDrills = []caddyCase{
	// 503 to everything, no active checks. Caddy remembers each failure
	// for fail_duration; at max_fails it stops forwarding. Each expiry
	// lets one call through, which fails and trips it again, until the
	// storm ends: then the first expiry closes it for good.
	{timing: caddyPassive, drill: appDrill("503-storm-passive", 12*time.Second, storm503), shape: "passive expiry"},
	// The same storm with active health checks that keep passing (the
	// fault spares them). The checks do not close the breaker, the expiry
	// does: the analysis must not put the close at a passing check.
	{timing: caddyChecked, drill: appDrill("503-storm-checks-healthy", 12*time.Second, storm503), shape: "passive expiry (health checks pass throughout)"},
	// The storm reaches the health checks too. A failed check marks the
	// upstream unhealthy, the first passing one after the storm healthy
	// again.
	{timing: caddyChecked, drill: appDrill("503-storm-checks-faulted", 12*time.Second, storm503+", health_checks: true"), shape: "active health checks", successes: ptrInt(1)},
	// 429 with Retry-After: 5, counted as failures (unhealthy_status
	// 429); Caddy does not read Retry-After.
	{timing: caddyPassive, drill: appDrill("429-retry-after", 12*time.Second, retryAfter5), shape: "passive expiry",
		check: func(t *testing.T, _ *caddyGW, _ *rehearsal.Result, ep *analysis.Episode) {
			if ep.RetryAfterHonoured == nil || *ep.RetryAfterHonoured {
				t.Errorf("retry_after_honoured = %v, want false", ep.RetryAfterHonoured)
			}
		}},
	// Answers 2 s late, past response_header_timeout (1 s): each call is
	// an error Caddy counts.
	{timing: caddyPassive, drill: appDrill("slow-past-header-timeout", 13*time.Second, slow2s), shape: "passive expiry",
		check: func(t *testing.T, g *caddyGW, res *rehearsal.Result, _ *analysis.Episode) {
			checkHangUps(t, res, g.Timing.HeaderTimeout)
		}},
	// Resets before any response byte: errors Caddy counts.
	{timing: caddyPassive, drill: appDrill("rst-before-headers", 12*time.Second, resetEarly), shape: "passive expiry"},
	// The round trip succeeded (status 200), so Caddy counts nothing when
	// the body is cut.
	{timing: caddyPassive, drill: withHealthy(appDrill("midstream-cut", 10*time.Second, cutAt40), "{body_bytes: 20000}"), shape: "—",
		check: func(t *testing.T, _ *caddyGW, _ *rehearsal.Result, ep *analysis.Episode) {
			if ep.Opened {
				t.Errorf("opened: %s", ep.Statement)
			}
		}},
	// The passive storm with 300 ms healthy answers.
	{timing: caddyPassive, drill: withHealthy(appDrill("503-storm-slow-healthy", 12*time.Second, storm503), "{latency: {fixed: 300ms}}"), shape: "passive expiry"},
}

// TestCaddyDrills runs each drill against its own Caddy, two at a time
// (with the nginx and test-gateway drills), and holds the analysis to
// Caddy's record.
func TestCaddyDrills(t *testing.T) {
	t.Parallel()
	for _, c := range caddyDrills {
		t.Run(c.drill.Name, func(t *testing.T) {
			t.Parallel()
			g, res, s := caddyDrill(t, c.timing, c.drill)
			ep := checkCaddy(t, g, res, s, c.shape, c.successes)
			if c.check != nil {
				c.check(t, g, res, ep)
			}
		})
	}
}
