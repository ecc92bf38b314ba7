package replay

import (
	"fmt"
	"math"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/replay/capture"
)

// Pacer is the send schedule: it says when request i (counted from 0 over
// the whole run, across corpus loops) is due, as an offset from the start
// of sending. It is a pure function of i, so the schedule is fixed before
// the run starts and no response can move it (open loop); tests check it
// without sleeping.
type Pacer interface {
	// Due returns the due offset of request i; ok is false when the
	// schedule has no request i.
	Due(i uint64) (due time.Duration, ok bool)
}

// ConstantPacer sends Rate requests per second: request i is due at i/Rate
// seconds, rounded to the nanosecond. Computing each due time from i, not
// by adding intervals, keeps fractional rates from drifting.
type ConstantPacer struct {
	// Rate is in requests per second; it must be positive.
	Rate float64
}

// Due implements Pacer.
func (p ConstantPacer) Due(i uint64) (time.Duration, bool) {
	if p.Rate <= 0 {
		return 0, false
	}
	d := math.Round(float64(i) * float64(time.Second) / p.Rate)
	if d > math.MaxInt64 {
		return 0, false
	}
	return time.Duration(d), true
}

// OriginalPacer keeps the spacing of the capture, divided by Speed. When
// the schedule runs past the last request it loops: the next pass starts
// one mean interval after the previous pass's last request, so the average
// rate stays that of the capture.
type OriginalPacer struct {
	offsets []time.Duration // per corpus index, from the first request, already divided by speed
	period  time.Duration   // length of one pass
}

// NewOriginalPacer builds the schedule from the capture timestamps of
// corpus. Timestamps that go backwards (requests from different flows
// captured out of order) are clamped so the schedule never goes backwards.
func NewOriginalPacer(corpus []*capture.Request, speed float64) (*OriginalPacer, error) {
	times := make([]time.Time, len(corpus))
	for i, r := range corpus {
		times[i] = r.Time
	}
	return newOriginalPacer(times, speed)
}

// newOriginalPacer builds the schedule from capture timestamps.
func newOriginalPacer(times []time.Time, speed float64) (*OriginalPacer, error) {
	if len(times) == 0 {
		return nil, fmt.Errorf("%w: replay: original timing needs at least one request", rehearse.ErrInvalid)
	}
	if speed <= 0 {
		return nil, fmt.Errorf("%w: replay: speed %g must be positive", rehearse.ErrInvalid, speed)
	}
	p := &OriginalPacer{offsets: make([]time.Duration, len(times))}
	first := times[0]
	var prev time.Duration
	for i, ts := range times {
		off := time.Duration(float64(ts.Sub(first)) / speed)
		if off < prev {
			off = prev
		}
		p.offsets[i] = off
		prev = off
	}
	n := len(times)
	span := p.offsets[n-1]
	if n > 1 && span > 0 {
		p.period = span + span/time.Duration(n-1)
	} else {
		// A single request, or all at one instant: loop once a second
		// (divided by speed) rather than spinning.
		p.period = span + time.Duration(float64(time.Second)/speed)
	}
	return p, nil
}

// Due implements Pacer.
func (p *OriginalPacer) Due(i uint64) (time.Duration, bool) {
	n := uint64(len(p.offsets))
	pass := i / n
	if pass > uint64(math.MaxInt64/int64(p.period)) {
		return 0, false
	}
	return time.Duration(pass)*p.period + p.offsets[i%n], true
}
