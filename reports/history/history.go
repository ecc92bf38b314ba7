package history

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/compare"
	"github.com/halfopen/rehearse/reports/render"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/atomicfile"
	"github.com/halfopen/rehearse/internal/printable"
	"github.com/halfopen/rehearse/internal/stats"
	"github.com/halfopen/rehearse/reports/num"
)

// HistoryRun is one run in a history index.
type HistoryRun struct {
	Dir      string
	Analysis *analysis.Analysis
	Passed   int
	Total    int
	// Figures are the run's value of each trend figure (the median of its
	// samples), by trend key.
	Figures map[string]*float64
	// Ranges are the least and the most a figure can be where the
	// evidence leaves it a range (Figure.Bounds), by trend key; absent
	// when exact.
	Ranges map[string][2]float64
	// Err is why the run could not be read; its figures are empty.
	Err string
	// State says why the run has no report to read (HistoryOptions.State:
	// "killed: …", "recording: …"); "" for a run read as a report.
	State string
	// Unjudged says why a run read as a report had its expectations not
	// evaluated ("interrupted at T+…", "harness failure: …"): it is
	// listed in its group as such and left out of the trends, whose
	// figures (a requests-sent count of 0, a pass rate of 0) would say
	// something about the harness, not the gateway. "" for a judged run.
	Unjudged string
}

// HistoryGroup is the runs of one drill on one platform: trends are only
// ever drawn within a group, so "first → last" compares like with like.
type HistoryGroup struct {
	// Scenario is the scenario name; Platform "os/arch"; Digest the drill
	// digest when the runs carry one.
	Scenario, Platform, Digest string
	Runs                       []*HistoryRun
	Trends                     []HistoryTrend
}

// HistoryTrend is one figure across a group's runs, oldest first.
type HistoryTrend struct {
	Key, Label, Unit string
	Values           []*float64
	// First and Last are the first and last observed values; N counts
	// runs with a value.
	First, Last *float64
	N           int
	// FirstRange and LastRange are their ranges where the evidence left
	// the figure one (HistoryRun.Ranges); nil when exact.
	FirstRange, LastRange *[2]float64
}

// HistoryIndex is an index of many runs, grouped per scenario and
// platform, with the trends of their key figures.
type HistoryIndex struct {
	Root   string
	Runs   []*HistoryRun
	Groups []*HistoryGroup
	// Unreadable are the runs that could not be read.
	Unreadable []*HistoryRun
	// NoReport are the runs HistoryOptions.State set aside: listed with
	// their state, never read, linked or drawn in a trend.
	NoReport []*HistoryRun
}

// HistoryOptions are History's settings; the zero value reads every run
// directory.
type HistoryOptions struct {
	// State, given a subdirectory's name, says why it holds no report to
	// read ("killed: …", "recording: …"), or "" to read it as a run; nil
	// reads every run. The archive (internal/runs) knows which runs are
	// complete; a journal of a killed run would otherwise be read, bend
	// the trends and be linked to a report that does not exist.
	State func(name string) string
}

// History reads every run directory under dir (the direct subdirectories
// holding journal.jsonl or run.json; the journal is analysed when present,
// since only it has every sample) and indexes them oldest first, grouped
// by drill and platform. A run that cannot be read is listed with its
// error, not dropped.
func History(dir string) (*HistoryIndex, error) {
	return HistoryWith(dir, HistoryOptions{})
}

