package reports

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/atomicfile"
)

// HistoryRun is one run in a history index.
type HistoryRun struct {
	Dir      string
	Analysis *Analysis
	Passed   int
	Total    int
	// Figures are the key figures by name (see HistoryFigures).
	Figures map[string]*float64
	// Err is why the run could not be read; its figures are empty.
	Err string
}

// HistoryIndex is an index of many runs with trends of their key figures.
type HistoryIndex struct {
	Root    string
	Runs    []*HistoryRun
	Figures []string // figure names, in column order
}

// History reads every run directory under dir (the direct subdirectories
// holding run.json or journal.jsonl; a directory's run.json is used when
// it is current, else its journal is analysed) and indexes them oldest
// first. A run that cannot be read is listed with its error, not dropped.
func History(dir string) (*HistoryIndex, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: no such directory", rehearse.ErrInvalid, dir)
		}
		return nil, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
	}
	h := &HistoryIndex{Root: dir}
	figSet := map[string]bool{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		hr := &HistoryRun{Dir: e.Name(), Figures: map[string]*float64{}}
		var a *Analysis
		if _, err := os.Stat(filepath.Join(sub, RunFile)); err == nil {
			a, err = ReadRunJSON(filepath.Join(sub, RunFile))
			if err != nil {
				a = nil
			}
		}
		if a == nil {
			if _, err := os.Stat(filepath.Join(sub, JournalFile)); err != nil {
				continue // not a run directory
			}
			a, err = AnalyzeDir(sub)
			if err != nil {
				hr.Err = err.Error()
			}
		}
		if a != nil {
			hr.Analysis = a
			for _, r := range a.Expectations {
				hr.Total++
				if r.Passed {
					hr.Passed++
				}
			}
			for k, v := range keyFigures(a) {
				hr.Figures[k] = v
				figSet[k] = true
			}
		}
		h.Runs = append(h.Runs, hr)
	}
	if len(h.Runs) == 0 {
		return nil, fmt.Errorf("%w: %s holds no run directories (subdirectories with run.json or journal.jsonl)", rehearse.ErrInvalid, dir)
	}
	sort.SliceStable(h.Runs, func(i, j int) bool {
		ai, aj := h.Runs[i].Analysis, h.Runs[j].Analysis
		if ai != nil && aj != nil && !ai.Run.WallStart.Equal(aj.Run.WallStart) {
			return ai.Run.WallStart.Before(aj.Run.WallStart)
		}
		return h.Runs[i].Dir < h.Runs[j].Dir
	})
	for k := range figSet {
		h.Figures = append(h.Figures, k)
	}
	sort.Strings(h.Figures)
	return h, nil
}

