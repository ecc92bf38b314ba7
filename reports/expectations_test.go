package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/verdict"

	"github.com/halfopen/rehearse/reports/expect"

	"github.com/halfopen/rehearse"
)

func dur(d time.Duration) rehearse.Duration { return rehearse.Duration(d) }

func TestEvaluateCleanRun(t *testing.T) {
	a, _ := analyse(t, base())
	e := expect.Expectations{
		OpensWithin: analysis.Ptr(dur(10 * time.Second)), ProbeSpacingMin: analysis.Ptr(dur(200 * time.Millisecond)),
		MaxProbesInFlight: analysis.Ptr(1), HealthyUnaffected: &expect.UpstreamSet{All: true}, ClosesWithin: analysis.Ptr(dur(30 * time.Second)),
		AmplificationMax: analysis.Ptr(1.2), MetricsLagMax: analysis.Ptr(dur(2 * time.Second)), LeakedMax: analysis.Ptr(0),
		SuccessesToCloseMin: analysis.Ptr(2), CooldownMin: analysis.Ptr(dur(4 * time.Second)), FailuresBeforeOpenMax: analysis.Ptr(5),
	}
	res := verdict.Evaluate(a, e)
	if len(res) != 11 {
		t.Errorf("%d results", len(res))
	}
	for _, r := range res {
		if !r.Passed {
			t.Errorf("%s failed: %+v", r.Name, r)
		}
	}
	// Tighter bounds fail with observed and want in the message.
	res = verdict.Evaluate(a, expect.Expectations{ClosesWithin: analysis.Ptr(dur(5 * time.Second)), HonoursRetryAfter: analysis.Ptr(true)})
	if res[0].Passed || res[0].Name != "honours_retry_after" || !strings.Contains(res[0].Message, "no upstream served a 429") {
		t.Errorf("honours_retry_after without 429: %+v", res[0])
	}
	if res[1].Passed || !strings.Contains(res[1].Message, "search episode 1 (storm)") || res[1].Want != "<= 5 s" {
		t.Errorf("closes_within: %+v", res[1])
	}
	if err := expect.Failed(res); err == nil || rehearse.ExitCode(err) != rehearse.ExitExpectations {
		t.Errorf("Failed: %v", err)
	}
}
