package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/halfopen/rehearse"
)

// Schedules of timing "rate" (Options.Schedule): where in time the rate's
// sends fall. A fixed grid is the default and the most precise; but a
// gateway whose retry waits are multiples of the grid (fixed 1, 2 and 4 s
// waits at 5/s, whose sends are 200 ms apart) then retries exactly on
// the replay's own sends, and its retries look in lockstep because of
// the replay (issue 28, item 8). The two random schedules keep the rate
// and put the sends on no common grid.
const (
	// ScheduleFixed sends request i at start + i/Rate (ConstantPacer).
	ScheduleFixed = "fixed"
	// SchedulePoisson draws exponential gaps of mean 1/Rate between sends
	// (PoissonPacer): a Poisson process of the same mean rate, as
	// independent clients would make; the count in a duration varies.
	SchedulePoisson = "poisson"
	// ScheduleJittered sends request i at a uniform moment within its
	// slot [i/Rate, (i+1)/Rate) (JitteredPacer): the count and the mean
	// rate are exact, the moments on no grid.
	ScheduleJittered = "jittered"
)

// Schedules lists the schedule kinds, the default first.
func Schedules() []string { return []string{ScheduleFixed, SchedulePoisson, ScheduleJittered} }

// NewRatePacer returns the pacer of a schedule kind at rate requests per
// second, its random draws seeded from seed (a scenario's seed): the same
// seed, the same send times. An empty kind is ScheduleFixed.
func NewRatePacer(kind string, rate float64, seed int64) (Pacer, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("%w: replay: rate %g must be positive", rehearse.ErrInvalid, rate)
	}
	switch kind {
	case "", ScheduleFixed:
		return ConstantPacer{Rate: rate}, nil
	case SchedulePoisson:
		return NewPoissonPacer(rate, seed), nil
	case ScheduleJittered:
		return NewJitteredPacer(rate, seed), nil
	}
	return nil, fmt.Errorf("%w: replay: schedule %q: want fixed, poisson or jittered", rehearse.ErrInvalid, kind)
}

// meanIntervaler is a pacer that knows its mean interval between sends;
// the replayer sizes its spin window and early dispatch by it (Due(1) of
// a random schedule is one random gap; a fixed one is sized by Due(1), as
// it always was).
type meanIntervaler interface {
	meanInterval() time.Duration
}

// draws is the seeded source of a random schedule: draw i is the first
// output of a PCG seeded with the scenario's seed and a key of the
// schedule kind mixed with i, as the fake upstreams derive each request's
// draws from the seed (inject, upstream.go). Each draw is a function of
// (seed, kind, i) alone, so any send time can be computed without the
// ones before it (jittered), and a run is reproducible from its seed.
type draws struct {
	seed uint64
	key  uint64
}

