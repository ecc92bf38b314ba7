package observe

import (
	"context"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// Platform sampling during a run: every DefaultPlatformInterval, a burst
// of PlatformBurst sleeps of TimerSleep (bounded by PlatformBurstBudget)
// and the load average. A burst costs the run about 20 ms of sleeping and
// no CPU to speak of.
const (
	DefaultPlatformInterval = 2 * time.Second
	PlatformBurst           = 20
	PlatformBurstBudget     = 100 * time.Millisecond
)

// PlatformSampler measures timer lateness and load while a run goes on.
// Facts measures the timers once, before the run; a machine that is quiet
// then and busy later (a CI neighbour, Spotlight, a backup) shows up only
// in samples taken throughout, and timer coalescing on macOS varies with
// what else the machine does.
type PlatformSampler struct {
	every time.Duration
	o     options
}

// NewPlatformSampler returns a sampler that records a journal.PlatformSample
// every interval (0 means DefaultPlatformInterval) through WithRecorder,
// stamped by WithClock.
func NewPlatformSampler(every time.Duration, opts ...Option) *PlatformSampler {
	if every <= 0 {
		every = DefaultPlatformInterval
	}
	return &PlatformSampler{every: every, o: buildOptions(opts, nil)}
}

// Run samples at once and then every interval until ctx ends; it always
// returns nil (a fact that cannot be read is left out of its sample).
func (s *PlatformSampler) Run(ctx context.Context) error {
	defer s.o.release()
	return s.o.sampleEvery(ctx, s.every, func() journal.Payload { return SamplePlatform(ctx) })
}

// SamplePlatform takes one sample now: a burst of short sleeps and the
// load average.
func SamplePlatform(ctx context.Context) *journal.PlatformSample {
	p := &journal.PlatformSample{Timer: MeasureTimer(ctx, TimerSleep, PlatformBurst, PlatformBurstBudget)}
	if l, ok := loadAverage(); ok {
		p.Load1 = &l
	}
	return p
}
