package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
	"github.com/halfopen/rehearse/scenarios"
)

// The second AI gateway (fallbackGateway) rehearsed at two replay rates:
// 5 req/s, whose 200 ms send spacing divides the gateway's fixed 1, 2 and
// 4 s waits, and 4.3 req/s, whose 232.6 ms does not. Each figure of the
// harness is held to the gateway's own log.

// aigw2Waits are the gateway's fixed waits before the primary's retries,
// and aigw2Timeout its per-call timeout.
var aigw2Waits = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}

const aigw2Timeout = 5 * time.Second

// aigw2Faults: on the primary only, each window apart from the others'
// retries (a request sent at the end of the storm retries until 7 s
// after it):
//   - a 503 storm: retried after 1, 2, 4 s, then the fallback; 8 s, so
//     that the requests of its first second fail all 4 attempts;
//   - answers slower than the timeout: abandoned at 5 s, then the fallback;
//   - a stream that carries an error event after 3 events (a 200);
//   - a stream reset after 3 events (a 200 the gateway ends early).
const aigw2Faults = `faults:
  - {name: storm, type: status, upstream: primary, at: 2s, for: 8s, params: {code: 503}}
  - {name: slow, type: latency, upstream: primary, at: 18s, for: 2s, params: {fixed: 6s}}
  - {name: stream-error, type: stream_error, upstream: primary, at: 23s, for: 2s, params: {after_events: 3}}
  - {name: stream-reset, type: stream_cut, upstream: primary, at: 26s, for: 2s, params: {after_events: 3, then: rst}}
`

// aigw2Expect are expectations on the new figures, each judged by the
// harness and by the gateway's log (holdExpectations): the storm fails
// over after 7 s (1 + 2 + 4 s of waits), past 6 s; the slow answers
// after 5 s, within it; the stream episodes never.
const aigw2Expect = `expectations:
  upstreams: [primary]
  fails_over_within: 6s
  fails_back_within: 1s
  call_timeout_max: 5.5s
`

// aigw2Drill is one rate's rehearsal: the harness's result, its journal
// and the gateway's log.
type aigw2Drill struct {
	rate float64
	res  *rehearsal.Result
	jv   *journalView
	log  []aigwEntry
}

// runAIGW2 runs one rate's drill, its run directory under base (the
// parent test's: the checks after the rate's subtest read it).
func runAIGW2(t *testing.T, rate float64, base string) *aigw2Drill {
	t.Helper()
	primary, fallback := testutil.FreeAddr(t), testutil.FreeAddr(t)
	g := &fallbackGateway{primary: "http://" + primary + "/v1", fallback: "http://" + fallback + "/v1",
		waits: aigw2Waits, timeout: aigw2Timeout}
	dir := filepath.Join(base, fmt.Sprintf("run-%g", rate))
	if keep := os.Getenv("REHEARSE_E2E_OUT"); keep != "" {
		dir = filepath.Join(keep, fmt.Sprintf("aigw2-%g-%d", rate, time.Now().UnixNano()))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "gateway.jsonl")
	if os.Getenv("REHEARSE_E2E_OUT") != "" {
		logPath = filepath.Join(dir, "gateway.log") // beside the journal, to read one against the other
	}
	front := g.start(t, logPath)
	// The primary answers after 100 ms (a model's time to the first
	// token), then 13 events of 50 ms: a healthy stream takes 0.75 s, far
	// inside the timeout. The fallback starts at once: its whole JSON
	// answer can come before the primary's fake has noticed the hang-up
	// that preceded it, which must not make the give-up a hedge. The
	// client's deadline outlasts the longest path through the gateway
	// (1 + 2 + 4 s of waits, 4 calls, then the fallback).
	yaml := fmt.Sprintf(`version: 1
name: aigw2-%g
gateway:
  url: %s
replay:
  rate: %g
  schedule: fixed
  duration: 29s
  deadline: 15s
  filter: {path: "^/v1/chat/completions"}
  routes: [{prefix: /v1/chat/completions, upstream: primary}]
upstreams:
  - {name: primary, listen: "%s", api: openai, healthy: {latency: {fixed: 100ms}, sse: {events: 13}}}
  - {name: fallback, listen: "%s", api: openai, healthy: {sse: {events: 13}}}
%s%s`, rate, front, rate, primary, fallback, aigw2Faults, aigw2Expect)
	sc, err := scenarios.Parse(filepath.Join(t.TempDir(), "aigw2.yaml"), []byte(yaml))
	if err != nil {
		t.Fatalf("scenario:\n%s\n%v", yaml, err)
	}
	res, err := rehearsal.Run(context.Background(), sc, rehearsal.Options{OutDir: dir})
	if err != nil && !errors.Is(err, rehearse.ErrExpectations) {
		t.Fatal(err)
	}
	return &aigw2Drill{rate: rate, res: res, jv: readJournalView(t, res.Dir), log: readAIGWLog(t, logPath)}
}

