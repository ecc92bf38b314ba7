package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"

	"github.com/halfopen/rehearse/reports/expect"

	"github.com/halfopen/rehearse/reports/num"
)

// The view is the analysis as text, shared by the HTML and Markdown
// renderers so that both always say the same numbers.

type kv struct{ K, V string }

type episodeView struct {
	Upstream  string
	Title     string
	Statement string
	Rows      []epRow
	// Why lists, under the table, what evidence bound each bounded or
	// unknown figure (analysis.Basis), by the row's note number.
	Why []epRow
	// RetryAfter lists the served 429s and what followed, first ones
	// first.
	RetryAfter []string
}

// epRow is a row of an episode's figure table; Note, when set, is the
// number of the row's "why" line under the table (Why: its text).
type epRow struct{ K, V, Note, Why string }

type phaseView struct {
	Name, Span, Requests, OK, FastFail, Errors, P50, P99, Max, Amp string
	Other                                                          string
}

type reportView struct {
	Title   string
	Verdict string
	Passed  bool
	Partial bool
	Meta    []kv
	Notes   []string
	Exp     []expect.ExpectationResult
	// Harness is the cause of a harness failure ("" otherwise): the
	// report leads with it and lists the expectations as not evaluated.
	Harness string
	// Interrupted is "interrupted at T+…" for an interrupted run; its
	// expectations are not evaluated either.
	Interrupted string
	// Unjudged says why the expectations were not evaluated (Harness or
	// Interrupted); "" when they were.
	Unjudged   string
	Episodes   []episodeView
	Upstreams  [][]string // name, routing, client requests, calls, failed, amplification, health checks, unprovoked opens
	Phases     []phaseView
	Replay     []kv
	Platform   []kv
	Disagree   []string
	MetricsTrs []string

	// Postmortem parts: the scenario's description, what was not
	// covered, every episode in one line, what was injected, the built-in
	// gateway's breaker settings, links.
	Description string
	NotCovered  []string
	Coverage    []coverageView
	Injected    [][]string // fault, upstream, window, type, parameters, targeting, health checks, applied
	Gateway     []kv
	Links       []analysis.Link
	// Retries are the retry, deadline and cost findings in words, with
	// the definition of an attempt.
	AttemptsDef string
	Retries     []string
}

type coverageView struct {
	Episode, Window, Summary, Covered string
	IsCovered                         bool
}

func buildView(a *analysis.Analysis) *reportView {
	v := &reportView{Partial: a.Run.Partial, Exp: a.Expectations, Notes: a.Notes}
	if r := a.Resilience; r != nil {
		v.AttemptsDef, v.Retries = r.AttemptsDefinition, r.Statements
	}
	if g := a.GiveUps; g != nil {
		// The gateway's give-ups belong with the deadlines.
		v.Retries = append(slices.Clip(v.Retries), g.Statements...)
	}
	clock := a.Run.Clock()
	scen := v.verdict(a)
	v.meta(a, scen, clock)
	v.upstreams(a, clock)
	v.phases(a, clock)
	v.replay(a)
	v.Platform = platformRows(a.Platform)
	postmortemView(v, a, clock)
	return v
}

