package reports

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"

	"github.com/halfopen/rehearse/internal/printable"
)

// mdEscape makes text from the journal inert in Markdown while leaving
// ordinary text alone: a backslash escape is written only before a
// character that would otherwise start markup at that place (an HTML tag
// or autolink, emphasis, a link, a code span, an entity, a table cell
// break, a heading or quote at the start of a line). Renderers that do not
// implement CommonMark's escapes (Confluence's, plain viewers) then show
// "<=", "fast_fail" and "p99" as written, and a hostile name still cannot
// inject markup (TestMarkdownCommonMark). Newlines become spaces; other
// control characters show as their control pictures (printable.String).
func mdEscape(s string) string {
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

// mdLine is mdEscape for text that begins a line of its own (a paragraph,
// a list item's text), where a leading "#", ">", "-", "+", "=" or "1." would
// start a block: only such a first character is escaped.
func mdLine(s string) string {
	// Leading spaces would make an indented code block (four or more)
	// and never show in a paragraph: drop them.
	t := strings.TrimLeft(mdEscape(s), " ")
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
func Markdown(a *Analysis) ([]byte, error) {
	v := buildView(a)
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# %s\n\n", mdEscape(v.Title))
	for _, para := range paragraphs(v.Description) {
		p("%s\n\n", mdLine(para))
	}
	// A pass with episodes no expectation judged is not all clear.
	mark := "✅"
	switch {
	case !v.Passed:
		mark = "❌"
	case len(v.NotCovered) > 0:
		mark = "⚠️"
	}
	p("%s **%s**\n\n", mark, mdEscape(v.Verdict))
	for _, n := range v.Notes {
		p("> ⚠ %s\n", mdEscape(n))
	}
	if len(v.Notes) > 0 {
		p("\n")
	}
	p("| | |\n|---|---|\n")
	for _, r := range v.Meta {
		p("| %s | %s |\n", r.K, mdEscape(orDash(r.V)))
	}
	p("\n![Timeline](%s)\n\n[Timeline as SVG](%s)\n\n", TimelinePNGFile, TimelineFile)
	if len(v.Coverage) > 0 {
		p("## Episodes\n\n| episode | window | what happened | judged by an expectation |\n|---|---|---|---|\n")
		for _, c := range v.Coverage {
			cov := c.Covered
			if !c.IsCovered {
				cov = "**no**"
			}
			p("| %s | %s | %s | %s |\n", mdEscape(c.Episode), mdEscape(c.Window), mdEscape(c.Summary), cov)
		}
		p("\n")
	}
	p("## What was injected\n\n")
	if len(v.Injected) == 0 {
		p("No fault was injected.\n\n")
	} else {
		p("| fault | upstream | window | type | parameters | targeting | health checks faulted | requests faulted |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range v.Injected {
			p("| %s |\n", strings.Join(mdCells(r), " | "))
		}
		p("\n")
	}
	if len(v.Gateway) > 0 {
		p("## Built-in gateway settings\n\nThe gateway under test was rehearse's built-in gateway, with these settings (defaults applied):\n\n| setting | value |\n|---|---|\n")
		for _, r := range v.Gateway {
			p("| %s | %s |\n", mdEscape(r.K), mdEscape(r.V))
		}
		p("\n")
	}
	if len(v.Exp) > 0 {
		p("## Expectations\n\n| | expectation | observed | want | detail |\n|---|---|---|---|---|\n")
		for _, r := range v.Exp {
			m := "pass"
			switch {
			case v.Harness != "":
				m = "not evaluated"
			case r.Outcome == NotObservable:
				m = "**FAIL: not observable**"
			case !r.Passed:
				m = "**FAIL**"
			}
			p("| %s | `%s` | %s | %s | %s |\n", m, r.Name, mdEscape(r.Observed), mdEscape(r.Want), mdEscape(r.Message))
		}
		p("\n")
	}
	p("## Breakers\n\n")
	if len(v.Episodes) == 0 {
		p("No fault episodes in this run.\n\n")
	}
	for _, e := range v.Episodes {
		p("### %s\n\n%s\n\n| figure | value |\n|---|---|\n", mdEscape(e.Title), mdLine(e.Statement))
		for _, r := range e.Rows {
			p("| %s | %s |\n", r.K, mdEscape(r.V))
		}
		p("\n")
		for _, r := range e.RetryAfter {
			p("- %s\n", mdLine(r))
		}
		if len(e.RetryAfter) > 0 {
			p("\n")
		}
	}
	if v.AttemptsDef != "" {
		p("## Retries, deadlines and cost\n\n")
		if len(v.Retries) == 0 {
			p("No retry, orphaned call or cost change to report.\n\n")
		}
		for _, st := range v.Retries {
			p("- %s\n", mdLine(st))
		}
		p("\n_%s._\n\n", mdEscape(v.AttemptsDef))
	}
	p("## Upstreams\n\n| upstream | attribution | client requests | calls | failed | amplification | health checks | opens outside faults | longest health/breaker disagreement |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range v.Upstreams {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = mdEscape(c)
		}
		p("| %s |\n", strings.Join(cells, " | "))
	}
	p("\n")
	if len(v.Disagree) > 0 {
		p("Health/breaker disagreements:\n\n")
		for _, d := range v.Disagree {
			p("- %s\n", mdLine(d))
		}
		p("\n")
	}
	p("## Clients per phase\n\n| phase | span | requests | ok | fast-fail | 5xx | other | p50 | p99 | max | amplification |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, ph := range v.Phases {
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", ph.Name, ph.Span, ph.Requests, ph.OK, ph.FastFail, ph.Errors,
			mdEscape(ph.Other), ph.P50, ph.P99, ph.Max, ph.Amp)
	}
	p("\nLatency is from the intended send time (immune to coordinated omission).\n\n")
	p("## Replay accuracy\n\n| | |\n|---|---|\n")
	for _, r := range v.Replay {
		p("| %s | %s |\n", r.K, mdEscape(r.V))
	}
	p("\n## Platform\n\n| | |\n|---|---|\n")
	for _, r := range v.Platform {
		p("| %s | %s |\n", mdEscape(r.K), mdEscape(orDash(r.V)))
	}
	if len(v.MetricsTrs) > 0 {
		p("\n## Transitions reported by the gateway's metrics\n\n")
		for i, m := range v.MetricsTrs {
			if i == 50 {
				p("- … %d more in run.json\n", len(v.MetricsTrs)-50)
				break
			}
			p("- %s\n", mdLine(m))
		}
	}
	if len(v.Links) > 1 {
		p("\n## Links\n\n")
		for _, l := range v.Links[1:] {
			p("- [%s](<%s>)\n", mdEscape(l.Label), mdURL(l.URL))
		}
	}
	docs := DocsURL(a.Run.Version, "analysis.md")
	p("\n---\n\nBlack-box figures, measured from outside the gateway; [how to read them](<%s>). Rebuild with `rehearse report render DIR`.\n", mdURL(docs))
	return b.Bytes(), nil
}

// mdCells escapes a table row's cells.
func mdCells(r []string) []string {
	out := make([]string, len(r))
	for i, c := range r {
		out[i] = mdEscape(c)
	}
	return out
}

// mdURL makes a URL safe inside a CommonMark "<...>" link destination,
// which ends at ">" and may not hold a line break or "<".
func mdURL(u string) string {
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