// holdWaits holds the primary's retry waits to the log: the median before
// each retry within max(5 %, 20 ms); the shortest and longest also, or
// within the widest bound a single wait needed (checkPerRequest), since
// each is one wait.
func holdWaits(t *testing.T, pf *analysis.RetryFigures, lt *logTruth, widest float64, tab *heldTable) {
	t.Helper()
	for i, ws := range lt.waits {
		want := median(ws)
		var got float64 = math.NaN()
		if i < len(pf.Backoff.P50ByRetryMs) {
			got = pf.Backoff.P50ByRetryMs[i]
		}
		tab.add(fmt.Sprintf("primary: median wait before retry %d (ms)", i+1), fmt.Sprintf("%.1f (%d)", want, len(ws)), fmt.Sprintf("%.1f", got))
		if !agrees(got, want, 20) {
			t.Errorf("median wait before retry %d: harness %.1f ms, gateway log %.1f ms", i+1, got, want)
		}
	}
	var all []float64
	for _, ws := range lt.waits {
		all = append(all, ws...)
	}
	if b := pf.Backoff; b.MinMs == nil || b.MaxMs == nil || b.Retries != int64(len(all)) {
		t.Errorf("waits: harness %+v, gateway log %d waits", b, len(all))
	} else {
		tab.add("primary: retries; min/max wait (ms)", fmt.Sprintf("%d; %.1f/%.1f", len(all), slices.Min(all), slices.Max(all)),
			fmt.Sprintf("%d; %.1f/%.1f", b.Retries, *b.MinMs, *b.MaxMs))
		if !agrees(*b.MinMs, slices.Min(all), 20+widest) || !agrees(*b.MaxMs, slices.Max(all), 20+widest) {
			t.Errorf("min/max wait: harness %.1f/%.1f ms, gateway log %.1f/%.1f ms (bound up to %.1f ms)", *b.MinMs, *b.MaxMs, slices.Min(all), slices.Max(all), widest)
		}
	}
}

// agrees reports |got - want| ≤ max(5 % of want, floor).
func agrees(got, want, floor float64) bool {
	return math.Abs(got-want) <= math.Max(0.05*math.Abs(want), floor)
}

// TestFallbackGatewayAtTwoRates: the second AI gateway's retries,
// fallback, give-ups and failed streams, at 5 and at 4.3 req/s, each
// figure held to its own log.
func TestFallbackGatewayAtTwoRates(t *testing.T) {
	if testing.Short() {
		t.Skip("two 29 s rehearsals in parallel; skipped with -short")
	}
	drills := make([]*aigw2Drill, 2)
	base := t.TempDir()
	t.Run("rates", func(t *testing.T) {
		for i, rate := range []float64{5, 4.3} {
			t.Run(fmt.Sprint(rate), func(t *testing.T) {
				t.Parallel()
				drills[i] = runAIGW2(t, rate, base)
			})
		}
	})
	for _, d := range drills {
		if d == nil {
			t.FailNow()
		}
		t.Run(fmt.Sprintf("held-to-log-%g", d.rate), func(t *testing.T) { holdAIGW2(t, d) })
	}
}

