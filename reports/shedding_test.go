package reports

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/compare"
	"github.com/halfopen/rehearse/reports/render"
)

// shedderEvents is a journal of an adaptive-throttling load shedder (the
// SRE book's client-side throttling: refuse with probability
// max(0, (requests − k·accepts)/(requests + 1)) over a 2 s window, the
// refused requests counted) in front of one upstream, app, at 20 requests
// a second answered in 2 ms, a 503 storm from 1 s to 3.5 s, 12 s in all.
// The draws follow seed.
func shedderEvents(seed uint64, k float64) []journal.Event {
	const (
		rate     = 20
		dur      = 12 * time.Second
		from, to = time.Second, 3500 * time.Millisecond
		took     = 2 * time.Millisecond
	)
	var ev []journal.Event
	add := func(t time.Duration, p journal.Payload) { ev = append(ev, journal.Event{T: t, Payload: p}) }
	add(0, &journal.RunStart{RunID: "shed-" + string(rune('a'+seed)), Scenario: "shedder", Seed: int64(seed), Rate: rate, Duration: dur,
		WallStart: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), Upstreams: []string{"app"},
		Platform: &journal.Platform{OS: "linux", Arch: "amd64", NumCPU: 2, GoVersion: "go1.26"}, Config: json.RawMessage(`{"rate":20}`)})
	add(from, &journal.FaultStart{Name: "storm", Type: "status", Upstream: "app", For: to - from})
	end := &journal.FaultEnd{Name: "storm", Upstream: "app"}
	add(to, end)
	rnd := rand.New(rand.NewPCG(seed, 1))
	type entry struct {
		at time.Duration
		ok bool
	}
	var win []entry
	seq := uint64(0)
	for x := time.Duration(0); x < dur; x += time.Second / rate {
		for len(win) > 0 && x-win[0].at >= 2*time.Second {
			win = win[1:]
		}
		acc := 0
		for _, e := range win {
			if e.ok {
				acc++
			}
		}
		s := seq
		seq++
		if p := max(0, (float64(len(win))-k*float64(acc))/float64(len(win)+1)); rnd.Float64() < p {
			add(x, &journal.ClientRequest{Seq: s, Method: "GET", Route: "/", Upstream: "app", Scheduled: x, Sent: x, HeadersAt: x + time.Millisecond,
				Done: x + time.Millisecond, Status: 503, Outcome: journal.OutcomeFastFail, FastFail: true, Latency: time.Millisecond, Service: time.Millisecond})
			win = append(win, entry{x, false})
			continue
		}
		status, out := 200, journal.OutcomeOK
		up := &journal.UpstreamRequest{Upstream: "app", Method: "GET", Path: "/", Seq: &s, InFlight: 1, Status: status,
			Done: x + time.Millisecond + took, Outcome: journal.OutcomeUpstreamComplete}
		if x >= from && x < to {
			status, out = 503, journal.OutcomeHTTP5xx
			up.Status, up.Fault, up.FaultType = status, "storm", "status"
			end.Applied++
		}
		done := x + 2*time.Millisecond + took
		add(x, &journal.ClientRequest{Seq: s, Method: "GET", Route: "/", Upstream: "app", Scheduled: x, Sent: x, HeadersAt: done,
			Done: done, Status: status, Outcome: out, Latency: done - x, Service: done - x})
		add(x+time.Millisecond, up)
		win = append(win, entry{x, status == 200})
	}
	add(dur, &journal.RunEnd{Reason: journal.EndCompleted})
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].T < ev[j].T })
	return ev
}

// shedderDir writes a shedder's journal into a run directory under root.
func shedderDir(t *testing.T, root, name string, seed uint64, k float64) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJournal(t, filepath.Join(dir, analysis.JournalFile), shedderEvents(seed, k))
	return dir
}

// sheddingKeys are the shedding figures of the figure table.
func sheddingKeys() []string {
	var out []string
	for _, f := range analysis.Figures {
		if strings.HasPrefix(f.Key, "shedding.") {
			out = append(out, f.Key)
		}
	}
	return out
}

