package reports

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// fixedWaits is a gateway retrying a failing upstream after fixed 1, 2
// and 4 s waits (4 attempts, the last one answered), the second AI
// gateway of issue 28; tick > 0 holds each retry instead until the next
// multiple of tick (retries released together). sends are the client's
// send times.
func fixedWaits(sends []time.Duration, tick time.Duration) *retrySim {
	s := &retrySim{tick: tick}
	s.fault(0, sends[len(sends)-1]+time.Second)
	waits := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	for _, at := range sends {
		s.request(at, "GET", "/tools/orders", "", 4, func(n int) time.Duration { return waits[n-1] }, 200)
	}
	return s
}

// gridSends are n sends at rate on the fixed grid, or jittered in each
// slot, or Poisson (exponential gaps), from a fixed seed.
func gridSends(n int, rate float64, schedule string) []time.Duration {
	rnd := rand.New(rand.NewPCG(7, 28))
	slot := time.Duration(float64(time.Second) / rate)
	out := make([]time.Duration, n)
	var t time.Duration
	for i := range out {
		switch schedule {
		case "fixed":
			out[i] = time.Duration(i) * slot
		case "jittered":
			out[i] = time.Duration(i)*slot + time.Duration(rnd.Int64N(int64(slot)))
		case "poisson":
			t += time.Duration(rnd.ExpFloat64() * float64(slot))
			out[i] = t
		}
	}
	return out
}

// TestLockstepGrid: fixed 1, 2, 4 s retry waits at 5 req/s on the fixed
// grid start within 10 ms of another request's retry nearly always (the
// waits are multiples of the 200 ms spacing), which the Poisson
// comparison called lockstep; against the replay's own send times they
// are not. The same gateway on jittered and Poisson sends is not in
// lockstep either, and a gateway that releases its retries together at
// each whole second is, on every schedule.
func TestLockstepGrid(t *testing.T) {
	for _, schedule := range []string{"fixed", "jittered", "poisson"} {
		t.Run(schedule, func(t *testing.T) {
			sends := gridSends(100, 5, schedule)
			a := fixedWaits(sends, 0).analyse(t)
			l := a.Resilience.Upstreams["orders"].Lockstep
			if l.Lockstep == nil || *l.Lockstep || l.Basis != "schedule" {
				t.Fatalf("fixed waits read as lockstep: %+v (share %v, schedule %v, pairs %v vs %v)", l, *l.CoincidentShare, *l.ScheduleShare, *l.Pairs, *l.SchedulePairs)
			}
			if l.Retries != 300 {
				t.Errorf("retries %d", l.Retries)
			}
			if schedule == "fixed" {
				// What the issue saw: nearly all coincide, far more than
				// independent retries would; the grid gives as much.
				if *l.CoincidentShare < 0.9 || *l.IndependentShare > 0.5 || *l.ScheduleShare < 0.9 {
					t.Errorf("fixed grid: share %v, independent %v, schedule %v", *l.CoincidentShare, *l.IndependentShare, *l.ScheduleShare)
				}
				if !strings.Contains(strings.Join(a.Resilience.Statements, "\n"), "not in lockstep") {
					t.Errorf("statements do not say the grid made the coincidence:\n%s", strings.Join(a.Resilience.Statements, "\n"))
				}
			}

			a = fixedWaits(sends, time.Second).analyse(t)
			l = a.Resilience.Upstreams["orders"].Lockstep
			if l.Lockstep == nil || !*l.Lockstep || l.Basis != "schedule" {
				t.Fatalf("retries released together read as not in lockstep: %+v (pairs %v vs %v)", l, *l.Pairs, *l.SchedulePairs)
			}
			if !strings.Contains(strings.Join(a.Resilience.Statements, "\n"), "retries in lockstep") {
				t.Errorf("statements:\n%s", strings.Join(a.Resilience.Statements, "\n"))
			}
		})
	}
}