// holdAIGW2 holds one drill's figures to the gateway's log.
func holdAIGW2(t *testing.T, d *aigw2Drill) {
	a := d.res.Analysis
	lt := truthOf(t, d.log)
	tab := &heldTable{}
	defer tab.log(t, fmt.Sprintf("%g req/s", d.rate))
	if lt.unstamped > 0 {
		t.Errorf("%d of %d requests reached the gateway without the body stamp", lt.unstamped, lt.requests)
	}
	if lt.fellBack["retries_exhausted"] == 0 || lt.fellBack["timeout"] == 0 || lt.outcomes["stream_cut"] == 0 || lt.outcomes["stream_error"] == 0 {
		t.Fatalf("the drill did not exercise the gateway: fallbacks %v, outcomes %v", lt.fellBack, lt.outcomes)
	}
	// Calls per upstream.
	for _, up := range []string{"primary", "fallback"} {
		ua := a.Upstreams[up]
		if ua == nil {
			t.Fatalf("no analysis of %s", up)
		}
		tab.add("calls to "+up, fmt.Sprint(lt.calls[up]), ua.Calls)
		if ua.Calls != int64(lt.calls[up]) {
			t.Errorf("calls to %s: harness %d, gateway log %d", up, ua.Calls, lt.calls[up])
		}
	}
	r := a.Resilience
	if r == nil || r.Upstreams["primary"] == nil {
		t.Fatalf("no retry figures for primary: %+v (notes %q)", r, a.Notes)
	}
	// Attempts per request and the waits before each retry, on the primary.
	pf := r.Upstreams["primary"]
	tab.add("primary: attempts per request", fmt.Sprint(lt.attempts), pf.Distribution)
	if !mapsEqual(pf.Distribution, lt.attempts) {
		t.Errorf("attempts per request on primary: harness %v, gateway log %v", pf.Distribution, lt.attempts)
	}
	// Each request, as the journal holds it; then the waits together.
	bad, bounded, widest := checkPerRequest(t, lt, d.jv)
	tab.add("requests whose calls per upstream, outcome or waits differ", "0", fmt.Sprintf("%d (%d waits held to the log's bound, up to %.0f ms wide)", bad, bounded, widest))
	holdWaits(t, pf, lt, widest, tab)
	// The fallback's requests: those whose numbers its calls carried.
	ff, fa := r.Upstreams["fallback"], a.Upstreams["fallback"]
	served := int64(len(lt.servedFallback))
	tab.add("fallback: client requests", fmt.Sprint(served), fmt.Sprintf("%d (routing %s)", fa.ClientRequests, fa.Routing))
	if fa.ClientRequests != served || fa.Routing != "seq_reached" {
		t.Errorf("fallback: %d client requests by %s, gateway log %d requests sent to it", fa.ClientRequests, fa.Routing, served)
	}
	if ff == nil {
		t.Errorf("no retry figures for the fallback")
	} else {
		tab.add("fallback: attempts per request", fmt.Sprintf("map[1:%d]", served), ff.Distribution)
		if ff.Requests != served || ff.Distribution["1"] != served {
			t.Errorf("fallback retry figures: %d requests %v, gateway log %d requests tried once", ff.Requests, ff.Distribution, served)
		}
	}
	// Failed streams are failed, in their own classes.
	outs := map[string]int64{}
	for _, p := range a.Phases {
		for o, n := range p.Outcomes {
			outs[o] += n
		}
	}
	for _, o := range []string{"stream_error", "stream_cut", "ok"} {
		tab.add("client outcome "+o, fmt.Sprint(lt.outcomes[o]), outs[o])
		if outs[o] != lt.outcomes[o] {
			t.Errorf("outcome %s: harness %d, gateway log %d", o, outs[o], lt.outcomes[o])
		}
	}
	jv := d.jv
	holdGiveUps(t, d, lt, tab)
	holdFailover(t, d, lt, jv, tab)
	holdExpectations(t, d, lt, jv, tab)
	holdLockstep(t, d, pf, tab)
}

