package reports

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/render"
	"github.com/halfopen/rehearse/reports/verdict"

	"github.com/halfopen/rehearse/reports/expect"

	"github.com/halfopen/rehearse/journal"
)

// boundedOpenJournal is a run whose open several failures fit: the upstream
// at 10 req/s, a 503 fault from 10 s to 15 s. The first two faulted calls
// fail at once; the next four are slow and fail at 10.52, 10.54, 10.56 and
// 10.58 s, after the last forwarded request (10.5 s) and before the first
// turned away (10.6 s): any of them may have tripped the breaker. A call
// without a client's sequence (the gateway's own) arrives at 10.53 s and
// fails: it counts before the open if the trip was after it. A tagged probe
// at 12.6 s fails, one at 16.6 s succeeds and closes it. The metrics show
// the open at 11 s.
func boundedOpenJournal() []journal.Event {
	var evs []journal.Event
	add := func(t time.Duration, p journal.Payload) { evs = append(evs, journal.Event{T: t, Payload: p}) }
	ms := time.Millisecond
	add(0, &journal.RunStart{RunID: "ob", Scenario: "bounded-open", Rate: 10})
	add(10*time.Second, &journal.FaultStart{Name: "storm", Type: "status", Upstream: "api"})
	add(15*time.Second, &journal.FaultEnd{Name: "storm", Upstream: "api"})
	slow := map[int]time.Duration{102: 10520 * ms, 103: 10540 * ms, 104: 10560 * ms, 105: 10580 * ms}
	for i := 0; i < 250; i++ {
		ts := time.Duration(i) * 100 * ms
		seq := uint64(i)
		open := ts >= 10600*ms && ts < 16700*ms
		if open {
			add(ts, &journal.ClientRequest{Seq: seq, Upstream: "api", Route: "/v1/x", Scheduled: ts, Sent: ts, Done: ts + ms, Status: 503, Outcome: journal.OutcomeHTTP5xx})
			continue
		}
		faulted := ts >= 10*time.Second && ts < 15*time.Second
		done := ts + 5*ms
		if d, ok := slow[i]; ok {
			done = d
		}
		up := &journal.UpstreamRequest{Upstream: "api", Method: "GET", Path: "/v1/x", Seq: &seq, InFlight: 1, Status: 200, Done: done, Outcome: journal.OutcomeUpstreamComplete}
		status, outcome := 200, journal.OutcomeOK
		if faulted {
			up.Fault, up.FaultType, up.Status = "storm", "status", 503
			status, outcome = 503, journal.OutcomeHTTP5xx
		}
		add(ts+ms, up)
		add(ts, &journal.ClientRequest{Seq: seq, Upstream: "api", Route: "/v1/x", Scheduled: ts, Sent: ts, Done: done + ms, Status: status, Outcome: outcome})
	}
	add(10530*ms, &journal.UpstreamRequest{Upstream: "api", Method: "GET", Path: "/v1/x", InFlight: 2, Status: 503, Done: 10535 * ms,
		Fault: "storm", FaultType: "status", Outcome: journal.OutcomeUpstreamComplete})
	for _, p := range []struct {
		at     time.Duration
		failed bool
	}{{12600 * ms, true}, {16600 * ms, false}} {
		up := &journal.UpstreamRequest{Upstream: "api", Method: "GET", Path: "/v1/x", ProbeTag: "half-open", InFlight: 1, Status: 200, Done: p.at + 5*ms, Outcome: journal.OutcomeUpstreamComplete}
		if p.failed {
			up.Fault, up.FaultType, up.Status = "storm", "status", 503
		}
		add(p.at, up)
	}
	for s := time.Second; s < 25*time.Second; s += time.Second {
		state := journal.StateClosed
		if s >= 11*time.Second && s < 17*time.Second {
			state = journal.StateOpen
		}
		add(s, &journal.MetricsSample{Source: "test", States: []journal.BreakerState{{Dependency: "api", Upstream: "api", State: state}}})
	}
	add(25*time.Second, &journal.RunEnd{Reason: journal.EndCompleted})
	slices.SortStableFunc(evs, func(x, y journal.Event) int { return cmp.Compare(x.T, y.T) })
	return evs
}