// TestSheddingRows: a shedding episode has its figures as rows of the
// report's episode table (report.md and report.html), in run.json under
// their keys, and in the postmortem's one-line summary, without the
// breaker's rows (its open, probes, cooldowns, close); a breaker's episode
// has none of the shedding rows.
func TestSheddingRows(t *testing.T) {
	dir := renderFixture(t, "shedder")
	a, err := render.ReadRunJSON(filepath.Join(dir, render.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	ep := a.Upstreams["app"].Episodes[0]
	sd := ep.Shedding
	if ep.Shape != analysis.ShapeShedding || sd == nil {
		t.Fatalf("shape %q: %s", ep.Shape, ep.Statement)
	}
	if len(sheddingKeys()) != 6 {
		t.Fatalf("shedding figures %v, want six", sheddingKeys())
	}
	if sd.FirstRefusedAfterS != math.Round((sd.FirstRefusedAtS-ep.StartS)*1000)/1000 || sd.EndedAfterRecoveryS != math.Round((sd.EndedAtS-ep.EndS)*1000)/1000 ||
		sd.BeganAfterS < sd.FirstRefusedAfterS {
		t.Errorf("moments from the fault: %+v against start %v end %v", sd, ep.StartS, ep.EndS)
	}
	obj := episodeObjects(t, []byte(readFile(t, dir, render.RunFile)), "app")[0]
	for _, f := range analysis.Figures {
		if !strings.HasPrefix(f.Key, "shedding.") {
			continue
		}
		got, ok := lookup(obj, f.Key)
		if v := f.Value(ep); !ok || v == nil || got.(float64) != *v {
			t.Errorf("figure %s: run.json %v, table %v", f.Key, got, v)
		}
	}
	md, html := readFile(t, dir, render.MarkdownFile), readFile(t, dir, render.HTMLFile)
	rows := []string{
		"| first request turned away after fault start | ",
		"| first sustained refusal after fault start | ",
		"| last request turned away | ",
		"| requests turned away (shedding) | ",
		"| requests forwarded between the first and last refusal | ",
		"| peak refused share of a window | ",
	}
	for _, r := range rows {
		if !strings.Contains(md, r) {
			t.Errorf("report.md has no row %q", r)
		}
		if label := strings.Trim(r, "| "); !strings.Contains(html, label) {
			t.Errorf("report.html has no row %q", label)
		}
	}
	// A shedder has no breaker states: no rows of dashes for them.
	for _, r := range []string{"| probes | ", "| open/close cycles | ", "| cooldown progression | ", "| breaker closed (inferred) | ", "| opened after fault start | "} {
		if strings.Contains(md, r) {
			t.Errorf("report.md lists the breaker row %q on a shedder", r)
		}
	}
	if !strings.Contains(md, "the gateway shed load, no breaker: ") || strings.Contains(md, "its breaker did not open") {
		t.Errorf("report.md's episode summary does not say the gateway shed load")
	}
	clean := readFile(t, renderFixture(t, "clean"), render.MarkdownFile)
	for _, r := range rows {
		if strings.Contains(clean, r) {
			t.Errorf("a breaker's episode table has the shedding row %q", r)
		}
	}
}

// TestCompareShedding: shedding runs on both sides are compared on the
// shedding figures as the breaker figures are: run values with the
// Student-t rule, each floored by its resolution (a moment by the request
// interval, a count by one request, the peak share by one request of its
// window). The same draws on both sides flag nothing and show the floors;
// a shedder twice as eager (k 1.1 against 2, four runs a side, other
// draws) begins refusing sooner, and that is flagged.
func TestCompareShedding(t *testing.T) {
	root := t.TempDir()
	same := [2][]string{{shedderDir(t, root, "a1", 1, 2), shedderDir(t, root, "a2", 2, 2)},
		{shedderDir(t, root, "b1", 1, 2), shedderDir(t, root, "b2", 2, 2)}}
	c, err := compare.CompareSets(same[0], same[1], compare.CompareOptions{Labels: [2]string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	rows := sheddingRows(t, c)
	for k, r := range rows {
		if !r.Judged || r.Flag || r.Noise == nil || r.Delta == nil || *r.Delta != 0 {
			t.Errorf("%s on identical runs: judged %v, flagged %v, delta %v, noise %+v (%s)", k, r.Judged, r.Flag, r.Delta, r.Noise, r.Note)
		}
	}
	grain := map[string]float64{"shedding.first_refused_after_s": 50, "shedding.began_after_s": 50, "shedding.ended_after_recovery_s": 50,
		"shedding.turned_away": 1, "shedding.forwarded": 1}
	for k, g := range grain {
		if r := rows[k]; r.Noise != nil && math.Abs(r.Noise.Floor-g/math.Sqrt(12)) > 1e-9 {
			t.Errorf("%s: floor %v, want its resolution %v/√12", k, r.Noise.Floor, g)
		}
	}
	if r := rows["shedding.peak_refused_share"]; r.Noise == nil || r.Noise.Floor <= 0 || r.Noise.Floor > 1/math.Sqrt(12) {
		t.Errorf("peak refused share: noise %+v, want a floor of one request of its window", r.Noise)
	}

	var calm, eager []string
	for i := range uint64(4) {
		calm = append(calm, shedderDir(t, root, fmt.Sprint("c", i), 10+i, 2))
		eager = append(eager, shedderDir(t, root, fmt.Sprint("e", i), 20+i, 1.1))
	}
	c, err = compare.CompareSets(calm, eager, compare.CompareOptions{Labels: [2]string{"k2", "k1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	rows = sheddingRows(t, c)
	if r := rows["shedding.first_refused_after_s"]; !r.Flag || r.Delta == nil || *r.Delta >= 0 {
		t.Errorf("first refusal: a shedder twice as eager refuses sooner, not flagged: delta %v, CI [%v, %v], note %q", pf(r.Delta), pf(r.Lo), pf(r.Hi), r.Note)
	}
}

// sheddingRows are a comparison's rows of the shedding figures by key; every
// shedding figure must have one.
func sheddingRows(t *testing.T, c *compare.Comparison) map[string]compare.CompareRow {
	t.Helper()
	rows := map[string]compare.CompareRow{}
	for _, r := range c.Rows {
		if strings.HasPrefix(r.Key, "shedding.") {
			rows[r.Key] = r
		}
	}
	for _, k := range sheddingKeys() {
		if _, ok := rows[k]; !ok {
			t.Errorf("no compare row for %s", k)
		}
	}
	return rows
}

func pf(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
