package analysis

import (
	"fmt"
	"maps"
	"slices"

	"github.com/halfopen/rehearse/reports/num"
)

// statements says the findings in words a postmortem reader gets.
func (r *Resilience) statements() []string {
	out := []string{}
	for _, name := range slices.Sorted(maps.Keys(r.Upstreams)) {
		f := r.Upstreams[name]
		if f.RetriedShare != nil && *f.RetriedShare > 0 {
			s := fmt.Sprintf("%s: %.0f%% of the %d client requests that reached it were retried, up to %d attempts each (%s)",
				name, *f.RetriedShare*100, f.Requests-f.Distribution["0"], f.MaxAttempts, "first call included")
			if f.AmplificationDuring != nil && f.AmplificationBefore != nil {
				s += fmt.Sprintf("; %.2f attempts per request during the fault against %.2f before", *f.AmplificationDuring, *f.AmplificationBefore)
			}
			out = append(out, s+".")
		}
		if b := f.Backoff; b.Retries > 0 {
			s := fmt.Sprintf("%s: waits before retries %s / %s / %s (min / median / max)", name, num.Ms(*b.MinMs), num.Ms(*b.P50Ms), num.Ms(*b.MaxMs))
			switch {
			case b.Grows == nil:
			case *b.Grows:
				s += ", growing from one retry to the next (exponential backoff)"
			default:
				s += ", not growing (no exponential backoff)"
			}
			if j := b.Jitter; j.Full != nil && *j.Full {
				s += fmt.Sprintf("; random between zero and a cap before each of %d retry positions tested (full jitter)", len(j.Tests))
			}
			out = append(out, s+".")
		}
		if j := f.Backoff.Jitter; j.Full != nil && !*j.Full {
			for _, t := range j.Tests {
				if !t.Full {
					out = append(out, fmt.Sprintf("%s: the waits before retry %d are not full jitter (random between zero and a cap): %d waits up to %s, Kolmogorov–Smirnov distance %.2f from uniform where %.2f is the most the test accepts.",
						name, t.Retry, t.Waits, num.Ms(t.MaxMs), t.D, t.Critical))
					break
				}
			}
		}
		out = append(out, lockstepText(name, f.Lockstep)...)
		out = append(out, PrefixAll(name+": ", f.Writes.Examples)...)
		if n := f.Writes.PutDelete.WithoutKey; n > 0 {
			out = append(out, fmt.Sprintf("%s: %d PUT/DELETE requests reached it more than once without an idempotency key.", name, n))
		}
		if n := f.Writes.PostPatch.InconsistentKey + f.Writes.PutDelete.InconsistentKey; n > 0 {
			out = append(out, fmt.Sprintf("%s: %d write requests were retried with a different or missing idempotency key on some attempt.", name, n))
		}
		if d := f.Deadlines; d.OrphanedCalls > 0 {
			out = append(out, fmt.Sprintf("%s: %d calls were still running after the client's exchange had ended (orphaned), up to %s past it.",
				name, d.OrphanedCalls, num.Ms(*d.PastAnswerMs.Max)))
		}
	}
	if r.ClientDeadlineFirst > 0 {
		out = append(out, fmt.Sprintf("%d client requests gave up at their own deadline before the gateway answered: the gateway's deadline is longer than the client's.", r.ClientDeadlineFirst))
	}
	c := r.Cost
	if c.CallsAmplification != nil {
		s := fmt.Sprintf("Cost per completed request: %.2f upstream calls during faults against %.2f before (×%.2f)",
			*c.CallsPerCompletedDuring, *c.CallsPerCompletedBefore, *c.CallsAmplification)
		if c.TokensAmplification != nil {
			s += fmt.Sprintf("; %.0f tokens against %.0f (×%.2f)", *c.TokensPerCompletedDuring, *c.TokensPerCompletedBefore, *c.TokensAmplification)
		}
		out = append(out, s+".")
	} else if c.WorkWithoutCompletion {
		out = append(out, fmt.Sprintf("During faults the upstreams received %d calls (%d tokens) and no client request completed.", c.CallsDuring, c.TokensDuring))
	}
	return out
}

// PrefixAll prefixes every string of ss with p.
func PrefixAll(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s + "."
	}
	return out
}

// lockstepText says whether an upstream's retries were in lockstep, and,
// where they coincided only as much as the replay's send schedule made
// them, that the schedule did it.
func lockstepText(name string, l LockstepFigures) []string {
	switch {
	case l.Lockstep == nil:
		return nil
	case *l.Lockstep && l.Basis == "schedule":
		return []string{fmt.Sprintf("%s: retries in lockstep: %.0f%% of %d retries started within %s of another request's retry (%d pairs), where the same retries timed from their own requests' sends on this replay's send schedule would give %.0f%% (%.1f pairs).",
			name, *l.CoincidentShare*100, l.Retries, num.Ms(l.WindowMs), *l.Pairs, *l.ScheduleShare*100, *l.SchedulePairs)}
	case *l.Lockstep:
		return []string{fmt.Sprintf("%s: retries in lockstep: %.0f%% of %d retries started within %s of another request's retry, where independent jittered retries would give %.0f%%.",
			name, *l.CoincidentShare*100, l.Retries, num.Ms(l.WindowMs), *l.IndependentShare*100)}
	case l.Basis == "schedule" && *l.CoincidentShare > 1.5**l.IndependentShare:
		// Coinciding more than independent retries would, but no more than
		// the sends did: the replay's grid, not the gateway.
		return []string{fmt.Sprintf("%s: not in lockstep: %.0f%% of the retries started within %s of another request's retry, but the replay's own send schedule gives %.0f%% to retries timed from their own requests' sends (waits that are multiples of the send spacing meet other sends by construction; replay.schedule: jittered or poisson avoids it).",
			name, *l.CoincidentShare*100, num.Ms(l.WindowMs), *l.ScheduleShare*100)}
	}
	return nil
}
