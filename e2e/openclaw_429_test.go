package e2e

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"
)

// The 429 drill against OpenClaw's log: its cooldowns, probes, failover
// and fail-back.

// oc429 is the 429 drill as OpenClaw's log has it. Primary's profile
// cools down from each cooldown line until its cooldownUntil. A primary
// call while it cools down is a probe only when OpenClaw chose it as one
// (a "probe_cooldown_candidate" decision in the turn before the call);
// otherwise the turn chose primary before the cooldown was set (OpenClaw
// decides per turn, before its call) — admitted before, neither a probe
// nor a new cycle, though its 429 sets the cooldown again. The first
// call after a cooldown expired is the probe. The first 2xx of primary
// after the trip, whatever the turn, clears the cooldown (OpenClaw resets
// the profile's failure state on success): the fail-back.
type oc429 struct {
	cooldowns              []ocCooldown
	trip                   *ocFetch // the first 429
	probes, admittedBefore []*ocFetch
	back                   *ocFetch // nil when it never failed back
	// waits are the harness's kind of cooldown: from the failure before
	// each probe (of any primary call) to the probe's start.
	waits []float64
}

func read429(t *testing.T, tr *ocTruth) *oc429 {
	t.Helper()
	o := &oc429{cooldowns: tr.primaryCooldowns()}
	prim := tr.calls("primary")
	for _, f := range prim {
		if f.status == 429 {
			o.trip = f
			break
		}
	}
	if len(o.cooldowns) == 0 || o.trip == nil {
		t.Fatalf("OpenClaw's log has no cooldown of primary (%d) or no 429 (%v)", len(o.cooldowns), o.trip)
	}
	probeDecided := map[string]float64{} // trace -> its probe decision
	for _, d := range tr.decisions {
		if _, ok := probeDecided[d.trace]; !ok && d.provider == "primary" && d.decision == "probe_cooldown_candidate" {
			probeDecided[d.trace] = d.at
		}
	}
	fail := o.trip.end
	for _, f := range prim {
		if f.start <= o.trip.end {
			continue
		}
		// The cooldown in force when the call started: none logged yet
		// (a call started between the trip and its cooldown line) is a
		// turn admitted before it.
		until := math.Inf(1)
		for _, cd := range o.cooldowns {
			if cd.at <= f.start {
				until = cd.until
			}
		}
		if at, ok := probeDecided[f.trace]; f.start >= until || (ok && at <= f.start) {
			o.probes = append(o.probes, f)
			o.waits = append(o.waits, f.start-fail)
		} else {
			o.admittedBefore = append(o.admittedBefore, f)
		}
		if f.status/100 == 2 {
			o.back = f
			break
		}
		fail = f.over()
	}
	return o
}

// compare429 holds the 429 drill's breaker and failover figures to the
// log: the open, each cooldown and probe, failover and fail-back.
func compare429(c *comparer, tr *ocTruth, h *hRun, ep *analysis.Episode, a *analysis.Analysis) {
	t := c.t
	o := read429(t, tr)
	var ab, configured []string
	for _, f := range o.admittedBefore {
		ab = append(ab, fmt.Sprintf("%.3f s: %d", f.start, f.status))
	}
	c.note("primary's calls of turns admitted before a cooldown", fmt.Sprintf("%d %v", len(ab), ab), "—")
	for _, cd := range o.cooldowns {
		configured = append(configured, fmt.Sprintf("%.1f s", cd.until-cd.at))
	}
	c.note("cooldowns OpenClaw set (cooldownUntil − line)", strings.Join(configured, ", "), "—")
	c.exact("opened", true, ep.Opened)
	if ep.OpenedAtS == nil {
		t.Fatal("no open in the report")
	}
	// The tripping 429 ended at the fake between OpenClaw's start line for
	// the call and its response line (written when its event loop got to
	// the answer: 38 ms later at load 12): the open must lie between.
	c.within("open, after the fault started (s): the tripping 429, between its start and response lines", *ep.OpenedAtS-ep.StartS, o.trip.start-ep.StartS, o.trip.end-ep.StartS)
	cy := ep.Cycles[0]
	hi := cy.OpenedAtS
	if b := cy.OpenBoundsS; b != nil && b.Max != nil {
		hi = *b.Max
	}
	c.bound("open (s): OpenClaw's cooldown line within the open's bounds", o.cooldowns[0].at, cy.OpenedAtS, hi)
	hCooldowns, hProbes := compareProbes(c, o, ep)
	// Fail-back: the 2xx that ended the cooldown.
	if o.back != nil {
		c.num("fail-back, after the fault ended (s): primary's first 2xx", o.back.end-ep.EndS, val(ep.ClosedAtS)-ep.EndS, ep.ClosedAtS != nil)
		// The estimate is the closing probe's end (its stream's, ~0.6 s
		// after its head here); OpenClaw fails back on the head: the
		// close's bounds must hold it.
		if b := ep.CloseBoundsS; b != nil && b.Min != nil {
			hi := math.Inf(1)
			if b.Max != nil {
				hi = *b.Max
			}
			c.bound("fail-back (s): primary's first 2xx within the close's bounds", o.back.end, *b.Min, hi)
		}
	} else {
		c.exact("closed", false, ep.Closed)
	}
	compareFailover(c, tr, h, o.trip, o.back, ep.EndS)
	compareFailoverFigure(c, tr, ep, o.trip)
	hShape := fmt.Sprintf("%s: %d cycle(s), cooldowns %v s, probes %d (%d ok), closed %v", ep.Shape, len(ep.Cycles), roundAll(hCooldowns), len(hProbes), ep.ProbeOutcomes.OK, ep.Closed)
	c.note("shape", o.shape(), hShape)
}

