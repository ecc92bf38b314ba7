package analysis

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/num"
)

// What a postmortem reader needs beside the figures: what was injected,
// which episodes the expectations covered, the built-in gateway's breaker
// settings, wall-clock times and links. All of it is in run.json too.

// InjectedFault is one fault window as the harness ran it.
type InjectedFault struct {
	Name     string  `json:"name"`
	Upstream string  `json:"upstream"`
	Type     string  `json:"type"`
	StartS   float64 `json:"start_s"`
	// EndS is when the fault ended; null when the journal has no
	// fault.end (it was still active when the run stopped).
	EndS      *float64  `json:"end_s"`
	StartWall time.Time `json:"start_wall,omitzero"`
	EndWall   time.Time `json:"end_wall,omitzero"`
	// PlannedForS is the planned length; 0 means until the run's end.
	PlannedForS float64 `json:"planned_for_s"`
	// Params are the type's parameters as written in the scenario.
	Params json.RawMessage `json:"params,omitempty"`
	// Targeting says which requests it applied to, in words.
	Targeting string `json:"targeting"`
	// HealthChecks reports whether the gateway's health checks were
	// faulted too.
	HealthChecks bool `json:"health_checks"`
	// Applied counts the requests the fault was applied to; null without
	// a fault.end.
	Applied *int64 `json:"applied"`
}

// EpisodeCoverage says whether the scenario's expectations judged an
// episode, and what happened in it, in one line.
type EpisodeCoverage struct {
	Upstream string `json:"upstream"`
	Episode  int    `json:"episode"` // 1-based, in the upstream's order
	Fault    string `json:"fault"`
	Covered  bool   `json:"covered"`
	Summary  string `json:"summary"`
}

// GatewaySettings are the built-in gateway's settings with defaults
// applied, when it was the gateway under test: as run.start recorded them
// (journal.Resolved), or as this build resolves them for a journal
// written before they were recorded.
type GatewaySettings = journal.ResolvedGateway

// Setting is one configuration value as the scenario writes it.
type Setting = journal.Setting

// annotate fills the postmortem parts of the analysis from the collector's
// faults and run.start's config.
func (c *collector) annotate(a *Analysis) {
	var rec *scenarioRecord
	if c.cfg != nil {
		rec = &c.cfg.scenarioRecord
		a.Run.Description = strings.TrimSpace(rec.Description)
	}
	var series []string
	if c.start != nil && c.start.Resolved != nil {
		a.BuiltinGateway, series = c.start.Resolved.Gateway, c.start.Resolved.BreakerSeries
	} else if rec != nil {
		res := resolve(rec)
		a.BuiltinGateway, series = res.Gateway, res.BreakerSeries
		if res.Gateway != nil || len(series) > 0 && rec.Report != nil && rec.Report.Links != nil && rec.Report.Links.Prometheus != "" {
			a.Notes = append(a.Notes, NoteResolvedAssumed)
		}
	}
	clock := a.Run.Clock()
	a.Injected = []InjectedFault{}
	for _, f := range c.faults {
		in := InjectedFault{Name: f.name, Upstream: f.upstream, Type: f.typ, StartS: seconds(time.Duration(f.start)),
			PlannedForS: seconds(f.planned), Params: f.spec.Params, HealthChecks: f.spec.HealthChecks}
		if len(in.Params) == 0 || string(in.Params) == "null" {
			in.Params = nil
		}
		if f.end >= 0 {
			in.EndS = Ptr(seconds(time.Duration(f.end)))
		}
		if f.applied >= 0 {
			in.Applied = Ptr(f.applied)
		}
		if clock.Known() {
			in.StartWall = clock.at(in.StartS).UTC()
			if in.EndS != nil {
				in.EndWall = clock.at(*in.EndS).UTC()
			}
		}
		in.Targeting = targeting(f.spec.Probability, rec, f.name)
		a.Injected = append(a.Injected, in)
	}
	if clock.Known() {
		for _, ua := range a.Upstreams {
			for _, ep := range ua.Episodes {
				ep.StartWall, ep.EndWall = clock.at(ep.StartS).UTC(), clock.at(ep.EndS).UTC()
			}
		}
	}
	a.Coverage = coverage(a)
	a.Links = reportLinks(a, rec, series)
}

// targeting describes which requests a fault applied to.
func targeting(probability float64, rec *scenarioRecord, name string) string {
	var parts []string
	if rec != nil {
		for _, f := range rec.Faults {
			if f.Name != name {
				continue
			}
			var m struct {
				Path   string            `json:"path"`
				Method string            `json:"method"`
				Header map[string]string `json:"header"`
			}
			if len(f.Match) > 0 && json.Unmarshal(f.Match, &m) == nil {
				if m.Method != "" {
					parts = append(parts, "method "+strings.ToUpper(m.Method))
				}
				if m.Path != "" {
					parts = append(parts, "path ~ "+m.Path)
				}
				for _, h := range slices.Sorted(maps.Keys(m.Header)) {
					if m.Header[h] == "" {
						parts = append(parts, "header "+h+" present")
					} else {
						parts = append(parts, "header "+h+" ~ "+m.Header[h])
					}
				}
			}
			if f.FirstN > 0 {
				parts = append(parts, fmt.Sprintf("first %d", f.FirstN))
			}
			if f.EveryNth > 1 {
				parts = append(parts, fmt.Sprintf("every %s", num.Ordinal(f.EveryNth)))
			}
			break
		}
	}
	if probability > 0 && probability < 1 {
		parts = append(parts, fmt.Sprintf("probability %g", probability))
	}
	if len(parts) == 0 {
		return "every request"
	}
	return strings.Join(parts, ", ")
}