// HistoryWith is History with options. Hidden subdirectories (a name
// starting with ".") are never runs.
func HistoryWith(dir string, opt HistoryOptions) (*HistoryIndex, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: no such directory", rehearse.ErrInvalid, dir)
		}
		return nil, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
	}
	h := &HistoryIndex{Root: dir}
	for _, e := range ents {
		if !e.IsDir() || e.Name() == "latest" || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		hr := &HistoryRun{Dir: e.Name(), Figures: map[string]*float64{}}
		if opt.State != nil {
			if hr.State = opt.State(e.Name()); hr.State != "" {
				h.Runs = append(h.Runs, hr)
				h.NoReport = append(h.NoReport, hr)
				continue
			}
		}
		var a *analysis.Analysis
		digest := ""
		if _, err := os.Stat(filepath.Join(sub, analysis.JournalFile)); err == nil {
			if r, err := compare.LoadRun(sub); err != nil {
				hr.Err = err.Error()
			} else {
				a, digest = r.A, r.Digest
			}
		} else if _, err := os.Stat(filepath.Join(sub, render.RunFile)); err == nil {
			if a, err = render.ReadRunJSON(filepath.Join(sub, render.RunFile)); err != nil {
				hr.Err = err.Error()
				a = nil
			}
		} else {
			continue // not a run directory
		}
		h.Runs = append(h.Runs, hr)
		if a == nil {
			h.Unreadable = append(h.Unreadable, hr)
			continue
		}
		hr.Analysis = a
		if h := a.HarnessFailure(); h != "" {
			hr.Unjudged = "harness failure: " + h
		} else if in := a.Interrupted(); in != "" {
			hr.Unjudged = in
		}
		for _, r := range a.Expectations {
			hr.Total++
			if r.Passed {
				hr.Passed++
			}
		}
		h.add(hr, digest)
	}
	if len(h.Runs) == 0 {
		return nil, fmt.Errorf("%w: %s holds no run directories (subdirectories with run.json or journal.jsonl)", rehearse.ErrInvalid, dir)
	}
	for _, g := range h.Groups {
		sort.SliceStable(g.Runs, func(i, j int) bool {
			ai, aj := g.Runs[i].Analysis, g.Runs[j].Analysis
			if !ai.Run.WallStart.Equal(aj.Run.WallStart) {
				return ai.Run.WallStart.Before(aj.Run.WallStart)
			}
			return g.Runs[i].Dir < g.Runs[j].Dir
		})
		g.trends()
	}
	sort.SliceStable(h.Groups, func(i, j int) bool {
		if h.Groups[i].Scenario != h.Groups[j].Scenario {
			return h.Groups[i].Scenario < h.Groups[j].Scenario
		}
		return h.Groups[i].Platform < h.Groups[j].Platform
	})
	sort.SliceStable(h.Runs, func(i, j int) bool { return h.Runs[i].Dir < h.Runs[j].Dir })
	return h, nil
}

// add puts a run into its group (same digest, or same name when the run
// has no digest, and same platform) and computes its figures.
func (h *HistoryIndex) add(hr *HistoryRun, digest string) {
	a := hr.Analysis
	plat := "unknown platform"
	if p := a.Platform; p != nil {
		plat = p.OS + "/" + p.Arch
	}
	var g *HistoryGroup
	for _, x := range h.Groups {
		same := x.Digest == digest && (digest != "" || x.Scenario == a.Run.Scenario)
		if same && x.Platform == plat {
			g = x
			break
		}
	}
	if g == nil {
		g = &HistoryGroup{Scenario: a.Run.Scenario, Platform: plat, Digest: digest}
		h.Groups = append(h.Groups, g)
	}
	g.Runs = append(g.Runs, hr)
	if hr.Unjudged != "" {
		return // listed, never in a trend
	}
	r := &compare.SideRun{A: a}
	for _, n := range slices.Sorted(maps.Keys(a.Upstreams)) {
		for i, ep := range a.Upstreams[n].Episodes {
			for _, f := range historyFigures() {
				if v := f.Value(ep); v != nil {
					hr.Figures[trendKey(n, i, f.Key)] = v
				}
				if f.Bounds == nil {
					continue
				}
				if lo, hi, ok := f.Bounds(ep); ok {
					if hr.Ranges == nil {
						hr.Ranges = map[string][2]float64{}
					}
					hr.Ranges[trendKey(n, i, f.Key)] = [2]float64{lo, hi}
				}
			}
		}
	}
	for _, f := range compare.RunFigures {
		if f.Key == "send_lateness" {
			continue // the journal's every request: the p99 below is run.json's
		}
		if v := f.Run(r); len(v) > 0 {
			hr.Figures[f.Key] = analysis.Ptr(stats.Summarize([][]float64{v}).Median)
		}
	}
	if a.Replay.LatenessMs.P99 != nil {
		hr.Figures["send_lateness_p99"] = a.Replay.LatenessMs.P99
	}
}

