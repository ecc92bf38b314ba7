package reports

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/compare"
	"github.com/halfopen/rehearse/reports/history"
	"github.com/halfopen/rehearse/reports/render"
	"github.com/halfopen/rehearse/reports/verdict"
)

// episodeObjects reads run.json's episode objects of one upstream.
func episodeObjects(t *testing.T, runJSON []byte, upstream string) []map[string]any {
	t.Helper()
	var doc struct {
		Upstreams map[string]struct {
			Episodes []map[string]any `json:"episodes"`
		} `json:"upstreams"`
	}
	if err := json.Unmarshal(runJSON, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Upstreams[upstream].Episodes
}

// lookup follows a dotted key into a decoded JSON object.
func lookup(obj map[string]any, key string) (any, bool) {
	var cur any = obj
	for _, part := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// Every figure of the table is in run.json under its key, with the value
// the table reads: the keys are the contract, not decoration.
func TestFigureKeysInRunJSON(t *testing.T) {
	a, _ := analyse(t, base())
	b, err := render.RunJSON(a)
	if err != nil {
		t.Fatal(err)
	}
	ep := a.Upstreams["search"].Episodes[0]
	obj := episodeObjects(t, b, "search")[0]
	seenKeys := map[string]bool{}
	for _, f := range analysis.Figures {
		if seenKeys[f.Key] {
			t.Errorf("figure key %s declared twice", f.Key)
		}
		seenKeys[f.Key] = true
		got, ok := lookup(obj, f.Key)
		if !ok && f.Applies != nil && !f.Applies(ep) {
			continue // another kind of episode's (TestSheddingRows)
		}
		if !ok {
			t.Errorf("figure %s: no such key in run.json's episode", f.Key)
			continue
		}
		if f.Unit == analysis.Word || f.Key == "cycles" {
			continue // words are for people; cycles is the array the count is of
		}
		v := f.Value(ep)
		switch {
		case v == nil && got != nil:
			t.Errorf("figure %s: table nil, run.json %v", f.Key, got)
		case v != nil && (got == nil || math.Abs(got.(float64)-*v) > 1e-9):
			t.Errorf("figure %s: table %v, run.json %v", f.Key, *v, got)
		}
	}
}

// Adding a figure is one row of the table: it then appears in run.json,
// report.md, report.html, report compare and report history.
func TestAddedFigureIsInEveryOutput(t *testing.T) {
	saved := slices.Clone(analysis.Figures)
	t.Cleanup(func() { analysis.Figures = saved })
	analysis.Figures = append(analysis.Figures, analysis.Figure{
		Key: "probes_per_cycle", Label: "probes per open cycle", Unit: analysis.Ratio,
		Value: func(e *analysis.Episode) *float64 {
			if len(e.Cycles) == 0 {
				return nil
			}
			return analysis.Ptr(float64(e.Probes) / float64(len(e.Cycles)))
		},
		In: analysis.Everywhere, CompareLabel: "probes per cycle (compared)", HistoryLabel: "probes per cycle (trend)",
	})

	root := t.TempDir()
	var dirs []string
	for _, name := range []string{"clean", "haproxy"} {
		src := renderFixture(t, name)
		dst := filepath.Join(root, name)
		if err := os.Rename(src, dst); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dst)
	}
	read := func(dir, file string) string {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, err := verdict.AnalyzeDir(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := *analysis.Figures[len(analysis.Figures)-1].Value(a.Upstreams["search"].Episodes[0])

	obj := episodeObjects(t, []byte(read(dirs[0], render.RunFile)), "search")[0]
	if got, ok := obj["probes_per_cycle"].(float64); !ok || got != want {
		t.Errorf("run.json probes_per_cycle = %v, want %v", obj["probes_per_cycle"], want)
	}
	// Read back, the figure is the same (history reads run.json).
	back, err := render.ReadRunJSON(filepath.Join(dirs[0], render.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := analysis.Figures[len(analysis.Figures)-1].Value(back.Upstreams["search"].Episodes[0]); got == nil || *got != want {
		t.Errorf("run.json read back: %v, want %v", got, want)
	}
	for _, file := range []string{render.MarkdownFile, render.HTMLFile} {
		if s := read(dirs[0], file); !strings.Contains(s, "probes per open cycle") {
			t.Errorf("%s has no row for the added figure", file)
		}
	}
	b, err := verdict.AnalyzeDir(dirs[1])
	if err != nil {
		t.Fatal(err)
	}
	c, err := compare.CompareAnalyses([]*analysis.Analysis{a}, []*analysis.Analysis{b}, compare.CompareOptions{Labels: [2]string{"clean", "haproxy"}, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range c.Rows {
		if r.Label == "probes per cycle (compared)" {
			found = true
		}
	}
	if !found || !strings.Contains(string(compare.CompareMarkdown(c, false)), "probes per cycle (compared)") {
		t.Error("report compare has no row for the added figure")
	}
	if h, err := compare.CompareHTML(c); err != nil || !strings.Contains(string(h), "probes per cycle (compared)") {
		t.Errorf("compare.html has no row for the added figure (%v)", err)
	}
	h, err := history.History(root)
	if err != nil {
		t.Fatal(err)
	}
	var trends []string
	for _, g := range h.Groups {
		for _, tr := range g.Trends {
			trends = append(trends, tr.Label)
		}
	}
	if !slices.Contains(trends, "search: probes per cycle (trend)") {
		t.Errorf("history trends %v lack the added figure", trends)
	}
	if !strings.Contains(string(history.HistoryMarkdown(h)), "search: probes per cycle (trend)") {
		t.Error("index.md has no row for the added figure")
	}
	if hh, err := history.HistoryHTML(h); err != nil || !strings.Contains(string(hh), "search: probes per cycle (trend)") {
		t.Errorf("index.html has no row for the added figure (%v)", err)
	}
}
