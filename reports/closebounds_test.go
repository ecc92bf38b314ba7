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

// TestClosesWithinJudgesCloseBounds: closes_within on a close the evidence
// only bounds (close_bounds_s) is judged on the whole range, as every
// other bounded figure is: met only when the latest the close can have
// been keeps the bound, not met only when the earliest breaks it, not
// observable in between and, for a close with no latest moment (an
// ambiguous half-open or a ramp), never met on the estimate alone.
func TestClosesWithinJudgesCloseBounds(t *testing.T) {
	ms := time.Millisecond
	fromEnd := func(ep *analysis.Episode, v *float64) time.Duration {
		return time.Duration(math.Round(max(*v-ep.EndS, 0)*1000)) * ms
	}

	// A breaker whose failures expire: it closed somewhere between the
	// last request it turned away and the first resumed call (slow healthy
	// answers: the calls in flight together show no probe closed it).
	x := expirySim{rate: 20, phase: 10 * ms, lag: ms, healthy: 300 * ms, forget: 1200 * ms, maxFails: 3,
		faultAt: 3 * time.Second, faultFor: 3 * time.Second, dur: 12 * time.Second}
	ev, _ := x.build()
	a, err := analysis.AnalyzeEvents(ev)
	if err != nil {
		t.Fatal(err)
	}
	ep := a.Upstreams["app"].Episodes[0]
	b := ep.CloseBoundsS
	if !ep.Closed || b == nil || b.Min == nil || b.Max == nil || *b.Max-*b.Min < 0.02 {
		t.Fatalf("expiry sim: closed %v, bounds %s: want a close bounded by a window of at least 20ms (%s)", ep.Closed, bounds(b), ep.Statement)
	}
	lo, hi := fromEnd(ep, b.Min), fromEnd(ep, b.Max)
	if lo <= 0 {
		t.Fatalf("expiry sim: the close's earliest moment %s after the fault's end: want it after the end (%s)", lo, ep.Statement)
	}
	mid := ((lo + hi) / 2).Round(ms)
	for _, c := range []struct {
		within time.Duration
		want   expect.Outcome
	}{
		{hi + ms, expect.Met},
		{mid, expect.NotObservable}, // the estimate (closed_at_s, the first resumed call) breaks it, the earliest keeps it
		{lo - ms, expect.NotMet},
	} {
		r := verdict.Evaluate(a, expect.Expectations{ClosesWithin: analysis.Ptr(dur(c.within))})[0]
		if r.Outcome != c.want || (c.want != expect.Met && !strings.Contains(r.Message, "between ")) {
			t.Errorf("expiry, closed %s – %s after the fault, closes_within %s: %s %q (observed %s), want %s naming the range", lo, hi, c.within, r.Outcome, r.Message, r.Observed, c.want)
		}
		if c.want == expect.NotObservable && !strings.Contains(r.Message, verdict.CloseBounded) {
			t.Errorf("closes_within %s: %q does not say why the close is a range", c.within, r.Message)
		}
	}

	// A half-open letting a quick call through: the close has no latest
	// moment seen from outside (close_bounds_s max null).
	s := base()
	s.style, s.need = "live", 1
	s.fwdSeq = false
	a, _ = analyse(t, s)
	ep = a.Upstreams["search"].Episodes[0]
	if b := ep.CloseBoundsS; !ep.Closed || b == nil || b.Min == nil || b.Max != nil {
		t.Fatalf("live-probe sim: closed %v, bounds %s: want a close with no latest moment", ep.Closed, bounds(b))
	}
	lo = fromEnd(ep, ep.CloseBoundsS.Min)
	for _, c := range []struct {
		within time.Duration
		want   expect.Outcome
	}{
		{time.Hour, expect.NotObservable}, // the estimate keeps it; the close may have come any time later
		{fromEnd(ep, ep.ClosedAtS) + time.Second, expect.NotObservable},
	} {
		r := verdict.Evaluate(a, expect.Expectations{ClosesWithin: analysis.Ptr(dur(c.within))})[0]
		if r.Outcome != c.want || !strings.Contains(r.Message, "and unknown") || !strings.Contains(r.Message, verdict.CloseUnbounded) {
			t.Errorf("ambiguous close from %s after the fault, closes_within %s: %s %q, want %s saying the close has no known end", lo, c.within, r.Outcome, r.Message, c.want)
		}
	}
	if lo > 0 {
		if r := verdict.Evaluate(a, expect.Expectations{ClosesWithin: analysis.Ptr(dur(lo - ms))})[0]; r.Outcome != expect.NotMet {
			t.Errorf("ambiguous close from %s after the fault, closes_within %s: %s %q, want not met", lo, lo-ms, r.Outcome, r.Message)
		}
	}
}