// boundedOpen analyses boundedOpenJournal and checks the open is bounded
// as the journal says.
func boundedOpen(t *testing.T) (*analysis.Analysis, *analysis.Episode) {
	t.Helper()
	a, err := analysis.AnalyzeEvents(boundedOpenJournal())
	if err != nil {
		t.Fatal(err)
	}
	u := a.Upstreams["api"]
	if u == nil || len(u.Episodes) != 1 || !u.Episodes[0].Opened || len(u.Episodes[0].Cycles) != 1 {
		t.Fatalf("want one episode with one open cycle: %+v", u)
	}
	ep := u.Episodes[0]
	ob := ep.Cycles[0].OpenBoundsS
	if ob == nil || ob.Min == nil || ob.Max == nil || *ob.Min != 10.52 || *ob.Max != 10.58 {
		t.Fatalf("open bounds %s, want 10.52 – 10.58 s", bounds(ob))
	}
	return a, ep
}

func wantBounds(t *testing.T, what string, b *analysis.Bounds, lo, hi float64) {
	t.Helper()
	if b == nil || b.Min == nil || b.Max == nil || *b.Min != lo || *b.Max != hi {
		t.Errorf("%s bounds %s, want %g – %g", what, bounds(b), lo, hi)
	}
}

// TestBoundedOpenFigures: every figure measured from an open several
// failures fit has the open's bounds, in run.json, the report's cells and
// the statement.
func TestBoundedOpenFigures(t *testing.T) {
	a, ep := boundedOpen(t)
	near(t, "opened after", ep.OpenedAfterS, 0.52, 0.0005)
	wantBounds(t, "opened after", ep.OpenedAfterBoundsS, 0.52, 0.58)
	// 10.0 – 10.5 s: six failed calls arrived before the earliest open;
	// the gateway's own call at 10.53 s arrived before the latest.
	if *ep.FailuresBeforeOpen != 6 || *ep.FailedRequestsBeforeOpen != 6 {
		t.Errorf("failures before open %d (%d requests), want 6 (6)", *ep.FailuresBeforeOpen, *ep.FailedRequestsBeforeOpen)
	}
	wantBounds(t, "failures before open", ep.FailuresBeforeOpenBounds, 6, 7)
	wantBounds(t, "failed requests before open", ep.FailedRequestsBeforeOpenBounds, 6, 7)
	near(t, "first probe after open", ep.FirstProbeAfterOpen, 2.08, 0.0005)
	wantBounds(t, "first probe after open", ep.FirstProbeAfterOpenBoundsS, 2.02, 2.08)
	// The second cooldown runs from the failed probe's end: exact.
	if len(ep.CooldownsS) != 2 || len(ep.CooldownsBoundsS) != 2 || ep.CooldownsBoundsS[1] != nil {
		t.Fatalf("cooldowns %v with bounds %v, want two, the second exact", ep.CooldownsS, ep.CooldownsBoundsS)
	}
	wantBounds(t, "first cooldown", ep.CooldownsBoundsS[0], 2.02, 2.08)
	near(t, "metrics open lag", ep.MetricsOpenLagS, 0.48, 0.0005)
	wantBounds(t, "metrics open lag", ep.MetricsOpenLagBoundsS, 0.42, 0.48)
	cy := ep.Cycles[0]
	wantBounds(t, "cycle failures before open", cy.FailuresBeforeOpenBounds, 6, 7)
	if len(cy.CooldownsBoundsS) != 2 {
		t.Errorf("cycle cooldown bounds %v, want two", cy.CooldownsBoundsS)
	}

	// run.json carries them beside their figures, and reads back whole.
	b, err := json.Marshal(ep)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"opened_after_bounds_s":{"min":0.52,"max":0.58}`, `"failures_before_open_bounds":{"min":6,"max":7}`,
		`"first_probe_after_open_bounds_s":{"min":2.02,"max":2.08}`, `"cooldowns_bounds_s":[{"min":2.02,"max":2.08},null]`,
		`"metrics_open_lag_bounds_s":{"min":0.42,"max":0.48}`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("run.json episode lacks %s:\n%s", k, b)
		}
	}
	var back analysis.Episode
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	wantBounds(t, "read back first probe", back.FirstProbeAfterOpenBoundsS, 2.02, 2.08)

	cells := map[string]string{}
	for _, f := range analysis.Figures {
		cells[f.Key] = f.CellOf(ep)
	}
	for k, want := range map[string]string{
		"opened_after_s":           "520 ms (520 ms – 580 ms)",
		"failures_before_open":     "6 (6 – 7)",
		"first_probe_after_open_s": "2.08 s (2.02 s – 2.08 s)",
		"metrics_open_lag_s":       "480 ms (420 ms – 480 ms) / ",
	} {
		if !strings.HasPrefix(cells[k], want) {
			t.Errorf("report cell %s = %q, want %q", k, cells[k], want)
		}
	}
	if c := cells["cooldowns_s"]; !strings.Contains(c, "(the first 2.02 s – 2.08 s)") {
		t.Errorf("cooldown cell %q does not give the first one's bounds", c)
	}
	for _, w := range []string{"or as late as 580 ms after", "then 7 failed calls before", "first 2.08 s after opening (as little as 2.02 s after an open as late as it may have been)"} {
		if !strings.Contains(ep.Statement, w) {
			t.Errorf("statement lacks %q:\n%s", w, ep.Statement)
		}
	}
	if len(a.Coverage) == 0 {
		t.Fatal("no episode coverage")
	}
	if s := a.Coverage[0].Summary; !strings.Contains(s, "opened between 520 ms and 580 ms after the fault started") {
		t.Errorf("postmortem summary does not give the open's range: %s", s)
	}
	md, err := render.Markdown(a)
	if err != nil {
		t.Fatal(err)
	}
	h, err := render.HTML(a)
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"report.md": string(md), "report.html": string(h)} {
		for _, w := range []string{"6 (6 – 7)", "2.08 s (2.02 s – 2.08 s)", "or as late as 580 ms after"} {
			if !strings.Contains(doc, w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
}

// TestBoundedOpenExpectations: an expectation on a figure measured from a
// bounded open is met only if its whole range keeps the bound, not met
// only if its whole range breaks it, and otherwise not observable, saying
// the range: never judged on the earliest-open estimate alone.
func TestBoundedOpenExpectations(t *testing.T) {
	a, _ := boundedOpen(t)
	ms := time.Millisecond
	cases := []struct {
		name string
		e    expect.Expectations
		want expect.Outcome
	}{
		// opened after 0.52 – 0.58 s
		{"opens_within", expect.Expectations{OpensWithin: analysis.Ptr(dur(600 * ms))}, expect.Met},
		{"opens_within", expect.Expectations{OpensWithin: analysis.Ptr(dur(550 * ms))}, expect.NotObservable},
		{"opens_within", expect.Expectations{OpensWithin: analysis.Ptr(dur(500 * ms))}, expect.NotMet},
		// 6 – 7 failed calls before the open
		{"failures_before_open_max", expect.Expectations{FailuresBeforeOpenMax: analysis.Ptr(7)}, expect.Met},
		{"failures_before_open_max", expect.Expectations{FailuresBeforeOpenMax: analysis.Ptr(6)}, expect.NotObservable},
		{"failures_before_open_max", expect.Expectations{FailuresBeforeOpenMax: analysis.Ptr(5)}, expect.NotMet},
		// shortest cooldown 2.02 – 2.08 s (the second, 4 s, is longer)
		{"cooldown_min", expect.Expectations{CooldownMin: analysis.Ptr(dur(2 * time.Second))}, expect.Met},
		{"cooldown_min", expect.Expectations{CooldownMin: analysis.Ptr(dur(2050 * ms))}, expect.NotObservable},
		{"cooldown_min", expect.Expectations{CooldownMin: analysis.Ptr(dur(2100 * ms))}, expect.NotMet},
		// open lag 0.42 – 0.48 s, close lag 0.395 s
		{"metrics_lag_max", expect.Expectations{MetricsLagMax: analysis.Ptr(dur(500 * ms))}, expect.Met},
		{"metrics_lag_max", expect.Expectations{MetricsLagMax: analysis.Ptr(dur(450 * ms))}, expect.NotObservable},
		{"metrics_lag_max", expect.Expectations{MetricsLagMax: analysis.Ptr(dur(410 * ms))}, expect.NotMet},
	}
	for _, c := range cases {
		r := byName(t, verdict.Evaluate(a, c.e))[c.name]
		if r.Outcome != c.want {
			t.Errorf("%s want %s: %s (%s; observed %s)", c.name, r.Want, r.Outcome, r.Message, r.Observed)
			continue
		}
		if c.want != expect.Met && !strings.Contains(r.Message, "between ") {
			t.Errorf("%s want %s: %s does not say the range", c.name, r.Want, r.Message)
		}
		if c.want == expect.NotObservable && !strings.Contains(r.Message, verdict.TripUnplaced) {
			t.Errorf("%s want %s: %s does not say why", c.name, r.Want, r.Message)
		}
	}
}
