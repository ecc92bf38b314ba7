package analysis

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each bounded or unknown figure says which evidence set each end
// (basis.go): an end's moment is the bound it set, exact figures carry no
// basis, and every bounded figure has one.

// checkBases fails t with every problem BasisProblems finds in ep.
func checkBases(t *testing.T, name string, ep *Episode) {
	t.Helper()
	for _, p := range BasisProblems(ep) {
		t.Errorf("%s: %s", name, p)
	}
}

// noProbeRun: three failures trip the breaker at 1.101 s, every request
// is turned away until 4.1 s and traffic resumes at 4.15 s with quick
// answers: a timer or an uncounted quick probe closed it.
func noProbeRun() *simRun {
	r := newSimRun(1000, 4000, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 4150)
	r.passFrom(4150, 6000, 0.5, 200)
	return r
}

// trialRun: the same storm with two failed trials a second apart (a
// breaker seen to judge its trials) before the quick one at 4.15 s.
func trialRun() *simRun {
	r := newSimRun(1000, 4000, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 2150)
	r.pass(2150, 0.5, 503)
	r.blockFrom(2200, 3150)
	r.pass(3150, 0.5, 503)
	r.blockFrom(3200, 4150)
	r.passFrom(4150, 6000, 0.5, 200)
	return r
}

// TestBasisClose: each way a close is bounded names the observation that
// set each end, at the bound's moment.
func TestBasisClose(t *testing.T) {
	cases := []struct {
		name     string
		run      *simRun
		min, max string // evidence of each end
		s2c      string // in successes_to_close's basis
	}{
		// A timer or an uncounted quick probe: from the last refusal,
		// no latest moment.
		{"no probe", noProbeRun(), "last_refused_sent", "none", "no success the open breaker let through ended"},
		// A success, and a call let through beside it still in flight
		// when traffic resumed: from that success to that call's end.
		{"pending", halfOpenJournal(2900), "success_end", "pending_end", "still in flight"},
		// Both answers back before traffic resumed: from the first
		// success to the first call with more in flight together than
		// the half-open let through at once (one giving permits back
		// may have let the resumed calls in on them).
		{"one of", halfOpenJournal(2340), "first_success_end", "permits_exceeded", "several successes"},
		// A judged quick trial: from its arrival (a breaker may judge
		// the head), no latest moment.
		{"trial", trialRun(), "trial_arrival", "none", ""},
	}
	for _, c := range cases {
		ep, _ := c.run.cycle(t)
		checkBases(t, c.name, ep)
		b := ep.Bases["closed_after_recovery_s"]
		if b == nil || b.Min == nil || b.Max == nil {
			t.Errorf("%s: close %s has no basis", c.name, bounds(ep.CloseBoundsS))
			continue
		}
		if b.Min.Evidence != c.min || b.Max.Evidence != c.max {
			t.Errorf("%s: close basis %s / %s, want %s / %s (%s)", c.name, b.Min.Evidence, b.Max.Evidence, c.min, c.max, b.Text())
		}
		if c.min == "last_refused_sent" && *b.Min.AtS != *ep.Observed.RefusedUntilS {
			t.Errorf("%s: the close's min is the last refusal %v, the observed layer says %v", c.name, *b.Min.AtS, *ep.Observed.RefusedUntilS)
		}
		sb := ep.Bases["successes_to_close"]
		if sb == nil || !strings.Contains(sb.Text(), c.s2c) {
			t.Errorf("%s: successes_to_close basis %q, want it to say %q", c.name, sb.Text(), c.s2c)
		}
	}
	// The trial: at least its own success, and a latest the evidence
	// leaves open, which the text explains.
	ep, _ := trialRun().cycle(t)
	sb := ep.Bases["successes_to_close"]
	if sb.Min.Evidence != "trial_success" || sb.Max.Evidence != "none" || !strings.Contains(ep.Bases["closed_after_recovery_s"].Max.Text, "trial answered in") {
		t.Errorf("trial: successes %s; close %s", sb.Text(), ep.Bases["closed_after_recovery_s"].Text())
	}
}

