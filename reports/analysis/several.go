package analysis

import (
	"container/heap"
	"time"
)

// Several calls in flight together are a witness for a half-open that
// admits several (shapeFacts.several) only when one half-open let them
// through. A call let through in one half-open can still be in flight
// when the breaker has reopened (on another call's failure: reopen.go)
// and the next half-open lets its own probe through: two calls overlap,
// yet each half-open admitted one. The split is the one probeFigures
// makes between consecutive probes: a refusal after the last answer
// before b, with none between, shows the half-open that admitted b began
// after the one that admitted a (reopenBetween). Whatever a half-open
// admits, the calls of one are let through in one stretch, so splitting
// the live calls at each such reopen and counting overlaps within each
// stretch counts only calls one half-open let through together.

// severalInOneHalfOpen reports whether two or more of the live calls (in
// arrival order) one half-open let through were in flight together.
func (u *upstreamRun) severalInOneHalfOpen(cy *cyc, live []int32) bool {
	c := u.c
	h := &endHeap{} // ends of this stretch's calls still in flight
	for n, i := range live {
		k := &c.calls[i]
		for h.Len() > 0 && (*h)[0] <= k.t {
			heap.Pop(h)
		}
		if h.Len() > 0 {
			// A call of this stretch is in flight: i is let through
			// with it unless the breaker reopened since the previous
			// call was let through (an earlier one: the split there was
			// decided when that call came). Searched from the
			// upstream's first call: a failure of any earlier state can
			// have reopened it.
			if _, _, reopened := u.reopenBetween(cy, 0, live[n-1], i); !reopened {
				return true
			}
			*h = (*h)[:0]
		}
		end := k.end
		if end <= k.t {
			end = k.t + time.Nanosecond // an unknown end counts at its arrival only
		}
		heap.Push(h, end)
	}
	return false
}
