package reports

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"path/filepath"
	"strings"

	"github.com/halfopen/rehearse/internal/atomicfile"
)

// Tolerance says when a difference between two runs is worth a flag:
// beyond Abs (in the figure's unit: seconds, counts, ratios) and beyond Rel
// times the first run's value.
type Tolerance struct {
	Abs float64
	Rel float64
}

// DefaultTolerance flags differences beyond 0.5 (s, calls) and 20 %.
var DefaultTolerance = Tolerance{Abs: 0.5, Rel: 0.2}

// Comparison is two runs' figures side by side.
type Comparison struct {
	Labels [2]string
	A, B   *Analysis
	Tol    Tolerance
	// Rows are the figures; Flagged counts rows beyond the tolerance.
	Rows    []CompareRow
	Flagged int
	// Platform rows: fact, value in A, value in B.
	Platform [][3]string
	// Origins are each run's first fault start (s), where the timelines
	// are aligned.
	Origins [2]float64
}

// CompareRow is one figure in both runs.
type CompareRow struct {
	Group  string // "search episode 1", "replay", ...
	Figure string
	A, B   string
	Delta  string
	Flag   bool
}

// Compare puts the figures of two analyses side by side (b relative to a),
// with deltas flagged beyond the tolerance; tol defaults to
// DefaultTolerance. Episodes are paired by upstream and order.
func Compare(a, b *Analysis, labels [2]string, tol ...Tolerance) *Comparison {
	t := DefaultTolerance
	if len(tol) > 0 {
		t = tol[0]
	}
	for i, l := range labels {
		if l == "" {
			labels[i] = string(rune('A' + i))
		}
	}
	c := &Comparison{Labels: labels, A: a, B: b, Tol: t}
	num := func(group, fig string, x, y *float64, unit string) {
		r := CompareRow{Group: group, Figure: fig, A: fnumU(x, unit), B: fnumU(y, unit), Delta: "—"}
		switch {
		case x != nil && y != nil:
			d := *y - *x
			r.Delta = fmt.Sprintf("%+.3g%s", d, unit)
			r.Flag = math.Abs(d) > t.Abs && math.Abs(d) > t.Rel*math.Abs(*x)
		case (x == nil) != (y == nil):
			r.Flag = true
		}
		if r.Flag {
			c.Flagged++
		}
		c.Rows = append(c.Rows, r)
	}
	word := func(group, fig, x, y string) {
		r := CompareRow{Group: group, Figure: fig, A: x, B: y, Delta: "—", Flag: x != y}
		if r.Flag {
			c.Flagged++
			r.Delta = "differs"
		}
		c.Rows = append(c.Rows, r)
	}
	names := sortedKeys(a.Upstreams)
	for _, n := range sortedKeys(b.Upstreams) {
		if _, ok := a.Upstreams[n]; !ok {
			names = append(names, n)
		}
	}
	for _, n := range names {
		ua, ub := a.Upstreams[n], b.Upstreams[n]
		var ea, eb []*Episode
		if ua != nil {
			ea = ua.Episodes
		}
		if ub != nil {
			eb = ub.Episodes
		}
		for i := 0; i < max(len(ea), len(eb)); i++ {
			var x, y *Episode
			if i < len(ea) {
				x = ea[i]
			}
			if i < len(eb) {
				y = eb[i]
			}
			x, y = orEmpty(x), orEmpty(y)
			g := fmt.Sprintf("%s episode %d", n, i+1)
			for _, f := range Figures {
				switch {
				case f.In&InCompare == 0:
				case f.Unit == Word:
					word(g, f.compareLabel(), f.Word(x), f.Word(y))
				default:
					num(g, f.compareLabel(), f.Value(x), f.Value(y), unitSuffix(f.Unit))
				}
			}
		}
	}
	num("replay", "send lateness p99", msToS(a.Replay.LatenessMs.P99), msToS(b.Replay.LatenessMs.P99), "s")
	num("replay", "sent", ptr(float64(a.Replay.Sent)), ptr(float64(b.Replay.Sent)), "")
	num("clients", "amplification overall", a.Amplification.Overall, b.Amplification.Overall, "")
	for _, ph := range []string{"before", "during", "after"} {
		var x, y *float64
		if p := a.Phases[ph]; p != nil {
			x = p.SuccessRatio
		}
		if p := b.Phases[ph]; p != nil {
			y = p.SuccessRatio
		}
		num("clients", "success ratio "+ph, x, y, "")
	}
	// Expectation verdicts, by name, in A's order then B's extras.
	va0, vb0 := map[string]ExpectationResult{}, map[string]ExpectationResult{}
	var expNames []string
	for _, r := range a.Expectations {
		va0[r.Name] = r
		expNames = append(expNames, r.Name)
	}
	for _, r := range b.Expectations {
		if _, ok := va0[r.Name]; !ok {
			expNames = append(expNames, r.Name)
		}
		vb0[r.Name] = r
	}
	verdict := func(r ExpectationResult, ok bool) string {
		switch {
		case !ok:
			return "—"
		case r.Passed:
			return "pass (" + r.Observed + ")"
		case r.Outcome == NotObservable:
			return "FAIL (not observable)"
		default:
			return "FAIL (" + r.Observed + ")"
		}
	}
	for _, n := range expNames {
		ra, oka := va0[n]
		rb, okb := vb0[n]
		want := ra.Want
		if !oka {
			want = rb.Want
		}
		row := CompareRow{Group: "expectations", Figure: n + " (want " + want + ")", A: verdict(ra, oka), B: verdict(rb, okb), Delta: "—"}
		switch {
		case !okb:
			row.Flag, row.Delta = true, "not set in "+labels[1]
		case !oka:
			row.Flag, row.Delta = true, "not set in "+labels[0]
		case ra.Passed != rb.Passed || ra.Outcome != rb.Outcome:
			row.Flag, row.Delta = true, "verdict differs"
		}
		if row.Flag {
			c.Flagged++
		}
		c.Rows = append(c.Rows, row)
	}
	pa, pb := platformRows(a.Platform), platformRows(b.Platform)
	keys := []string{}
	va, vb := map[string]string{}, map[string]string{}
	for _, r := range pa {
		keys = append(keys, r.K)
		va[r.K] = r.V
	}
	for _, r := range pb {
		if _, ok := va[r.K]; !ok {
			keys = append(keys, r.K)
		}
		vb[r.K] = r.V
	}
	for _, k := range keys {
		c.Platform = append(c.Platform, [3]string{k, orDash(va[k]), orDash(vb[k])})
	}
	c.Origins = [2]float64{firstFault(a), firstFault(b)}
	return c
}

