package replay

import (
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// The statistical tests below use fixed seeds, so they are deterministic;
// their bounds are chosen so that a correct schedule would fail them with
// the stated probability over seeds (the false-failure rate), and a wrong
// one (the fixed grid, a wrong rate, a gap law other than exponential)
// fails them by far.

// ksCritical001 is the Kolmogorov-Smirnov critical value at a 0.1 %
// false-failure rate for n samples (asymptotic: 1.949/√n).
func ksCritical001(n int) float64 { return 1.949 / math.Sqrt(float64(n)) }

// ksStat returns the KS statistic of xs against the distribution cdf.
func ksStat(xs []float64, cdf func(float64) float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := float64(len(s))
	var d float64
	for i, x := range s {
		f := cdf(x)
		d = max(d, math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n))
	}
	return d
}

func dues(t *testing.T, p Pacer, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, n)
	for i := range out {
		d, ok := p.Due(uint64(i))
		if !ok {
			t.Fatalf("no due time for %d", i)
		}
		out[i] = d
	}
	return out
}

// coincidences is item 8 of issue 28 as a test: a gateway that retries
// send i after a fixed wait w lands its retry within tol of some other
// send of the replay. It returns the share of (send, wait) pairs whose
// retry coincides. On the fixed grid at 5/s (200 ms apart) every retry
// after 1, 2 or 4 s coincides; on a schedule with no common grid about
// 2·tol·rate of them do (1 % at 5/s, tol 1 ms).
func coincidences(ds []time.Duration, waits []time.Duration, tol time.Duration) float64 {
	var hits, pairs int
	for _, d := range ds {
		for _, w := range waits {
			at := d + w
			if at > ds[len(ds)-1] {
				continue
			}
			pairs++
			j, _ := slices.BinarySearch(ds, at-tol)
			if j < len(ds) && ds[j] <= at+tol {
				hits++
			}
		}
	}
	return float64(hits) / float64(pairs)
}

var retryWaits = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}

func TestFixedScheduleIsALockstepGrid(t *testing.T) {
	// The reason for the other two: the fixed grid makes every fixed
	// retry wait coincide with a send (and the test below can fail).
	ds := dues(t, ConstantPacer{Rate: 5}, 3000)
	if c := coincidences(ds, retryWaits, time.Millisecond); c != 1 {
		t.Errorf("fixed grid: %.3f of fixed-wait retries coincide with a send, want 1", c)
	}
}

func TestJitteredSchedule(t *testing.T) {
	const rate, n = 5.0, 3000
	interval := time.Duration(float64(time.Second) / rate)
	p := NewJitteredPacer(rate, 1)
	ds := dues(t, p, n)
	// One send in each slot, in order: count and mean rate exact.
	units := make([]float64, n)
	for i, d := range ds {
		lo := time.Duration(i) * interval
		if d < lo || d >= lo+interval {
			t.Fatalf("send %d due %v outside its slot [%v, %v)", i, d, lo, lo+interval)
		}
		units[i] = float64(d-lo) / float64(interval)
	}
	// Within its slot, uniform (KS, 0.1 % false-failure rate).
	if d := ksStat(units, func(x float64) float64 { return min(max(x, 0), 1) }); d > ksCritical001(n) {
		t.Errorf("place in slot: KS %.4f > %.4f: not uniform", d, ksCritical001(n))
	}
	// On no common grid: a retry after a fixed wait meets a send about
	// 1 % of the time (2 ms window × 5/s). The bound, 3 %, is over 10
	// standard deviations of the binomial count above 1 % (9,000 pairs):
	// a false failure is out of reach; the fixed grid gives 100 %.
	if c := coincidences(ds, retryWaits, time.Millisecond); c > 0.03 {
		t.Errorf("%.3f of fixed-wait retries coincide with a send, want about 0.01", c)
	}
	// The scheduler's count over a duration is the fixed schedule's.
	s := &scheduler{pacer: p, limit: 5 * time.Minute, maxLateness: 5 * time.Millisecond, maxInFlight: 10}
	if _, got := runSchedule(t, s, &fakeClock{}, nil); got != 1500 {
		t.Errorf("5/s jittered for 5 min scheduled %d, want 1500", got)
	}
}

