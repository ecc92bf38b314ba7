package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/render"

	"github.com/halfopen/rehearse/internal/atomicfile"
	"github.com/halfopen/rehearse/internal/canvas"
	"github.com/halfopen/rehearse/internal/printable"
	"github.com/halfopen/rehearse/internal/stats"
	"github.com/halfopen/rehearse/reports/num"
)

// The one picture of a comparison, as SVG and as PNG: the first run of
// each side, stacked, aligned at the first fault start.
const (
	CompareTimelinesFile    = "compare-timelines.svg"
	CompareTimelinesPNGFile = "compare-timelines.png"
)

// CompareFiles are the files WriteComparison writes.
var CompareFiles = []string{"compare.html", "compare.md", "compare.json", CompareTimelinesFile, CompareTimelinesPNGFile}

// WriteComparison writes compare.html, compare.md, compare.json and the
// aligned timelines (SVG and PNG) into dir (which must exist),
// atomically, file by file.
func WriteComparison(dir string, c *Comparison) error {
	h, err := CompareHTML(c)
	if err != nil {
		return err
	}
	j, err := CompareJSON(c)
	if err != nil {
		return err
	}
	p, err := CompareTimelinesPNG(c)
	if err != nil {
		return err
	}
	for i, b := range [][]byte{h, CompareMarkdown(c, true), j, CompareTimelinesSVG(c), p} {
		if err := atomicfile.Write(filepath.Join(dir, CompareFiles[i]), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CompareJSON renders the comparison as indented JSON (for CI).
func CompareJSON(c *Comparison) ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Headline is the comparison's verdict in one sentence.
func (c *Comparison) Headline() string {
	s := fmt.Sprintf("%d %s beyond noise and threshold", c.Flagged, num.Pick(c.Flagged, "figure differs", "figures differ"))
	if c.Unjudged > 0 {
		s += fmt.Sprintf("; %d cannot be judged (%s)", c.Unjudged, c.undecidedText())
	}
	return s
}

// method says in a paragraph how figures are compared and flagged; lb
// and la are the labels as the document writes them.
func (c *Comparison) method(lb, la string, md bool) string {
	s := fmt.Sprintf("Each figure is compared run by run: a run's value is the median of its samples (every cycle, probe and request), the difference is %s − %s of the sides' mean run values, and its interval is Student's t interval of the run values, pooled over both sides, with each run value's spread at least its own samples' noise and its resolution (the request interval, one call, the figure's bounds). ", lb, la)
	if c.Judgeable > 1 {
		s += fmt.Sprintf("The intervals are simultaneous at %s %%: each at %s %%, so that %d figures of identical configurations are all within noise at %s %%. ",
			pct(c.Level), pct(c.FigureLevel), c.Judgeable, pct(c.Level))
	} else {
		s += fmt.Sprintf("The interval is at %s %%. ", pct(c.Level))
	}
	and := "and"
	if md {
		and = "**and**"
	}
	s += "With one run a side there is no run-to-run spread: the interval covers the noise within each run only, and a figure with one value a run cannot be judged. ⚑ marks a difference whose interval excludes zero " + and + " that is at least the figure's threshold (defaults: 2 ms or 0.5 % for timings, 1 call for counts, 0.02 for ratios)."
	return s
}

// pct writes a level as a percentage with the digits it needs.
func pct(level float64) string {
	return strconv.FormatFloat(math.Round(level*1e5)/1e3, 'f', -1, 64)
}

// cells formats both sides of a row: n and median (p10 – p90).
func (r CompareRow) cells() (na, ma, nb, mb string) {
	if r.Unit == UnitWord {
		return "", joinVals(r.AWords), "", joinVals(r.BWords)
	}
	var sa, sb string
	na, ma, sa = sideCells(r.A, r.Unit)
	nb, mb, sb = sideCells(r.B, r.Unit)
	if sa != "" {
		ma += " (" + sa + ")"
	}
	if sb != "" {
		mb += " (" + sb + ")"
	}
	return na, ma, nb, mb
}

// sideCells formats one side of a row: n, median, p10–p90.
func sideCells(s CompareSide, unit string) (n, median, spread string) {
	n = strconv.Itoa(s.N)
	if s.Runs > 1 {
		n += fmt.Sprintf(" (%d runs)", s.Runs)
	}
	if s.Median == nil {
		return n, "—", ""
	}
	median = FmtValue(*s.Median, unit)
	if s.N > 1 {
		spread = FmtValue(*s.P10, unit) + " – " + FmtValue(*s.P90, unit)
	}
	return n, median, spread
}

// diffCell formats the difference with its interval, or why there is none.
func (r CompareRow) diffCell(level float64) string {
	if r.Unit == UnitWord {
		if r.Flag {
			return "differs"
		}
		return "—"
	}
	if r.Delta == nil {
		return "— (" + r.Note + ")"
	}
	d := FmtDelta(*r.Delta, r.Unit)
	if r.Lo == nil {
		return d + " (no interval)"
	}
	return fmt.Sprintf("%s [%s, %s]", d, FmtDelta(*r.Lo, r.Unit), FmtDelta(*r.Hi, r.Unit))
}

// verdictCell says what the row means.
func (r CompareRow) verdictCell() string {
	switch {
	case r.Unit == UnitWord && r.Flag:
		return "⚑ differs in every run"
	case r.Unit == UnitWord:
		return ""
	case r.Flag:
		return "⚑ beyond noise"
	case r.WithinBounds:
		return "not a change: " + r.Note
	case !r.Judged && r.Note == stats.NoteOneSample:
		return fmt.Sprintf("cannot tell: one sample per side (%d runs a side would judge it)", r.RunsToJudge)
	case !r.Judged && r.RunsToJudge > 0:
		return fmt.Sprintf("cannot tell: %s (%d runs a side would judge it)", r.Note, r.RunsToJudge)
	case !r.Judged:
		return "cannot tell: " + r.Note + " (more runs cannot judge it)"
	case r.Clear:
		return "clear, below " + FmtValue(r.Threshold, r.Unit)
	case r.RunsToTell > 0:
		return fmt.Sprintf("within noise (%d runs a side would tell a difference this size)", r.RunsToTell)
	default:
		return "within noise"
	}
}

func joinVals(v []string) string { return strings.Join(v, ", ") }

// CompareMarkdown renders the comparison for a postmortem or a CI summary.
// withTimelines says the timelines pictures are written beside it
// (WriteComparison); without them the text says how to get them.
func CompareMarkdown(c *Comparison, withTimelines bool) []byte {
	d := &cmpDoc{c: c, la: render.MdEscape(c.Labels[0]), lb: render.MdEscape(c.Labels[1])}
	d.head()
	d.figures()
	d.judged()
	d.platforms()
	la, lb := d.la, d.lb
	d.p("\n## Runs\n\n")
	for i, runs := range c.Runs {
		d.p("- %s:", render.MdEscape(c.Labels[i]))
		for _, r := range runs {
			d.p(" `%s` (%s)", render.MdEscape(filepath.Base(r.Dir)), render.MdEscape(r.Scenario))
		}
		d.p("\n")
	}
	if withTimelines {
		// The PNG for the documents that take no SVG (Google Docs, Jira,
		// Confluence); the SVG linked, as in report.md.
		d.p("\n## Timelines, aligned at the first fault start\n\n![%s and %s timelines](%s)\n\n[Timelines as SVG](%s)\n", la, lb, CompareTimelinesPNGFile, CompareTimelinesFile)
	} else {
		d.p("\nTimelines aligned at the first fault start: run with `--out DIR` to write %s and %s beside compare.md.\n", CompareTimelinesPNGFile, CompareTimelinesFile)
	}
	d.p("\n---\n\nBlack-box figures, measured from outside the gateway; [how to read them](<%s>), [how runs are compared](<%s>).\n",
		render.MdURL(analysis.DocsURL(c.Version, "analysis.md")), render.MdURL(analysis.DocsURL(c.Version, "cross-platform.md")))
	return d.b.Bytes()
}

// cmpDoc is compare.md being written, section by section.
type cmpDoc struct {
	b      bytes.Buffer
	c      *Comparison
	la, lb string // the labels, escaped
}

func (d *cmpDoc) p(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

// head writes the title, the headline, how figures are compared, the
// drill, the warnings and the configuration differences.
func (d *cmpDoc) head() {
	c, la, lb := d.c, d.la, d.lb
	d.p("# Comparison — %s (%d %s) vs %s (%d %s)\n\n", la, len(c.Runs[0]), num.Pick(len(c.Runs[0]), "run", "runs"), lb, len(c.Runs[1]), num.Pick(len(c.Runs[1]), "run", "runs"))
	d.p("**%s.**\n\n", c.Headline())
	d.p("%s\n\n", c.method(lb, la, true))
	if c.Digest != "" {
		d.p("Drill: digest `%s`, the same on every run.\n\n", ShortDigest(c.Digest))
	}
	if len(c.Warnings) > 0 {
		d.p("## Warnings\n\n")
		for _, w := range c.Warnings {
			d.p("- %s\n", render.MdEscape(w))
		}
		d.p("\n")
	}
	d.p("## Configuration differences\n\n")
	if len(c.Config) == 0 {
		d.p("None: every run has the same scenario configuration and harness version.\n\n")
	} else {
		d.p("| setting | %s | %s |\n|---|---|---|\n", la, lb)
		for _, f := range c.Config {
			d.p("| `%s` | %s | %s |\n", f.Key, render.MdEscape(joinVals(f.A)), render.MdEscape(joinVals(f.B)))
		}
		d.p("\n")
	}
}

// figures writes the figures' table, grouped.
func (d *cmpDoc) figures() {
	c, la, lb := d.c, d.la, d.lb
	d.p("## Figures\n\n| figure | n %s | median %s (p10 – p90) | n %s | median %s (p10 – p90) | difference [%s %% CI] | |\n|---|---|---|---|---|---|---|\n", la, la, lb, lb, pct(c.FigureLevel))
	group := ""
	for _, r := range c.Rows {
		if r.Group != group {
			group = r.Group
			d.p("| **%s** | | | | | | |\n", render.MdEscape(group))
		}
		na, ma, nb, mb := r.cells()
		d.p("| %s | %s | %s | %s | %s | %s | %s |\n", render.MdEscape(r.Label), na, render.MdEscape(ma), nb, render.MdEscape(mb), r.diffCell(c.Level), r.verdictCell())
	}
}

// judged writes the expectations met on each side and why figures might
// differ.
func (d *cmpDoc) judged() {
	c, la, lb := d.c, d.la, d.lb
	if len(c.Expectations) > 0 {
		d.p("\n## Expectations\n\n| expectation | %s met | %s met | |\n|---|---|---|---|\n", la, lb)
		for _, e := range c.Expectations {
			f := ""
			if e.Flag {
				f = "⚑"
			}
			d.p("| %s (want %s) | %d of %d | %d of %d | %s |\n", render.MdEscape(e.Name), render.MdEscape(e.Want), e.A[0], e.A[1], e.B[0], e.B[1], f)
		}
	}
	if len(c.Why) > 0 {
		d.p("\n## Why might these differ\n\n")
		for _, w := range c.Why {
			d.p("- **%s**\n", render.MdEscape(w.Figure))
			for _, r := range w.Reasons {
				d.p("  - %s\n", render.MdEscape(r))
			}
		}
	}
}

// platforms writes the platform figures and facts.
func (d *cmpDoc) platforms() {
	c, la, lb := d.c, d.la, d.lb
	d.p("\n## Platforms\n\n| fact | %s | %s |\n|---|---|---|\n", la, lb)
	for _, r := range c.Platform {
		_, ma, sa := sideCells(r.A, r.Unit)
		_, mb, sb := sideCells(r.B, r.Unit)
		if sa != "" {
			ma += " (" + sa + ")"
		}
		if sb != "" {
			mb += " (" + sb + ")"
		}
		d.p("| %s | %s | %s |\n", render.MdEscape(r.Label), ma, mb)
	}
	for _, f := range c.Facts {
		d.p("| %s | %s | %s |\n", render.MdEscape(f.Key), render.MdEscape(joinVals(f.A)), render.MdEscape(joinVals(f.B)))
	}
}

// compareTimelines draws the first run of each side, one above the other
// in one picture, both aligned at their first fault start (t = 0) over
// the same window: one drawing, so that the SVG and the PNG are the same
// picture.
func compareTimelines(c *Comparison) *canvas.Drawing {
	const width, gap = 1200, 10
	a, b := c.sides[0][0].A, c.sides[1][0].A
	oa, ob := firstFault(a), firstFault(b)
	pre := max(oa, ob)
	post := max(a.Run.DurationS-oa, b.Run.DurationS-ob)
	d := canvas.New(width, 0)
	for i, x := range []*analysis.Analysis{a, b} {
		o := []float64{oa, ob}[i]
		part := render.TimelineDrawing(x, render.SVGOptions{Width: width, From: o - pre, To: o + post, Origin: o,
			Title: fmt.Sprintf("%s — %s (t = 0 at the first fault)", c.Labels[i], x.Run.RunID)})
		if i > 0 {
			d.H += gap
		}
		d.Place(part, 0, d.H)
		d.H += part.H
	}
	return d
}

// CompareTimelinesSVG is the comparison's timelines as SVG.
func CompareTimelinesSVG(c *Comparison) []byte { return compareTimelines(c).SVG("timeline") }

// CompareTimelinesPNG is the same picture as CompareTimelinesSVG as a PNG
// at PNGScale, for documents that do not take SVG.
func CompareTimelinesPNG(c *Comparison) ([]byte, error) {
	return compareTimelines(c).PNG(render.PNGScale)
}

func firstFault(a *analysis.Analysis) float64 {
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

var compareTmpl = template.Must(template.New("compare").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Comparison — {{index .C.Labels 0}} vs {{index .C.Labels 1}}</title><style>{{.CSS}}</style></head><body>
<h1>Comparison — {{index .C.Labels 0}} ({{len (index .C.Runs 0)}} runs) vs {{index .C.Labels 1}} ({{len (index .C.Runs 1)}} runs)</h1>
<div class="verdict {{if .C.Flagged}}fail{{else}}pass{{end}}">{{.C.Headline}}.</div>
<p>{{.Method}}{{if .C.Digest}} Drill digest <code>{{.Digest}}</code> on every run.{{end}}</p>
{{range .C.Warnings}}<div class="note">{{.}}</div>{{end}}
<h2>Timelines, aligned at the first fault start</h2>
<div class="timeline-wrap">{{.SVG}}</div>
<h2>Configuration differences</h2>
{{if .C.Config}}<table><tr><th>setting</th><th>{{index .C.Labels 0}}</th><th>{{index .C.Labels 1}}</th></tr>
{{range .C.Config}}<tr><td><code>{{.Key}}</code></td><td>{{range $i, $v := .A}}{{if $i}}, {{end}}{{$v}}{{end}}</td><td>{{range $i, $v := .B}}{{if $i}}, {{end}}{{$v}}{{end}}</td></tr>
{{end}}</table>{{else}}<p>None: every run has the same scenario configuration and harness version.</p>{{end}}
<h2>Figures</h2>
<table><tr><th>figure</th><th>n</th><th>{{index .C.Labels 0}} median (p10 – p90)</th><th>n</th><th>{{index .C.Labels 1}} median (p10 – p90)</th><th>difference [CI]</th><th></th></tr>
{{range .Rows}}{{if .Group}}<tr><th colspan="7">{{.Group}}</th></tr>{{end}}<tr><td>{{.Label}}</td><td class="num">{{.NA}}</td><td class="num">{{.MA}}</td><td class="num">{{.NB}}</td><td class="num">{{.MB}}</td><td class="num">{{.Diff}}</td><td{{if .Flag}} class="delta-flag"{{end}}>{{.Verdict}}</td></tr>
{{end}}</table>
{{if .C.Expectations}}<h2>Expectations</h2>
<table><tr><th>expectation</th><th>{{index .C.Labels 0}} met</th><th>{{index .C.Labels 1}} met</th><th></th></tr>
{{range .C.Expectations}}<tr><td>{{.Name}} (want {{.Want}})</td><td class="num">{{index .A 0}} of {{index .A 1}}</td><td class="num">{{index .B 0}} of {{index .B 1}}</td><td class="delta-flag">{{if .Flag}}⚑{{end}}</td></tr>
{{end}}</table>{{end}}
{{if .C.Why}}<h2>Why might these differ</h2><ul>
{{range .C.Why}}<li><b>{{.Figure}}</b><ul>{{range .Reasons}}<li>{{.}}</li>{{end}}</ul></li>
{{end}}</ul>{{end}}
<h2>Platforms</h2>
<table><tr><th>fact</th><th>{{index .C.Labels 0}}</th><th>{{index .C.Labels 1}}</th></tr>
{{range .Platform}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td></tr>
{{end}}</table>
<footer>Black-box figures, measured from outside the gateway; <a href="{{.Docs}}">how to read them</a>, <a href="{{.Stats}}">how runs are compared</a>.</footer>
</body></html>
`))

// CompareHTML renders the comparison as one self-contained HTML file with
// the timelines aligned at the first fault start.
func CompareHTML(c *Comparison) ([]byte, error) {
	type row struct {
		Group, Label, NA, MA, NB, MB, Diff, Verdict string
		Flag                                        bool
	}
	var rows []row
	group := ""
	for _, r := range c.Rows {
		x := row{Label: r.Label, Diff: r.diffCell(c.Level), Verdict: r.verdictCell(), Flag: r.Flag}
		if r.Group != group {
			group, x.Group = r.Group, r.Group
		}
		x.NA, x.MA, x.NB, x.MB = r.cells()
		rows = append(rows, x)
	}
	var plat [][3]string
	for _, r := range c.Platform {
		_, ma, _ := sideCells(r.A, r.Unit)
		_, mb, _ := sideCells(r.B, r.Unit)
		plat = append(plat, [3]string{r.Label, ma, mb})
	}
	for _, f := range c.Facts {
		plat = append(plat, [3]string{f.Key, joinVals(f.A), joinVals(f.B)})
	}
	var b bytes.Buffer
	err := compareTmpl.Execute(&b, struct {
		C        *Comparison
		CSS      template.CSS
		SVG      template.HTML
		Rows     []row
		Platform [][3]string
		Level    string
		Method   string
		Digest   string
		Docs     string
		Stats    string
	}{c, template.CSS(render.ReportCSS), template.HTML(CompareTimelinesSVG(c)), rows, plat, fmt.Sprintf("%.0f", c.Level*100), c.method(c.Labels[1], c.Labels[0], false), ShortDigest(c.Digest),
		analysis.DocsURL(c.Version, "analysis.md"), analysis.DocsURL(c.Version, "cross-platform.md")})
	return printable.Bytes(b.Bytes()), err // as in HTML
}