// unitSuffix is the unit compare writes after a number and its delta.
func unitSuffix(u Unit) string {
	if u == Seconds {
		return "s"
	}
	return ""
}

func orEmpty(e *Episode) *Episode {
	if e == nil {
		return &Episode{Fault: "—"}
	}
	return e
}

func msToS(p *float64) *float64 {
	if p == nil {
		return nil
	}
	return ptr(*p / 1000)
}

func fnumU(p *float64, unit string) string {
	if p == nil {
		return "—"
	}
	if unit == "s" {
		return fmtS(*p)
	}
	return fmt.Sprintf("%.4g", *p)
}

func firstFault(a *Analysis) float64 {
	first := -1.0
	if a.Timeline != nil {
		for _, f := range a.Timeline.Faults {
			if first < 0 || f.StartS < first {
				first = f.StartS
			}
		}
	}
	return max(first, 0)
}

// alignedSVGs renders both timelines aligned at their first fault start.
func (c *Comparison) alignedSVGs() [2][]byte {
	pre := max(c.Origins[0], c.Origins[1])
	post := max(c.A.Run.DurationS-c.Origins[0], c.B.Run.DurationS-c.Origins[1])
	var out [2][]byte
	for i, a := range []*Analysis{c.A, c.B} {
		o := c.Origins[i]
		out[i] = TimelineSVG(a, SVGOptions{From: o - pre, To: o + post, Origin: o,
			Title: fmt.Sprintf("%s — %s (t = 0 at the first fault)", c.Labels[i], a.Run.RunID)})
	}
	return out
}

// CompareMarkdown renders the comparison for a postmortem.
func CompareMarkdown(c *Comparison) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Comparison — %s vs %s\n\n", mdEscape(c.Labels[0]), mdEscape(c.Labels[1]))
	p("%s: %s (%s); %s: %s (%s). Deltas are %s − %s; flagged (⚑) beyond %.3g absolute and %.0f%% relative.\n\n",
		mdEscape(c.Labels[0]), mdEscape(c.A.Run.Scenario), mdEscape(c.A.Run.RunID), mdEscape(c.Labels[1]), mdEscape(c.B.Run.Scenario), mdEscape(c.B.Run.RunID),
		mdEscape(c.Labels[1]), mdEscape(c.Labels[0]), c.Tol.Abs, c.Tol.Rel*100)
	p("**%d figures differ beyond the tolerance.**\n\n", c.Flagged)
	p("| group | figure | %s | %s | delta | |\n|---|---|---|---|---|---|\n", mdEscape(c.Labels[0]), mdEscape(c.Labels[1]))
	for _, r := range c.Rows {
		f := ""
		if r.Flag {
			f = "⚑"
		}
		p("| %s | %s | %s | %s | %s | %s |\n", mdEscape(r.Group), r.Figure, mdEscape(r.A), mdEscape(r.B), r.Delta, f)
	}
	p("\n## Platforms\n\n| fact | %s | %s |\n|---|---|---|\n", mdEscape(c.Labels[0]), mdEscape(c.Labels[1]))
	for _, r := range c.Platform {
		p("| %s | %s | %s |\n", mdEscape(r[0]), mdEscape(r[1]), mdEscape(r[2]))
	}
	p("\nTimelines, aligned at the first fault start: `compare-a.svg`, `compare-b.svg`.\n")
	return b.Bytes()
}