func TestPoissonSchedule(t *testing.T) {
	const rate, n = 5.0, 5000
	interval := float64(time.Second) / rate
	p := NewPoissonPacer(rate, 1)
	ds := dues(t, p, n)
	gaps := make([]float64, n)
	prev := time.Duration(0)
	for i, d := range ds {
		if d < prev {
			t.Fatalf("send %d due %v before send %d (%v)", i, d, i-1, prev)
		}
		gaps[i] = float64(d - prev)
		prev = d
	}
	// Exponential gaps of mean 1/rate (KS, 0.1 % false-failure rate).
	if d := ksStat(gaps, func(x float64) float64 { return 1 - math.Exp(-x/interval) }); d > ksCritical001(n) {
		t.Errorf("gaps: KS %.4f > %.4f: not exponential of mean %v", d, ksCritical001(n), time.Duration(interval))
	}
	// The mean rate: the mean of n exponential gaps has standard
	// deviation interval/√n; 4 of them is a 6e-5 false-failure rate.
	mean := float64(ds[n-1]) / n
	if math.Abs(mean-interval) > 4*interval/math.Sqrt(n) {
		t.Errorf("mean gap %v, want %v ± %v", time.Duration(mean), time.Duration(interval), time.Duration(4*interval/math.Sqrt(n)))
	}
	// Independent gaps: lag-1 correlation within 4/√n.
	var c0, c1 float64
	for i := range gaps {
		c0 += (gaps[i] - interval) * (gaps[i] - interval)
		if i > 0 {
			c1 += (gaps[i] - interval) * (gaps[i-1] - interval)
		}
	}
	if r := c1 / c0; math.Abs(r) > 4/math.Sqrt(n) {
		t.Errorf("lag-1 correlation of gaps %.4f", r)
	}
	if c := coincidences(ds, retryWaits, time.Millisecond); c > 0.03 {
		t.Errorf("%.3f of fixed-wait retries coincide with a send, want about 0.01", c)
	}
	// The count in 10 minutes is Poisson of mean 3,000: within 4
	// standard deviations (√3000 ≈ 55).
	s := &scheduler{pacer: NewPoissonPacer(rate, 1), limit: 10 * time.Minute, maxLateness: 5 * time.Millisecond, maxInFlight: 10}
	if _, got := runSchedule(t, s, &fakeClock{}, nil); math.Abs(float64(got)-3000) > 4*math.Sqrt(3000) {
		t.Errorf("5/s Poisson for 10 min scheduled %d, want 3000 ± 219", got)
	}
}

func TestRandomSchedulesReproducible(t *testing.T) {
	for _, kind := range []string{SchedulePoisson, ScheduleJittered} {
		a, _ := NewRatePacer(kind, 7, 42)
		b, _ := NewRatePacer(kind, 7, 42)
		c, _ := NewRatePacer(kind, 7, 43)
		seq := dues(t, a, 5000)
		// Asked out of order (random access past checkpoints, back,
		// repeated), the same due times.
		for _, i := range []uint64{4097, 3, 3, 1023, 1024, 2047, 4999, 0, 2048, 2049} {
			if d, _ := b.Due(i); d != seq[i] {
				t.Errorf("%s: Due(%d) out of order = %v, in order %v", kind, i, d, seq[i])
			}
		}
		if other := dues(t, c, 100); slices.Equal(other, seq[:100]) {
			t.Errorf("%s: seeds 42 and 43 give the same schedule", kind)
		}
	}
	p, _ := NewRatePacer(SchedulePoisson, 7, 42)
	j, _ := NewRatePacer(ScheduleJittered, 7, 42)
	if slices.Equal(dues(t, p, 50), dues(t, j, 50)) {
		t.Error("poisson and jittered draw the same numbers")
	}
	if _, err := NewRatePacer("bursty", 7, 1); err == nil {
		t.Error("an unknown schedule was accepted")
	}
}

func TestRandomScheduleStallKeepsOwnDue(t *testing.T) {
	// On a fake clock, a stall of 1 s at the send due at p.Due(10):
	// every event carries its own due time (the pacer's), nothing is
	// dispatched before it, sends due after the stall go at it, and the
	// slots the stall passed are dropped as missed with their own due
	// times (or, alone, sent late), none shifted.
	p := NewPoissonPacer(20, 9)
	stallAt, _ := p.Due(10)
	c := &fakeClock{stalls: map[time.Duration]time.Duration{stallAt: time.Second}}
	s := &scheduler{pacer: p, limit: 5 * time.Second, maxLateness: 5 * time.Millisecond, maxInFlight: 100}
	evs, n := runSchedule(t, s, c, nil)
	if n < 50 {
		t.Fatalf("scheduled %d", n)
	}
	var dropped int
	for _, e := range evs {
		want, _ := p.Due(e.i)
		if e.due != want {
			t.Errorf("send %d carries due %v, the pacer says %v", e.i, e.due, want)
		}
		switch {
		case e.drop != "":
			dropped++
		case e.at < e.due:
			t.Errorf("send %d dispatched at %v, before its due time %v", e.i, e.at, e.due)
		case e.due >= stallAt+time.Second && e.at != e.due:
			// After the stall, on time again.
			t.Errorf("send %d dispatched at %v, due %v", e.i, e.at, e.due)
		}
	}
	if dropped == 0 {
		t.Error("a 1 s stall at 20/s dropped nothing")
	}
}

