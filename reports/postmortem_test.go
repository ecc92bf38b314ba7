package reports

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/render"

	"github.com/halfopen/rehearse/journal"
)

// postmortemRun renders a run with everything a postmortem reader needs:
// a description, the built-in gateway with one breaker setting changed,
// dashboard links, a targeted status fault on search (judged by the
// expectations) and a reset fault on weather (not judged).
func postmortemRun(t *testing.T) (string, *analysis.Analysis) {
	t.Helper()
	s := base()
	s.faults = append(s.faults, simFault{name: "cut", upstream: "weather", typ: "reset", at: 40 * time.Second, for_: 10 * time.Second})
	s.expect = []byte(`{"upstreams":["search"],"opens_within":"10s"}`)
	evs := s.build()
	rs := evs[0].Payload.(*journal.RunStart)
	rs.TimeZone = "Europe/Berlin"
	rs.Version = "v1.4.0"
	cfg := map[string]any{}
	if err := json.Unmarshal(rs.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["description"] = "Search fails for 20 s.\n\nThe breaker must open fast."
	cfg["gateway"] = map[string]any{"builtin": map[string]any{"config": map[string]any{"breaker": map[string]any{"failure_ratio": 0.4}}}}
	cfg["faults"] = []map[string]any{
		{"name": "storm", "type": "status", "upstream": "search", "match": map[string]any{"method": "post", "path": "^/v1/"}, "every_nth": 2},
		{"name": "cut", "type": "reset", "upstream": "weather"},
	}
	cfg["report"] = map[string]any{"links": map[string]any{"grafana": "https://grafana.example/d/abc/gw?var-env=prod", "prometheus": "http://prom.example:9090/"}}
	rs.Config, _ = json.Marshal(cfg)
	for _, e := range evs {
		if fs, ok := e.Payload.(*journal.FaultStart); ok && fs.Name == "storm" {
			fs.Params, fs.Probability, fs.HealthChecks = json.RawMessage(`{"code":500}`), 0.5, true
		}
	}
	dir := t.TempDir()
	writeJournal(t, filepath.Join(dir, analysis.JournalFile), evs)
	a, _, err := RenderDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, a
}

func TestPostmortemReport(t *testing.T) {
	dir, a := postmortemRun(t)
	md := readFile(t, dir, render.MarkdownFile)
	html := readFile(t, dir, render.HTMLFile)
	for _, want := range []string{
		"Search fails for 20 s.\n\nThe breaker must open fast.",
		"not covered by any expectation: weather had ",
		"connection resets and its breaker",
		"| search #1: storm | 10 s–30 s (03:00:10–03:00:30 UTC / 04:00:10–04:00:30 CET) |",
		"| weather #1: cut |",
		"| **no** |",
		"## What was injected",
		"| storm | search | 10 s–30 s (03:00:10–03:00:30 UTC / 04:00:10–04:00:30 CET) | status | code=500 | method POST, path ~ ^/v1/, every 2nd, probability 0.5 | yes |",
		"| cut | weather |",
		"## Built-in gateway settings",
		"| breaker.failure_ratio | 0.4 |",
		"| breaker.cooldown | 5s |",
		"| started | 2026-11-30 03:00:00 UTC (2026-11-30 04:00:00 CET, Europe/Berlin) |",
		"(<https://github.com/halfopen/rehearse/blob/v1.4.0/docs/analysis.md>)",
		"[Grafana dashboard for the run's window]",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if i, j := strings.Index(md, "Search fails"), strings.Index(md, "expectations"); i < 0 || i > j {
		t.Error("the description is not at the top of report.md")
	}
	if !strings.Contains(md, "⚠️ **") {
		t.Error("report.md marks a pass with uncovered episodes as all clear")
	}
	for _, want := range []string{`<p class="description">Search fails for 20 s.</p>`, `class="verdict warn"`, "not covered by any expectation: weather had",
		"<h2>What was injected</h2>", "<td>code=500</td>", "<td>breaker.failure_ratio</td><td>0.4</td>",
		`href="https://github.com/halfopen/rehearse/blob/v1.4.0/docs/analysis.md"`} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}

	// The links cover the run's window: a minute either side.
	from := time.Date(2026, 11, 30, 2, 59, 0, 0, time.UTC).UnixMilli()
	to := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC).Add(time.Duration(a.Run.DurationS*1e9) + time.Minute).Round(time.Millisecond).UnixMilli()
	var grafana, prom *url.URL
	for _, l := range a.Links {
		u, err := url.Parse(l.URL)
		if err != nil {
			t.Fatal(err)
		}
		switch u.Host {
		case "grafana.example":
			grafana = u
		case "prom.example:9090":
			prom = u
		}
	}
	if grafana == nil || grafana.Query().Get("from") != strconv.FormatInt(from, 10) || grafana.Query().Get("to") != strconv.FormatInt(to, 10) ||
		grafana.Query().Get("var-env") != "prod" || grafana.Path != "/d/abc/gw" {
		t.Errorf("grafana link %v, want from=%d to=%d and the dashboard's own parameters", grafana, from, to)
	}
	if prom == nil || prom.Path != "/graph" || prom.Query().Get("g0.expr") != "openclaw_breaker_state" ||
		prom.Query().Get("g0.end_input") != time.UnixMilli(to).UTC().Format("2006-01-02 15:04:05") {
		t.Errorf("prometheus link %v", prom)
	}

	// run.json keeps run time and wall-clock time, and all of the above.
	var rj map[string]any
	if err := json.Unmarshal([]byte(readFile(t, dir, render.RunFile)), &rj); err != nil {
		t.Fatal(err)
	}
	inj, _ := rj["injected"].([]any)
	if len(inj) != 2 {
		t.Fatalf("run.json injected: %v", rj["injected"])
	}
	f0 := inj[0].(map[string]any)
	if f0["start_s"] != 10.0 || f0["start_wall"] != "2026-11-30T03:00:10Z" || f0["health_checks"] != true || f0["applied"].(float64) <= 0 {
		t.Errorf("run.json injected[0] %v", f0)
	}
	cov, _ := rj["coverage"].([]any)
	if len(cov) != 2 || cov[0].(map[string]any)["covered"] != true || cov[1].(map[string]any)["covered"] != false {
		t.Errorf("run.json coverage %v", rj["coverage"])
	}
	ep := rj["upstreams"].(map[string]any)["search"].(map[string]any)["episodes"].([]any)[0].(map[string]any)
	if ep["start_s"] != 10.0 || ep["start_wall"] != "2026-11-30T03:00:10Z" {
		t.Errorf("episode times in run.json: start_s %v start_wall %v", ep["start_s"], ep["start_wall"])
	}
	if rj["run"].(map[string]any)["time_zone"] != "Europe/Berlin" || rj["builtin_gateway"] == nil {
		t.Error("run.json lacks time_zone or builtin_gateway")
	}
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
