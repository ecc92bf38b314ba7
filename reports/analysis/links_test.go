package analysis

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/expect"
)

func TestProgressionSummarised(t *testing.T) {
	if got := progression([]float64{1, 2, 4}); got != "1 s → 2 s → 4 s" {
		t.Errorf("short: %q", got)
	}
	long := make([]float64, 99)
	for i := range long {
		long[i] = float64(1 + i%7)
	}
	long[50] = 0.5
	got := progression(long)
	if !strings.HasPrefix(got, "1 s → 2 s → 3 s → 4 s → 5 s → 6 s → … 93 more (min 500 ms, max 7 s over all 99") {
		t.Errorf("long: %q", got)
	}
	if strings.Count(got, "→") > progressionShown {
		t.Errorf("long progression lists %d values", strings.Count(got, "→"))
	}
	if progression(nil) != "—" {
		t.Error("empty")
	}
}

func TestDocsURL(t *testing.T) {
	for v, want := range map[string]string{
		"v1.4.0":                             "v1.4.0",
		"v1.4.0-rc.1":                        "v1.4.0-rc.1",
		"v0.0.0-20261201103000-3a0e90b1c2d4": "3a0e90b1c2d4",
		"v1.3.0-12-g3a0e90b1c2d4":            "3a0e90b1c2d4",
		"v1.3.0-12-g3a0e90b1c2d4-dirty":      "3a0e90b1c2d4",
		"dev":                                "main",
		"":                                   "main",
	} {
		if got := DocsURL(v, "md"); got != DocsBase+want+"/docs/md" {
			t.Errorf("DocsURL(%q) = %s, want ref %s", v, got, want)
		}
	}
}

func TestGrafanaPlaceholders(t *testing.T) {
	a := &Analysis{Run: RunInfo{WallStart: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), DurationS: 60}}
	rec := &scenarioRecord{Report: &expect.ReportSpec{Links: &expect.ReportLinks{Grafana: "https://g.example/d/x?from={from}&to={to}&orgId=1"}}}
	links := reportLinks(a, rec, nil)
	want := "https://g.example/d/x?from=" + strconv.FormatInt(a.Run.WallStart.Add(-time.Minute).UnixMilli(), 10) +
		"&to=" + strconv.FormatInt(a.Run.WallStart.Add(2*time.Minute).UnixMilli(), 10) + "&orgId=1"
	if len(links) != 2 || links[1].URL != want {
		t.Errorf("links %v, want %s", links, want)
	}
}