// compareProbes holds each cooldown (failure to probe) and each probe to
// the log, and returns the harness's cooldowns and probes.
func compareProbes(c *comparer, o *oc429, ep *analysis.Episode) (hCooldowns []float64, hProbes []analysis.Probe) {
	for _, cyc := range ep.Cycles {
		hProbes = append(hProbes, cyc.Probes...)
		hCooldowns = append(hCooldowns, cyc.CooldownsS...)
	}
	c.exact("cooldowns (count)", len(o.waits), len(hCooldowns))
	for i, lc := range o.waits {
		c.num(fmt.Sprintf("cooldown %d, failure to probe (s)", i+1), lc, at(hCooldowns, i), i < len(hCooldowns))
	}
	okProbes := 0
	for _, p := range o.probes {
		if p.status/100 == 2 {
			okProbes++
		}
	}
	c.exact("probes (count)", len(o.probes), len(hProbes))
	c.exact("probes that succeeded", okProbes, ep.ProbeOutcomes.OK)
	for i, p := range o.probes {
		var got float64
		if i < len(hProbes) {
			got = hProbes[i].AtS
		}
		c.num(fmt.Sprintf("probe %d, after the open (s), status %d", i+1, p.status), p.start-o.trip.end, got-*ep.OpenedAtS, i < len(hProbes))
	}
	return hCooldowns, hProbes
}

// shape is the drill as the log has it, in one line, to compare run
// after run. Each cooldown is named by the line that set it (a later
// line may repeat the same cooldownUntil).
func (o *oc429) shape() string {
	out := []string{"open"}
	for i, p := range o.probes {
		cd := "—"
		for _, x := range o.cooldowns {
			if x.at < p.start {
				set := x
				for _, y := range o.cooldowns {
					if math.Abs(y.until-x.until) < 0.002 && y.at < set.at {
						set = y
					}
				}
				cd = fmt.Sprintf("%.0f s", set.until-set.at)
			}
		}
		out = append(out, fmt.Sprintf("cooldown %s, probe %d after %.1f s: %d", cd, i+1, o.waits[i], p.status))
	}
	if o.back != nil {
		out = append(out, "fail-back")
	}
	return strings.Join(out, " → ")
}

func roundAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(x*10) / 10
	}
	return out
}

func at(xs []float64, i int) float64 {
	if i < len(xs) {
		return xs[i]
	}
	return math.NaN()
}