// historyFigures are the figure table's figures a trend follows
// (InHistory), read by Value from run.json's fields: a run.json read back
// gives the same trend as its journal.
func historyFigures() []analysis.Figure {
	var out []analysis.Figure
	for _, f := range analysis.Figures {
		if f.In&analysis.InHistory != 0 && f.Unit != analysis.Word {
			out = append(out, f)
		}
	}
	return out
}

func trendKey(upstream string, ep int, key string) string {
	return fmt.Sprintf("%s#%d.%s", upstream, ep+1, key)
}

// trendUnit is the compare unit of a table figure: timings are shown in
// ms (the table's seconds are scaled where the value is formatted).
func trendUnit(u analysis.Unit) string {
	switch u {
	case analysis.Seconds:
		return compare.UnitSeconds
	case analysis.Ratio:
		return compare.UnitRatio
	}
	return compare.UnitCalls
}

// trends builds the group's trends, figures in a stable order: episode
// figures per upstream and episode, then the run's.
func (g *HistoryGroup) trends() {
	type def struct{ key, label, unit string }
	var defs []def
	seen := map[string]bool{}
	eps := map[string]int{}
	judged := g.judged()
	for _, r := range judged {
		for n, u := range r.Analysis.Upstreams {
			eps[n] = max(eps[n], len(u.Episodes))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(eps)) {
		for i := range eps[n] {
			for _, f := range historyFigures() {
				k := trendKey(n, i, f.Key)
				label := fmt.Sprintf("%s episode %d: %s", n, i+1, f.HistoryAs())
				if eps[n] == 1 {
					label = fmt.Sprintf("%s: %s", n, f.HistoryAs())
				}
				defs = append(defs, def{k, label, trendUnit(f.Unit)})
			}
		}
	}
	for _, f := range compare.RunFigures {
		if f.Key == "send_lateness" {
			defs = append(defs, def{"send_lateness_p99", "send lateness p99", compare.UnitMs})
			continue
		}
		defs = append(defs, def{f.Key, f.Label, f.Unit})
	}
	for _, d := range defs {
		if seen[d.key] {
			continue
		}
		seen[d.key] = true
		t := HistoryTrend{Key: d.key, Label: d.label, Unit: d.unit}
		for _, r := range judged {
			v := r.Figures[d.key]
			t.Values = append(t.Values, v)
			if v != nil {
				var rg *[2]float64
				if x, ok := r.Ranges[d.key]; ok {
					rg = &x
				}
				if t.First == nil {
					t.First, t.FirstRange = v, rg
				}
				t.Last, t.LastRange = v, rg
				t.N++
			}
		}
		if t.N > 0 {
			g.Trends = append(g.Trends, t)
		}
	}
}

// judged are the group's runs whose expectations were judged, the ones
// its trends are drawn over.
func (g *HistoryGroup) judged() []*HistoryRun {
	var out []*HistoryRun
	for _, r := range g.Runs {
		if r.Unjudged == "" {
			out = append(out, r)
		}
	}
	return out
}

// leftOut says how many of the group's runs the trends leave out, and
// why; "" when none.
func (g *HistoryGroup) leftOut() string {
	n := len(g.Runs) - len(g.judged())
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d %s left out of the trends (interrupted, or a harness failure: nothing was judged).", n, num.Pick(n, "run", "runs"))
}

// Title names the group.
func (g *HistoryGroup) Title() string {
	return fmt.Sprintf("%s · %s", g.Scenario, g.Platform)
}

// change is "first → last" within the group, or "—" with one value.
// A difference that lies within the figure's bounds (the first's and the
// last's ranges meet) is no change: "+50 ms (within the bounds)".
func (t HistoryTrend) change() string {
	if t.N < 2 {
		return "—"
	}
	d := compare.FmtDelta(*t.Last-*t.First, t.Unit)
	if t.FirstRange == nil && t.LastRange == nil || *t.Last == *t.First {
		return d
	}
	span := func(v *float64, r *[2]float64) (float64, float64) {
		if r == nil {
			return *v, *v
		}
		return r[0], r[1]
	}
	alo, ahi := span(t.First, t.FirstRange)
	blo, bhi := span(t.Last, t.LastRange)
	if alo <= bhi && blo <= ahi {
		return d + " (within the bounds: not a change)"
	}
	return d
}

func (t HistoryTrend) cell(v *float64) string {
	if v == nil {
		return "—"
	}
	return compare.FmtValue(*v, t.Unit)
}

// sparkText draws a series with block characters; gaps are spaces.
func sparkText(vals []*float64) string {
	const blocks = "▁▂▃▄▅▆▇█"
	rs := []rune(blocks)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if v != nil {
			lo, hi = math.Min(lo, *v), math.Max(hi, *v)
		}
	}
	var b strings.Builder
	for _, v := range vals {
		switch {
		case v == nil:
			b.WriteRune(' ')
		case hi == lo:
			b.WriteRune(rs[3])
		default:
			b.WriteRune(rs[int(math.Round((*v-lo)/(hi-lo)*float64(len(rs)-1)))])
		}
	}
	return b.String()
}