// keyFigures are the figures a weekly trend follows: per upstream, the
// first episode's figures marked InHistory in Figures; and the run's
// amplification, client success and replay lateness.
func keyFigures(a *Analysis) map[string]*float64 {
	out := map[string]*float64{
		"amplification":         a.Amplification.Overall,
		"replay lateness p99 s": msToS(a.Replay.LatenessMs.P99),
	}
	if p := a.Phases["during"]; p != nil {
		out["client success during faults"] = p.SuccessRatio
	}
	for n, ua := range a.Upstreams {
		if len(ua.Episodes) == 0 {
			continue
		}
		ep := ua.Episodes[0]
		for _, f := range Figures {
			if f.In&InHistory != 0 && f.Unit != Word {
				out[n+": "+f.historyLabel()] = f.Value(ep)
			}
		}
	}
	return out
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

func (h *HistoryIndex) series(fig string) []*float64 {
	out := make([]*float64, len(h.Runs))
	for i, r := range h.Runs {
		out[i] = r.Figures[fig]
	}
	return out
}

func (r *HistoryRun) cells() (when, scen, verdict string) {
	if r.Analysis == nil {
		return "—", "—", "unreadable: " + r.Err
	}
	a := r.Analysis
	when = "—"
	if !a.Run.WallStart.IsZero() {
		when = a.Run.WallStart.UTC().Format("2006-01-02 15:04")
	}
	verdict = fmt.Sprintf("%d/%d passed", r.Passed, r.Total)
	if r.Total == 0 {
		verdict = "no expectations"
	}
	if a.Run.Partial {
		verdict += " (partial)"
	}
	return when, a.Run.Scenario, verdict
}

// HistoryMarkdown renders the index as Markdown.
func HistoryMarkdown(h *HistoryIndex) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Rehearsal history — %d runs\n\n| run | started | scenario | expectations |", len(h.Runs))
	for _, f := range h.Figures {
		p(" %s |", mdEscape(f))
	}
	p("\n|---|---|---|---|%s\n", strings.Repeat("---|", len(h.Figures)))
	for _, r := range h.Runs {
		when, scen, verdict := r.cells()
		p("| [%s](%s/%s) | %s | %s | %s |", mdEscape(r.Dir), url.PathEscape(r.Dir), MarkdownFile, when, mdEscape(scen), mdEscape(verdict))
		for _, f := range h.Figures {
			p(" %s |", fnum(r.Figures[f], "%.3g"))
		}
		p("\n")
	}
	p("\n## Trends (oldest → newest)\n\n| figure | first | last | change |\n|---|---|---|---|\n")
	for _, f := range h.Figures {
		s := h.series(f)
		var first, last *float64
		for _, v := range s {
			if v != nil {
				if first == nil {
					first = v
				}
				last = v
			}
		}
		ch := "—"
		if first != nil && last != nil {
			ch = fmt.Sprintf("%+.3g", *last-*first)
		}
		p("| %s | %s | %s | %s |\n", mdEscape(f), fnum(first, "%.3g"), fnum(last, "%.3g"), ch)
	}
	return b.Bytes()
}

var historyTmpl = template.Must(template.New("history").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Rehearsal history</title><style>{{.CSS}}</style></head><body>
<h1>Rehearsal history — {{len .H.Runs}} runs</h1>
<h2>Trends (oldest → newest)</h2>
<table><tr><th>figure</th><th>trend</th><th>first</th><th>last</th></tr>
{{range .Trends}}<tr><td>{{.Name}}</td><td>{{.Spark}}</td><td class="num">{{.First}}</td><td class="num">{{.Last}}</td></tr>{{end}}</table>
<h2>Runs</h2>
<table><tr><th>run</th><th>started</th><th>scenario</th><th>expectations</th>{{range .H.Figures}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td><a href="{{.Link}}">{{.Dir}}</a></td><td>{{.When}}</td><td>{{.Scen}}</td><td>{{.Verdict}}</td>{{range .Cells}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</table></body></html>
`))

// HistoryHTML renders the index as one self-contained HTML file with a
// sparkline per key figure.
func HistoryHTML(h *HistoryIndex) ([]byte, error) {
	type trend struct {
		Name, First, Last string
		Spark             template.HTML
	}
	type row struct {
		Dir, Link, When, Scen, Verdict string
		Cells                          []string
	}
	var trends []trend
	for _, f := range h.Figures {
		s := h.series(f)
		var first, last *float64
		for _, v := range s {
			if v != nil {
				if first == nil {
					first = v
				}
				last = v
			}
		}
		trends = append(trends, trend{f, fnum(first, "%.3g"), fnum(last, "%.3g"), template.HTML(sparkline(s))})
	}
	var rows []row
	for _, r := range h.Runs {
		when, scen, verdict := r.cells()
		rw := row{Dir: r.Dir, Link: r.Dir + "/" + HTMLFile, When: when, Scen: scen, Verdict: verdict}
		for _, f := range h.Figures {
			rw.Cells = append(rw.Cells, fnum(r.Figures[f], "%.3g"))
		}
		rows = append(rows, rw)
	}
	var b bytes.Buffer
	err := historyTmpl.Execute(&b, struct {
		H      *HistoryIndex
		CSS    template.CSS
		Trends []trend
		Rows   []row
	}{h, template.CSS(reportCSS), trends, rows})
	return b.Bytes(), err
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
