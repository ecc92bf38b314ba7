package analysis

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/halfopen/rehearse/reports/num"
)

// Lockstep against the replay's own send schedule.
//
// Retries timed from their own request (a fixed 1, 2, 4 s wait after each
// failure) land wherever the requests were sent. On a fixed send grid
// whose spacing divides the waits (200 ms at 5/s) they coincide with the
// retries of other requests by construction: the replay made them meet,
// not the gateway. The Poisson comparison of lockstep() cannot see that;
// this one can. Under the null hypothesis "each request's retries are
// timed from that request alone", moving a request's whole chain of
// retries to another retried request's send time (a permutation of the
// send times among neighbouring retried requests, gridBlock at a time)
// yields retries as likely as the ones observed. The coincidence the permuted runs show is what the send
// schedule gives by itself, whatever it was (fixed, jittered, Poisson, or
// a capture's own spacing): it is read from the journal's send times, not
// assumed. Retries that really are synchronised across requests (all at
// one wall-clock tick, a shared timer, a queue released at once) pile up
// far beyond it.

// The statistic is the number of pairs of retries within the window of
// each other. Pairs of one request's own retries are counted too: their
// spacing is the same in every permutation, so they add the same to the
// observed count and to each permuted one, and the comparison is of the
// pairs between requests alone.

const (
	// gridPermutations is how many permutations estimate the null's mean
	// and spread; 40 puts the standard deviation within about 11 % of the
	// truth (its relative standard error is 1/√(2·40)), which the 4-sd
	// margin below absorbs.
	gridPermutations = 40
	// gridWork bounds retries × permutations (each permutation sorts the
	// retries): from 200,000 retries on, gridMinPermutations.
	// BenchmarkScheduleLockstep: 30,000 retries take about 0.1 s.
	gridWork            = 2_000_000
	gridMinPermutations = 10
	// gridSD is the margin, in null standard deviations, beyond which the
	// observed pairs are lockstep: about 3·10⁻⁵ one-sided for a normal
	// null, still under 10⁻³ if the estimated spread is 25 % short.
	gridSD = 4
	// gridBlock is how many consecutive retried requests exchange their
	// retries in the null: 8 sends span several send slots (so that the
	// retries of a gateway releasing them together at one instant are
	// spread by the exchange) but little of the run (at 5/s, 1.6 s).
	gridBlock = 8
	// gridFactor is the practical threshold beside the statistical one,
	// as the Poisson test's: half again as many coinciding pairs as the
	// schedule gives, so that a huge run does not call a few per cent
	// more "lockstep".
	gridFactor = 1.5
)

// gridRetry is one retry: its request's chain and its start.
type gridRetry struct {
	chain int32
	t     int64
}

// scheduleLockstep judges f (lockstep() filled it from the Poisson
// comparison) against the replay's send schedule: the retries whose
// requests' send times the journal holds are compared with their chains
// moved onto other retried requests' sends. With fewer than
// LockstepMinRetries such retries f keeps the Poisson verdict.
func (l *retryLog) scheduleLockstep(f *LockstepFigures, retries []retryStart, w int64) {
	seqs := l.seqs()
	chainOf := map[uint64]int32{}
	var anchors []int64
	var offs []gridRetry // t relative to the chain's send
	for _, r := range retries {
		c, ok := chainOf[r.seq]
		if !ok {
			h, found := seqs.first(r.seq)
			if !found || l.reqs[h].sent <= 0 {
				continue
			}
			c = int32(len(anchors))
			chainOf[r.seq] = c
			anchors = append(anchors, l.reqs[h].sent)
		}
		offs = append(offs, gridRetry{c, r.t - anchors[c]})
	}
	if len(offs) < LockstepMinRetries || len(anchors) < 2 {
		return
	}
	buf := make([]gridRetry, len(offs)) // reused by every permutation
	obsPairs, obsShare := gridStat(offs, anchors, w, buf)
	k := min(gridPermutations, max(gridMinPermutations, gridWork/len(offs)))
	// Seeded from the input, so that a journal always renders the same.
	rng := rand.New(rand.NewPCG(uint64(len(offs)), uint64(anchors[0])))
	blocks := gridBlocks(anchors)
	perm := slices.Clone(anchors)
	var sum, sum2, shares float64
	for range k {
		for _, b := range blocks {
			rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
		}
		for _, b := range blocks {
			for i, c := range b {
				perm[c] = anchors[b[(i+1)%len(b)]]
			}
		}
		p, s := gridStat(offs, perm, w, buf)
		sum += float64(p)
		sum2 += float64(p) * float64(p)
		shares += s
	}
	mean := sum / float64(k)
	sd := math.Sqrt(max(sum2/float64(k)-mean*mean, 0) * float64(k) / float64(k-1))
	f.Basis = "schedule"
	f.Pairs = Ptr(obsPairs)
	f.SchedulePairs = Ptr(num.Round3(mean))
	f.ScheduleShare = Ptr(num.Round3(shares / float64(k)))
	f.CoincidentShare = Ptr(num.Round3(obsShare))
	// At least one pair more than the schedule gives: with a null that
	// never varies (sd 0), equal counts are no evidence.
	v := float64(obsPairs) > mean+max(gridSD*sd, 1) && float64(obsPairs) > gridFactor*mean
	f.Lockstep = &v
}

// gridBlocks groups the chains into runs of gridBlock consecutive sends
// (chain indexes, by send time; the last run takes the remainder when
// it would be short). Chains are exchanged only within a run, so that
// the null keeps what changes over the run — a fault ending (later
// requests retry less), the load of the machine (a loaded gateway
// answers later) — and tests only how the retries of neighbouring
// requests line up.
func gridBlocks(anchors []int64) [][]int32 {
	order := make([]int32, len(anchors))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmpInt64(anchors[a], anchors[b]) })
	var out [][]int32
	for len(order) > 0 {
		n := gridBlock
		if len(order) < 2*gridBlock {
			n = len(order)
		}
		out = append(out, order[:n])
		order = order[n:]
	}
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// gridStat places each retry at its chain's anchor plus its offset (in
// ts, as long as offs) and returns the pairs of retries within w of each
// other, and the share of retries with another request's retry within w.
func gridStat(offs []gridRetry, anchors []int64, w int64, ts []gridRetry) (pairs int64, share float64) {
	for i, o := range offs {
		ts[i] = gridRetry{o.chain, anchors[o.chain] + o.t}
	}
	slices.SortFunc(ts, func(a, b gridRetry) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return int(a.chain - b.chain)
	})
	lo := 0
	near := 0
	for i := range ts {
		for ts[i].t-ts[lo].t > w {
			lo++
		}
		pairs += int64(i - lo)
		if hasOther(ts, i, w) {
			near++
		}
	}
	return pairs, float64(near) / float64(len(ts))
}

// hasOther reports whether a retry of another chain lies within w of
// ts[i]. A chain's own retries within w are rare (hedging), so the scans
// stop quickly.
func hasOther(ts []gridRetry, i int, w int64) bool {
	for j := i - 1; j >= 0 && ts[i].t-ts[j].t <= w; j-- {
		if ts[j].chain != ts[i].chain {
			return true
		}
	}
	for j := i + 1; j < len(ts) && ts[j].t-ts[i].t <= w; j++ {
		if ts[j].chain != ts[i].chain {
			return true
		}
	}
	return false
}
