package reports

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/render"
	"github.com/halfopen/rehearse/reports/verdict"

	"github.com/halfopen/rehearse/reports/expect"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// byName indexes results by expectation name.
func byName(t *testing.T, res []expect.ExpectationResult) map[string]expect.ExpectationResult {
	t.Helper()
	m := map[string]expect.ExpectationResult{}
	for _, r := range res {
		if r.Passed != (r.Outcome == expect.Met) {
			t.Errorf("%s: passed %v with outcome %s", r.Name, r.Passed, r.Outcome)
		}
		m[r.Name] = r
	}
	return m
}

// A gateway that opens and then never probes or closes: every expectation
// about probes and the close fails, each saying what was not observed.
func TestNeverProbesIsNotObservable(t *testing.T) {
	s := base()
	s.cooldown = time.Hour
	a, _ := analyse(t, s)
	ep := a.Upstreams["search"].Episodes[0]
	if !ep.Opened || ep.Probes != 0 || ep.Closed {
		t.Fatalf("sim: opened %v, %d probes, closed %v", ep.Opened, ep.Probes, ep.Closed)
	}
	e := expect.Expectations{
		OpensWithin:         analysis.Ptr(dur(10 * time.Second)),
		CooldownMin:         analysis.Ptr(dur(time.Second)),
		ProbeSpacingMin:     analysis.Ptr(dur(200 * time.Millisecond)),
		MaxProbesInFlight:   analysis.Ptr(1),
		SuccessesToCloseMin: analysis.Ptr(1),
		ClosesWithin:        analysis.Ptr(dur(time.Hour)), // the run cannot show a close within an hour
	}
	res := byName(t, verdict.Evaluate(a, e))
	if r := res["opens_within"]; r.Outcome != expect.Met {
		t.Errorf("opens_within: %+v", r)
	}
	for name, missing := range map[string]string{
		"cooldown_min":           "search episode 1 (storm): the breaker never probed",
		"probe_spacing_min":      "search episode 1 (storm): the breaker never probed",
		"max_probes_in_flight":   "search episode 1 (storm): the breaker never probed",
		"successes_to_close_min": "search episode 1 (storm): the breaker never closed",
		"closes_within":          "search episode 1 (storm): the breaker never closed",
	} {
		r := res[name]
		if r.Outcome != expect.NotObservable || r.Passed || !strings.Contains(r.Message, missing) || r.Observed != "not observed" {
			t.Errorf("%s: %+v, want not observable naming %q", name, r, missing)
		}
	}
	if err := expect.Failed(verdict.Evaluate(a, e)); err == nil || rehearse.ExitCode(err) != rehearse.ExitExpectations {
		t.Errorf("Failed: %v, want exit %d", err, rehearse.ExitExpectations)
	}

	// A close bound shorter than the time the run stayed open after the
	// fault ended is a breach, not a lack of evidence.
	r := verdict.Evaluate(a, expect.Expectations{ClosesWithin: analysis.Ptr(dur(10 * time.Second))})[0]
	if r.Outcome != expect.NotMet || !strings.Contains(r.Message, "still open") {
		t.Errorf("closes_within 10s, open 40s after the fault: %+v", r)
	}

	// junit.xml: one failure per expectation, naming what was missing.
	a.Expectations = verdict.Evaluate(a, e)
	b, err := render.JUnit(a)
	if err != nil {
		t.Fatal(err)
	}
	var doc render.JunitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Failures != 5 || doc.Tests != 6 {
		t.Errorf("junit: %d failures of %d tests, want 5 of 6:\n%s", doc.Failures, doc.Tests, b)
	}
	for _, c := range doc.Suites[0].Cases {
		if c.Name == "opens_within" {
			continue
		}
		if c.Failure == nil || c.Failure.Type != string(expect.NotObservable) || !strings.Contains(c.Failure.Message, "never") {
			t.Errorf("junit case %s: %+v", c.Name, c.Failure)
		}
	}
	md, _ := render.Markdown(a)
	if !strings.Contains(string(md), "not observable") || strings.Contains(string(md), "All 6 expectations met") {
		t.Errorf("report.md does not say the expectations were not observable:\n%s", md)
	}
}

