package reports

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/verdict"

	"github.com/halfopen/rehearse/reports/expect"
)

// TestClosesWithinJudgesResumption: closes_within judges what users saw
// (observed.resumed_after_s: live traffic forwarded again and answered),
// not the breaker's inferred close, which the evidence may only bound: a
// gateway that recovered in time passes, even when its close has no
// latest moment seen from outside (a quick closing probe), and the
// message still gives the inferred close, in its one text.
func TestClosesWithinJudgesResumption(t *testing.T) {
	ms := time.Millisecond
	fromEnd := func(ep *analysis.Episode, v float64) time.Duration {
		return time.Duration(math.Round(max(v-ep.EndS, 0)*1000)) * ms
	}
	judge := func(a *analysis.Analysis, within time.Duration) expect.ExpectationResult {
		return verdict.Evaluate(a, expect.Expectations{ClosesWithin: analysis.Ptr(dur(within))})[0]
	}

	// A breaker whose failures expire: it closed somewhere between the
	// last request it turned away and the first resumed call, whose
	// answer (300 ms later) is when users had traffic back.
	x := expirySim{rate: 20, phase: 10 * ms, lag: ms, healthy: 300 * ms, forget: 1200 * ms, maxFails: 3,
		faultAt: 3 * time.Second, faultFor: 3 * time.Second, dur: 12 * time.Second}
	ev, _ := x.build()
	a, err := analysis.AnalyzeEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	ep := a.Upstreams["app"].Episodes[0]
	b, o := ep.CloseBoundsS, ep.Observed
	if !ep.Closed || b == nil || b.Max == nil || o == nil || o.ResumedAtS == nil {
		t.Fatalf("expiry sim: closed %v, bounds %s, observed %+v: want a bounded close and a resumption (%s)", ep.Closed, bounds(b), o, ep.Statement)
	}
	if *o.ResumedAtS < *b.Max+0.29 {
		t.Errorf("expiry sim: resumed at %.3f, want the first resumed call's answer, 300 ms after it arrived (%.3f)", *o.ResumedAtS, *b.Max)
	}
	res := fromEnd(ep, *o.ResumedAtS)
	for _, c := range []struct {
		within time.Duration
		want   expect.Outcome
	}{
		{res, expect.Met},
		{res - ms, expect.NotMet},
	} {
		r := judge(a, c.within)
		if r.Outcome != c.want {
			t.Errorf("expiry, resumed %s after the fault, closes_within %s: %s %q (observed %s), want %s", res, c.within, r.Outcome, r.Message, r.Observed, c.want)
		}
		if c.want == expect.NotMet && (!strings.Contains(r.Message, "traffic resumed") || !strings.Contains(r.Message, "the breaker closed between ")) {
			t.Errorf("closes_within %s: %q does not give the resumption and the inferred close's range", c.within, r.Message)
		}
	}

	// A half-open letting a quick call through: the inferred close has no
	// latest moment seen from outside (close_bounds_s max null), but the
	// traffic came back, and closes_within is met when it came back in
	// time.
	s := base()
	s.style, s.need = "live", 1
	s.fwdSeq = false
	a, _ = analyse(t, s)
	ep = a.Upstreams["search"].Episodes[0]
	if b := ep.CloseBoundsS; !ep.Closed || b == nil || b.Min == nil {
		t.Fatalf("live-probe sim: closed %v, bounds %s: want a bounded close", ep.Closed, bounds(b))
	}
	if ep.Observed == nil || ep.Observed.ResumedAfterS == nil {
		t.Fatalf("live-probe sim: no resumption observed (%s)", ep.Statement)
	}
	res = fromEnd(ep, *ep.Observed.ResumedAtS)
	if r := judge(a, res+ms); r.Outcome != expect.Met {
		t.Errorf("quick probe, resumed %s after the fault, closes_within %s: %s %q, want met", res, res+ms, r.Outcome, r.Message)
	}
	if r := judge(a, res-ms); r.Outcome != expect.NotMet {
		t.Errorf("quick probe, resumed %s after the fault, closes_within %s: %s %q, want not met", res, res-ms, r.Outcome, r.Message)
	}
	if !strings.Contains(ep.Statement, "Traffic resumed "+analysis.ResumedText(ep)) || !strings.Contains(ep.Statement, "Closed "+analysis.CloseText(ep)) {
		t.Errorf("statement %q: want the resumption and the close in their one text", ep.Statement)
	}
}
