package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/halfopen/rehearse/rehearsal"
)

// The HAProxy drills. Each one starts its own HAProxy and upstreams on free
// loopback ports and rehearses 20 req/s for 10–13 s (search gets ~35 % of
// the bundled capture, 7 req/s; llm-primary 20 %); the fault starts 3 s into
// the replay. The tolerances above cover a loaded 2-core machine. They run one after the
// other (about 90 s in all): in parallel, six HAProxies and six replays on
// two shared cores push check spacing past the ±100 ms tolerance.

// haproxyCase is one HAProxy drill: the rehearsal, the title of its
// measured-vs-configured table, the drill's own checks, and the one
// scenario expectation that must fail ("" when every one must pass).
type haproxyCase struct {
	drill   drill
	title   string
	check   func(t *testing.T, v *runView)
	failing string
}

var haproxyDrills = []haproxyCase{
	// search answers 503 to everything, health checks included. HAProxy
	// marks the server DOWN (observe layer7 after error-limit errors, or
	// fall failed checks if the checks get there first), checks it every
	// downinter while the storm lasts, and brings it back after rise
	// passing checks (fastinter apart) once it ends.
	{
		drill: drill{
			Name: "503-storm-checks-faulted", Rate: 20, Duration: 12 * time.Second,
			Faults: "  - {name: search-503, type: status, upstream: search, at: 3s, for: 6s, health_checks: true, params: {code: 503}}\n",
			Expect: "  upstreams: [search]\n  leaked_max: 0\n  max_probes_in_flight: 1\n  successes_to_close_min: 2\n  healthy_unaffected: [weather, vectors, llm-primary]\n",
		},
		title: "503 storm, health checks faulted",
		check: func(t *testing.T, v *runView) {
			ep := v.checkBreakerDrill("search", 1)
			// One cycle: the server stays DOWN for the whole storm, then
			// closes within one downinter (the next check) + fastinter
			// (the second) of the fault's end, plus the black box's one
			// inter-arrival.
			tm := v.h.Timing
			if lim := (tm.DownInter + tm.FastInter + transitionTol).Seconds(); ep.ClosedAfterRecoveryS == nil || *ep.ClosedAfterRecoveryS > lim {
				t.Errorf("closed %s s after the storm, want ≤ %.3f (downinter + fastinter + %s)", fp(ep.ClosedAfterRecoveryS), lim, transitionTol)
			}
			if ep.ProbeOutcomes.OK != int64(tm.Rise) {
				t.Errorf("%d passing checks while DOWN, want rise %d (the rest failed)", ep.ProbeOutcomes.OK, tm.Rise)
			}
		},
	},
	// Only live traffic gets 503s; the health checks pass. HAProxy's
	// passive detector takes the server down after error-limit
	// consecutive errors, the next two checks pass and bring it back, live
	// traffic fails again: it flaps for as long as the storm lasts. A
	// passing check also resets the consecutive-error count.
	{
		drill: drill{
			// 40 req/s (search ~14/s): each DOWN lasts only until two
			// checks pass (0.3–0.6 s), and the black box needs two
			// blocked requests in a row to call an open.
			Name: "503-storm-checks-healthy", Rate: 40, Duration: 12 * time.Second,
			Faults: "  - {name: search-503, type: status, upstream: search, at: 3s, for: 5s, params: {code: 503}}\n",
			Expect: "  upstreams: [search]\n  leaked_max: 0\n  max_probes_in_flight: 1\n",
		},
		title: "503 storm, health checks healthy",
		check: func(t *testing.T, v *runView) {
			ep := v.checkBreakerDrill("search", 0)
			if len(ep.Cycles) < 2 {
				t.Errorf("%d cycles, want HAProxy to flap (≥ 2) while checks pass and live traffic fails: %s", len(ep.Cycles), ep.Statement)
			}
			for _, c := range ep.Cycles {
				if c.ProbeCount != int64(v.h.Timing.Rise) {
					t.Errorf("cycle at %.3fs: %d checks, want exactly rise %d passing ones", c.OpenedAtS, c.ProbeCount, v.h.Timing.Rise)
				}
			}
		},
	},
	// search answers 429 with Retry-After: 5. HAProxy's observe layer7
	// does not count 4xx, and it has no notion of Retry-After: the server
	// stays UP and the calls keep coming. The scenario's
	// honours_retry_after expectation must fail, and say so.
	{
		drill: drill{
			Name: "429-retry-after", Rate: 20, Duration: 10 * time.Second,
			Faults: "  - {name: search-429, type: retry_after, upstream: search, at: 3s, for: 4s, params: {after: 5s}}\n",
			Expect: "  upstreams: [search]\n  honours_retry_after: true\n",
		},
		title:   "429 with Retry-After",
		failing: "honours_retry_after",
		check: func(t *testing.T, v *runView) {
			ep := v.checkNotOpened("search")
			if ep.UpstreamCalls < 5 {
				t.Errorf("only %d calls reached search during the 429 window: the replay did not exercise the drill", ep.UpstreamCalls)
			}
			if ep.RetryAfterHonoured == nil || *ep.RetryAfterHonoured {
				t.Errorf("retry_after_honoured = %v, want false", ep.RetryAfterHonoured)
			}
			if ep.RetryAfterViolations == 0 || len(ep.RetryAfter) == 0 {
				t.Errorf("no Retry-After violations recorded (%d 429s)", len(ep.RetryAfter))
			}
			honoured := "unknown"
			if ep.RetryAfterHonoured != nil {
				honoured = fmt.Sprint(*ep.RetryAfterHonoured)
			}
			v.fig.add("retry_after_honoured", "HAProxy has no Retry-After support", honoured)
			v.fig.add("retry_after_violations", "—", ep.RetryAfterViolations)
		},
	},
	// search resets the connection before any response byte (health
	// checks too). HAProxy counts the resets (observe layer7) and the
	// failed checks; whichever reaches its limit first takes the server
	// down.
	{
		drill: drill{
			Name: "rst-before-headers", Rate: 20, Duration: 12 * time.Second,
			Faults: "  - {name: search-rst, type: reset, upstream: search, at: 3s, for: 5s, health_checks: true}\n",
			Expect: "  upstreams: [search]\n  leaked_max: 0\n",
		},
		title: "RST before headers",
		check: func(_ *testing.T, v *runView) { v.checkBreakerDrill("search", 1) },
	},
	// search answers 2 s late, past timeout server (1 s) and timeout
	// check (400 ms). HAProxy answers the client 504 and counts a read
	// timeout; the upstream may not notice the hang-up, so the analysis
	// learns it from the client's 504 that came before the upstream's
	// answer.
	{
		drill: drill{
			Name: "slow-past-timeout-server", Rate: 20, Duration: 13 * time.Second,
			Faults: "  - {name: search-slow, type: latency, upstream: search, at: 3s, for: 5s, health_checks: true, params: {fixed: 2s}}\n",
			Expect: "  upstreams: [search]\n  leaked_max: 0\n",
		},
		title: "slow responses past timeout server",
		check: func(t *testing.T, v *runView) {
			// search gets ~7 req/s; each waits timeout server (1 s) for
			// its 504: requests already forwarded when the server went
			// down still time out, up to timeout server × the route's
			// rate of them.
			v.inFlightAllowance = 10
			ep := v.checkBreakerDrill("search", 1)
			if ep.FailuresBeforeOpen == nil || *ep.FailuresBeforeOpen < int64(v.h.Timing.ErrorLimit) {
				t.Errorf("failures_before_open = %s, want ≥ error-limit %d", ip(ep.FailuresBeforeOpen), v.h.Timing.ErrorLimit)
			}
		},
	},
	// llm-primary cuts its answers at 40 % with a reset. The status line
	// (200) was already forwarded, which is what observe layer7 judges,
	// and the checks pass: HAProxy keeps the server UP.
	{
		drill: drill{
			Name: "midstream-cut", Rate: 20, Duration: 10 * time.Second,
			Faults: "  - {name: llm-cut-40, type: stream_cut, upstream: llm-primary, at: 3s, for: 5s, params: {after_percent: 40, then: rst}}\n",
		},
		title: "mid-stream cut at 40 %",
		check: func(t *testing.T, v *runView) {
			ep := v.checkNotOpened("llm-primary")
			if ep.UpstreamCalls < 5 {
				t.Errorf("only %d calls reached llm-primary during the cut window: the replay did not exercise the drill", ep.UpstreamCalls)
			}
			v.fig.add("client outcomes during the fault", "—", fmt.Sprint(v.res.Analysis.Phases["during"].Outcomes))
		},
	},
}

// TestHAProxyDrills runs each drill against its own HAProxy, one after
// the other, and holds the analysis to HAProxy's log of its state changes.
func TestHAProxyDrills(t *testing.T) {
	for _, c := range haproxyDrills {
		t.Run(c.drill.Name, func(t *testing.T) {
			h, res, _ := rehearseHAProxy(t, c.drill)
			v := newView(t, h, res)
			c.check(t, v)
			checkExpectations(t, res, c.failing)
			v.fig.log(t, c.title)
		})
	}
}

// checkExpectations fails the test for any failed scenario expectation
// but the one named failing, which must have been evaluated and failed.
func checkExpectations(t *testing.T, res *rehearsal.Result, failing string) {
	t.Helper()
	found := false
	for _, e := range res.Expectations {
		switch {
		case e.Name == failing:
			found = true
			if e.Passed {
				t.Errorf("expectation %s passed, want it failed: observed %s, want %s", e.Name, e.Observed, e.Want)
			}
		case !e.Passed:
			t.Errorf("expectation %s failed: observed %s, want %s: %s", e.Name, e.Observed, e.Want, e.Message)
		}
	}
	if failing != "" && !found {
		t.Errorf("expectation %s not evaluated", failing)
	}
}
