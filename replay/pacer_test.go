package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/halfopen/rehearse/replay/capture"
)

func TestConstantPacerDueTimes(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		rate float64
		want []time.Duration
	}{
		{10, []time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms}},
		{1, []time.Duration{0, time.Second, 2 * time.Second}},
		{0.5, []time.Duration{0, 2 * time.Second, 4 * time.Second}},
		{3, []time.Duration{0, 333333333, 666666667, time.Second, 1333333333}},
		{2.5, []time.Duration{0, 400 * ms, 800 * ms, 1200 * ms}},
		{5000, []time.Duration{0, 200 * time.Microsecond, 400 * time.Microsecond}},
	} {
		t.Run(fmt.Sprint(tc.rate), func(t *testing.T) {
			p := ConstantPacer{Rate: tc.rate}
			for i, want := range tc.want {
				got, ok := p.Due(uint64(i))
				if !ok || got != want {
					t.Errorf("Due(%d) = %v, %v; want %v", i, got, ok, want)
				}
			}
		})
	}
	// No drift over a long run: at 3/s, request 9000 is due at exactly 3000 s.
	if got, _ := (ConstantPacer{Rate: 3}).Due(9000); got != 3000*time.Second {
		t.Errorf("Due(9000) at 3/s = %v, want 50m0s", got)
	}
	if _, ok := (ConstantPacer{}).Due(0); ok {
		t.Error("a zero rate must have no schedule")
	}
}

func TestOriginalPacer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	corpus := []*capture.Request{
		{Time: t0}, {Time: t0.Add(100 * time.Millisecond)}, {Time: t0.Add(50 * time.Millisecond)}, // out of order: clamped
		{Time: t0.Add(400 * time.Millisecond)},
	}
	p, err := NewOriginalPacer(corpus, 2)
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	// Offsets /2: 0, 50, 50 (clamped), 200; period = 200 + 200/3.
	period := 200*ms + 200*ms/3
	want := []time.Duration{0, 50 * ms, 50 * ms, 200 * ms, period, period + 50*ms, period + 50*ms, period + 200*ms, 2 * period}
	for i, w := range want {
		if got, ok := p.Due(uint64(i)); !ok || got != w {
			t.Errorf("Due(%d) = %v, want %v", i, got, w)
		}
	}
	if _, err := NewOriginalPacer(nil, 1); err == nil {
		t.Error("empty corpus accepted")
	}
	if _, err := NewOriginalPacer(corpus, 0); err == nil {
		t.Error("zero speed accepted")
	}
}

// fakeClock is a waiter whose time only moves when the scheduler waits
// (to exactly the time asked) or when the test stalls it.
type fakeClock struct {
	now    time.Duration
	stalls map[time.Duration]time.Duration // due time → extra delay when waiting for it
}

func (c *fakeClock) Now() time.Duration { return c.now }

func (c *fakeClock) WaitUntil(ctx context.Context, t time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if t > c.now {
		c.now = t
	}
	if s, ok := c.stalls[t]; ok {
		delete(c.stalls, t)
		c.now += s
	}
	return nil
}

func (c *fakeClock) WaitAbout(ctx context.Context, t time.Duration) error { return c.WaitUntil(ctx, t) }

type schedEvent struct {
	i    uint64
	due  time.Duration
	at   time.Duration
	drop string
}

// runSchedule runs a scheduler on a fake clock and returns what it did.
func runSchedule(t *testing.T, s *scheduler, c *fakeClock, onDispatch func(i uint64)) ([]schedEvent, uint64) {
	t.Helper()
	var evs []schedEvent
	if s.inFlight == nil {
		s.inFlight = new(atomic.Int64)
	}
	s.clock = c
	s.dispatch = func(i uint64, due time.Duration) {
		evs = append(evs, schedEvent{i: i, due: due, at: c.now})
		if onDispatch != nil {
			onDispatch(i)
		} else {
			s.inFlight.Add(-1) // completes at once
		}
	}
	s.drop = func(i uint64, due, now time.Duration, reason string) {
		evs = append(evs, schedEvent{i: i, due: due, at: now, drop: reason})
	}
	n, err := s.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return evs, n
}

func TestScheduleExactCount(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		limit time.Duration
		want  uint64
	}{
		{10, 5 * time.Minute, 3000},
		{20, 3 * time.Second, 60},
		{0.5, 10 * time.Second, 5},
		{3, time.Second, 3},
		{3, time.Second + 1, 4}, // the slot at exactly 1 s is inside
	} {
		s := &scheduler{pacer: ConstantPacer{Rate: tc.rate}, limit: tc.limit, maxLateness: 5 * time.Millisecond, maxInFlight: 10}
		evs, n := runSchedule(t, s, &fakeClock{}, nil)
		if n != tc.want || uint64(len(evs)) != tc.want {
			t.Errorf("rate %g for %v: scheduled %d (%d events), want %d", tc.rate, tc.limit, n, len(evs), tc.want)
		}
		for k, e := range evs {
			if e.drop != "" || e.at != e.due || e.i != uint64(k) {
				t.Fatalf("rate %g: event %d = %+v: want on-time dispatch of %d", tc.rate, k, e, k)
			}
		}
	}
	// Once: one pass of the corpus, even with no duration.
	s := &scheduler{pacer: ConstantPacer{Rate: 100}, count: 7, maxLateness: time.Millisecond, maxInFlight: 10}
	if _, n := runSchedule(t, s, &fakeClock{}, nil); n != 7 {
		t.Errorf("once over 7 requests scheduled %d", n)
	}
}