// compareFailover: when the turns moved to backup and back, and how many
// backup served, from the fakes' calls against the log's.
func compareFailover(c *comparer, tr *ocTruth, h *hRun, trip, back *ocFetch, faultEnd float64) {
	lb, hb := tr.calls("backup"), h.upstreamCalls("backup")
	if len(lb) == 0 || len(hb) == 0 {
		c.exact("calls to backup", len(lb), len(hb))
		return
	}
	c.num("failover, the trip to the first call to backup (s)", lb[0].start-trip.end, hb[0].at-trip.end, true)
	end := func(calls []float64, until float64) (float64, bool) {
		last, ok := 0.0, false
		for _, x := range calls {
			if x <= until {
				last, ok = x, true
			}
		}
		return last, ok
	}
	var ls, hs []float64
	for _, f := range lb {
		ls = append(ls, f.start)
	}
	for _, x := range hb {
		hs = append(hs, x.at)
	}
	limit := math.Inf(1)
	if back != nil {
		limit = back.start + 0.5
	}
	l, _ := end(ls, limit)
	hv, ok := end(hs, limit)
	c.num("fail-back: the last call to backup, after the fault ended (s)", l-faultEnd, hv-faultEnd, ok)
	lt, ht := map[string]bool{}, map[int64]bool{}
	for _, f := range lb {
		lt[f.trace] = true
	}
	for _, x := range hb {
		ht[x.seq] = true
	}
	c.exact("turns served by backup", len(lt), len(ht))
	// A request the gateway's connection dropped before any status line,
	// with no provider call of its number, never became a turn (a
	// keep-alive connection closed as the replayer reused it: reset
	// before headers): the report counts it failed, rightly, and
	// OpenClaw's log has no turn to give up. Shown, not compared.
	notOK := 0
	var dropped []string
	calls := h.bySeq()
	for seq, cr := range h.clients {
		switch {
		case cr.Outcome == journal.OutcomeOK:
		case cr.Status == 0 && len(calls[seq]) == 0:
			dropped = append(dropped, fmt.Sprintf("seq %d: %s", seq, cr.Outcome))
		default:
			notOK++
		}
	}
	slices.Sort(dropped)
	c.note("client requests dropped before any provider call (no status line)", "—", fmt.Sprintf("%d %v", len(dropped), dropped))
	c.exact("turns given up (model fallback chain stopped) vs client requests not ok that became turns", len(tr.stopped), notOK)
}

// compareFailoverFigure holds the report's failover figure (episode
// "failover") to the log: when the turns moved to backup, how many it
// served (straight away, or after trying primary), the last it served,
// and when primary served a turn of its own again after the fault.
func compareFailoverFigure(c *comparer, tr *ocTruth, ep *analysis.Episode, trip *ocFetch) {
	f := ep.Failover
	if f == nil {
		c.rows = append(c.rows, [4]string{"report: failover", "backup served turns", "absent", "OFF"})
		c.errorf("the report has no failover figure for primary's episode")
		return
	}
	turns := tr.turns()
	served, after, skipped := 0, 0, 0
	var firstBackup, lastBackup float64 = math.Inf(1), math.Inf(-1)
	for _, fs := range turns {
		last := fs[len(fs)-1]
		if last.provider != "backup" {
			continue
		}
		served++
		if fs[0].provider == "primary" {
			after++
		} else {
			skipped++
		}
		for _, x := range fs {
			if x.provider == "backup" {
				firstBackup = min(firstBackup, x.start)
				lastBackup = max(lastBackup, x.start)
			}
		}
	}
	c.note("report: failover statement", "—", f.Statement)
	c.exact("report: turns served by backup (requests_served)", served, f.Served)
	c.exact("report: of them, after trying primary (after_primary)", after, f.AfterPrimary)
	c.exact("report: of them, primary cooling down (primary_skipped)", skipped, f.PrimarySkipped)
	if served > 0 {
		c.num("report: failed over, after the trip (s)", firstBackup-trip.end, val(f.FailedOverAtS)-trip.end, f.FailedOverAtS != nil)
		c.num("report: last call to backup, after the fault ended (s)", lastBackup-ep.EndS, val(f.LastFallbackAtS)-ep.EndS, f.LastFallbackAtS != nil)
	}
	// Primary serving a turn of its own again after the fault ended.
	back := math.NaN()
	for _, x := range tr.calls("primary") {
		if x.start >= ep.EndS && x.status/100 == 2 {
			back = x.start
			break
		}
	}
	if !math.IsNaN(back) {
		c.exact("report: failed back", true, f.FailedBack)
		c.num("report: failed back, after the fault ended (s)", back-ep.EndS, val(f.FailedBackAtS)-ep.EndS, f.FailedBackAtS != nil)
	} else {
		c.exact("report: failed back", false, f.FailedBack)
	}
}