// TestRandomScheduleRealSockets replays at 25/s on each random schedule
// into a loopback server and holds the server's arrival times to the
// schedule: the journal's scheduled times are the pacer's, lateness is
// measured against each send's own due time, and each request arrives at
// its due time plus what the journal says of it. A loaded machine may
// stall a send; the journal must then say so (its sent time), so the
// bound on each arrival is its recorded lateness plus the loopback
// delivery, and at least half arrive within 5 ms of their due time.
func TestRandomScheduleRealSockets(t *testing.T) {
	for _, kind := range []string{SchedulePoisson, ScheduleJittered} {
		t.Run(kind, func(t *testing.T) {
			clock := journal.NewClock(time.Now())
			var mu sync.Mutex
			arrived := map[uint64]time.Duration{}
			u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				at := clock.Now()
				seq, _ := strconv.ParseUint(r.Header.Get(DefaultSeqHeader), 10, 64)
				mu.Lock()
				arrived[seq] = at
				mu.Unlock()
				io.WriteString(w, "ok")
			}))
			mem := journal.NewMemory(clock)
			_, sum := replayed(t, []*capture.Request{getReq("/a")},
				Options{Target: u, Rate: 25, Duration: 2 * time.Second, Schedule: kind, Seed: 3, MaxLateness: time.Second},
				WithRecorder(mem), WithClock(clock))
			if sum.Schedule != kind {
				t.Errorf("summary schedule %q", sum.Schedule)
			}
			p, _ := NewRatePacer(kind, 25, 3)
			evs := mem.OfKind(journal.KindClientRequest)
			if len(evs) != sum.Scheduled || sum.Sent != sum.Scheduled || len(arrived) != sum.Sent {
				t.Fatalf("%d events, %d arrivals, summary %+v", len(evs), len(arrived), sum)
			}
			byseq := make([]*journal.ClientRequest, len(evs))
			for _, e := range evs {
				ev := e.(*journal.ClientRequest)
				byseq[ev.Seq] = ev
			}
			base := byseq[0].Scheduled - mustDue(t, p, 0)
			var off []time.Duration
			for i, ev := range byseq {
				if want := base + mustDue(t, p, uint64(i)); ev.Scheduled != want {
					t.Errorf("seq %d scheduled %v, the pacer says %v", i, ev.Scheduled, want)
				}
				if ev.Sent < ev.Scheduled {
					t.Errorf("seq %d sent %v before its due time %v", i, ev.Sent, ev.Scheduled)
				}
				if late := ev.Sent-ev.Scheduled > DefaultLateThreshold; late != ev.Late {
					t.Errorf("seq %d late=%v, lateness %v", i, ev.Late, ev.Sent-ev.Scheduled)
				}
				at := arrived[uint64(i)]
				if at < ev.Scheduled || at-ev.Sent > 250*time.Millisecond {
					t.Errorf("seq %d arrived at %v: due %v, sent %v", i, at, ev.Scheduled, ev.Sent)
				}
				off = append(off, at-ev.Scheduled)
			}
			slices.Sort(off)
			if med := off[len(off)/2]; med > 5*time.Millisecond {
				t.Errorf("arrivals %v after their due times at the median", med)
			}
		})
	}
}

func mustDue(t *testing.T, p Pacer, i uint64) time.Duration {
	t.Helper()
	d, ok := p.Due(i)
	if !ok {
		t.Fatalf("no due time for %d", i)
	}
	return d
}

// BenchmarkPacerDue is the pacer's own cost per send, asked in order as
// the scheduler asks (Due(i), and Due(i+1) when late).
func BenchmarkPacerDue(b *testing.B) {
	for _, kind := range Schedules() {
		b.Run(kind, func(b *testing.B) {
			p, _ := NewRatePacer(kind, 10, 1)
			b.ReportAllocs()
			for i := range b.N {
				if _, ok := p.Due(uint64(i)); !ok {
					b.Fatal("no due time")
				}
			}
		})
	}
}
