package analysis

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSaturationTrend is the saturation test's worst case: the
// Mann–Kendall statistic and Theil–Sen slope over saturationMaxN points
// (any longer window is sampled down to it), as each analysis runs it
// up to three times (latency, upstream latency, in flight).
func BenchmarkSaturationTrend(b *testing.B) {
	rnd := rand.New(rand.NewPCG(1, 2))
	xs, ys := make([]float64, saturationMaxN), make([]float64, saturationMaxN)
	for i := range xs {
		xs[i], ys[i] = float64(i)/10, 20+rnd.Float64()*5
	}
	b.ReportAllocs()
	for b.Loop() {
		trend(xs, ys)
	}
}

// BenchmarkScheduleLockstep is the lockstep test against the send
// schedule for n retries (3 per request, fixed waits on a 200 ms grid):
// the observed statistic and its permutations (40, fewer beyond
// gridWork/n).
func BenchmarkScheduleLockstep(b *testing.B) {
	for _, n := range []int{3_000, 30_000, 300_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			l := newRetryLog()
			var retries []retryStart
			for i := range n / 3 {
				sent := int64(i) * int64(200*time.Millisecond)
				l.reqs = append(l.reqs, rReq{seq: uint64(i), sent: sent})
				for k, w := range []int64{1, 3, 7} {
					retries = append(retries, retryStart{sent + w*int64(time.Second) + int64(k+1)*int64(time.Millisecond), uint64(i)})
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				var f LockstepFigures
				l.scheduleLockstep(&f, retries, int64(LockstepWindow))
			}
		})
	}
}
