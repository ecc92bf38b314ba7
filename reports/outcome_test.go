package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/history"
	"github.com/halfopen/rehearse/reports/render"
)

// renderEvents writes evs as a run directory's journal, renders it and
// returns the directory's report.md, junit.xml, run.json and
// timeline.svg.
func renderEvents(t *testing.T, evs []journal.Event) (md, junit string, a *analysis.Analysis, svg string) {
	t.Helper()
	dir := t.TempDir()
	writeJournal(t, filepath.Join(dir, "journal.jsonl"), evs)
	if _, _, err := RenderDir(dir); err != nil {
		t.Fatal(err)
	}
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, err := render.ReadRunJSON(filepath.Join(dir, render.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	return read(render.MarkdownFile), read(render.JUnitFile), a, read(render.TimelineFile)
}

const allExpectations = `{"opens_within":"10s","probe_spacing_min":"200ms","max_probes_in_flight":1,"healthy_unaffected":true,` +
	`"closes_within":"10s","amplification_max":1.2,"metrics_lag_max":"15s","health_disagreement_max":"3m","leaked_max":0}`

// interruptedJournal is a sim run interrupted at 20 s, its breaker still
// open; the requests in flight then end without an answer after it.
func interruptedJournal() []journal.Event {
	s := base()
	s.expect = []byte(allExpectations)
	at := 20 * time.Second
	var evs []journal.Event
	for _, e := range s.build() {
		if e.T > at {
			continue
		}
		if cr, ok := e.Payload.(*journal.ClientRequest); ok && cr.Sent > at-300*time.Millisecond {
			// In flight at the interruption, ended by the harness's stop.
			cr.Outcome, cr.Status, cr.Done, cr.Error = journal.OutcomeResetBeforeHdrs, 0, at+200*time.Millisecond, "EOF"
		}
		evs = append(evs, e)
	}
	return append(evs, journal.Event{T: at, Payload: &journal.Phase{Name: analysis.PhaseInterrupted}},
		journal.Event{T: at + time.Second, Payload: &journal.Phase{Name: "stop"}},
		journal.Event{T: at + time.Second, Payload: &journal.RunEnd{Reason: journal.EndInterrupted, Partial: true, Error: "interrupted by signal"}})
}

// goneJournal is a sim run whose gateway stopped answering at 40 s:
// every request refused from then on, nothing reaching an upstream.
func goneJournal() []journal.Event {
	s := base()
	s.expect = []byte(allExpectations)
	gone := 40 * time.Second
	var evs []journal.Event
	for _, e := range s.build() {
		switch p := e.Payload.(type) {
		case *journal.ClientRequest:
			if p.Scheduled >= gone {
				p.Outcome, p.Status, p.Done, p.HeadersAt, p.Error = journal.OutcomeConnectRefused, 0, p.Sent+100*time.Microsecond, 0, "connect: connection refused"
				p.FastFail, p.FastFailCode = false, ""
			}
		case *journal.UpstreamRequest, *journal.MetricsSample, *journal.HealthSample, *journal.BreakerTransition:
			if e.T >= gone {
				continue
			}
		}
		evs = append(evs, e)
	}
	return evs
}

// TestInterruptedRunNotJudged: a run interrupted at 20 s, its breaker
// still open, was judged on what it had recorded: JUnit failures for
// expectations that had no chance ("closes_within not observed") and
// FAIL marks in the report. Now every expectation is skipped with the
// reason, failures="0", and the report says when it was interrupted and
// how many requests the interruption cut.
func TestInterruptedRunNotJudged(t *testing.T) {
	md, junit, a, svg := renderEvents(t, interruptedJournal())
	if !strings.Contains(svg, `class="interrupted-at"`) || !strings.Contains(svg, "cut by the interruption") {
		t.Errorf("timeline.svg marks neither the interruption nor the cut requests")
	}
	if !strings.Contains(junit, `failures="0"`) || strings.Contains(junit, "<failure") {
		t.Errorf("junit.xml has failures:\n%s", junit)
	}
	if n := strings.Count(junit, `<skipped message="not evaluated: the run was interrupted at T+20 s">`); n != len(a.Expectations) || n == 0 {
		t.Errorf("junit.xml: %d expectations skipped with the reason, want %d:\n%s", n, len(a.Expectations), junit)
	}
	if !strings.Contains(md, "Run interrupted at T+20 s") || strings.Contains(md, "FAIL") {
		t.Errorf("report.md does not say when it was interrupted, or says FAIL:\n%s", md)
	}
	if a.Run.InterruptedAtS == nil || *a.Run.InterruptedAtS != 20 || a.Run.CutByInterruption == 0 {
		t.Errorf("run.json: interrupted_at_s %v, cut_by_interruption %d", a.Run.InterruptedAtS, a.Run.CutByInterruption)
	}
	if !strings.Contains(md, "cut by the interruption") {
		t.Errorf("report.md does not count the cut requests:\n%s", md)
	}
}

// TestGatewayGoneNamed: a gateway that stopped answering at 40 s (every
// request refused from then on) made the report say the breaker "never
// closed" and fail closes_within. Now the verdict names the gateway's
// end, the episode says what was not seen, JUnit has one harness error
// and no failure.
func TestGatewayGoneNamed(t *testing.T) {
	md, junit, a, svg := renderEvents(t, goneJournal())
	if !strings.Contains(svg, `class="gateway-gone"`) {
		t.Errorf("timeline.svg does not mark the gateway's end")
	}
	if a.Run.GatewayGone == nil {
		t.Fatalf("run.json has no gateway_gone; notes %q", a.Notes)
	}
	if !strings.Contains(md, "Gateway gone: the gateway stopped answering at T+40") {
		t.Errorf("report.md does not name the gateway's end:\n%s", md)
	}
	if !strings.Contains(junit, `errors="1"`) || strings.Contains(junit, "<failure") ||
		!strings.Contains(junit, `message="harness failure: the gateway stopped answering at T+40`) {
		t.Errorf("junit.xml:\n%s", junit)
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.Contains(line, "never closed") && !strings.Contains(line, "stopped answering") {
			t.Errorf("report.md blames the breaker without naming the gateway's end: %s", line)
		}
	}
	b, _ := json.Marshal(a.Run.GatewayGone)
	if !strings.Contains(string(b), `"refused":`) {
		t.Errorf("gateway_gone %s", b)
	}
}

// TestHistoryLeavesUnjudgedOut: history counted an interrupted run "x/9
// met (partial)" and a harness failure "0/9 met", and drew both into the
// trends (a requests-sent trend pulled down by a run cut short). Now
// they are listed as not judged, with why, and every trend is drawn over
// the judged run alone.
func TestHistoryLeavesUnjudgedOut(t *testing.T) {
	root := t.TempDir()
	s := base()
	s.expect = []byte(allExpectations)
	for name, evs := range map[string][]journal.Event{"a-complete": s.build(), "b-interrupted": interruptedJournal(), "c-gone": goneJournal()} {
		os.Mkdir(filepath.Join(root, name), 0o755)
		writeJournal(t, filepath.Join(root, name, "journal.jsonl"), evs)
	}
	h, err := history.History(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Groups) != 1 || len(h.Groups[0].Runs) != 3 || len(h.Groups[0].Trends) == 0 {
		t.Fatalf("groups %d", len(h.Groups))
	}
	for _, tr := range h.Groups[0].Trends {
		if tr.N != 1 {
			t.Errorf("trend %s over %d runs, want the judged one only", tr.Label, tr.N)
		}
	}
	md := string(history.HistoryMarkdown(h))
	for _, want := range []string{"| not judged: interrupted at T+20 s |", "| not judged: harness failure: the gateway stopped answering at T+40",
		"2 runs left out of the trends"} {
		if !strings.Contains(md, want) {
			t.Errorf("index.md does not say %q:\n%s", want, md)
		}
	}
}
