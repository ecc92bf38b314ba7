package render

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"

	"github.com/halfopen/rehearse/internal/printable"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
	"github.com/halfopen/rehearse/reports/num"
)

// MdEscape makes text from the journal inert in Markdown while leaving
// ordinary text alone: a backslash escape is written only before a
// character that would otherwise start markup at that place (an HTML tag
// or autolink, emphasis, a link, a code span, an entity, a table cell
// break, a heading or quote at the start of a line). Renderers that do not
// implement CommonMark's escapes (Confluence's, plain viewers) then show
// "<=", "fast_fail" and "p99" as written, and a hostile name still cannot
// inject markup (TestMarkdownCommonMark). Newlines become spaces; other
// control characters show as their control pictures (printable.String).
func MdEscape(s string) string {
	// Control characters (an ESC in a fault name) become visible: a
	// terminal showing report.md would obey them.
	r := []rune(printable.String(s))
	var b strings.Builder
	b.Grow(len(s))
	alnum := func(i int) bool {
		return i >= 0 && i < len(r) && (unicode.IsLetter(r[i]) || unicode.IsDigit(r[i]))
	}
	at := func(i int) rune {
		if i < 0 || i >= len(r) {
			return 0
		}
		return r[i]
	}
	for i, c := range r {
		esc := false
		switch c {
		case '\\':
			// Only a backslash before ASCII punctuation is an escape.
			n := at(i + 1)
			esc = n < 0x80 && (unicode.IsPunct(n) || unicode.IsSymbol(n))
		case '<':
			// An HTML tag, comment, declaration or autolink starts "<"
			// followed by a letter, "/", "!" or "?".
			n := at(i + 1)
			esc = unicode.IsLetter(n) || n == '/' || n == '!' || n == '?'
		case '*', '~':
			// A delimiter with white space (or nothing) on both sides
			// can neither open nor close emphasis or strikethrough.
			esc = !(unicode.IsSpace(at(i-1)) || i == 0) || !(unicode.IsSpace(at(i+1)) || i == len(r)-1)
		case '_':
			// Intraword underscores never make emphasis.
			esc = !(alnum(i-1) && alnum(i+1))
		case '[', ']', '`', '|':
			esc = true
		case '!':
			esc = at(i+1) == '['
		case '&':
			// Only "&name;" or "&#...;" is an entity reference.
			j := i + 1
			for j < len(r) && (unicode.IsLetter(r[j]) || unicode.IsDigit(r[j]) || r[j] == '#') {
				j++
			}
			esc = j > i+1 && at(j) == ';'
		case '\n', '\r':
			b.WriteByte(' ')
			continue
		}
		if esc {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// MdLine is mdEscape for text that begins a line of its own (a paragraph,
// a list item's text), where a leading "#", ">", "-", "+", "=" or "1." would
// start a block: only such a first character is escaped.
func MdLine(s string) string {
	// Leading spaces would make an indented code block (four or more)
	// and never show in a paragraph: drop them.
	t := strings.TrimLeft(MdEscape(s), " ")
	e, lead := t, ""
	if t == "" {
		return e
	}
	switch t[0] {
	case '#', '>', '-', '+', '=', '*':
		return lead + "\\" + t
	}
	if i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && (t[i] == '.' || t[i] == ')') {
		return lead + t[:i] + "\\" + t[i:]
	}
	return e
}

// Markdown renders report.md, for postmortem templates: the verdict, the
// expectation results, the figures of every episode, client outcomes per
// phase, replay accuracy and platform facts, and the timeline as
// timeline.svg beside it.
func Markdown(a *analysis.Analysis) ([]byte, error) {
	d := &mdDoc{v: buildView(a)}
	d.head()
	d.setup()
	d.judged()
	d.upstreams()
	d.replay()
	docs := analysis.DocsURL(a.Run.Version, "analysis.md")
	d.p("\n---\n\nBlack-box figures, measured from outside the gateway; [how to read them](<%s>). Rebuild with `rehearse report render DIR`.\n", MdURL(docs))
	return d.b.Bytes(), nil
}

// mdDoc is report.md being written, section by section, from the view.
type mdDoc struct {
	b bytes.Buffer
	v *reportView
}

func (d *mdDoc) p(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

// head writes the title, the description, the verdict with its notes,
// the run's facts and the timeline.
func (d *mdDoc) head() {
	v := d.v
	d.p("# %s\n\n", MdEscape(v.Title))
	for _, para := range paragraphs(v.Description) {
		d.p("%s\n\n", MdLine(para))
	}
	// A pass with episodes no expectation judged is not all clear.
	mark := "✅"
	switch {
	case v.Interrupted != "" && v.Harness == "":
		mark = "⏹️"
	case !v.Passed:
		mark = "❌"
	case len(v.NotCovered) > 0:
		mark = "⚠️"
	}
	d.p("%s **%s**\n\n", mark, MdEscape(v.Verdict))
	for _, n := range v.Notes {
		d.p("> ⚠ %s\n", MdEscape(n))
	}
	if len(v.Notes) > 0 {
		d.p("\n")
	}
	d.p("| | |\n|---|---|\n")
	for _, r := range v.Meta {
		d.p("| %s | %s |\n", r.K, MdEscape(num.OrDash(r.V)))
	}
	d.p("\n![Timeline](%s)\n\n[Timeline as SVG](%s)\n\n", TimelinePNGFile, TimelineFile)
}

// setup writes the episodes and what judged them, what was injected and
// the built-in gateway's settings.
func (d *mdDoc) setup() {
	v := d.v
	if len(v.Coverage) > 0 {
		d.p("## Episodes\n\n| episode | window | what happened | judged by an expectation |\n|---|---|---|---|\n")
		for _, c := range v.Coverage {
			cov := c.Covered
			if !c.IsCovered {
				cov = "**no**"
			}
			d.p("| %s | %s | %s | %s |\n", MdEscape(c.Episode), MdEscape(c.Window), MdEscape(c.Summary), cov)
		}
		d.p("\n")
	}
	d.p("## What was injected\n\n")
	if len(v.Injected) == 0 {
		d.p("No fault was injected.\n\n")
	} else {
		d.p("| fault | upstream | window | type | parameters | targeting | health checks faulted | requests faulted |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range v.Injected {
			d.p("| %s |\n", strings.Join(mdCells(r), " | "))
		}
		d.p("\n")
	}
	if len(v.Gateway) > 0 {
		d.p("## Built-in gateway settings\n\nThe gateway under test was rehearse's built-in gateway, with these settings (defaults applied):\n\n| setting | value |\n|---|---|\n")
		for _, r := range v.Gateway {
			d.p("| %s | %s |\n", MdEscape(r.K), MdEscape(r.V))
		}
		d.p("\n")
	}
}

// judged writes the expectations and the breakers' episodes with their figures.
func (d *mdDoc) judged() {
	v := d.v
	if len(v.Exp) > 0 {
		d.p("## Expectations\n\n| | expectation | observed | want | detail |\n|---|---|---|---|---|\n")
		for _, r := range v.Exp {
			m := "pass"
			switch {
			case v.Unjudged != "":
				m = "not evaluated"
			case r.Outcome == expect.NotObservable:
				m = "**FAIL: not observable**"
			case !r.Passed:
				m = "**FAIL**"
			}
			d.p("| %s | `%s` | %s | %s | %s |\n", m, r.Name, MdEscape(r.Observed), MdEscape(r.Want), MdEscape(r.Message))
		}
		d.p("\n")
	}
	d.p("## Breakers\n\n")
	if len(v.Episodes) == 0 {
		d.p("No fault episodes in this run.\n\n")
	}
	for _, e := range v.Episodes {
		d.p("### %s\n\n%s\n\n| figure | value |\n|---|---|\n", MdEscape(e.Title), MdLine(e.Statement))
		for _, r := range e.Rows {
			note := ""
			if r.Note != "" {
				note = " [" + r.Note + "]"
			}
			d.p("| %s | %s%s |\n", r.K, MdEscape(r.V), note)
		}
		d.p("\n")
		for _, r := range e.Why {
			d.p("- [%s] why %s: %s\n", r.Note, r.K, MdEscape(r.Why))
		}
		if len(e.Why) > 0 {
			d.p("\n")
		}
		for _, r := range e.RetryAfter {
			d.p("- %s\n", MdLine(r))
		}
		if len(e.RetryAfter) > 0 {
			d.p("\n")
		}
	}
	if v.AttemptsDef != "" {
		d.p("## Retries, deadlines and cost\n\n")
		if len(v.Retries) == 0 {
			d.p("No retry, orphaned call or cost change to report.\n\n")
		}
		for _, st := range v.Retries {
			d.p("- %s\n", MdLine(st))
		}
		d.p("\n_%s._\n\n", MdEscape(v.AttemptsDef))
	}
}

// upstreams writes the upstreams and their health/breaker disagreements.
func (d *mdDoc) upstreams() {
	v := d.v
	d.p("## Upstreams\n\n| upstream | attribution | client requests | calls | failed | amplification | health checks | opens outside faults | longest health/breaker disagreement |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range v.Upstreams {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = MdEscape(c)
		}
		d.p("| %s |\n", strings.Join(cells, " | "))
	}
	d.p("\n")
	if len(v.Disagree) > 0 {
		d.p("Health/breaker disagreements:\n\n")
		for _, dis := range v.Disagree {
			d.p("- %s\n", MdLine(dis))
		}
		d.p("\n")
	}
}

// replay writes the clients per phase, the replay's accuracy, the
// platform, the metrics' transitions and the links.
func (d *mdDoc) replay() {
	v := d.v
	d.p("## Clients per phase\n\n| phase | span | requests | ok | fast-fail | 5xx | other | p50 | p99 | max | amplification |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, ph := range v.Phases {
		d.p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", ph.Name, ph.Span, ph.Requests, ph.OK, ph.FastFail, ph.Errors,
			MdEscape(ph.Other), ph.P50, ph.P99, ph.Max, ph.Amp)
	}
	d.p("\nLatency is from the intended send time (immune to coordinated omission).\n\n")
	d.p("## Replay accuracy\n\n| | |\n|---|---|\n")
	for _, r := range v.Replay {
		d.p("| %s | %s |\n", r.K, MdEscape(r.V))
	}
	d.p("\n## Platform\n\n| | |\n|---|---|\n")
	for _, r := range v.Platform {
		d.p("| %s | %s |\n", MdEscape(r.K), MdEscape(num.OrDash(r.V)))
	}
	if len(v.MetricsTrs) > 0 {
		d.p("\n## Transitions reported by the gateway's metrics\n\n")
		for i, m := range v.MetricsTrs {
			if i == 50 {
				d.p("- … %d more in run.json\n", len(v.MetricsTrs)-50)
				break
			}
			d.p("- %s\n", MdLine(m))
		}
	}
	if len(v.Links) > 1 {
		d.p("\n## Links\n\n")
		for _, l := range v.Links[1:] {
			d.p("- [%s](<%s>)\n", MdEscape(l.Label), MdURL(l.URL))
		}
	}
}

// mdCells escapes a table row's cells.
func mdCells(r []string) []string {
	out := make([]string, len(r))
	for i, c := range r {
		out[i] = MdEscape(c)
	}
	return out
}

// MdURL makes a URL safe inside a CommonMark "<...>" link destination,
// which ends at ">" and may not hold a line break or "<".
func MdURL(u string) string {
	return strings.NewReplacer("<", "%3C", ">", "%3E", " ", "%20", "\n", "", "\r", "").Replace(u)
}

// paragraphs splits a description at blank lines, joining each
// paragraph's lines.
func paragraphs(s string) []string {
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(strings.Join(strings.Fields(p), " ")); p != "" {
			out = append(out, p)
		}
	}
	return out
}