// TestBasisCooldownsAndSpacing: the wait that ended where traffic resumed
// runs from the last refusal less the latest (re)open to the resumed call
// less the earliest; the probe spacing's least is the closest two calls
// that may have been probes.
func TestBasisCooldownsAndSpacing(t *testing.T) {
	ep, _ := noProbeRun().cycle(t)
	checkBases(t, "no probe", ep)
	b := ep.Bases["cooldowns_s[0]"]
	if b == nil || b.Min.Evidence != "last_refused_sent-reopen_max" || *b.Min.AtS != 4.1 || *b.Min.FromS != *ep.OpenedAtS {
		t.Errorf("no probe: cooldown basis %+v, want from the open %v to the last refusal 4.1", b, *ep.OpenedAtS)
	}
	ep, _ = trialRun().cycle(t)
	checkBases(t, "trial", ep)
	if b := ep.Bases["cooldowns_s[2]"]; b == nil || *b.Min.FromS != 3.151 || *b.Max.AtS != 4.151 {
		t.Errorf("trial: third cooldown basis %+v, want from the failed trial's end 3.151 to the resumed call 4.151", b)
	}
	if ep.Bases["cooldowns_s[0]"] != nil || ep.Bases["cooldowns_s[1]"] != nil {
		t.Error("trial: the exact cooldowns carry a basis")
	}
	pb := ep.Bases["probe_interval_s.min"]
	if pb == nil || pb.Min.Evidence != "closest_possible_probes" || *pb.Min.FromS != 4.151 || *pb.Min.AtS != 4.201 || pb.Max.Evidence != "counted_probes" {
		t.Errorf("trial: probe spacing basis %+v", pb)
	}
}

// TestBasisExactFigures: a slow successful probe closed the breaker with
// requests turned away meanwhile: the close, the successes and the
// cooldowns are exact and carry no basis.
func TestBasisExactFigures(t *testing.T) {
	r := newSimRun(1000, 3000, 6000)
	r.passFrom(0, 1000, 0.5, 200)
	r.passFrom(1000, 1150, 0.5, 503)
	r.blockFrom(1150, 2150)
	r.pass(2150, 0.5, 503)
	r.blockFrom(2200, 3150)
	r.pass(3150, 200, 200) // a slow success: it closes at 3.351 s
	r.blockFrom(3200, 3400)
	r.passFrom(3400, 6000, 0.5, 200)
	ep, _ := r.cycle(t)
	checkBases(t, "exact", ep)
	if ep.CloseBoundsS != nil || ep.SuccessesToClose == nil {
		t.Fatalf("close bounds %s, successes %v: the setting is not the one meant (%s)", bounds(ep.CloseBoundsS), fp2(ep.SuccessesToClose), ep.Statement)
	}
	if len(ep.Bases) != 0 {
		t.Errorf("exact figures carry bases: %v", ep.Bases)
	}
}

// TestBasisFleet: on journals of real gateways every basis names its
// observation at its bound, and every bounded figure has one.
func TestBasisFleet(t *testing.T) {
	for _, p := range []string{"testdata/fleet-tagged-probes.jsonl.gz", "testdata/fleet-redis-partition.jsonl.gz"} {
		checkRunBases(t, p, analyzeGz(t, p))
	}
	// And the report fixtures (an HAProxy run, a shedder, an
	// interrupted run...).
	paths, err := filepath.Glob("../testdata/*.jsonl")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no report fixtures: %v", err)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Analyze(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		checkRunBases(t, p, a)
	}
}

func checkRunBases(t *testing.T, p string, a *Analysis) {
	t.Helper()
	for name, u := range a.Upstreams {
		for i, ep := range u.Episodes {
			checkBases(t, fmt.Sprintf("%s %s #%d", p, name, i+1), ep)
		}
	}
}
