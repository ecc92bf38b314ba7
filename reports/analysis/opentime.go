package analysis

import (
	"math"

	"github.com/halfopen/rehearse/reports/num"
)

// openTime sets the episode's time open: how long the breaker turned live
// traffic away over the episode, every cycle's close less its open,
// summed. It is what a breaker costs the clients of an upstream that has
// recovered: a breaker that reopens on each failed probe and doubles its
// cooldown can keep an upstream out far longer than the fault lasted,
// and no single figure of a cycle shows it.
//
// The estimate sums the cycles' closed_at_s − opened_at_s. Where a
// cycle's open or close is only bounded (open_bounds_s, close_bounds_s),
// OpenTimeBoundsS bounds the sum: the least is every cycle from its
// latest open to its earliest close, the most from its earliest open to
// its latest close, with an unknown latest close (a ramp's) leaving the
// most unknown (null). A cycle that never closed leaves the time unknown
// (null): it was open at least until the run ended, which the verdict
// judges (open_time_max).
func openTime(ep *Episode) {
	if !ep.Opened || len(ep.Cycles) == 0 {
		return
	}
	var v, lo, hi float64
	exact := true
	for _, c := range ep.Cycles {
		if c.ClosedAtS == nil {
			return
		}
		openLo, openHi := c.OpenedAtS, c.OpenedAtS
		if b := c.OpenBoundsS; b != nil {
			exact = false
			if b.Min != nil {
				openLo = *b.Min
			}
			if b.Max != nil {
				openHi = *b.Max
			}
		}
		closeLo, closeHi := *c.ClosedAtS, *c.ClosedAtS
		if b := c.CloseBoundsS; b != nil {
			exact = false
			if b.Min != nil {
				closeLo = *b.Min
			}
			closeHi = math.Inf(1)
			if b.Max != nil {
				closeHi = *b.Max
			}
		}
		v += *c.ClosedAtS - c.OpenedAtS
		lo += max(closeLo-openHi, 0)
		hi += closeHi - openLo
	}
	ep.OpenTimeS = Ptr(num.Round3(v))
	if exact || lo >= hi {
		return
	}
	ep.OpenTimeBoundsS = &Bounds{Min: Ptr(num.Round3(lo))}
	if !math.IsInf(hi, 1) {
		ep.OpenTimeBoundsS.Max = Ptr(num.Round3(hi))
	}
}
