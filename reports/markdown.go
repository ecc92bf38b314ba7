package reports

import (
	"bytes"
	"fmt"
	"strings"
)

// mdEscape makes text from the journal inert in Markdown: table pipes,
// emphasis, links, HTML and code spans are escaped; newlines become spaces.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '#', '!', '{', '}':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n', '\r':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
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
	mark := "✅"
	if !v.Passed {
		mark = "❌"
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
	if len(v.Exp) > 0 {
		p("## Expectations\n\n| | expectation | observed | want | detail |\n|---|---|---|---|---|\n")
		for _, r := range v.Exp {
			m := "pass"
			switch {
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
		p("### %s\n\n%s\n\n| figure | value |\n|---|---|\n", mdEscape(e.Title), mdEscape(e.Statement))
		for _, r := range e.Rows {
			p("| %s | %s |\n", r.K, mdEscape(r.V))
		}
		p("\n")
		for _, r := range e.RetryAfter {
			p("- %s\n", mdEscape(r))
		}
		if len(e.RetryAfter) > 0 {
			p("\n")
		}
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
			p("- %s\n", mdEscape(d))
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
			p("- %s\n", mdEscape(m))
		}
	}
	p("\n---\nBlack-box figures; definitions in docs/analysis.md. Rebuild with `rehearse report render DIR`.\n")
	return b.Bytes(), nil
}