// verdict sets the title, the verdict line and the episodes no
// expectation judged; it returns the scenario's name as shown.
func (v *reportView) verdict(a *analysis.Analysis) string {
	scen := a.Run.Scenario
	if scen == "" {
		scen = "unnamed run"
	}
	v.Title = "Rehearsal report — " + scen
	failed, unobserved := 0, 0
	for _, r := range a.Expectations {
		if !r.Passed {
			failed++
		}
		if r.Outcome == expect.NotObservable {
			unobserved++
		}
	}
	v.Harness, v.Interrupted = a.HarnessFailure(), a.Interrupted()
	switch {
	case v.Harness != "" && a.Run.GatewayGone != nil && a.Run.EndReason != journal.EndFailed:
		v.Verdict = "Gateway gone: " + sentenceEnd(v.Harness) + " The expectations were not evaluated: what the breaker did after that was not seen, and is not its failure."
	case v.Harness != "":
		v.Verdict = "Harness failure: " + sentenceEnd(v.Harness) + " The expectations were not evaluated: this says nothing about the gateway."
	case v.Interrupted != "":
		v.Verdict = "Run " + v.Interrupted + " (Ctrl-C, SIGTERM or SIGHUP): the expectations were not evaluated; the figures cover what was recorded."
		if n := a.Run.CutByInterruption; n > 0 {
			v.Verdict += fmt.Sprintf(" %d %s in flight %s cut by the interruption.", n, num.Pick(int(n), "request", "requests"), num.Pick(int(n), "was", "were"))
		}
	case len(a.Expectations) == 0:
		v.Verdict, v.Passed = "No expectations were set: figures only.", true
	case failed == 0:
		v.Verdict, v.Passed = fmt.Sprintf("All %d expectations met.", len(a.Expectations)), true
	default:
		v.Verdict = fmt.Sprintf("%d of %d expectations failed.", failed, len(a.Expectations))
		if unobserved > 0 {
			v.Verdict = fmt.Sprintf("%d of %d expectations failed (%d not observable).", failed, len(a.Expectations), unobserved)
		}
	}
	if v.Harness != "" {
		v.Unjudged = "harness failure"
	} else if v.Interrupted != "" {
		v.Unjudged = v.Interrupted
	}
	if a.Run.Partial && v.Unjudged == "" {
		v.Verdict += " The run is partial (" + a.Run.EndReason + ")."
	}
	v.Description = a.Run.Description
	for _, c := range a.Coverage {
		if !c.Covered {
			v.NotCovered = append(v.NotCovered, c.Summary)
		}
	}
	if len(v.NotCovered) > 0 && v.Unjudged == "" {
		v.Verdict += " · not covered by any expectation: " + strings.Join(v.NotCovered, "; ")
	}
	return scen
}

// meta sets the run's facts: what, when, against what, how.
func (v *reportView) meta(a *analysis.Analysis, scen string, clock analysis.WallClock) {
	wall, ended := "—", "—"
	if clock.Known() {
		wall = a.Run.WallStart.UTC().Format("2006-01-02 15:04:05 UTC")
		if l := clock.LocalTime(0, false); l != "" {
			wall += " (" + a.Run.WallStart.In(clock.Local).Format("2006-01-02 15:04:05 MST") + ", " + clock.Local.String() + ")"
		}
		ended = clock.Stamp(a.Run.DurationS)
	}
	v.Meta = []kv{{"scenario", scen}, {"run id", a.Run.RunID}, {"started", wall}, {"ended", ended},
		{"duration", fmt.Sprintf("%s of %s planned", num.Sec(a.Run.DurationS), num.Sec(a.Run.PlannedS))},
		{"end", a.Run.EndReason}, {"target", a.Run.Target}, {"rate", fmt.Sprintf("%g req/s", a.Run.RatePerS)},
		{"seed", fmt.Sprint(a.Run.Seed)}, {"version", a.Run.Version}, {"events", fmt.Sprint(a.Run.Events)}}
	if a.Run.EndError != "" {
		v.Meta = append(v.Meta, kv{"error", a.Run.EndError})
	}

}

// upstreams sets each upstream's row, its episodes, its health/breaker
// disagreements and the transitions its metrics reported.
func (v *reportView) upstreams(a *analysis.Analysis, clock analysis.WallClock) {
	for _, name := range slices.Sorted(maps.Keys(a.Upstreams)) {
		ua := a.Upstreams[name]
		v.Upstreams = append(v.Upstreams, []string{name, ua.Routing, fmt.Sprint(ua.ClientRequests), fmt.Sprint(ua.Calls),
			fmt.Sprint(ua.Failed), num.NumP(ua.Amplification, "%.2f"), fmt.Sprint(ua.HealthChecks), fmt.Sprint(len(ua.UnprovokedOpens)),
			num.SecP(ua.HealthDisagreementMaxS)})
		for i, ep := range ua.Episodes {
			ev := newEpisodeView(name, i, ep, clock)
			if g := a.Run.GatewayGone; g != nil && (ep.ClosedAtS == nil || *ep.ClosedAtS >= g.AtS) {
				// "Never closed" would blame the breaker for a gateway
				// that was no longer there to close it.
				ev.Statement = fmt.Sprintf("The gateway stopped answering at T+%s: what its breaker did from then on was not seen. %s", num.Sec(g.AtS), ev.Statement)
			}
			v.Episodes = append(v.Episodes, ev)
		}
		for _, d := range ua.HealthDisagreements {
			v.Disagree = append(v.Disagree, fmt.Sprintf("%s: health %s while breaker %s (%s), %s, lasting %s", name, d.Health, d.Breaker, d.Source,
				clock.Span(d.StartS, d.EndS), num.Sec(d.EndS-d.StartS)))
		}
		for _, m := range ua.MetricsTransitions {
			v.MetricsTrs = append(v.MetricsTrs, fmt.Sprintf("%s: %s → %s at %s", name, m.From, m.To, clock.Moment(m.AtS)))
		}
	}
}

