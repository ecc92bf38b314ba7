package replay

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// The spin after a precise sleep is bounded by the spin window only if the
// sleep never returns early.
func TestPreciseSleepNeverEarly(t *testing.T) {
	for _, d := range []time.Duration{0, time.Microsecond, 50 * time.Microsecond, 700 * time.Microsecond, 2 * time.Millisecond} {
		for range 20 {
			t0 := time.Now()
			preciseSleep(d)
			if got := time.Since(t0); got < d {
				t.Fatalf("preciseSleep(%v) returned after %v", d, got)
			}
		}
	}
}

func TestWaitUntilNeverEarly(t *testing.T) {
	for _, spin := range []time.Duration{0, 100 * time.Microsecond} {
		w := newRealWaiter(time.Now(), spin)
		for i := range 30 {
			due := w.Now() + time.Duration(i%7)*time.Millisecond + time.Duration(i)*37*time.Microsecond
			if err := w.WaitUntil(context.Background(), due); err != nil {
				t.Fatal(err)
			}
			if now := w.Now(); now < due {
				t.Fatalf("spin %v: WaitUntil(%v) returned at %v", spin, due, now)
			}
		}
	}
	// The coarse wait is never early either.
	w := newRealWaiter(time.Now(), 0)
	for i := range 10 {
		due := w.Now() + time.Duration(i%4)*time.Millisecond + time.Duration(i)*53*time.Microsecond
		if err := w.WaitAbout(context.Background(), due); err != nil {
			t.Fatal(err)
		}
		if now := w.Now(); now < due {
			t.Fatalf("WaitAbout(%v) returned at %v", due, now)
		}
	}
	// A long wait is cancellable in its timer phase, both kinds.
	for name, wait := range map[string]func(context.Context, time.Duration) error{"WaitUntil": w.WaitUntil, "WaitAbout": w.WaitAbout} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		if err := wait(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s(1h) with a 20 ms context: %v", name, err)
		}
		cancel()
	}
}

func TestSpinAndLeadBounded(t *testing.T) {
	if w := calibrateSpin(); w < 0 || w > maxSpin {
		t.Errorf("calibrated spin window %v outside [0, %v]", w, maxSpin)
	}
	for _, iv := range []time.Duration{200 * time.Microsecond, time.Millisecond, 100 * time.Millisecond} {
		if s := spinFor(iv); s*20 > iv {
			t.Errorf("interval %v: spin %v is more than a twentieth", iv, s)
		}
	}
	if leadFor(100*time.Millisecond) != dispatchLead || leadFor(time.Millisecond) != 0 || dispatchLead > preciseMax {
		t.Errorf("lead: %v at 10/s, %v at 1,000/s", leadFor(100*time.Millisecond), leadFor(time.Millisecond))
	}
}

// slowDialTransport dials after delay; with fail, it then fails.
func slowDialTransport(delay time.Duration, fail bool) *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(delay)
		if fail {
			return nil, errors.New("dial refused by the test")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// The send is stamped when the request is written, not when the sender
// starts: a request that waits 200 ms for its connection was sent 200 ms
// late, whatever the pacer did. One that never reached a connection is
// stamped when its exchange started. Both the slow schedule (with a lead)
// and the fast one (without) stamp the same way.
func TestSendStampedAtWrite(t *testing.T) {
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	const delay = 200 * time.Millisecond
	for _, rate := range []float64{10, 1000} {
		ev := replayOne(t, u, nil, Options{Rate: rate, Transport: slowDialTransport(delay, false)})
		if late := ev.Sent - ev.Scheduled; late < delay || !ev.Late {
			t.Errorf("rate %g: sent %v after due (late %v), want ≥ %v: the dial is part of the send", rate, late, ev.Late, delay)
		}
		if ev.Service > ev.Done-ev.Scheduled-delay {
			t.Errorf("rate %g: service %v includes the dial", rate, ev.Service)
		}
		ev = replayOne(t, u, nil, Options{Rate: rate, Transport: slowDialTransport(delay, true)})
		if late := ev.Sent - ev.Scheduled; late >= delay || ev.Outcome == "ok" {
			t.Errorf("rate %g: a failed dial stamped %v after due (outcome %s), want the start of the exchange", rate, late, ev.Outcome)
		}
	}
}

// The first request of a slow schedule is dispatched a lead before it is
// due, like every other: the schedule starts one lead after Run is called,
// so that request 0's build, dial and hand-offs are not on its send path.
// Fast schedules have no lead and start at once. What is checked is where
// the schedule starts on the journal's clock, which does not depend on how
// fast the machine is: due times are at least the lead after the clock's
// reading before Run, and the send never precedes its due time.
func TestFirstRequestDispatchedEarly(t *testing.T) {
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	for _, tc := range []struct {
		rate float64
		lead time.Duration
	}{{10, dispatchLead}, {1000, 0}} {
		clock := journal.NewClock(time.Now())
		mem := journal.NewMemory(clock)
		r, err := New([]*capture.Request{getReq("/tools/search")},
			Options{Target: u, Rate: tc.rate, Once: true, Deadline: 2 * time.Second}, WithRecorder(mem), WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		calibrateSpin() // once per process, in Run before the start: not in what is checked
		before := clock.Now()
		sum, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		evs := mem.OfKind(journal.KindClientRequest)
		if len(evs) != 1 || sum.Sent != 1 {
			t.Fatalf("rate %g: %d events, %d sent", tc.rate, len(evs), sum.Sent)
		}
		ev := evs[0].(*journal.ClientRequest)
		if ev.Scheduled-before < tc.lead {
			t.Errorf("rate %g: request 0 due %v after Run was called, want at least the lead %v", tc.rate, ev.Scheduled-before, tc.lead)
		}
		if tc.lead == 0 && ev.Scheduled-before > time.Second {
			t.Errorf("rate %g: request 0 due %v after Run was called, want at once", tc.rate, ev.Scheduled-before)
		}
		if ev.Sent < ev.Scheduled {
			t.Errorf("rate %g: sent %v before due %v", tc.rate, ev.Sent, ev.Scheduled)
		}
	}
}
