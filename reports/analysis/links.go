package analysis

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Link is a link the report shows.
type Link struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

// DocsBase is where the project's documentation is published, from the
// module path; DocsURL ties it to the harness version that wrote the run.
const DocsBase = "https://github.com/halfopen/rehearse/blob/"

var (
	releaseRE = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)
	// A pseudo-version or `git describe` output ends in a commit hash.
	commitRE = regexp.MustCompile(`(?:^|[-.g])([0-9a-f]{12,40})(?:-dirty)?$`)
)

// DocsURL links a file under docs/ for the version that wrote the run: a
// release tag, else the commit a pseudo-version or describe string names,
// else main (a development build).
func DocsURL(version, file string) string {
	ref := "main"
	v := strings.TrimSuffix(strings.TrimSpace(version), "+dirty")
	switch {
	case releaseRE.MatchString(v) && !commitRE.MatchString(v):
		ref = v
	case commitRE.MatchString(v):
		ref = commitRE.FindStringSubmatch(v)[1]
	}
	return DocsBase + ref + "/docs/" + file
}

// window is the span a dashboard link covers: the run, with a minute of
// context either side so that the baseline and the recovery show.
func (c WallClock) window(durationS float64) (from, to time.Time) {
	return c.at(0).Add(-time.Minute), c.at(durationS).Add(time.Minute)
}

// reportLinks builds the run's links: the docs, and the scenario's
// dashboards for the run's window.
func reportLinks(a *Analysis, rec *scenarioRecord, series []string) []Link {
	links := []Link{{Label: "How to read these figures", URL: DocsURL(a.Run.Version, "analysis.md")}}
	clock := a.Run.Clock()
	if rec == nil || rec.Report == nil || rec.Report.Links == nil || !clock.Known() {
		return links
	}
	from, to := clock.window(a.Run.DurationS)
	fromMs, toMs := strconv.FormatInt(from.UnixMilli(), 10), strconv.FormatInt(to.UnixMilli(), 10)
	if g := rec.Report.Links.Grafana; g != "" {
		var out string
		if strings.Contains(g, "{from}") || strings.Contains(g, "{to}") {
			out = strings.NewReplacer("{from}", fromMs, "{to}", toMs).Replace(g)
		} else if u, err := url.Parse(g); err == nil {
			q := u.Query()
			q.Set("from", fromMs)
			q.Set("to", toMs)
			u.RawQuery = q.Encode()
			out = u.String()
		}
		if out != "" {
			links = append(links, Link{Label: "Grafana dashboard for the run's window", URL: out})
		}
	}
	if p := rec.Report.Links.Prometheus; p != "" {
		for _, m := range series {
			links = append(links, Link{Label: "Prometheus: " + m + " over the run", URL: promGraphURL(p, m, from, to)})
		}
	}
	return links
}

// promGraphURL is a Prometheus graph page for expr over [from, to], in the
// parameters both the classic and the current Prometheus UI read.
func promGraphURL(base, expr string, from, to time.Time) string {
	q := url.Values{}
	q.Set("g0.expr", expr)
	q.Set("g0.tab", "0")
	q.Set("g0.range_input", strconv.FormatInt(int64(to.Sub(from).Round(time.Second)/time.Second), 10)+"s")
	q.Set("g0.end_input", to.UTC().Format("2006-01-02 15:04:05"))
	return strings.TrimRight(base, "/") + "/graph?" + q.Encode()
}