func newDraws(seed int64, kind string) draws {
	// FNV-1a of the kind: another schedule of the same seed draws other
	// numbers.
	h := uint64(14695981039346656037)
	for _, c := range []byte("replay.schedule\x00" + kind) {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return draws{seed: uint64(seed), key: h}
}

// unit returns draw i in [0, 1), on 53 bits.
func (d draws) unit(i uint64) float64 {
	var p rand.PCG
	p.Seed(d.seed, d.key^((i+1)*0x9E3779B97F4A7C15))
	return float64(p.Uint64()>>11) / (1 << 53)
}

// JitteredPacer sends request i at (i + u_i)/Rate seconds, u_i uniform in
// [0, 1) from the seed: one send in each slot of the fixed schedule, at a
// random place in it. The count in any whole number of slots and the mean
// rate are those of the fixed schedule; consecutive sends are 0 to 2
// intervals apart (mean one), on no common grid.
type JitteredPacer struct {
	rate float64
	d    draws
}

// NewJitteredPacer returns the jittered schedule at rate per second.
func NewJitteredPacer(rate float64, seed int64) *JitteredPacer {
	return &JitteredPacer{rate: rate, d: newDraws(seed, ScheduleJittered)}
}

// Due implements Pacer.
func (p *JitteredPacer) Due(i uint64) (time.Duration, bool) {
	d := math.Floor((float64(i) + p.d.unit(i)) * float64(time.Second) / p.rate)
	if d >= math.MaxInt64 {
		return 0, false
	}
	// Floor, not round: the send stays inside its slot, so sends never
	// swap order and the slot count of a duration is exact.
	return time.Duration(d), true
}

func (p *JitteredPacer) meanInterval() time.Duration {
	return time.Duration(float64(time.Second) / p.rate)
}

// poissonCheckpoint is how many sends apart PoissonPacer keeps its
// running sums, so that a due time out of order costs at most that many
// draws.
const poissonCheckpoint = 1024

// PoissonPacer sends with exponential gaps of mean 1/Rate: request i is
// due at the sum of gaps 0..i, gap k = -ln(1-u_k)/Rate with u_k from the
// seed. The first send comes one gap after the start, as in a Poisson
// process started then, so that the expected count in a duration D is
// Rate·D (it varies by about √(Rate·D)). A due time is the sum of the gaps
// before it, so the pacer keeps the last one it computed (the scheduler
// asks in order: one draw per send) and a running sum every
// poissonCheckpoint sends (a due time out of order costs at most that
// many draws). Gaps are rounded to the nanosecond each: the sum never
// drifts from what a second computation gives.
type PoissonPacer struct {
	rate float64
	d    draws

	mu      sync.Mutex
	lastI   uint64
	lastDue time.Duration
	have    bool
	checks  []time.Duration // checks[c]: the sum of the gaps before send c·poissonCheckpoint
}

// NewPoissonPacer returns the Poisson schedule at rate per second.
func NewPoissonPacer(rate float64, seed int64) *PoissonPacer {
	return &PoissonPacer{rate: rate, d: newDraws(seed, SchedulePoisson), checks: []time.Duration{0}}
}

// gap returns gap k in nanoseconds.
func (p *PoissonPacer) gap(k uint64) time.Duration {
	return time.Duration(math.Round(-math.Log1p(-p.d.unit(k)) * float64(time.Second) / p.rate))
}

// Due implements Pacer.
func (p *PoissonPacer) Due(i uint64) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var from uint64
	var due time.Duration
	switch {
	case p.have && i == p.lastI:
		return p.lastDue, true
	case p.have && i > p.lastI && i-p.lastI < poissonCheckpoint:
		from, due = p.lastI+1, p.lastDue
	default:
		from, due = p.checkpoint(i / poissonCheckpoint)
		if due < 0 {
			return 0, false
		}
	}
	for k := from; k <= i; k++ {
		g := p.gap(k)
		if due > math.MaxInt64-g {
			return 0, false
		}
		due += g
		if (k+1)%poissonCheckpoint == 0 && uint64(len(p.checks)) == (k+1)/poissonCheckpoint {
			p.checks = append(p.checks, due)
		}
	}
	p.lastI, p.lastDue, p.have = i, due, true
	return due, true
}

// checkpoint returns the first send index of checkpoint c and the due
// time before it (the sum of the gaps before that send), computing the
// checkpoints up to c if needed; a negative time when it overflows.
func (p *PoissonPacer) checkpoint(c uint64) (uint64, time.Duration) {
	for uint64(len(p.checks)) <= c {
		k0 := uint64(len(p.checks)-1) * poissonCheckpoint
		due := p.checks[len(p.checks)-1]
		for k := k0; k < k0+poissonCheckpoint; k++ {
			g := p.gap(k)
			if due > math.MaxInt64-g {
				return 0, -1
			}
			due += g
		}
		p.checks = append(p.checks, due)
	}
	return c * poissonCheckpoint, p.checks[c]
}

func (p *PoissonPacer) meanInterval() time.Duration {
	return time.Duration(float64(time.Second) / p.rate)
}
