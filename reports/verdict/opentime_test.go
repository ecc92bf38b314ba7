package verdict

import (
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
)

func f64(v float64) *float64 { return &v }

// runWith is a run of 60 s with one episode on "search" whose cycles are
// given; the time open is computed as the analysis does.
func runWith(ep *analysis.Episode) *analysis.Analysis {
	ep.Opened = true
	ep.StartS, ep.EndS = 10, 20
	ep.Fault = "storm"
	ep.Closed = ep.Cycles[len(ep.Cycles)-1].ClosedAtS != nil
	var sum float64
	for _, c := range ep.Cycles {
		if c.ClosedAtS == nil {
			sum = -1
			break
		}
		sum += *c.ClosedAtS - c.OpenedAtS
	}
	if sum >= 0 {
		ep.OpenTimeS = f64(sum)
	}
	return &analysis.Analysis{Run: analysis.RunInfo{DurationS: 60},
		Upstreams: map[string]*analysis.UpstreamAnalysis{"search": {Episodes: []*analysis.Episode{ep}}}}
}

// TestOpenTimeMax: open_time_max judges the summed time open per
// episode; a range that straddles the cap is not observable, a range
// wholly past it fails, and an episode still open at the run's end fails
// once its least time open passes the cap, else is not observable.
func TestOpenTimeMax(t *testing.T) {
	cap := expect.Expectations{OpenTimeMax: ptr(rehearse.Duration(10 * time.Second))}
	for _, c := range []struct {
		name string
		ep   *analysis.Episode
		want expect.Outcome
		msg  string
	}{
		{"two short cycles", &analysis.Episode{Cycles: []*analysis.Cycle{
			{OpenedAtS: 11, ClosedAtS: f64(14)}, {OpenedAtS: 15, ClosedAtS: f64(21)}}}, expect.Met, ""},
		{"reopened past the cap", &analysis.Episode{Cycles: []*analysis.Cycle{
			{OpenedAtS: 11, ClosedAtS: f64(16)}, {OpenedAtS: 17, ClosedAtS: f64(23)}}}, expect.NotMet, "11 s"},
		{"bounds straddle the cap", &analysis.Episode{Cycles: []*analysis.Cycle{{OpenedAtS: 11, ClosedAtS: f64(20)}},
			OpenTimeBoundsS: &analysis.Bounds{Min: f64(9)}}, expect.NotObservable, "between 9 s and unknown"},
		{"still open, long past the cap", &analysis.Episode{Cycles: []*analysis.Cycle{{OpenedAtS: 11}}}, expect.NotMet, "still open when the run ended"},
		{"still open, briefly", &analysis.Episode{Cycles: []*analysis.Cycle{{OpenedAtS: 55}}}, expect.NotObservable, "open at least 5 s"},
	} {
		a := runWith(c.ep)
		if c.ep.OpenTimeBoundsS != nil {
			c.ep.OpenTimeS = f64(9)
		}
		res := Evaluate(a, cap)
		if len(res) != 1 || res[0].Name != "open_time_max" {
			t.Fatalf("%s: results %+v, want one open_time_max", c.name, res)
		}
		t.Logf("%s: %s: %s", c.name, res[0].Outcome, res[0].Message)
		if r := res[0]; r.Outcome != c.want || !strings.Contains(r.Message+" "+r.Observed, c.msg) || r.Passed != (c.want == expect.Met) {
			t.Errorf("%s: %s (%s; %s), want %s mentioning %q", c.name, r.Outcome, r.Observed, r.Message, c.want, c.msg)
		}
	}
}

func ptr[T any](v T) *T { return &v }