// newEpisodeView is episode i of upstream name: its statement, its
// figures (the figure table's report rows), its moments on the wall clock
// and its Retry-After pauses.
func newEpisodeView(name string, i int, ep *analysis.Episode, clock analysis.WallClock) episodeView {
	stmt := ep.Statement + wallSentence(clock, ep)
	if f := ep.Failover; f != nil && f.Fallback != "" {
		stmt += " " + f.Statement
	}
	ev := episodeView{Upstream: name, Statement: stmt,
		Title: fmt.Sprintf("%s — episode %d: %s (%s), %s", name, i+1, ep.Fault, strings.Join(ep.FaultTypes, ", "), clock.Span(ep.StartS, ep.EndS))}
	// A kind of episode's own figures (a shedder's) follow its shape,
	// before the figures every episode has.
	var own []epRow
	at := 0
	for _, f := range analysis.Figures {
		row := epRow{K: f.Label, V: f.CellOf(ep), Why: strings.Join(analysis.BasisLines(ep, f.Key), "; ")}
		switch {
		case f.In&analysis.InReport == 0 || !f.AppliesTo(ep):
		case f.Applies != nil:
			own = append(own, row)
		default:
			ev.Rows = append(ev.Rows, row)
			if f.Key == "shape" {
				at = len(ev.Rows)
			}
		}
	}
	ev.Rows = slices.Insert(ev.Rows, at, own...)
	// A bounded or unknown figure's basis is a numbered line under the
	// table: the cell stays readable, the evidence is one glance away.
	// Two rows with the same basis (the close and the time open of an
	// episode never seen to close) share one line.
	notes := map[string]string{}
	for j := range ev.Rows {
		r := &ev.Rows[j]
		switch {
		case r.Why == "":
		case notes[r.Why] != "":
			r.Note = notes[r.Why]
		default:
			r.Note = fmt.Sprint(len(ev.Why) + 1)
			notes[r.Why] = r.Note
			ev.Why = append(ev.Why, *r)
		}
	}
	// The moments, on the clock the gateway's logs use.
	if ep.OpenedAtS != nil {
		ev.Rows = append(ev.Rows, epRow{K: "opened at", V: clock.Moment(*ep.OpenedAtS)})
	}
	if ep.ClosedAtS != nil {
		ev.Rows = append(ev.Rows, epRow{K: "closed at", V: closeMoments(ep, clock.Moment)})
	}
	for j, r := range ep.RetryAfter {
		if j == 10 {
			ev.RetryAfter = append(ev.RetryAfter, fmt.Sprintf("… %d more in run.json", len(ep.RetryAfter)-10))
			break
		}
		next := "no later call"
		if r.NextCallS != nil {
			next = "next call " + num.Sec(*r.NextCallS) + " later"
		}
		verdict := "honoured"
		if !r.Honoured {
			verdict = "too early"
		}
		ev.RetryAfter = append(ev.RetryAfter, fmt.Sprintf("429 at %s, Retry-After %s, %s: %s", clock.Moment(r.AtS), num.Sec(r.RetryAfterS), next, verdict))
	}
	return ev
}

