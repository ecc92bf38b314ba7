package render

import (
	"bytes"
	_ "embed"
	"html/template"

	"github.com/halfopen/rehearse/internal/printable"
	"github.com/halfopen/rehearse/reports/analysis"
)

//go:embed assets/report.css
var ReportCSS string

var reportTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.V.Title}}</title>
<style>{{.CSS}}</style></head>
<body>
<h1>{{.V.Title}}</h1>
{{range .Desc}}<p class="description">{{.}}</p>{{end}}
<div class="verdict {{if and .V.Interrupted (not .V.Harness)}}warn{{else if not .V.Passed}}fail{{else if .V.NotCovered}}warn{{else}}pass{{end}}">{{.V.Verdict}}</div>
{{range .V.Notes}}<div class="note">{{.}}</div>{{end}}
<div class="meta">{{range .V.Meta}}<div><span>{{.K}}</span>{{if .V}}{{.V}}{{else}}—{{end}}</div>{{end}}</div>
<h2>Timeline</h2>
<div class="timeline-wrap" id="timeline">{{.SVG}}</div>
{{if .V.Coverage}}<h2>Episodes</h2>
<table><tr><th>episode</th><th>window</th><th>what happened</th><th>judged by an expectation</th></tr>
{{range .V.Coverage}}<tr><td>{{.Episode}}</td><td>{{.Window}}</td><td>{{.Summary}}</td><td class="{{if .IsCovered}}pass-cell{{else}}fail-cell{{end}}">{{.Covered}}</td></tr>
{{end}}</table>{{end}}
<h2>What was injected</h2>
{{if .V.Injected}}<table><tr><th>fault</th><th>upstream</th><th>window</th><th>type</th><th>parameters</th><th>targeting</th><th>health checks faulted</th><th>requests faulted</th></tr>
{{range .V.Injected}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{else}}<p>No fault was injected.</p>{{end}}
{{if .V.Gateway}}<h2>Built-in gateway settings</h2><p>The gateway under test was rehearse's built-in gateway, with these settings (defaults applied):</p>
<table>{{range .V.Gateway}}<tr><td>{{.K}}</td><td>{{.V}}</td></tr>{{end}}</table>{{end}}
{{if .V.Exp}}<h2>Expectations</h2>
<table><tr><th></th><th>expectation</th><th>observed</th><th>want</th><th>detail</th></tr>
{{range .V.Exp}}<tr><td class="{{if $.V.Unjudged}}{{else if .Passed}}pass-cell{{else}}fail-cell{{end}}">{{if $.V.Unjudged}}not evaluated{{else if .Passed}}pass{{else if eq .Outcome "not_observable"}}FAIL: not observable{{else}}FAIL{{end}}</td><td><code>{{.Name}}</code></td><td>{{.Observed}}</td><td>{{.Want}}</td><td>{{.Message}}</td></tr>
{{end}}</table>{{end}}
<h2>Breakers</h2>
{{if not .V.Episodes}}<p>No fault episodes in this run.</p>{{end}}
<div class="episodes">{{range .V.Episodes}}<div class="episode"><h3>{{.Title}}</h3><p>{{.Statement}}</p>
<table>{{range .Rows}}<tr><td>{{.K}}</td><td{{if .Why}} title="{{.Why}}"{{end}}>{{.V}}{{if .Note}}<sup class="why">{{.Note}}</sup>{{end}}</td></tr>{{end}}</table>
{{if .Why}}<ol class="why">{{range .Why}}<li value="{{.Note}}">why {{.K}}: {{.Why}}</li>{{end}}</ol>{{end}}
{{if .RetryAfter}}<ul class="ra">{{range .RetryAfter}}<li>{{.}}</li>{{end}}</ul>{{end}}</div>
{{end}}</div>
{{if .V.AttemptsDef}}<h2>Retries, deadlines and cost</h2>
{{if .V.Retries}}<ul class="retries">{{range .V.Retries}}<li>{{.}}</li>{{end}}</ul>{{else}}<p>No retry, orphaned call or cost change to report.</p>{{end}}
<p class="note-small">{{.V.AttemptsDef}}.</p>{{end}}
<h2>Upstreams</h2>
<table><tr><th>upstream</th><th>attribution</th><th>client requests</th><th>calls</th><th>failed</th><th>amplification</th><th>health checks</th><th>opens outside faults</th><th>longest health/breaker disagreement</th></tr>
{{range .V.Upstreams}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{if .V.Disagree}}<ul>{{range .V.Disagree}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>Clients per phase</h2>
<table><tr><th>phase</th><th>span</th><th>requests</th><th>ok</th><th>fast-fail</th><th>5xx</th><th>other</th><th>p50</th><th>p99</th><th>max</th><th>amplification</th></tr>
{{range .V.Phases}}<tr><td>{{.Name}}</td><td>{{.Span}}</td><td class="num">{{.Requests}}</td><td class="num">{{.OK}}</td><td class="num">{{.FastFail}}</td><td class="num">{{.Errors}}</td><td>{{.Other}}</td><td class="num">{{.P50}}</td><td class="num">{{.P99}}</td><td class="num">{{.Max}}</td><td class="num">{{.Amp}}</td></tr>
{{end}}</table>
<p>Latency is measured from the intended send time (immune to coordinated omission).</p>
<div class="side"><div><h2>Replay accuracy</h2><table>{{range .V.Replay}}<tr><td>{{.K}}</td><td>{{.V}}</td></tr>{{end}}</table></div>
<div><h2>Platform</h2><table>{{range .V.Platform}}<tr><td>{{.K}}</td><td>{{if .V}}{{.V}}{{else}}—{{end}}</td></tr>{{end}}</table></div></div>
{{if .V.MetricsTrs}}<h2>Transitions reported by the gateway's metrics</h2><ul>{{range .V.MetricsTrs}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if gt (len .V.Links) 1}}<h2>Links</h2><ul>{{range slice .V.Links 1}}<li><a href="{{.URL}}">{{.Label}}</a></li>{{end}}</ul>{{end}}
<footer>Black-box figures, measured from outside the gateway; <a href="{{.Docs}}">how to read them</a>. Rebuild with <code>rehearse report render DIR</code>.</footer>
</body></html>
`))

// HTML renders report.html: one self-contained file (CSS embedded, the
// timeline inline as SVG, no network), readable on a laptop and printable.
// html/template escapes everything that came from the journal; the SVG is
// built by TimelineSVG, which escapes its own text.
func HTML(a *analysis.Analysis) ([]byte, error) {
	v := buildView(a)
	if len(v.MetricsTrs) > 100 {
		v.MetricsTrs = v.MetricsTrs[:100]
	}
	var b bytes.Buffer
	err := reportTmpl.Execute(&b, struct {
		V    *reportView
		CSS  template.CSS
		SVG  template.HTML
		Desc []string
		Docs string
	}{v, template.CSS(ReportCSS), template.HTML(TimelineSVG(a, SVGOptions{})), paragraphs(v.Description), analysis.DocsURL(a.Run.Version, "analysis.md")})
	// html/template leaves control characters as they are; no template
	// writes one, so any in the page came from the journal.
	return printable.Bytes(b.Bytes()), err
}
