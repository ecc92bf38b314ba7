package analysis

import (
	"sort"
	"time"
)

// A reopen the evidence can neither show nor rule out. Between two
// consecutive probes a and b with no reopen claimed (no failed probe
// followed by refusals, no refusal after the last answer before b:
// reopen.go), a failure that ended after a was let through, followed by
// a refusal before b arrived, leaves two readings standing: the half-open
// that let a through was at its limit when it refused, and that failure's
// answer (or another) freed the slot b took; or the breaker reopened on
// that failure (a breaker that counts every answer against the state it
// arrives in reopens on an older call's), refused while open, and a new
// half-open let b through after a whole cooldown. The second hides one
// wait: no figure is stated for it, so the cooldowns stated are the
// least there were and their count is bounded (cooldowns_count_bounds).
//
// One per gap: a second unseen wait in the same gap would need a
// half-open that let no call through while requests kept coming, and
// the family's half-opens let the first request that asks through.

// reopenUnseen reports whether a reopen between consecutive probes a and
// b of cy may have gone unseen; lo is where the segment's calls start.
// Only where live calls are the probes of a half-open, as for
// reopenCooldown.
func (u *upstreamRun) reopenUnseen(cy *cyc, out *Cycle, lo int, a, b int32) bool {
	switch {
	case out.ProbeSource != "live":
		return false
	case out.Shape != ShapeLiveProbe && out.Shape != ShapeLiveProbes && out.Shape != ShapeUnknown:
		return false
	}
	c := u.c
	bt := c.calls[b].t
	since := u.letFrom(a) - u.slack
	first := time.Duration(-1) // the earliest failure it can have reopened on
	for _, i := range u.calls[lo:] {
		k := &c.calls[i]
		if k.t >= bt {
			break
		}
		if !k.failed || k.health || !k.hasEnd || k.end <= since || k.end >= bt {
			continue
		}
		if first < 0 || k.end < first {
			first = k.end
		}
	}
	if first < 0 {
		return false
	}
	// A refusal sent after that failure ended (a slack's noise) and
	// before b arrived: the breaker turned requests away then.
	j := sort.Search(len(cy.blockedAt), func(j int) bool { return cy.blockedAt[j] > first-u.slack })
	return j < len(cy.blockedAt) && cy.blockedAt[j] < bt
}

// unseenWait reports whether count bounds (CooldownsCountBounds) leave a
// wait unstated: the cooldowns stated are then the least there were.
func unseenWait(count *Bounds) bool {
	return count != nil && count.Min != nil && count.Max != nil && *count.Max > *count.Min
}