// phases sets the client figures per phase.
func (v *reportView) phases(a *analysis.Analysis, clock analysis.WallClock) {
	for _, name := range []string{"before", "during", "after"} {
		ps := a.Phases[name]
		if ps == nil {
			continue
		}
		other := []string{}
		for _, k := range slices.Sorted(maps.Keys(ps.Outcomes)) {
			if k != "ok" && k != "fast_fail" && k != "http_5xx" {
				other = append(other, fmt.Sprintf("%s %d", k, ps.Outcomes[k]))
			}
		}
		sort.Strings(other)
		v.Phases = append(v.Phases, phaseView{Name: name, Span: clock.Span(ps.StartS, ps.EndS),
			Requests: fmt.Sprint(ps.Requests), OK: num.PctP(ps.SuccessRatio), FastFail: fmt.Sprint(ps.Outcomes["fast_fail"]),
			Errors: fmt.Sprint(ps.Outcomes["http_5xx"]), Other: num.OrDash(strings.Join(other, ", ")),
			P50: num.MsP(ps.LatencyMs.P50), P99: num.MsP(ps.LatencyMs.P99), Max: num.MsP(ps.LatencyMs.Max), Amp: num.NumP(ps.Amplification, "%.2f")})
	}
}

// replay sets the replay's accuracy.
func (v *reportView) replay(a *analysis.Analysis) {
	r := a.Replay
	v.Replay = []kv{{"due / sent / dropped / late", fmt.Sprintf("%d / %d / %d / %d", r.Due, r.Sent, r.Dropped, r.Late)},
		{"send lateness p50 / p99 / max", fmt.Sprintf("%s / %s / %s", num.MsP(r.LatenessMs.P50), num.MsP(r.LatenessMs.P99), num.MsP(r.LatenessMs.Max))},
		{"asked / achieved rate", fmt.Sprintf("%g / %.2f req/s", r.AskedRatePerS, r.ObservedRatePerS)},
		{"longest gap between sends", longestGap(r)},
		{"sequence header forwarded", fmt.Sprint(r.SeqForwarded)},
		{"amplification overall / before / during / after", fmt.Sprintf("%s / %s / %s / %s", num.NumP(a.Amplification.Overall, "%.2f"),
			num.NumP(a.Amplification.Before, "%.2f"), num.NumP(a.Amplification.During, "%.2f"), num.NumP(a.Amplification.After, "%.2f"))},
		{"gateway health samples (unhealthy)", fmt.Sprintf("%d (%d)", a.Health.Samples, a.Health.Unhealthy)}}
}

// postmortemView fills the parts of the view a postmortem reader needs
// first: every episode in one line, what was injected, the gateway's
// breaker settings and the links.
func postmortemView(v *reportView, a *analysis.Analysis, clock analysis.WallClock) {
	eps := map[string][]*analysis.Episode{}
	for name, ua := range a.Upstreams {
		eps[name] = ua.Episodes
	}
	for _, c := range a.Coverage {
		cv := coverageView{Episode: fmt.Sprintf("%s #%d: %s", c.Upstream, c.Episode, c.Fault), Summary: c.Summary, Covered: "no", IsCovered: c.Covered}
		if c.Covered {
			cv.Covered = "yes"
		}
		if l := eps[c.Upstream]; c.Episode >= 1 && c.Episode <= len(l) {
			cv.Window = clock.Span(l[c.Episode-1].StartS, l[c.Episode-1].EndS)
		}
		v.Coverage = append(v.Coverage, cv)
	}
	for _, f := range a.Injected {
		window := num.Sec(f.StartS) + "– (still on at the run's end)"
		if f.EndS != nil {
			window = clock.Span(f.StartS, *f.EndS)
		} else if st := clock.Stamp(f.StartS); st != "" {
			window = num.Sec(f.StartS) + " (" + st + ") – still on at the run's end"
		}
		applied := "unknown (no fault.end)"
		if f.Applied != nil {
			applied = fmt.Sprint(*f.Applied)
		}
		hc := "no"
		if f.HealthChecks {
			hc = "yes"
		}
		v.Injected = append(v.Injected, []string{f.Name, f.Upstream, window, f.Type, paramsText(f.Params), f.Targeting, hc, applied})
	}
	if g := a.BuiltinGateway; g != nil {
		v.Gateway = append(v.Gateway, kv{"instances", fmt.Sprint(g.Instances)})
		for _, s := range g.Breaker {
			v.Gateway = append(v.Gateway, kv{"breaker." + s.Key, s.Value})
		}
	}
	v.Links = a.Links
}