var compareTmpl = template.Must(template.New("compare").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Comparison — {{index .C.Labels 0}} vs {{index .C.Labels 1}}</title><style>{{.CSS}}</style></head><body>
<h1>Comparison — {{index .C.Labels 0}} vs {{index .C.Labels 1}}</h1>
<div class="verdict {{if .C.Flagged}}fail{{else}}pass{{end}}">{{.C.Flagged}} figures differ beyond the tolerance ({{.C.Tol.Abs}} absolute and {{.Rel}}% relative).</div>
<div class="meta"><div><span>{{index .C.Labels 0}}</span>{{.C.A.Run.Scenario}} · {{.C.A.Run.RunID}}</div><div><span>{{index .C.Labels 1}}</span>{{.C.B.Run.Scenario}} · {{.C.B.Run.RunID}}</div></div>
<h2>Timelines, aligned at the first fault start</h2>
<div class="timeline-wrap">{{index .SVG 0}}</div>
<div class="timeline-wrap" style="margin-top:8px">{{index .SVG 1}}</div>
<h2>Figures</h2>
<table><tr><th>group</th><th>figure</th><th>{{index .C.Labels 0}}</th><th>{{index .C.Labels 1}}</th><th>delta</th><th></th></tr>
{{range .C.Rows}}<tr><td>{{.Group}}</td><td>{{.Figure}}</td><td class="num">{{.A}}</td><td class="num">{{.B}}</td><td class="num">{{.Delta}}</td><td class="delta-flag">{{if .Flag}}⚑{{end}}</td></tr>
{{end}}</table>
<h2>Platforms</h2>
<table><tr><th>fact</th><th>{{index .C.Labels 0}}</th><th>{{index .C.Labels 1}}</th></tr>
{{range .C.Platform}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td></tr>{{end}}</table>
<footer>Black-box figures; definitions in docs/analysis.md.</footer>
</body></html>
`))

// CompareHTML renders the comparison as one self-contained HTML file with
// both timelines aligned at the first fault start.
func CompareHTML(c *Comparison) ([]byte, error) {
	svgs := c.alignedSVGs()
	var b bytes.Buffer
	err := compareTmpl.Execute(&b, struct {
		C   *Comparison
		CSS template.CSS
		SVG [2]template.HTML
		Rel string
	}{c, template.CSS(reportCSS), [2]template.HTML{template.HTML(svgs[0]), template.HTML(svgs[1])}, strings.TrimSuffix(fmt.Sprintf("%.0f", c.Tol.Rel*100), ".")})
	return b.Bytes(), err
}

// CompareFiles are the files WriteComparison writes.
var CompareFiles = []string{"compare.html", "compare.md", "compare-a.svg", "compare-b.svg"}

// WriteComparison writes compare.html, compare.md and the two aligned
// timelines into dir, atomically.
func WriteComparison(dir string, c *Comparison) error {
	h, err := CompareHTML(c)
	if err != nil {
		return err
	}
	svgs := c.alignedSVGs()
	for i, b := range [][]byte{h, CompareMarkdown(c), svgs[0], svgs[1]} {
		if err := atomicfile.Write(filepath.Join(dir, CompareFiles[i]), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CompareDirs analyses two run directories' journals and compares them.
func CompareDirs(dirA, dirB string, labels [2]string, tol Tolerance) (*Comparison, error) {
	a, err := AnalyzeDir(dirA)
	if err != nil {
		return nil, err
	}
	b, err := AnalyzeDir(dirB)
	if err != nil {
		return nil, err
	}
	for i, d := range []string{dirA, dirB} {
		if labels[i] == "" {
			labels[i] = filepath.Base(filepath.Clean(d))
		}
	}
	return Compare(a, b, labels, tol), nil
}