// holdLockstep records the lockstep figure, and holds its verdict to the
// log (no retry synchronized: each is timed from its own request's
// previous attempt) once the analysis judges coincidence against the
// replay's own send times (run.json's lockstep.basis "schedule", issue
// 28): at 5 req/s the fixed grid makes these retries meet by itself.
func holdLockstep(t *testing.T, d *aigw2Drill, pf *analysis.RetryFigures, tab *heldTable) {
	l := pf.Lockstep
	var run struct {
		Resilience struct {
			Upstreams map[string]struct {
				Lockstep struct {
					Basis         string   `json:"basis"`
					ScheduleShare *float64 `json:"schedule_share"`
				} `json:"lockstep"`
			} `json:"upstreams"`
		} `json:"resilience"`
	}
	b, err := os.ReadFile(filepath.Join(d.res.Dir, "run.json"))
	if err == nil {
		err = json.Unmarshal(b, &run)
	}
	if err != nil {
		t.Fatalf("run.json: %v", err)
	}
	rl := run.Resilience.Upstreams["primary"].Lockstep
	tab.add("primary: retries coincident within 10 ms", "none synchronized: each timed from its request's previous attempt",
		fmt.Sprintf("%v of %d (independent %v, by the send schedule %v; basis %q; lockstep %v)", deref(l.CoincidentShare), l.Retries,
			deref(l.IndependentShare), deref(rl.ScheduleShare), rl.Basis, deref(l.Lockstep)))
	if rl.Basis != "schedule" {
		t.Logf("%g req/s: lockstep judged without the replay's send times (basis %q): figures only", d.rate, rl.Basis)
		return
	}
	if l.Lockstep == nil || *l.Lockstep {
		t.Errorf("%g req/s: retries read in lockstep (%v); the gateway synchronizes none", d.rate, deref(l.Lockstep))
	}
}

// heldTable is a drill's figures beside the gateway log's, logged as
// the table the report quotes.
type heldTable struct{ rows [][3]string }

// add adds a row: the figure, what the gateway's log says, what the
// harness says.
func (h *heldTable) add(what, logged string, harness any) {
	h.rows = append(h.rows, [3]string{what, fmt.Sprint(harness), logged})
}

func (h *heldTable) log(t *testing.T, name string) {
	var b strings.Builder
	fmt.Fprintf(&b, "held to the gateway's log, %s:\n| figure | harness | gateway log |\n|---|---|---|\n", name)
	for _, r := range h.rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], r[1], r[2])
	}
	t.Log(b.String())
}

