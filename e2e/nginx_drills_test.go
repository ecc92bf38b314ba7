package e2e

import (
	"math"
	"testing"
	"time"

	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
)

// The nginx drills: one upstream, app, behind nginx's passive breaker
// (nginxTiming), 20 req/s of the bundled capture (90 % POST) for 10–13 s;
// the fault starts 3 s into the replay and lasts 5 s. Every figure is held
// to nginx's access log, not to its configuration, so the drills run two
// at a time (with the Caddy and test-gateway drills) without loosening a
// tolerance: a late timer moves the log and the measurement alike.

func ptrInt(n int) *int { return &n }

// nginxCase is one nginx drill: nginx's settings, the rehearsal, what
// successes_to_close must be (nil: the shape counts no successes and the
// figure must be null, see compareCycles), and the drill's own checks
// beyond checkNginx's.
type nginxCase struct {
	timing    nginxTiming
	drill     singleDrill
	successes *int
	check     func(t *testing.T, g *nginxGW, res *rehearsal.Result, ep *analysis.Episode)
}

var nginxDrills = []nginxCase{
	// The server answers 503 to everything. nginx counts max_fails of
	// them, skips the server for fail_timeout, lets one request through
	// as the probe, and takes the server back when a probe succeeds.
	// The closing probe is quick (a healthy server answers in a
	// millisecond): the breaker's close has no latest moment seen from
	// outside, but the traffic's return is a fact, and closes_within —
	// set as a user reading the configuration would, fail_timeout and a
	// second — judges that (docs/analysis.md, the observable layer).
	{timing: nginxDefault, drill: withExpect(appDrill("503-storm", 12*time.Second, storm503), "  closes_within: 3s\n"), successes: ptrInt(1),
		check: checkResumed},
	// Without non_idempotent in proxy_next_upstream nginx neither counts
	// nor passes on a POST's 503: only the GETs (10 % of the capture)
	// count towards max_fails, and a POST probe's 503 clears the failures
	// (the probe "succeeded" as far as nginx knows). The breaker flaps for
	// as long as the storm lasts.
	{timing: nginxPOSTUncounted, drill: appDrill("503-storm-post-uncounted", 12*time.Second, storm503)},
	// 429 with Retry-After: 5. nginx counts a 429 (it is in
	// proxy_next_upstream) like any failure and has no notion of
	// Retry-After: it probes after fail_timeout, before the 5 s are up.
	{timing: nginxDefault, drill: appDrill("429-retry-after", 12*time.Second, retryAfter5), successes: ptrInt(1),
		check: func(t *testing.T, g *nginxGW, _ *rehearsal.Result, ep *analysis.Episode) {
			if ep.RetryAfterHonoured == nil || *ep.RetryAfterHonoured {
				t.Errorf("retry_after_honoured = %v, want false: nginx probes after fail_timeout (%s), before Retry-After's 5 s", ep.RetryAfterHonoured, g.Timing.FailTimeout)
			}
		}},
	// The server answers 2 s late, past proxy_read_timeout (1 s); nginx
	// gives up on each call at 1 s, counts a timeout, and answers the
	// client from the responder. The upstream must see every hang-up at
	// 1 s, for POSTs and GETs alike: the failures before the open and the
	// cooldown depend on it.
	{timing: nginxDefault, drill: appDrill("slow-past-read-timeout", 13*time.Second, slow2s), successes: ptrInt(1),
		check: func(t *testing.T, g *nginxGW, res *rehearsal.Result, _ *analysis.Episode) {
			checkHangUps(t, res, g.Timing.ReadTimeout)
		}},
	// The server resets every connection before answering. nginx counts
	// the error (502) and passes the request to the responder.
	{timing: nginxDefault, drill: appDrill("rst-before-headers", 12*time.Second, resetEarly), successes: ptrInt(1)},
	// The server cuts its answers at 40 % with a reset. The status line
	// was good; nginx does not count a body error against the server, and
	// nothing opens.
	{timing: nginxDefault, drill: withHealthy(appDrill("midstream-cut", 10*time.Second, cutAt40), "{body_bytes: 20000}"),
		check: func(t *testing.T, _ *nginxGW, _ *rehearsal.Result, ep *analysis.Episode) {
			if ep.Opened {
				t.Errorf("opened: %s", ep.Statement)
			}
			if ep.UpstreamCalls < 20 {
				t.Errorf("only %d calls during the cut: the drill was not exercised", ep.UpstreamCalls)
			}
		}},
	// The 503 storm with healthy answers that take 300 ms. The probe
	// after the storm is slow: requests that come while it is in flight
	// go to the responder, and the first of them must not be taken for a
	// second probe. One successful probe closes it, at its end.
	{timing: nginxDefault, drill: withHealthy(appDrill("503-storm-slow-healthy", 12*time.Second, storm503), "{latency: {fixed: 300ms}}"), successes: ptrInt(1)},
}

// withExpect sets a drill's expectations block (YAML body, indented by
// two spaces).
func withExpect(d singleDrill, body string) singleDrill {
	d.Expect = body
	return d
}

// checkResumed holds the observable recovery to nginx's access log — the
// first request after the last one nginx sent to the responder that
// reached the server and succeeded, answered at its line's end — and
// wants closes_within met on it.
func checkResumed(t *testing.T, g *nginxGW, res *rehearsal.Result, ep *analysis.Episode) {
	t.Helper()
	lines := readNginxLog(t, g.AccessLog, res.Analysis.Run.WallStart)
	lastRefused := -1
	for i, l := range lines {
		if l.Start >= ep.StartS && !l.Reached(g.App) {
			lastRefused = i
		}
	}
	truth := -1.0
	for _, l := range lines[lastRefused+1:] {
		if l.Reached(g.App) && !l.AttemptFailed() {
			truth = l.End
			break
		}
	}
	o := ep.Observed
	switch {
	case lastRefused < 0 || truth < 0:
		t.Fatalf("nginx's log shows no refusal followed by a success in the episode")
	case o == nil || o.ResumedAtS == nil:
		t.Errorf("no resumption observed; nginx's log has traffic back at %.3f (%s)", truth, ep.Statement)
	case math.Abs(*o.ResumedAtS-truth) > tolerance(truth-ep.EndS):
		t.Errorf("traffic resumed at %.3f, nginx's log says %.3f", *o.ResumedAtS, truth)
	}
	for _, e := range res.Analysis.Expectations {
		if e.Name == "closes_within" && e.Outcome != expect.Met {
			t.Errorf("closes_within: %s %q (observed %s); nginx's log has traffic back %.3f s after the fault ended", e.Outcome, e.Message, e.Observed, truth-ep.EndS)
		}
	}
}

// nginxPOSTUncounted is nginx without non_idempotent in
// proxy_next_upstream.
var nginxPOSTUncounted = func() nginxTiming {
	tm := nginxDefault
	tm.NonIdempotent = false
	return tm
}()

// TestNginxDrills runs each drill against its own nginx, two at a time,
// and holds the analysis to nginx's access log.
func TestNginxDrills(t *testing.T) {
	t.Parallel()
	for _, c := range nginxDrills {
		t.Run(c.drill.Name, func(t *testing.T) {
			t.Parallel()
			g, res, lines := nginxDrill(t, c.timing, c.drill)
			ep := checkNginx(t, g, res, lines, c.successes)
			if c.check != nil {
				c.check(t, g, res, ep)
			}
		})
	}
}
