package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/compare"
	"github.com/halfopen/rehearse/reports/render"

	"github.com/halfopen/rehearse/journal"
)

// platformJournal is a run that recorded nothing but its platform facts,
// with procs Go processors (0: a journal from before the field).
func platformJournal(procs int) []journal.Event {
	return []journal.Event{
		{T: 0, Payload: &journal.RunStart{RunID: "p", Scenario: "platform", Rate: 10, Duration: time.Second,
			Platform: &journal.Platform{OS: "linux", Arch: "amd64", CPU: "AMD EPYC", NumCPU: 2, GOMAXPROCS: procs, GoVersion: "go1.26"}}},
		{T: time.Second, Payload: &journal.RunEnd{Reason: journal.EndCompleted}},
	}
}

// TestPlatformGOMAXPROCS: the harness's processor count travels from
// run.start to run.json, the report's platform rows and report compare's
// platform facts, where a difference is listed; a journal without it says
// nothing about it rather than 0.
func TestPlatformGOMAXPROCS(t *testing.T) {
	analyze := func(procs int) *analysis.Analysis {
		t.Helper()
		a, err := analysis.AnalyzeEvents(platformJournal(procs))
		if err != nil {
			t.Fatal(err)
		}
		if a.Platform == nil || a.Platform.GOMAXPROCS != procs {
			t.Fatalf("platform %+v, want gomaxprocs %d", a.Platform, procs)
		}
		return a
	}
	one, two, old := analyze(1), analyze(2), analyze(0)

	// The report's platform table, as report.md prints it.
	rows := func(a *analysis.Analysis) string {
		md, err := render.Markdown(a)
		if err != nil {
			t.Fatal(err)
		}
		return string(md)
	}
	if r := rows(one); !strings.Contains(r, "AMD EPYC (2 cores; the harness on 1 Go processors, GOMAXPROCS)") {
		t.Errorf("platform rows lack the processor count:\n%s", r)
	}
	if r := rows(old); strings.Contains(r, "GOMAXPROCS") || !strings.Contains(r, "AMD EPYC (2 cores)") {
		t.Errorf("a journal without the count shows one:\n%s", r)
	}

	fact := func(a, b *analysis.Analysis) compare.CompareFact {
		t.Helper()
		c, err := compare.CompareAnalyses([]*analysis.Analysis{a}, []*analysis.Analysis{b}, compare.CompareOptions{Force: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range c.Facts {
			if f.Key == "go processors (GOMAXPROCS)" {
				return f
			}
		}
		return compare.CompareFact{}
	}
	if f := fact(one, two); !f.Differs() || len(f.A) != 1 || f.A[0] != "1" || f.B[0] != "2" {
		t.Errorf("1 vs 2 processors: %+v", f)
	}
	if f := fact(two, two); f.Key == "" || f.Differs() {
		t.Errorf("2 vs 2 processors: %+v", f)
	}
	if f := fact(old, two); f.Key == "" || f.A[0] != "—" || !f.Differs() {
		t.Errorf("a journal without the count against one with it: %+v", f)
	}
	if f := fact(old, old); f.Key != "" {
		t.Errorf("runs that recorded no count list it: %+v", f)
	}
}