func mapsEqual(a map[string]int64, b map[string]int64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// minMedMax writes min/median/max of xs in ms, or "—".
func minMedMax(xs []float64) string {
	if len(xs) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f/%.1f/%.1f", slices.Min(xs), median(xs), slices.Max(xs))
}

// holdGiveUps holds the give-ups figure to the log: every give-up seen
// (the upstream journals the hang-up), none unseen, the timeout they show
// and their spread within max(5 %, 20 ms), and each one's request served
// by the fallback.
func holdGiveUps(t *testing.T, d *aigw2Drill, lt *logTruth, tab *heldTable) {
	g := d.res.Analysis.GiveUps
	want := int64(len(lt.giveUps))
	logged := fmt.Sprintf("%d; %s ms; %d then ok on the fallback", want, minMedMax(lt.giveUps), lt.giveUpThenOK)
	if g == nil || g.Upstreams["primary"] == nil {
		tab.add("give-ups (count; min/median/max; then ok elsewhere)", logged, "none")
		t.Errorf("no give-ups on the primary (%+v), the gateway's log has %d", g, want)
		return
	}
	p := g.Upstreams["primary"]
	ms := func(v *float64) float64 {
		if v == nil {
			return math.NaN()
		}
		return *v * 1000
	}
	tab.add("give-ups (count; min/median/max; then ok elsewhere)", logged,
		fmt.Sprintf("%d (%d seen, %d unseen); %.1f/%.1f/%.1f ms, timeout %.1f ms; %d then ok on the fallback", g.Count, p.Seen, p.Unseen,
			ms(p.AfterS.Min), ms(p.AfterS.P50), ms(p.AfterS.Max), ms(p.TimeoutS), p.OnFallback))
	if g.Count != want || p.Seen != want || p.Unseen != 0 || g.ClientLeft != 0 || g.Cancelled != 0 {
		t.Errorf("give-ups: %d (primary %d seen, %d unseen; %d after the client left, %d cancelled after another answered), the gateway's log %d",
			g.Count, p.Seen, p.Unseen, g.ClientLeft, g.Cancelled, want)
	}
	if want > 0 && (!agrees(ms(p.TimeoutS), median(lt.giveUps), 20) || !agrees(ms(p.AfterS.Min), slices.Min(lt.giveUps), 20) ||
		!agrees(ms(p.AfterS.Max), slices.Max(lt.giveUps), 20)) {
		t.Errorf("give-ups after %.1f/%.1f/%.1f ms (timeout %.1f), the gateway's log %s", ms(p.AfterS.Min), ms(p.AfterS.P50), ms(p.AfterS.Max), ms(p.TimeoutS), minMedMax(lt.giveUps))
	}
	if p.OnFallback != int64(lt.giveUpThenOK) || p.ThenSucceeded != int64(lt.giveUpThenOK) || p.ThenFailed != want-int64(lt.giveUpThenOK) {
		t.Errorf("give-ups then: %d ok (%d on the fallback), %d failed; the gateway's log %d ok on the fallback of %d", p.ThenSucceeded, p.OnFallback, p.ThenFailed, lt.giveUpThenOK, want)
	}
}

// backEdge is how far before a fault's end the gateway may log the start
// of a call that reached the upstream after it: the time from its log
// line to the upstream's accept (sub-millisecond on loopback, tens of
// milliseconds on a loaded machine).
const backEdge = 50 * time.Millisecond

// logFailover is one episode's failover as the gateway's log tells it:
// the first call to the fallback for a request it served, and the first
// call after the fault's end of a request the primary answered ok (the
// fail-back), each as [earliest, latest] the upstream can have seen it
// arrive (logCall.by), run time in s; +Inf: none.
type logFailover struct {
	served, servedOK, primaryCalls int64
	over, back                     [2]float64
}

// failoverOf reads an episode (run time, s) from the log: the requests
// sent from its start to the next episode's (the first also takes
// requests sent before it that went to the fallback after it).
func failoverOf(lt *logTruth, jv *journalView, start, end, spanEnd float64, first bool) logFailover {
	run := func(at time.Time) float64 { return at.Sub(jv.wallStart).Seconds() }
	inf := math.Inf(1)
	lf := logFailover{over: [2]float64{inf, inf}, back: [2]float64{inf, inf}}
	earliest := func(b *[2]float64, c logCall) {
		b[0], b[1] = min(b[0], run(c.start)), min(b[1], run(c.by()))
	}
	for seq, st := range lt.perSeq {
		sent := jv.sent[seq].Seconds()
		fb := st.target == "fallback" && len(st.fallback) > 0
		if sent >= spanEnd || (sent < start && !(first && fb && run(st.fallback[0].start) >= start)) {
			continue
		}
		if fb {
			lf.served++
			if st.outcome == "ok" {
				lf.servedOK++
			}
			lf.primaryCalls += int64(len(st.primary))
			earliest(&lf.over, st.fallback[0])
		}
		if n := len(st.primary); st.target == "primary" && st.outcome == "ok" && n > 0 && run(st.primary[n-1].by()) >= end {
			earliest(&lf.back, st.primary[n-1])
		}
	}
	return lf
}

// heldAt holds a harness instant to the log's [earliest, latest] (20 ms
// either side: the two clocks are one, read at different moments).
func heldAt(got *float64, b [2]float64) bool {
	return got != nil && *got >= b[0]-0.020 && *got <= b[1]+0.020
}

func fmtBounds(b [2]float64) string {
	if math.Abs(b[1]-b[0]) < 0.0005 {
		return fmt.Sprintf("%.3f", b[0])
	}
	return fmt.Sprintf("%.3f–%.3f", b[0], b[1])
}

// holdFailover holds each of the primary's episodes' failover figure to
// the log: the fallback and its requests exactly, the moments of failover
// and fail-back within the log's bounds (failoverOf).
func holdFailover(t *testing.T, d *aigw2Drill, lt *logTruth, jv *journalView, tab *heldTable) {
	eps := d.res.Analysis.Upstreams["primary"].Episodes
	for j, ep := range eps {
		spanEnd := math.Inf(1)
		if j+1 < len(eps) {
			spanEnd = eps[j+1].StartS
		}
		lf := failoverOf(lt, jv, ep.StartS, ep.EndS, spanEnd, j == 0)
		f := ep.Failover
		if f == nil {
			t.Errorf("episode %s: no failover figure", ep.Fault)
			continue
		}
		name := "failover, " + ep.Fault
		tab.add(name+": fallback; requests served (ok)", fmt.Sprintf("%d (%d)", lf.served, lf.servedOK),
			fmt.Sprintf("%q; %d (%d); %s", f.Fallback, f.Served, f.ServedOK, f.Evidence))
		if lf.served == 0 {
			if f.Fallback != "" || f.Served != 0 {
				t.Errorf("%s: harness %q served %d, the gateway's log none", name, f.Fallback, f.Served)
			}
			continue
		}
		if f.Fallback != "fallback" || f.Served != lf.served || f.ServedOK != lf.servedOK || f.AfterPrimary != lf.served || f.PrimaryCalls != lf.primaryCalls {
			t.Errorf("%s: harness %+v; gateway log %d served, %d ok, all after %d calls to the primary", name, f, lf.served, lf.servedOK, lf.primaryCalls)
		}
		tab.add(name+": failed over at (s)", fmtBounds(lf.over), fmtPtr(f.FailedOverAtS))
		if !heldAt(f.FailedOverAtS, lf.over) {
			t.Errorf("%s: failed over at %s s, the gateway's log %s s", name, fmtPtr(f.FailedOverAtS), fmtBounds(lf.over))
		}
		tab.add(name+": failed back at (s)", fmtBounds(lf.back), fmtPtr(f.FailedBackAtS))
		if !f.FailedBack || !heldAt(f.FailedBackAtS, lf.back) {
			t.Errorf("%s: failed back %v at %s s, the gateway's log %s s", name, f.FailedBack, fmtPtr(f.FailedBackAtS), fmtBounds(lf.back))
		}
	}
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.3f", *p)
}

// holdExpectations judges aigw2Expect on the gateway's log, by the
// harness's rule (a breach anywhere: not met; else an episode or upstream
// with nothing to judge: not observable; else met), and holds the
// harness's outcomes to it. fails_over_within: every episode fails over
// within 6 s of its start (one that never does is a breach);
// fails_back_within: every failover fails back within 1 s of the fault's
// end (an episode without one has nothing to judge); call_timeout_max:
// every give-up within 5.5 s of its call's start. A log figure within 20
// ms of a bound is too close to call, and not held.
func holdExpectations(t *testing.T, d *aigw2Drill, lt *logTruth, jv *journalView, tab *heldTable) {
	eps := d.res.Analysis.Upstreams["primary"].Episodes
	type verdict struct{ breach, missing bool }
	var over, back, timeout verdict
	var close bool
	near := func(v, bound float64) bool { return math.Abs(v-bound) <= 0.020 }
	// straddles: the log's [lo, hi] (20 ms either side) holds the bound.
	straddles := func(lo, hi, bound float64) bool { return lo-0.020 <= bound && bound <= hi+0.020 }
	for j, ep := range eps {
		spanEnd := math.Inf(1)
		if j+1 < len(eps) {
			spanEnd = eps[j+1].StartS
		}
		lf := failoverOf(lt, jv, ep.StartS, ep.EndS, spanEnd, j == 0)
		over.breach = over.breach || lf.over[0]-ep.StartS > 6 // +Inf: never
		close = close || straddles(lf.over[0]-ep.StartS, lf.over[1]-ep.StartS, 6)
		if lf.served == 0 {
			back.missing = true
			continue
		}
		back.breach = back.breach || lf.back[0]-ep.EndS > 1
		close = close || straddles(lf.back[0]-ep.EndS, lf.back[1]-ep.EndS, 1)
	}
	if len(lt.giveUps) == 0 {
		timeout.missing = true
	} else {
		timeout.breach = slices.Max(lt.giveUps) > 5500
		close = close || near(slices.Max(lt.giveUps)/1000, 5.5)
	}
	outcome := func(v verdict) expect.Outcome {
		switch {
		case v.breach:
			return expect.NotMet
		case v.missing:
			return expect.NotObservable
		}
		return expect.Met
	}
	want := map[string]expect.Outcome{"fails_over_within": outcome(over), "fails_back_within": outcome(back), "call_timeout_max": outcome(timeout)}
	got := map[string]expect.Outcome{}
	for _, e := range d.res.Expectations {
		if _, ok := want[e.Name]; ok {
			got[e.Name] = e.Outcome
			tab.add("expectation "+e.Name, string(want[e.Name]), fmt.Sprintf("%s: %s", e.Outcome, e.Observed))
		}
	}
	if close {
		t.Logf("a log figure is within 20 ms of its bound: outcomes %v not held to the log's %v", got, want)
		return
	}
	for name, w := range want {
		if g := got[name]; g != w {
			t.Errorf("%s: harness %q, the gateway's log %q", name, g, w)
		}
	}
}
