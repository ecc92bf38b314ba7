package analysis

import (
	"testing"
)

func f64(v float64) *float64 { return &v }

// TestOpenTime: the time open sums every cycle, carries bounds only when
// a cycle's open or close is bounded (an unknown latest close leaves the
// most unknown), and is unknown when a cycle never closed.
func TestOpenTime(t *testing.T) {
	exact := &Cycle{OpenedAtS: 10, ClosedAtS: f64(14)}
	reopened := &Cycle{OpenedAtS: 15, ClosedAtS: f64(25.5)}
	boundedOpen := &Cycle{OpenedAtS: 10, ClosedAtS: f64(14), OpenBoundsS: &Bounds{Min: f64(10), Max: f64(10.25)}}
	ramp := &Cycle{OpenedAtS: 15, ClosedAtS: f64(25), CloseBoundsS: &Bounds{Min: f64(24)}}
	expiry := &Cycle{OpenedAtS: 15, ClosedAtS: f64(25), CloseBoundsS: &Bounds{Min: f64(23), Max: f64(25)}}
	open := &Cycle{OpenedAtS: 30}
	for _, c := range []struct {
		name   string
		cycles []*Cycle
		want   *float64
		bounds *Bounds
	}{
		{"one exact cycle", []*Cycle{exact}, f64(4), nil},
		{"cycles summed", []*Cycle{exact, reopened}, f64(14.5), nil},
		{"open bounded", []*Cycle{boundedOpen, reopened}, f64(14.5), &Bounds{Min: f64(14.25), Max: f64(14.5)}},
		{"ramp: no latest close", []*Cycle{exact, ramp}, f64(14), &Bounds{Min: f64(13)}},
		{"expiry: close bounded", []*Cycle{boundedOpen, expiry}, f64(14), &Bounds{Min: f64(11.75), Max: f64(14)}},
		{"never closed", []*Cycle{exact, open}, nil, nil},
	} {
		ep := &Episode{Opened: true, Cycles: c.cycles}
		openTime(ep)
		if !samePtr(ep.OpenTimeS, c.want) {
			t.Errorf("%s: open_time_s %v, want %v", c.name, deref(ep.OpenTimeS), deref(c.want))
		}
		if (ep.OpenTimeBoundsS == nil) != (c.bounds == nil) ||
			ep.OpenTimeBoundsS != nil && (!samePtr(ep.OpenTimeBoundsS.Min, c.bounds.Min) || !samePtr(ep.OpenTimeBoundsS.Max, c.bounds.Max)) {
			t.Errorf("%s: open_time_bounds_s %s, want %s", c.name, spanText(ep.OpenTimeBoundsS), spanText(c.bounds))
		}
		if lo, hi, ok := rangeOf(ep.OpenTimeS, ep.OpenTimeBoundsS); ok && (*ep.OpenTimeS < lo || *ep.OpenTimeS > hi) {
			t.Errorf("%s: estimate %v outside its bounds %v–%v", c.name, *ep.OpenTimeS, lo, hi)
		}
	}
	notOpened := &Episode{}
	openTime(notOpened)
	if notOpened.OpenTimeS != nil {
		t.Errorf("an episode that never opened has time open %v, want none", *notOpened.OpenTimeS)
	}
}

func samePtr(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func spanText(b *Bounds) string {
	if b == nil {
		return "exact"
	}
	return boundsText(b, Seconds)
}