// sparkline draws a series as a small inline SVG; gaps are nulls.
func sparkline(vals []*float64) string {
	const w, h = 120.0, 24.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if v != nil {
			lo, hi = math.Min(lo, *v), math.Max(hi, *v)
		}
	}
	if math.IsInf(lo, 1) {
		return ""
	}
	if hi == lo {
		hi = lo + 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f"><polyline fill="none" stroke="#1565c0" stroke-width="1.5" points="`, w, h, w, h)
	n := max(len(vals)-1, 1)
	for i, v := range vals {
		if v == nil {
			continue
		}
		fmt.Fprintf(&b, "%.1f,%.1f ", float64(i)/float64(n)*(w-4)+2, h-2-(*v-lo)/(hi-lo)*(h-4))
	}
	b.WriteString(`"/></svg>`)
	return b.String()
}

func (r *HistoryRun) cells() (when, verdict string) {
	if r.Analysis == nil {
		return "—", "unreadable: " + r.Err
	}
	a := r.Analysis
	when = "—"
	if !a.Run.WallStart.IsZero() {
		when = a.Run.WallStart.UTC().Format("2006-01-02 15:04")
	}
	if r.Unjudged != "" {
		return when, "not judged: " + r.Unjudged
	}
	verdict = fmt.Sprintf("%d/%d met", r.Passed, r.Total)
	if r.Total == 0 {
		verdict = "no expectations"
	}
	if a.Run.Partial {
		verdict += " (partial)"
	}
	return when, verdict
}

func (h *HistoryIndex) scenarios() int {
	set := map[string]bool{}
	for _, g := range h.Groups {
		set[g.Scenario+"\x00"+g.Digest] = true
	}
	return len(set)
}

// HistoryMarkdown renders the index as Markdown: per scenario and
// platform, its runs and its trends, figures as rows.
func HistoryMarkdown(h *HistoryIndex) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Rehearsal history — %d runs, %d %s\n\n", len(h.Runs), h.scenarios(), num.Pick(h.scenarios(), "scenario", "scenarios"))
	p("Trends are drawn per scenario and platform, oldest → newest; \"change\" is last − first within the group.\n")
	for _, g := range h.Groups {
		p("\n## %s — %d %s\n\n", render.MdEscape(g.Title()), len(g.Runs), num.Pick(len(g.Runs), "run", "runs"))
		if g.Digest != "" {
			p("Drill digest `%s`.\n\n", compare.ShortDigest(g.Digest))
		}
		if lo := g.leftOut(); lo != "" {
			p("%s\n\n", lo)
		}
		p("| run | started | expectations |\n|---|---|---|\n")
		for _, r := range g.Runs {
			when, verdict := r.cells()
			p("| [%s](%s/%s) | %s | %s |\n", render.MdEscape(r.Dir), url.PathEscape(r.Dir), render.MarkdownFile, when, render.MdEscape(verdict))
		}
		if len(g.Trends) > 0 {
			p("\n| figure | runs | trend | first | last | change |\n|---|---|---|---|---|---|\n")
			for _, t := range g.Trends {
				p("| %s | %d | `%s` | %s | %s | %s |\n", render.MdEscape(t.Label), t.N, sparkText(t.Values), t.cell(t.First), t.cell(t.Last), t.change())
			}
		}
	}
	if len(h.Unreadable) > 0 {
		p("\n## Unreadable runs\n\n| run | error |\n|---|---|\n")
		for _, r := range h.Unreadable {
			p("| %s | %s |\n", render.MdEscape(r.Dir), render.MdEscape(r.Err))
		}
	}
	if len(h.NoReport) > 0 {
		p("\n## Runs without a report\n\n| run | state |\n|---|---|\n")
		for _, r := range h.NoReport {
			p("| %s | %s |\n", render.MdEscape(r.Dir), render.MdEscape(r.State))
		}
	}
	return b.Bytes()
}

