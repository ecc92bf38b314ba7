package inject

import (
	"math/rand/v2"
	"time"
)

// sample draws one delay from l; nil or all-zero means none.
func (l *LatencyConfig) sample(r *rand.Rand) time.Duration {
	if l == nil {
		return 0
	}
	switch {
	case l.Uniform != nil:
		lo, hi := l.Uniform.Min.D(), l.Uniform.Max.D()
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
	case l.Percentiles != nil:
		p := l.Percentiles
		p50, p90, p99 := float64(p.P50), float64(p.P90), float64(p.P99)
		// Inverse of a piecewise-linear CDF through the points documented
		// on PercentilesConfig.
		xs := [...]float64{0, 0.5, 0.9, 0.99, 1}
		ys := [...]float64{p50 / 2, p50, p90, p99, p99 + (p99 - p90)}
		u := r.Float64()
		for i := 1; i < len(xs); i++ {
			if u <= xs[i] {
				f := (u - xs[i-1]) / (xs[i] - xs[i-1])
				return time.Duration(ys[i-1] + f*(ys[i]-ys[i-1]))
			}
		}
		return time.Duration(ys[len(ys)-1])
	default:
		return l.Fixed.D()
	}
}

func (l *LatencyConfig) isZero() bool {
	return l == nil || (l.Fixed == 0 && l.Uniform == nil && l.Percentiles == nil)
}