// paramsText writes a fault's parameters as "code=503, body=…", keys
// sorted; "defaults" when none were given.
func paramsText(raw []byte) string {
	if len(raw) == 0 {
		return "defaults"
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return string(raw)
	}
	if len(m) == 0 {
		return "defaults"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		val := m[k]
		var txt string
		switch x := val.(type) {
		case string:
			txt = x
		case float64:
			txt = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			b, _ := json.Marshal(x)
			txt = string(b)
		}
		parts = append(parts, k+"="+txt)
	}
	return strings.Join(parts, ", ")
}

func platformRows(p *analysis.PlatformInfo) []kv {
	if p == nil {
		return []kv{{"platform", "not recorded"}}
	}
	cpu := fmt.Sprintf("%s (%d cores)", p.CPU, p.NumCPU)
	if p.GOMAXPROCS > 0 {
		cpu = fmt.Sprintf("%s (%d cores; the harness on %d Go processors, GOMAXPROCS)", p.CPU, p.NumCPU, p.GOMAXPROCS)
	}
	rows := []kv{{"OS / arch", p.OS + " / " + p.Arch}, {"kernel", p.Kernel}, {"CPU", cpu},
		{"Go", p.GoVersion}, {"timer lateness p50 / p99 / max", fmt.Sprintf("%s / %s / %s", num.MsP(p.TimerP50Ms), num.MsP(p.TimerP99Ms), num.MsP(p.TimerMaxMs))}}
	if t := p.TimerDuringRun; t != nil {
		rows = append(rows, kv{"timer lateness during the run p50 / p99 / max", fmt.Sprintf("%s / %s / %s (%d bursts)",
			num.MsP(&t.P50Ms), num.MsP(&t.P99Ms), num.MsP(&t.MaxMs), t.Bursts)})
	}
	if l := p.LoadDuringRun; l != nil {
		rows = append(rows, kv{"load average during the run (median / max)", fmt.Sprintf("%.2f / %.2f on %d cores", l.Median, l.Max, p.NumCPU)})
	}
	for _, k := range slices.Sorted(maps.Keys(p.TCPKeepalive)) {
		rows = append(rows, kv{k, p.TCPKeepalive[k]})
	}
	return rows
}

func longestGap(r analysis.ReplayStats) string {
	if r.LongestSendGapMs == nil {
		return "— (fewer than two sends)"
	}
	return fmt.Sprintf("%s at %s", num.MsP(r.LongestSendGapMs), num.Sec(*r.LongestSendGapAtS))
}

// wallSentence puts an episode's moments on the clock the gateway's logs
// use: " On the clock: fault 11:28:14 UTC, opened 11:28:31 UTC, closed
// 11:29:47 UTC." Empty when the run's start is unknown.
func wallSentence(c analysis.WallClock, ep *analysis.Episode) string {
	if !c.Known() {
		return ""
	}
	parts := []string{"fault " + c.Stamp(ep.StartS) + " to " + c.Stamp(ep.EndS)}
	if ep.OpenedAtS != nil {
		parts = append(parts, "opened "+c.Stamp(*ep.OpenedAtS))
	}
	if ep.ClosedAtS != nil {
		parts = append(parts, "closed "+closeMoments(ep, c.Stamp))
	}
	return " On the clock: " + strings.Join(parts, ", ") + "."
}

// closeMoments is the close on a clock, as its one text has it
// (analysis.CloseText): the moment when exact, else its range.
func closeMoments(ep *analysis.Episode, at func(float64) string) string {
	b := ep.CloseBoundsS
	switch {
	case b == nil || b.Min == nil:
		return at(*ep.ClosedAtS)
	case b.Max == nil:
		return at(*b.Min) + " or later"
	case *b.Max-*b.Min < 0.0005:
		return at(*ep.ClosedAtS)
	}
	return "between " + at(*b.Min) + " and " + at(*b.Max)
}

// sentenceEnd ends s with a full stop unless it already ends a sentence
// ("… is gateway.url right?" takes none).
func sentenceEnd(s string) string {
	s = strings.TrimRight(s, " ")
	if s == "" || strings.ContainsRune(".?!", rune(s[len(s)-1])) {
		return s
	}
	return s + "."
}