var historyTmpl = template.Must(template.New("history").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Rehearsal history</title><style>{{.CSS}}</style></head><body>
<h1>Rehearsal history — {{len .H.Runs}} runs, {{.Scenarios}} scenario(s)</h1>
<p>Trends are drawn per scenario and platform, oldest → newest; "change" is last − first within the group.</p>
{{range .Groups}}<h2>{{.Title}} — {{len .Runs}} run(s)</h2>
{{if .Digest}}<p>Drill digest <code>{{.Digest}}</code>.</p>{{end}}{{if .LeftOut}}<p>{{.LeftOut}}</p>{{end}}
<div class="side"><div><table><tr><th>run</th><th>started</th><th>expectations</th></tr>
{{range .Runs}}<tr><td><a href="{{.Link}}">{{.Dir}}</a></td><td>{{.When}}</td><td>{{.Verdict}}</td></tr>
{{end}}</table></div>
<div><table><tr><th>figure</th><th>runs</th><th>trend</th><th>first</th><th>last</th><th>change</th></tr>
{{range .Trends}}<tr><td>{{.Label}}</td><td class="num">{{.N}}</td><td>{{.Spark}}</td><td class="num">{{.First}}</td><td class="num">{{.Last}}</td><td class="num">{{.Change}}</td></tr>
{{end}}</table></div></div>
{{end}}{{if .Unreadable}}<h2>Unreadable runs</h2><table><tr><th>run</th><th>error</th></tr>
{{range .Unreadable}}<tr><td>{{.Dir}}</td><td>{{.Err}}</td></tr>{{end}}</table>{{end}}{{if .NoReport}}<h2>Runs without a report</h2><table><tr><th>run</th><th>state</th></tr>
{{range .NoReport}}<tr><td>{{.Dir}}</td><td>{{.State}}</td></tr>{{end}}</table>{{end}}
</body></html>
`))

// HistoryHTML renders the index as one self-contained HTML file: per
// scenario and platform, its runs beside its trends with sparklines.
func HistoryHTML(h *HistoryIndex) ([]byte, error) {
	type trend struct {
		Label, First, Last, Change string
		N                          int
		Spark                      template.HTML
	}
	type run struct{ Dir, Link, When, Verdict string }
	type group struct {
		Title, Digest, LeftOut string
		Runs                   []run
		Trends                 []trend
	}
	var groups []group
	for _, g := range h.Groups {
		x := group{Title: g.Title(), Digest: compare.ShortDigest(g.Digest), LeftOut: g.leftOut()}
		if g.Digest == "" {
			x.Digest = ""
		}
		for _, r := range g.Runs {
			when, verdict := r.cells()
			x.Runs = append(x.Runs, run{r.Dir, r.Dir + "/" + render.HTMLFile, when, verdict})
		}
		for _, t := range g.Trends {
			x.Trends = append(x.Trends, trend{t.Label, t.cell(t.First), t.cell(t.Last), t.change(), t.N, template.HTML(sparkline(t.Values))})
		}
		groups = append(groups, x)
	}
	var b bytes.Buffer
	err := historyTmpl.Execute(&b, struct {
		H          *HistoryIndex
		CSS        template.CSS
		Scenarios  int
		Groups     []group
		Unreadable []*HistoryRun
		NoReport   []*HistoryRun
	}{h, template.CSS(render.ReportCSS), h.scenarios(), groups, h.Unreadable, h.NoReport})
	return printable.Bytes(b.Bytes()), err // as in HTML
}

// WriteHistory writes index.html and index.md into dir, atomically.
func WriteHistory(dir string, h *HistoryIndex) error {
	html, err := HistoryHTML(h)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "index.html"), html, 0o644); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "index.md"), HistoryMarkdown(h), 0o644)
}