// faultNoun names what a fault type did to the requests it applied to.
var faultNoun = map[string][2]string{
	"status":        {"error response", "error responses"},
	"retry_after":   {"429 response with Retry-After", "429 responses with Retry-After"},
	"reset":         {"connection reset", "connection resets"},
	"abort":         {"aborted response", "aborted responses"},
	"stream_cut":    {"mid-stream cut", "mid-stream cuts"},
	"slow_body":     {"slow body", "slow bodies"},
	"bandwidth":     {"throttled transfer", "throttled transfers"},
	"latency":       {"delayed response", "delayed responses"},
	"headers_never": {"unanswered request", "unanswered requests"},
	"blackhole":     {"black-holed request", "black-holed requests"},
	"malformed":     {"malformed response", "malformed responses"},
	"truncate":      {"truncated body", "truncated bodies"},
	"refuse":        {"refused connection", "refused connections"},
}

func faultCount(n int64, typ string) string {
	if code, ok := strings.CutPrefix(typ, "status:"); ok {
		if n == 1 {
			return "1 HTTP " + code + " response"
		}
		return fmt.Sprintf("%d HTTP %s responses", n, code)
	}
	w, ok := faultNoun[typ]
	if !ok {
		w = [2]string{"faulted request (" + typ + ")", "faulted requests (" + typ + ")"}
	}
	if n == 1 {
		return "1 " + w[0]
	}
	return fmt.Sprintf("%d %s", n, w[1])
}

// faultKind is the fault's type, with the status code for a status fault
// ("status:500"), so that the summary says "HTTP 500 responses".
func faultKind(f InjectedFault) string {
	if f.Type != "status" {
		return f.Type
	}
	var p struct {
		Code int `json:"code"`
	}
	if len(f.Params) > 0 {
		_ = json.Unmarshal(f.Params, &p)
	}
	if p.Code == 0 {
		p.Code = 503 // the status fault's default
	}
	return fmt.Sprintf("status:%d", p.Code)
}

// coverage lists every episode of every upstream, covered by the
// expectations or not, with a one-line account of it.
func coverage(a *Analysis) []EpisodeCoverage {
	out := []EpisodeCoverage{}
	judged := a.Expected.JudgesEpisodes()
	for _, name := range slices.Sorted(maps.Keys(a.Upstreams)) {
		ua := a.Upstreams[name]
		covered := judged && (len(a.Expected.Upstreams) == 0 || slices.Contains(a.Expected.Upstreams, name))
		for i, ep := range ua.Episodes {
			out = append(out, EpisodeCoverage{Upstream: name, Episode: i + 1, Fault: ep.Fault, Covered: covered,
				Summary: episodeSummary(name, ep, a.Injected)})
		}
	}
	return out
}

// episodeSummary: "llm-primary had 89 mid-stream cuts and its breaker did
// not open".
func episodeSummary(upstream string, ep *Episode, injected []InjectedFault) string {
	by := map[string]int64{}
	known := true
	for _, f := range injected {
		if f.Upstream != upstream || f.StartS < ep.StartS-1e-3 || f.StartS > ep.EndS+1e-3 {
			continue
		}
		if f.Applied == nil {
			known = false
			continue
		}
		by[faultKind(f)] += *f.Applied
	}
	var what []string
	types := slices.Sorted(maps.Keys(by))
	sort.Strings(types)
	for _, t := range types {
		what = append(what, faultCount(by[t], t))
	}
	had := strings.Join(what, " and ")
	switch {
	case had == "" && !known:
		had = strings.Join(ep.FaultTypes, "+") + " faults (count unknown: the run stopped during the fault)"
	case had == "":
		had = "no faulted request"
	case !known:
		had += " and more (count unknown: the run stopped during the fault)"
	}
	var breaker string
	switch {
	case ep.Shedding != nil:
		breaker = shedSummary(ep.Shedding)
	case !ep.Opened:
		breaker = "its breaker did not open"
	case ep.OpenedAfterS != nil && ep.Closed && ep.ClosedAfterRecoveryS != nil:
		breaker = fmt.Sprintf("its breaker opened %s after the fault started and closed %s", openedAfterWords(ep), CloseText(ep))
	case ep.OpenedAfterS != nil && !ep.Closed:
		breaker = fmt.Sprintf("its breaker opened %s after the fault started and had not closed by the run's end", openedAfterWords(ep))
	default:
		breaker = "its breaker opened"
	}
	return fmt.Sprintf("%s had %s and %s", upstream, had, breaker)
}

// openedAfterWords is an opened episode's opened_after_s for a sentence:
// its range when several failures fit the trip.
func openedAfterWords(ep *Episode) string {
	if b := ep.OpenedAfterBoundsS; b != nil && b.Min != nil && b.Max != nil {
		return fmt.Sprintf("between %s and %s", num.Sec(*b.Min), num.Sec(*b.Max))
	}
	return num.Sec(*ep.OpenedAfterS)
}
