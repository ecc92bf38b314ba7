package compare

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/num"
)

// values collects a side's distinct values of a fact, in run order.
func values(runs []*SideRun, get func(r *SideRun) string) []string {
	var out []string
	for _, r := range runs {
		if v := get(r); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// gomaxprocsFact is the key of the platform fact of the harness's Go
// processors.
const gomaxprocsFact = "go processors (GOMAXPROCS)"

// facts lists the platform facts of each side.
func (c *Comparison) facts() {
	pf := func(f func(p *analysis.PlatformInfo) string) func(r *SideRun) string {
		return func(r *SideRun) string {
			if r.A.Platform == nil {
				return "—"
			}
			return num.OrDash(f(r.A.Platform))
		}
	}
	msP := func(p *float64) string {
		if p == nil {
			return ""
		}
		return num.Ms(*p)
	}
	defs := []struct {
		key string
		get func(r *SideRun) string
	}{
		{"os", pf(func(p *analysis.PlatformInfo) string { return p.OS })},
		{"arch", pf(func(p *analysis.PlatformInfo) string { return p.Arch })},
		{"kernel", pf(func(p *analysis.PlatformInfo) string { return p.Kernel })},
		{"cpu", pf(func(p *analysis.PlatformInfo) string { return p.CPU })},
		{"cpus", pf(func(p *analysis.PlatformInfo) string {
			if p.NumCPU == 0 {
				return ""
			}
			return fmt.Sprint(p.NumCPU)
		})},
		// The harness's own processors: its send lateness and timer
		// figures depend on them as much as on the machine's CPUs.
		{gomaxprocsFact, pf(func(p *analysis.PlatformInfo) string {
			if p.GOMAXPROCS == 0 {
				return ""
			}
			return fmt.Sprint(p.GOMAXPROCS)
		})},
		{"go version", pf(func(p *analysis.PlatformInfo) string { return p.GoVersion })},
		{"hostname", pf(func(p *analysis.PlatformInfo) string { return p.Hostname })},
		{"timer lateness before the run (p50 / p99)", pf(func(p *analysis.PlatformInfo) string {
			if p.TimerP50Ms == nil {
				return ""
			}
			return msP(p.TimerP50Ms) + " / " + msP(p.TimerP99Ms)
		})},
	}
	for _, d := range defs {
		f := CompareFact{Key: d.key, A: values(c.sides[0], d.get), B: values(c.sides[1], d.get)}
		// Listed only when some run recorded it: runs from before the
		// harness recorded its processors say nothing of them.
		if d.key == gomaxprocsFact && slices.Equal(f.A, []string{"—"}) && slices.Equal(f.B, []string{"—"}) {
			continue
		}
		c.Facts = append(c.Facts, f)
	}
	keys := map[string]bool{}
	for _, runs := range c.sides {
		for _, r := range runs {
			if r.A.Platform != nil {
				for k := range r.A.Platform.TCPKeepalive {
					keys[k] = true
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		get := pf(func(p *analysis.PlatformInfo) string { return p.TCPKeepalive[k] })
		c.Facts = append(c.Facts, CompareFact{Key: k, A: values(c.sides[0], get), B: values(c.sides[1], get)})
	}
}

// config lists every configuration setting whose values differ, within a
// side or across: the scenario name, seed, gateway configuration, rate,
// harness version.
func (c *Comparison) config() {
	keys := map[string]bool{}
	for _, runs := range c.sides {
		for _, r := range runs {
			for k := range r.Config {
				keys[k] = true
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		get := func(r *SideRun) string {
			if v, ok := r.Config[k]; ok {
				return v
			}
			return "—"
		}
		f := CompareFact{Key: k, A: values(c.sides[0], get), B: values(c.sides[1], get)}
		if f.Differs() {
			c.Config = append(c.Config, f)
		}
	}
	if c.Config == nil {
		c.Config = []CompareFact{}
	}
}

// expectations counts each expectation's verdicts per side; a row is
// flagged when one side met it in every run and the other in none.
func (c *Comparison) expectations() {
	type tally struct {
		want string
		n    [2][2]int
	}
	byName := map[string]*tally{}
	var order []string
	for i, runs := range c.sides {
		for _, r := range runs {
			for _, e := range r.A.Expectations {
				t := byName[e.Name]
				if t == nil {
					t = &tally{want: e.Want}
					byName[e.Name] = t
					order = append(order, e.Name)
				}
				t.n[i][1]++
				if e.Passed {
					t.n[i][0]++
				}
			}
		}
	}
	c.Expectations = []CompareExpectation{}
	for _, n := range order {
		t := byName[n]
		e := CompareExpectation{Name: n, Want: t.want, A: t.n[0], B: t.n[1]}
		all := func(x [2]int) bool { return x[1] > 0 && x[0] == x[1] }
		none := func(x [2]int) bool { return x[1] > 0 && x[0] == 0 }
		e.Flag = (all(e.A) && none(e.B)) || (none(e.A) && all(e.B))
		if e.Flag {
			c.Flagged++
		}
		c.Expectations = append(c.Expectations, e)
	}
}

// explainKeys ties figure keys to the configuration settings that drive
// them (substrings of the dotted keys).
var explainKeys = map[string][]string{
	"opened_after_s":           {"breaker.window", "min_samples", "failure_ratio", "consecutive_failures", "replay.rate", "faults"},
	"failures_before_open":     {"breaker.window", "min_samples", "failure_ratio", "consecutive_failures", "replay.rate", "retry."},
	"first_probe_after_open_s": {"cooldown", "retry_after"},
	"probe_interval_s.min":     {"probe_interval", "probe_jitter", "replay.rate"},
	"probe_interval_s.p50":     {"probe_interval", "probe_jitter", "replay.rate"},
	"max_probes_in_flight":     {"instances", "redis", "coord"},
	"probes":                   {"probe_interval", "cooldown", "successes_to_close", "faults"},
	"leaked":                   {"probe", "instances", "redis"},
	"closed_after_recovery_s":  {"successes_to_close", "probe_interval", "cooldown", "distinct_workers"},
	"successes_to_close":       {"successes_to_close", "distinct_workers"},
	"retry_after_honoured":     {"retry_after"},
	"metrics_open_lag_s":       {"metrics.interval"},
	"metrics_close_lag_s":      {"metrics.interval"},
	"open_time_s":              {"cooldown", "probe_interval", "successes_to_close", "distinct_workers"},
	"amplification":            {"retry.", "fallback", "cooldown"},
	"amplification_overall":    {"retry.", "fallback", "cooldown"},
	"client_success_during":    {"cooldown", "probe_interval", "fallback", "retry."},
	"client_success_after":     {"cooldown", "probe_interval", "successes_to_close", "fallback"},
	"send_lateness":            {"replay.rate", "max_in_flight"},
	"sent":                     {"replay.rate", "replay.duration"},
}

// explain ties each flagged figure to the configuration differences and
// platform facts that differ.
func (c *Comparison) explain() {
	var platform []string
	for _, r := range c.Platform {
		if r.Delta == nil || r.A.Median == nil || r.B.Median == nil {
			continue
		}
		if r.Clear || r.Note != "" {
			platform = append(platform, fmt.Sprintf("%s: %s vs %s (median)", r.Label, FmtValue(*r.A.Median, r.Unit), FmtValue(*r.B.Median, r.Unit)))
		}
	}
	var facts []string
	for _, f := range c.Facts {
		// The hostname names the machine, not a property of it; the timers
		// measured before the run are compared as figures (c.Platform).
		if f.Key == "hostname" || strings.HasPrefix(f.Key, "timer lateness") || !f.Differs() {
			continue
		}
		facts = append(facts, fmt.Sprintf("%s: %s vs %s", f.Key, strings.Join(f.A, ", "), strings.Join(f.B, ", ")))
	}
	for _, r := range c.Rows {
		if !r.Flag {
			continue
		}
		what := "differs"
		if r.Delta != nil {
			what = FmtDelta(*r.Delta, r.Unit)
		}
		w := CompareWhy{Figure: fmt.Sprintf("%s: %s %s", r.Group, r.Label, what)}
		for _, cf := range c.Config {
			for _, sub := range explainKeys[r.Key] {
				if strings.Contains(cf.Key, sub) {
					w.Reasons = append(w.Reasons, fmt.Sprintf("configuration differs: %s is %s vs %s", cf.Key, strings.Join(cf.A, ", "), strings.Join(cf.B, ", ")))
					break
				}
			}
		}
		if r.Unit == UnitMs {
			for _, p := range platform {
				w.Reasons = append(w.Reasons, "the machine's timers differ: "+p)
			}
		}
		for _, f := range facts {
			w.Reasons = append(w.Reasons, "platform differs: "+f)
		}
		if len(w.Reasons) == 0 {
			w.Reasons = []string{"no configuration setting tied to this figure and no platform fact differs: look at the gateway itself (version, build) and at what the harness does not measure"}
		}
		c.Why = append(c.Why, w)
	}
	for _, e := range c.Expectations {
		if e.Flag {
			c.Why = append(c.Why, CompareWhy{Figure: "expectation " + e.Name, Reasons: []string{
				fmt.Sprintf("met in %d of %d runs vs %d of %d: see the flagged figures above", e.A[0], e.A[1], e.B[0], e.B[1])}})
		}
	}
}