// A breaker that never opens: nothing can leak and nothing closes, so the
// expectations about an open breaker are not observable (they used to
// pass).
func TestNeverOpensIsNotObservable(t *testing.T) {
	s := base()
	s.threshold = 1 << 20
	a, _ := analyse(t, s)
	res := byName(t, verdict.Evaluate(a, expect.Expectations{LeakedMax: analysis.Ptr(0), ClosesWithin: analysis.Ptr(dur(10 * time.Second)),
		OpensWithin: analysis.Ptr(dur(10 * time.Second)), MetricsLagMax: analysis.Ptr(dur(15 * time.Second))}))
	for _, name := range []string{"leaked_max", "closes_within", "metrics_lag_max"} {
		if r := res[name]; r.Outcome != expect.NotObservable || !strings.Contains(r.Message, "never opened") {
			t.Errorf("%s: %+v", name, r)
		}
	}
	if r := res["opens_within"]; r.Outcome != expect.NotMet || !strings.Contains(r.Message, "did not open") {
		t.Errorf("opens_within: %+v", r)
	}
}

// healthy_unaffected on an upstream that no client request reached cannot
// show that its success was kept.
func TestHealthyWithoutRequestsIsNotObservable(t *testing.T) {
	s := base()
	s.upstreams = []string{"search", "weather"}
	evs := s.build()
	// weather is in the run but gets no traffic: drop its requests.
	var kept []journal.Event
	for _, e := range evs {
		switch p := e.Payload.(type) {
		case *journal.ClientRequest:
			if p.Upstream == "weather" {
				continue
			}
		case *journal.UpstreamRequest:
			if p.Upstream == "weather" {
				continue
			}
		}
		kept = append(kept, e)
	}
	a, err := analysis.AnalyzeEvents(kept)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Upstreams["weather"]; !ok {
		t.Fatal("weather not in the analysis")
	}
	for _, set := range []*expect.UpstreamSet{{All: true}, {Names: []string{"weather"}}} {
		r := verdict.Evaluate(a, expect.Expectations{HealthyUnaffected: set})[0]
		if r.Outcome != expect.NotObservable || r.Passed || !strings.Contains(r.Message, "weather: no client request was sent") {
			t.Errorf("%+v: %+v", set, r)
		}
		if strings.Contains(r.Observed, "100.0%") {
			t.Errorf("observed %q for an upstream without requests", r.Observed)
		}
	}
	// Client-wide expectations with no client request at all.
	var none []journal.Event
	for _, e := range kept {
		if _, ok := e.Payload.(*journal.ClientRequest); !ok {
			none = append(none, e)
		}
	}
	a, err = analysis.AnalyzeEvents(none)
	if err != nil {
		t.Fatal(err)
	}
	res := byName(t, verdict.Evaluate(a, expect.Expectations{ClientSuccessMin: analysis.Ptr(0.9), AmplificationMax: analysis.Ptr(2.0), ReplayLatenessMax: analysis.Ptr(dur(time.Second))}))
	for _, n := range []string{"client_success_min", "amplification_max", "replay_lateness_max"} {
		if r := res[n]; r.Outcome != expect.NotObservable || !strings.HasPrefix(r.Message, "not observable: ") {
			t.Errorf("%s without client requests: %+v", n, r)
		}
	}
}

// An interrupted run: a planned fault that never started leaves every
// breaker expectation not observable for it, even where the faults that
// did run met them; report.md never says pass for it.
func TestInterruptedRunNeverPassesUnobserved(t *testing.T) {
	s := base()
	s.faults = append(s.faults, simFault{name: "storm2", upstream: "search", typ: "status", at: 40 * time.Second, for_: 10 * time.Second})
	s.expect = []byte(`{"opens_within":"10s","max_probes_in_flight":1,"closes_within":"30s"}`)
	s.noEnd = true
	evs := s.build()
	// The scenario planned both faults; the run was cut at 35 s.
	rs := evs[0].Payload.(*journal.RunStart)
	rs.Config = json.RawMessage(`{"rate":10,"faults":[{"name":"storm","type":"status","upstream":"search","at":"10s","for":"20s"},` +
		`{"name":"storm2","type":"status","upstream":"search","at":"40s","for":"10s"}],"expectations":` + string(s.expect) + `}`)
	var cut []journal.Event
	for _, e := range evs {
		if e.T <= 35*time.Second {
			cut = append(cut, e)
		}
	}
	dir := t.TempDir()
	writeJournal(t, filepath.Join(dir, analysis.JournalFile), cut)
	a, res, err := RenderDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Run.Partial || len(a.Unstarted) != 1 || a.Unstarted[0].Name != "storm2" {
		t.Fatalf("partial %v, unstarted %+v", a.Run.Partial, a.Unstarted)
	}
	for _, r := range res {
		if r.Passed || r.Outcome != expect.NotObservable || !strings.Contains(r.Message, "search fault storm2: planned at 40s, never started") {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, render.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "| pass |") {
			t.Errorf("partial report shows a pass: %s", line)
		}
	}
	if !strings.Contains(string(md), "planned faults never started") {
		t.Error("report.md has no note on the fault that never started")
	}
}
