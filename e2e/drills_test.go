package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/analysis"
)

// Tolerances, with their reasons.
const (
	// spacingTol bounds the error of a measured check spacing: HAProxy's
	// own timers are millisecond-exact, the rest is two processes' clocks
	// read on a loaded 2-core machine (scheduling delay of the upstream's
	// accept and of HAProxy's task loop).
	spacingTol = 100 * time.Millisecond
	// transitionTol bounds how far the black-box open/close may sit from
	// HAProxy's logged transition: the black-box open is the next client
	// request to that upstream (one inter-arrival, up to ~0.5 s for a route
	// that gets a random 35 % share of 20 req/s), plus the time the test
	// takes to read HAProxy's stderr.
	transitionTol = 600 * time.Millisecond
	// metricsTol bounds how far the metrics may show a transition before
	// the black box does: the black-box open can follow the real one by
	// a call in flight that failed after the checks took the server down.
	// How far after it they may show it is measured per transition
	// (metricsLagBound), not a constant.
	metricsTol = 600 * time.Millisecond
	// scrapeInterval is the drills' metrics interval: the sample gap
	// of an unloaded machine, and what a missing previous sample counts.
	scrapeInterval = 250 * time.Millisecond
)

// opener says which of HAProxy's two detectors took the server down.
type opener string

const (
	openedPassive opener = "passive (observe layer7: error-limit consecutive errors)"
	openedChecks  opener = "active (fall failed health checks)"
)

// figures is the measured-vs-configured record of one drill, logged as the
// table that docs/gateways.md and the report quote.
type figures struct {
	rows [][3]string
}

func (f *figures) add(what, configured string, measured any) {
	f.rows = append(f.rows, [3]string{what, configured, fmt.Sprint(measured)})
}

func (f *figures) log(t *testing.T, name string) {
	var b strings.Builder
	fmt.Fprintf(&b, "measured vs configured, %s:\n| figure | configured | measured |\n|---|---|---|\n", name)
	for _, r := range f.rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], r[1], r[2])
	}
	t.Log(b.String())
}

// runView is what the assertions read: the analysis, the journal, and
// HAProxy's own record of its state changes.
type runView struct {
	t      *testing.T
	h      *haproxy
	res    *rehearsal.Result
	events []journal.Event
	// stopAt is when the harness began to stop (the journal's "stop"
	// phase), in run time: from then on the upstreams close, and HAProxy
	// marking a server DOWN for "Connection refused" is the harness
	// shutting down, not the breaker under test.
	stopAt float64
	fig    *figures
	// inFlightAllowance is how many more errors than error-limit may
	// precede the open: calls already forwarded when HAProxy counted the
	// limit (slow answers only).
	inFlightAllowance int
}

