package e2e

import (
	"testing"
	"time"
)

// The nginx drills: one upstream, app, behind nginx's passive breaker
// (nginxTiming), 20 req/s of the bundled capture (90 % POST) for 12 s; the
// fault starts 3 s into the replay and lasts 5 s. Every figure is held to
// nginx's access log, not to its configuration, so the drills run two at
// a time (with the Caddy and test-gateway drills) without loosening a
// tolerance: a late timer moves the log and the measurement alike.

const (
	faultAt  = 3.0
	faultFor = 5.0
)

func ptrInt(n int) *int { return &n }

// TestNginxStorm: the server answers 503 to everything. nginx counts
// max_fails of them, skips the server for fail_timeout, lets one request
// through as the probe, and takes the server back when a probe succeeds.
func TestNginxStorm(t *testing.T) {
	t.Parallel()
	g, res, lines := nginxDrill(t, nginxDefault, singleDrill{
		Name: "503-storm", Rate: 20, Duration: 12 * time.Second,
		Faults: "  - {name: app-503, type: status, upstream: app, at: 3s, for: 5s, params: {code: 503}}\n",
	})
	checkNginx(t, g, res, lines, ptrInt(1))
}

// TestNginxStormNonIdempotentOff: without non_idempotent in
// proxy_next_upstream nginx neither counts nor passes on a POST's 503:
// only the GETs (10 % of the capture) count towards max_fails, and a POST
// probe's 503 clears the failures (the probe "succeeded" as far as nginx
// knows). The breaker flaps for as long as the storm lasts.
func TestNginxStormNonIdempotentOff(t *testing.T) {
	t.Parallel()
	tm := nginxDefault
	tm.NonIdempotent = false
	g, res, lines := nginxDrill(t, tm, singleDrill{
		Name: "503-storm-post-uncounted", Rate: 20, Duration: 12 * time.Second,
		Faults: "  - {name: app-503, type: status, upstream: app, at: 3s, for: 5s, params: {code: 503}}\n",
	})
	checkNginx(t, g, res, lines, nil)
}

// TestNginxRetryAfter: 429 with Retry-After: 5. nginx counts a 429 (it is
// in proxy_next_upstream) like any failure and has no notion of
// Retry-After: it probes after fail_timeout, before the 5 s are up.
func TestNginxRetryAfter(t *testing.T) {
	t.Parallel()
	g, res, lines := nginxDrill(t, nginxDefault, singleDrill{
		Name: "429-retry-after", Rate: 20, Duration: 12 * time.Second,
		Faults: "  - {name: app-429, type: retry_after, upstream: app, at: 3s, for: 5s, params: {after: 5s}}\n",
	})
	ep := checkNginx(t, g, res, lines, ptrInt(1))
	if ep.RetryAfterHonoured == nil || *ep.RetryAfterHonoured {
		t.Errorf("retry_after_honoured = %v, want false: nginx probes after fail_timeout (%s), before Retry-After's 5 s", ep.RetryAfterHonoured, g.Timing.FailTimeout)
	}
}

// TestNginxSlowPastReadTimeout: the server answers 2 s late, past
// proxy_read_timeout (1 s); nginx gives up on each call at 1 s, counts a
// timeout, and answers the client from the responder. The upstream must
// see every hang-up at 1 s, for POSTs and GETs alike: the failures before
// the open and the cooldown depend on it.
func TestNginxSlowPastReadTimeout(t *testing.T) {
	t.Parallel()
	g, res, lines := nginxDrill(t, nginxDefault, singleDrill{
		Name: "slow-past-read-timeout", Rate: 20, Duration: 13 * time.Second,
		Faults: "  - {name: app-slow, type: latency, upstream: app, at: 3s, for: 5s, params: {fixed: 2s}}\n",
	})
	checkNginx(t, g, res, lines, ptrInt(1))
	checkHangUps(t, res, g.Timing.ReadTimeout)
}

// TestNginxReset: the server resets every connection before answering.
// nginx counts the error (502) and passes the request to the responder.
func TestNginxReset(t *testing.T) {
	t.Parallel()
	g, res, lines := nginxDrill(t, nginxDefault, singleDrill{
		Name: "rst-before-headers", Rate: 20, Duration: 12 * time.Second,
		Faults: "  - {name: app-rst, type: reset, upstream: app, at: 3s, for: 5s}\n",
	})
	checkNginx(t, g, res, lines, ptrInt(1))
}

// TestNginxMidStreamCut: the server cuts its answers at 40 % with a
// reset. The status line was good; nginx does not count a body error
// against the server, and nothing opens.
func TestNginxMidStreamCut(t *testing.T) {
	t.Parallel()
	g, res, lines := nginxDrill(t, nginxDefault, singleDrill{
		Name: "midstream-cut", Rate: 20, Duration: 10 * time.Second,
		Healthy: "{body_bytes: 20000}",
		Faults:  "  - {name: app-cut-40, type: stream_cut, upstream: app, at: 3s, for: 5s, params: {after_percent: 40, then: rst}}\n",
	})
	ep := checkNginx(t, g, res, lines, nil)
	if ep.Opened {
		t.Errorf("opened: %s", ep.Statement)
	}
	if ep.UpstreamCalls < 20 {
		t.Errorf("only %d calls during the cut: the drill was not exercised", ep.UpstreamCalls)
	}
}

// TestNginxSlowHealthy: the 503 storm with healthy answers that take
// 300 ms. The probe after the storm is slow: requests that come while it
// is in flight go to the responder, and the first of them must not be
// taken for a second probe. One successful probe closes it, at its end.
func TestNginxSlowHealthy(t *testing.T) {
	t.Parallel()
	g, res, lines := nginxDrill(t, nginxDefault, singleDrill{
		Name: "503-storm-slow-healthy", Rate: 20, Duration: 12 * time.Second,
		Healthy: "{latency: {fixed: 300ms}}",
		Faults:  "  - {name: app-503, type: status, upstream: app, at: 3s, for: 5s, params: {code: 503}}\n",
	})
	checkNginx(t, g, res, lines, ptrInt(1))
}