func TestScheduleNoBurstAfterStall(t *testing.T) {
	// At 10/s the replayer stalls for 1 s while waiting for slot 5
	// (due 500 ms): it wakes at 1.5 s. Slots 5..14 passed; sending them
	// all at once would be a burst, shifting them would hide the stall:
	// they are dropped, and slot 15 (due 1.5 s) goes on time.
	c := &fakeClock{stalls: map[time.Duration]time.Duration{500 * time.Millisecond: time.Second}}
	s := &scheduler{pacer: ConstantPacer{Rate: 10}, limit: 2 * time.Second, maxLateness: 5 * time.Millisecond, maxInFlight: 100}
	evs, n := runSchedule(t, s, c, nil)
	if n != 20 {
		t.Fatalf("scheduled %d, want 20", n)
	}
	var dropped []uint64
	for _, e := range evs {
		if e.drop != "" {
			if !strings.HasPrefix(e.drop, dropMissed) {
				t.Errorf("slot %d dropped for %q", e.i, e.drop)
			}
			dropped = append(dropped, e.i)
			continue
		}
		if late := e.at - e.due; late > s.maxLateness {
			t.Errorf("slot %d sent %v late", e.i, late)
		}
	}
	if want := []uint64{5, 6, 7, 8, 9, 10, 11, 12, 13, 14}; !slices.Equal(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	// No two sends at the same instant: no burst.
	for k := 1; k < len(evs); k++ {
		if evs[k].drop == "" && evs[k-1].drop == "" && evs[k].at == evs[k-1].at {
			t.Errorf("slots %d and %d sent at the same instant %v", evs[k-1].i, evs[k].i, evs[k].at)
		}
	}
}

func TestScheduleLateButAlone(t *testing.T) {
	// A 30 ms stall at 10/s: slot 3 is late, but slot 4 is not yet due,
	// so slot 3 is sent late (recorded late by the sender), not dropped.
	c := &fakeClock{stalls: map[time.Duration]time.Duration{300 * time.Millisecond: 30 * time.Millisecond}}
	s := &scheduler{pacer: ConstantPacer{Rate: 10}, limit: time.Second, maxLateness: 5 * time.Millisecond, maxInFlight: 100}
	evs, _ := runSchedule(t, s, c, nil)
	for _, e := range evs {
		if e.drop != "" {
			t.Errorf("slot %d dropped: %s", e.i, e.drop)
		}
	}
	if e := evs[3]; e.at-e.due != 30*time.Millisecond {
		t.Errorf("slot 3 sent at %v, due %v: want 30ms late", e.at, e.due)
	}
	if e := evs[4]; e.at != e.due {
		t.Errorf("slot 4 shifted: sent at %v, due %v", e.at, e.due)
	}
}

func TestScheduleInFlightCap(t *testing.T) {
	// Requests never complete until released: with a cap of 3, slots
	// 3..5 are dropped; two completing lets slots 6 and 7 go, then 8 and
	// 9 are dropped again.
	var inFlight atomic.Int64
	var got []string
	s2 := &scheduler{pacer: ConstantPacer{Rate: 10}, limit: time.Second, maxLateness: 5 * time.Millisecond, maxInFlight: 3, inFlight: &inFlight}
	s2.clock = &fakeClock{}
	s2.dispatch = func(i uint64, due time.Duration) { got = append(got, fmt.Sprintf("send %d", i)) }
	s2.drop = func(i uint64, due, now time.Duration, reason string) {
		if reason != dropInFlight {
			t.Errorf("slot %d dropped for %q", i, reason)
		}
		got = append(got, fmt.Sprintf("drop %d", i))
		if i == 5 {
			inFlight.Add(-2) // two requests complete
		}
	}
	if _, err := s2.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"send 0", "send 1", "send 2", "drop 3", "drop 4", "drop 5", "send 6", "send 7", "drop 8", "drop 9"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if inFlight.Load() != 3 {
		t.Errorf("in flight %d, want 3", inFlight.Load())
	}
}

func TestScheduleCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n int
	var inFlight atomic.Int64
	s := &scheduler{pacer: ConstantPacer{Rate: 10}, limit: time.Minute, maxLateness: time.Millisecond, maxInFlight: 5, inFlight: &inFlight,
		clock: &fakeClock{},
		dispatch: func(i uint64, due time.Duration) {
			inFlight.Add(-1)
			if n++; n == 4 {
				cancel()
			}
		},
		drop: func(uint64, time.Duration, time.Duration, string) {},
	}
	got, err := s.run(ctx)
	if err == nil || got != 4 {
		t.Errorf("run = %d, %v; want 4 and context.Canceled", got, err)
	}
}
