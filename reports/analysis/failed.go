package analysis

import (
	"slices"
	"sort"
	"time"
)

// failedEndedIn reports whether a call of the upstream (any kind: live,
// tagged or health check) that failed ended in [from, to], or one that
// failed has no recorded end and arrived by to: a failure the breaker may
// have acted on in that span. The load-shedding witnesses and the
// half-open's held runs both ask it, once per refusal or run, so the
// upstream's failures are indexed once by end (a search, not a scan from
// the first call).
func (u *upstreamRun) failedEndedIn(from, to time.Duration) bool {
	if !u.failIndexed {
		u.indexFailures()
	}
	if len(u.failUnended) > 0 && u.failUnended[0] <= to {
		return true
	}
	i := sort.Search(len(u.failEnds), func(i int) bool { return u.failEnds[i] >= from })
	return i < len(u.failEnds) && u.failEnds[i] <= to
}

// indexFailures builds failedEndedIn's index from the upstream's calls.
func (u *upstreamRun) indexFailures() {
	for _, i := range u.calls {
		k := &u.c.calls[i]
		switch {
		case !k.failed:
		case k.hasEnd:
			u.failEnds = append(u.failEnds, k.end)
		default:
			u.failUnended = append(u.failUnended, k.t)
		}
	}
	slices.Sort(u.failEnds)
	slices.Sort(u.failUnended)
	u.failIndexed = true
}