func newView(t *testing.T, h *haproxy, res *rehearsal.Result) *runView {
	t.Helper()
	events, _, err := journal.ReadFile(filepath.Join(res.Dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	stopAt := math.Inf(1)
	for _, e := range events {
		if p, ok := e.Payload.(*journal.Phase); ok && p.Name == "stop" {
			stopAt = e.T.Seconds()
		}
	}
	return &runView{t: t, h: h, res: res, events: events, stopAt: stopAt, fig: &figures{}}
}

// runTime converts a wall-clock instant to run time.
func (v *runView) runTime(at time.Time) float64 {
	return at.Sub(v.res.Analysis.Run.WallStart).Seconds()
}

// episode returns the upstream's only episode.
func (v *runView) episode(up string) *analysis.Episode {
	v.t.Helper()
	ua := v.res.Analysis.Upstreams[up]
	if ua == nil || len(ua.Episodes) != 1 {
		v.t.Fatalf("upstream %s: want one episode, analysis has %+v", up, ua)
	}
	return ua.Episodes[0]
}

// changes returns HAProxy's changes to state for up within [from, to) run
// time, and never from the moment the harness began to stop.
func (v *runView) changes(up, state string, from, to float64) []serverChange {
	to = math.Min(to, v.stopAt)
	var out []serverChange
	for _, c := range v.h.Changes(up) {
		if at := v.runTime(c.At); c.State == state && at >= from && at < to {
			out = append(out, c)
		}
	}
	return out
}

// failedCall is the analysis's definition of a failed upstream call as
// the gateway saw it, on one journal record.
func failedCall(p *journal.UpstreamRequest) bool {
	return p.Status >= 500 || p.Status == 429 || (p.Outcome != journal.OutcomeUpstreamComplete && p.Outcome != "")
}

// streaks counts, from the journal, what HAProxy's detectors had counted
// when the server went down at openAt: errors since the last passing health
// check or successful live response (a passing check clears observe
// layer7's consecutive-error count, and so does a good response), and
// failed health checks since the last passing one. An error is a failed
// live call (as the analysis defines it, including calls HAProxy gave up on:
// the client got a 5xx before the upstream answered), or a client request HAProxy answered with an error of its own although it
// never reached the upstream (a connection HAProxy could not use).
func (v *runView) streaks(up string, from, openAt float64) (errs, checkFails int) {
	errs, checkFails, _ = v.streakCalls(up, from, openAt)
	return errs, checkFails
}

// streakCalls is streaks with the [arrival, end] of each error of the
// final streak, in arrival order.
func (v *runView) streakCalls(up string, from, openAt float64) (errs, checkFails int, streak [][2]float64) {
	type creq struct {
		outcome  journal.Outcome
		fastFail bool
		done     float64
	}
	clients := map[uint64]creq{}
	reached := map[uint64]bool{}
	for _, e := range v.events {
		switch p := e.Payload.(type) {
		case *journal.ClientRequest:
			if p.Upstream == up {
				clients[p.Seq] = creq{p.Outcome, p.FastFail, p.Done.Seconds()}
			}
		case *journal.UpstreamRequest:
			if p.Upstream == up && p.Seq != nil {
				reached[*p.Seq] = true
			}
		}
	}
	type ev struct {
		at, end float64
		failed  bool
		check   bool
	}
	var evs []ev
	for _, e := range v.events {
		switch p := e.Payload.(type) {
		case *journal.UpstreamRequest:
			if p.Upstream != up {
				continue
			}
			failed := failedCall(p)
			if !failed && p.Seq != nil && !p.HealthCheck {
				c, ok := clients[*p.Seq]
				failed = ok && c.outcome == journal.OutcomeHTTP5xx && !c.fastFail && c.done < p.Done.Seconds()
			}
			evs = append(evs, ev{e.T.Seconds(), p.Done.Seconds(), failed, p.HealthCheck})
		case *journal.ClientRequest:
			if p.Upstream == up && !reached[p.Seq] && !p.FastFail && p.Outcome == journal.OutcomeHTTP5xx {
				evs = append(evs, ev{p.Sent.Seconds(), p.Done.Seconds(), true, false})
			}
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	// The analysis places an open at the end of the last failed call
	// before it (rounded to the millisecond), so that call arrived up to
	// a few milliseconds before opened_at_s; later ones were blocked.
	until := openAt + 0.002
	for _, x := range evs {
		if x.at < from || x.at > until {
			continue
		}
		switch {
		case x.check && x.failed:
			// A failed check lowers the health counter but leaves
			// observe layer7's error count alone.
			checkFails++
		case x.check:
			errs, checkFails, streak = 0, 0, streak[:0]
		case x.failed:
			errs++
			streak = append(streak, [2]float64{x.at, x.end})
		default:
			errs, streak = 0, streak[:0]
		}
	}
	return errs, checkFails, streak
}

// checkOpen asserts the open of one cycle against HAProxy's configuration
// and its log, and returns which detector fired.
func (v *runView) checkOpen(up string, ep *analysis.Episode, c *analysis.Cycle, from float64) opener {
	t, tm := v.t, v.h.Timing
	t.Helper()
	downs := v.changes(up, "DOWN", c.OpenedAtS-transitionTol.Seconds(), c.OpenedAtS+transitionTol.Seconds())
	if len(downs) != 1 {
		t.Errorf("black-box open at %.3fs: want one HAProxy DOWN within %s, got %d:\n%s", c.OpenedAtS, transitionTol, len(downs), v.h.Log())
		return ""
	}
	d := downs[0]
	errs, checks, streak := v.streakCalls(up, from, c.OpenedAtS)
	if d.Reason == "Health analyze" {
		want := fmt.Sprintf("Detected %d consecutive errors", tm.ErrorLimit)
		if !strings.Contains(d.Line, want) {
			t.Errorf("HAProxy's reason %q lacks %q", d.Line, want)
		}
		// Exactly error-limit; but calls already forwarded when HAProxy
		// counted the limit still fail: with slow answers, up to the
		// route's rate × timeout server of them come before the open.
		lo, hi := tm.ErrorLimit, tm.ErrorLimit+v.inFlightAllowance
		if len(streak) > tm.ErrorLimit {
			// Calls forwarded after the error-limit-th error had come
			// back, before HAProxy acted on it (a loaded machine: it
			// takes requests in before it reads the answer waiting on
			// its socket), fail too.
			limit := streak[tm.ErrorLimit-1][1]
			for _, x := range streak[tm.ErrorLimit:] {
				if x[0] > limit {
					hi++
				}
			}
		}
		// A bounded open (open_bounds_s: failures that fit the trip, or a
		// call let through before it reaching HAProxy's server late) is
		// held to its range: the errors before the earliest and the
		// latest moment it states.
		errsHi := errs
		if b := c.OpenBoundsS; b != nil && b.Max != nil && *b.Max > c.OpenedAtS {
			errsHi, _, _ = v.streakCalls(up, from, *b.Max)
		}
		if errsHi < lo || errs > hi {
			t.Errorf("open at %.3fs: %d–%d consecutive errors before it (its stated bounds %s), want error-limit %d (within [%d, %d])", c.OpenedAtS, errs, errsHi, boundsText(c.OpenBoundsS), tm.ErrorLimit, lo, hi)
		}
		return openedPassive
	}
	// A failed-check reason (Layer7 wrong status, Socket error, Layer7
	// timeout…): the checks got there first. HAProxy lowers one health
	// counter for both detectors' events, so after live errors fewer
	// than fall failed checks can suffice; never more.
	if checks < 1 || checks > tm.Fall {
		t.Errorf("open at %.3fs by health checks (%s): %d failed checks before it, want 1..fall %d", c.OpenedAtS, d.Reason, checks, tm.Fall)
	}
	return openedChecks
}

// checkProbes asserts HAProxy's check cadence on a cycle's probes: after
// a failed check while DOWN the next comes downinter after it completed,
// after a passing one (rising) fastinter after it. HAProxy schedules the
// next check when one completes, so the spacing is measured from the
// previous check's end.
func (v *runView) checkProbes(c *analysis.Cycle) (down, fast []float64) {
	t, tm := v.t, v.h.Timing
	t.Helper()
	if c.ProbeSource != "health_check" {
		t.Errorf("cycle at %.3fs: probe source %q, want health_check (HAProxy's checks are its probes)", c.OpenedAtS, c.ProbeSource)
	}
	if c.MaxProbesInFlight > 1 {
		t.Errorf("cycle at %.3fs: %d checks in flight, HAProxy runs one at a time", c.OpenedAtS, c.MaxProbesInFlight)
	}
	for i := 1; i < len(c.Probes); i++ {
		prev, cur := c.Probes[i-1], c.Probes[i]
		end := prev.DoneS
		if end == 0 {
			end = prev.AtS
		}
		gap := cur.AtS - end
		if prev.OK {
			// Rising (health between 0 and rise): fastinter.
			fast = append(fast, gap)
			if math.Abs(gap-tm.FastInter.Seconds()) > spacingTol.Seconds() {
				t.Errorf("check at %.3fs came %.3fs after a passing one ended, want fastinter %s ± %s", cur.AtS, gap, tm.FastInter, spacingTol)
			}
			continue
		}
		down = append(down, gap)
		// Fully DOWN: downinter; a check that failed while the health
		// counter was not yet at 0 is followed after fastinter.
		if gap < tm.FastInter.Seconds()-spacingTol.Seconds() || gap > tm.DownInter.Seconds()+2*spacingTol.Seconds() {
			t.Errorf("check at %.3fs came %.3fs after a failed one ended, want downinter %s (or fastinter %s) ± %s", cur.AtS, gap, tm.DownInter, tm.FastInter, spacingTol)
		}
	}
	if len(down) >= 3 {
		if med := median(down); math.Abs(med-tm.DownInter.Seconds()) > spacingTol.Seconds() {
			t.Errorf("median check spacing while DOWN %.3fs, want downinter %s ± %s", med, tm.DownInter, spacingTol)
		}
	}
	return down, fast
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// checkClose asserts a cycle closed after rise passing checks, next to
// HAProxy's UP.
func (v *runView) checkClose(up string, c *analysis.Cycle) {
	t, tm := v.t, v.h.Timing
	t.Helper()
	if c.ClosedAtS == nil {
		t.Errorf("cycle at %.3fs never closed", c.OpenedAtS)
		return
	}
	if c.SuccessesToClose == nil || *c.SuccessesToClose != tm.Rise {
		t.Errorf("cycle at %.3fs closed after %v passing checks, want rise %d", c.OpenedAtS, c.SuccessesToClose, tm.Rise)
	}
	ups := v.changes(up, "UP", *c.ClosedAtS-transitionTol.Seconds(), *c.ClosedAtS+transitionTol.Seconds())
	if len(ups) != 1 {
		t.Errorf("black-box close at %.3fs: want one HAProxy UP within %s, got %d", *c.ClosedAtS, transitionTol, len(ups))
	}
	if c.Leaked != 0 {
		t.Errorf("cycle at %.3fs: %d live calls reached the upstream while its server was DOWN", c.OpenedAtS, c.Leaked)
	}
}

// sampleGap is how long a metrics transition of up to state to, shown
// at at (run seconds: the end of the first scrape that showed the new
// state, as the journal stamps a sample), could have gone unseen: since
// the start of the scrape before it, which still read the old state.
// Each scrape is the interval after the one before on an unloaded
// machine; a loaded one delays the ticker and slows the exporter and the
// scrape (the journal records how long each took), and a metrics lag is
// only as exact as that gap. It fails the test when the journal's samples
// do not show that transition at at.
func (v *runView) sampleGap(up string, at float64, to string) float64 {
	v.t.Helper()
	stateOf := func(p *journal.MetricsSample) string {
		for _, st := range p.States {
			if st.Upstream == up {
				switch strings.ToLower(strings.ReplaceAll(st.State, "-", "_")) {
				case journal.StateOpen, "down":
					return journal.StateOpen
				case journal.StateHalfOpen, "halfopen":
					return journal.StateHalfOpen
				}
				return journal.StateClosed
			}
		}
		return ""
	}
	var prev *journal.Event
	for i := range v.events {
		e := &v.events[i]
		p, ok := e.Payload.(*journal.MetricsSample)
		if !ok || p.Error != "" || stateOf(p) == "" {
			continue
		}
		if math.Abs(e.T.Seconds()-at) <= 0.0005 { // at_s is rounded to the millisecond
			if got := stateOf(p); got != to || prev == nil || stateOf(prev.Payload.(*journal.MetricsSample)) == to {
				v.t.Errorf("metrics transition to %s at %.3fs: the journal's sample there shows %s, the one before %v", to, at, got, prev)
				return scrapeInterval.Seconds()
			}
			return at - (prev.T - prev.Payload.(*journal.MetricsSample).Took).Seconds()
		}
		prev = e
	}
	v.t.Errorf("metrics transition to %s at %.3fs: the journal has no metrics sample at that moment", to, at)
	return scrapeInterval.Seconds()
}

// unseen is how long after the black-box moment at the real transition
// may have been, as the journal shows it. An open (at: the end of the
// last failed call before the first request turned away) may have come
// as late as the first client request of the route HAProxy turned away
// after it: by its answer, HAProxy had the server down (with the checks
// taking the server down, anywhere in between: one inter-arrival of the
// route, or more on a loaded machine where HAProxy answers late). A
// close (at: the end of the passing check or call that closed it) came
// before HAProxy forwarded the next live call, by its arrival at the
// upstream. ok is false when the journal has no such request.
func (v *runView) unseen(up string, at float64, open bool) (d float64, ok bool) {
	const early = 0.002 // the analysis rounds moments to the millisecond
	reached := map[uint64]bool{}
	for _, e := range v.events {
		if p, isUp := e.Payload.(*journal.UpstreamRequest); isUp && p.Upstream == up && p.Seq != nil {
			reached[*p.Seq] = true
		}
	}
	first := math.Inf(1)
	for _, e := range v.events {
		switch p := e.Payload.(type) {
		case *journal.ClientRequest:
			// Turned away: HAProxy's own 503 for a server down (the
			// drills' fast-fail rule), not a call it failed to make.
			if open && p.Upstream == up && p.FastFail && !reached[p.Seq] && p.Sent.Seconds() >= at-early && p.Done > 0 {
				first = math.Min(first, p.Done.Seconds())
			}
		case *journal.UpstreamRequest:
			if !open && p.Upstream == up && !p.HealthCheck && p.Seq != nil && e.T.Seconds() >= at-early {
				first = math.Min(first, e.T.Seconds())
			}
		}
	}
	if math.IsInf(first, 1) {
		return 0, false
	}
	return math.Max(0, first-at), true
}

// metricsEps covers the millisecond rounding of the moments compared.
const metricsEps = 0.005

// checkMetrics asserts the exporter showed every black-box transition
// no later than the real transition can have been (unseen) plus the
// sample gap before the sample that showed it, and no more than
// metricsTol before it. A state that lasted less
// than one scrape interval (a flapping server UP for 120 ms between two
// DOWNs) can fall between two scrapes: such transitions are not required,
// and the metrics may then show fewer transitions than the black box, never
// more.
func (v *runView) checkMetrics(up string, ep *analysis.Episode) (openLag, closeLag, gaps, unseens []float64) {
	t := v.t
	t.Helper()
	mt := v.res.Analysis.Upstreams[up].MetricsTransitions
	// A state that lasts one scrape interval (plus scrape jitter) is in
	// at least one sample.
	visible := (scrapeInterval + 100*time.Millisecond).Seconds()
	// find returns the lag of the metrics transition nearest to at, and
	// the transition's moment.
	find := func(at float64, to string) (lag, shown float64, ok bool) {
		for _, m := range mt {
			if m.To == to && (!ok || math.Abs(m.AtS-at) < math.Abs(lag)) {
				lag, shown, ok = m.AtS-at, m.AtS, true
			}
		}
		return lag, shown, ok
	}
	check := func(what string, at float64, to string) {
		lag, shown, ok := find(at, to)
		gap := scrapeInterval.Seconds()
		if ok {
			gap = v.sampleGap(up, shown, to)
		}
		late, known := v.unseen(up, at, to == journal.StateOpen)
		if !known {
			t.Errorf("%s at %.3fs: the journal has no request that fixes how late the real transition can have been", what, at)
		}
		lim := late + gap + metricsEps
		if !ok || lag > lim || lag < -metricsTol.Seconds() {
			t.Errorf("%s at %.3fs: metrics lag %.3fs (found %v), want within [-%s, %.3fs] (the real transition up to %.3fs after the black box's, then the sample gap %.3fs); metrics %+v", what, at, lag, ok, metricsTol, lim, late, gap, mt)
		}
		if ok {
			gaps = append(gaps, gap)
			unseens = append(unseens, late)
		}
		if to == journal.StateOpen {
			openLag = append(openLag, lag)
		} else {
			closeLag = append(closeLag, lag)
		}
	}
	prevClose := math.Inf(-1)
	for i, c := range ep.Cycles {
		nextOpen := math.Inf(1)
		if i+1 < len(ep.Cycles) {
			nextOpen = ep.Cycles[i+1].OpenedAtS
		}
		openFor := math.Inf(1)
		if c.ClosedAtS != nil {
			openFor = *c.ClosedAtS - c.OpenedAtS
		}
		if openFor >= visible && c.OpenedAtS-prevClose >= visible {
			check("open", c.OpenedAtS, journal.StateOpen)
		}
		if c.ClosedAtS != nil {
			if openFor >= visible && nextOpen-*c.ClosedAtS >= visible {
				check("close", *c.ClosedAtS, journal.StateClosed)
			}
			prevClose = *c.ClosedAtS
		}
	}
	if len(mt) > 2*len(ep.Cycles) || len(mt) < 2 {
		t.Errorf("metrics show %d transitions for %d black-box cycles: %+v", len(mt), len(ep.Cycles), mt)
	}
	if len(openLag) == 0 {
		t.Errorf("no black-box transition lasted long enough to compare with the metrics: %+v", mt)
	}
	return openLag, closeLag, gaps, unseens
}

func fp(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprintf("%.3f", *p)
}

func ip(p *int64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

func ms(xs []float64) string {
	if len(xs) == 0 {
		return "—"
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	if math.Abs(hi-lo) < 0.0005 {
		return fmt.Sprintf("%.0f ms (n=%d)", lo*1000, len(xs))
	}
	return fmt.Sprintf("%.0f–%.0f ms (n=%d)", lo*1000, hi*1000, len(xs))
}

// checkBreakerDrill runs the assertions common to the drills where HAProxy
// takes the server down: every cycle opens by one of HAProxy's detectors
// with the configured count, probes at the configured cadence, closes
// after rise passing checks, leaks nothing, and the exporter agrees.
func (v *runView) checkBreakerDrill(up string, wantCycles int) *analysis.Episode {
	t, tm := v.t, v.h.Timing
	t.Helper()
	ep := v.episode(up)
	if !ep.Opened {
		t.Fatalf("%s never opened: %s\nhaproxy output:\n%s", up, ep.Statement, v.h.Log())
	}
	if wantCycles > 0 && len(ep.Cycles) != wantCycles {
		t.Errorf("%d open/close cycles, want %d: %s", len(ep.Cycles), wantCycles, ep.Statement)
	}
	if downs := v.changes(up, "DOWN", ep.StartS, math.Inf(1)); len(downs) != len(ep.Cycles) {
		t.Errorf("HAProxy went DOWN %d times, the black box saw %d opens", len(downs), len(ep.Cycles))
	}
	from := ep.StartS
	var openers []string
	var consecutive []int
	var down, fast []float64
	for _, c := range ep.Cycles {
		o := v.checkOpen(up, ep, c, from)
		openers = append(openers, string(o))
		live, checks := v.streaks(up, from, c.OpenedAtS)
		if o == openedPassive {
			consecutive = append(consecutive, live)
		} else {
			consecutive = append(consecutive, -checks)
		}
		d, f := v.checkProbes(c)
		down, fast = append(down, d...), append(fast, f...)
		v.checkClose(up, c)
		if c.ClosedAtS != nil {
			from = *c.ClosedAtS
		}
	}
	if ep.Leaked != 0 {
		t.Errorf("leaked = %d, want 0", ep.Leaked)
	}
	openLag, closeLag, gaps, unseens := v.checkMetrics(up, ep)

	f := v.fig
	f.add("opened by", "error-limit or fall", strings.Join(dedupe(openers), "; "))
	f.add("errors before open (consecutive, since the last passing check)", fmt.Sprintf("error-limit %d (or fall %d checks, shown negative)", tm.ErrorLimit, tm.Fall), fmt.Sprint(consecutive))
	f.add("failures_before_open (run.json, since the fault started)", "≥ error-limit", ip(ep.FailuresBeforeOpen))
	f.add("check spacing while DOWN (after a failed check)", fmt.Sprintf("downinter %s", tm.DownInter), ms(down)+medianText(down))
	f.add("check spacing while rising (after a passing check)", fmt.Sprintf("fastinter %s", tm.FastInter), ms(fast))
	f.add("first check after the open", fmt.Sprintf("≤ fastinter %s (mark-down reschedules)", tm.FastInter), fp(ep.FirstProbeAfterOpen))
	f.add("successes_to_close", fmt.Sprintf("rise %d", tm.Rise), intp(ep.SuccessesToClose))
	f.add("leaked", "0", ep.Leaked)
	f.add("cycles (black box / HAProxy DOWNs)", "—", fmt.Sprintf("%d / %d", len(ep.Cycles), len(v.changes(up, "DOWN", ep.StartS, math.Inf(1)))))
	f.add("metrics lag open / close", fmt.Sprintf("within how late the transition can have been (%s) + the sample gap (%s)", ms(unseens), ms(gaps)), ms(openLag)+" / "+ms(closeLag))
	f.add("closed_after_recovery_s", "—", fp(ep.ClosedAfterRecoveryS))
	return ep
}

func medianText(xs []float64) string {
	if len(xs) == 0 {
		return ""
	}
	return fmt.Sprintf(", median %.0f ms", median(xs)*1000)
}

func intp(p *int) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

func dedupe(xs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// checkNotOpened asserts HAProxy kept the server UP through the fault and
// the report says so plainly.
func (v *runView) checkNotOpened(up string) *analysis.Episode {
	t := v.t
	t.Helper()
	ep := v.episode(up)
	if ep.Opened {
		t.Errorf("%s opened: %s", up, ep.Statement)
	}
	if !strings.HasPrefix(ep.Statement, "Did not open") {
		t.Errorf("statement %q, want it to say plainly that it did not open", ep.Statement)
	}
	if downs := v.changes(up, "DOWN", ep.StartS, math.Inf(1)); len(downs) != 0 {
		t.Errorf("HAProxy took the server down: %+v", downs)
	}
	if mt := v.res.Analysis.Upstreams[up].MetricsTransitions; len(mt) != 0 {
		t.Errorf("metrics show transitions: %+v", mt)
	}
	v.fig.add("opened", "HAProxy does not act on this", ep.Opened)
	v.fig.add("statement", "says so plainly", ep.Statement)
	return ep
}

// boundsText says stated bounds in seconds ("none" when exact).
func boundsText(b *analysis.Bounds) string {
	if b == nil || b.Min == nil || b.Max == nil {
		return "none"
	}
	return fmt.Sprintf("%.3f – %.3f s", *b.Min, *b.Max)
}
