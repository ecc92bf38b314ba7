package replay

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/halfopen/rehearse/replay/capture"
)

// The pacing benchmarks run one short open-loop run per rate, for the
// replayer and for Vegeta (as a library) against the same loopback sink in
// the same process, and report send lateness (actual send − due time):
//
//	go test -run '^$' -bench 'Lateness|HighestRate' -benchtime 1x ./replay/
//
// They measure wall-clock behaviour: run them on a quiet machine, once.

// benchSink is a loopback HTTP server answering 200 with a small body.
func benchSink(b *testing.B) *url.URL {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true}`)
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

type paceResult struct {
	sent, dropped, errors int
	late                  int     // sent later than DefaultLateThreshold
	p50, p99, max         float64 // ms
	cpu                   float64 // the process's CPU time over the run's wall time (sink included)
}

// cpuTime returns the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureCPU runs f and sets its result's cpu share.
func measureCPU(f func() paceResult) paceResult {
	c0, t0 := cpuTime(), time.Now()
	r := f()
	r.cpu = float64(cpuTime()-c0) / float64(time.Since(t0))
	return r
}

func (p paceResult) String() string {
	return fmt.Sprintf("sent %6d late %5d dropped %5d errors %4d  lateness p50 %7.3fms p99 %8.3fms max %8.3fms  cpu %5.2f%%", p.sent, p.late, p.dropped, p.errors, p.p50, p.p99, p.max, 100*p.cpu)
}

func runReplayer(b *testing.B, target *url.URL, rate float64, d time.Duration) paceResult {
	r, err := New([]*capture.Request{getReq("/tools/search?q=bench")}, Options{Target: target, Rate: rate, Duration: d, Deadline: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	sum, err := r.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	errs := 0
	for o, n := range sum.ByOutcome {
		if isErrorOutcome(o) && o != "dropped" {
			errs += n
		}
	}
	return paceResult{sent: sum.Sent, late: sum.Late, dropped: sum.Dropped, errors: errs, p50: sum.Lateness.P50, p99: sum.Lateness.P99, max: sum.Lateness.Max}
}

func runVegeta(b *testing.B, target *url.URL, rate float64, d time.Duration) paceResult {
	tr := vegeta.NewStaticTargeter(vegeta.Target{Method: "GET", URL: target.String() + "/tools/search?q=bench"})
	atk := vegeta.NewAttacker(vegeta.Timeout(5 * time.Second))
	// Vegeta's pacer for fractional rates is per-second frequency; the
	// benchmark rates are whole numbers.
	pacer := vegeta.Rate{Freq: int(rate), Per: time.Second}
	h := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
	began := time.Now() // just before Attack takes its own start: ≤ µs early
	var res paceResult
	for r := range atk.Attack(tr, pacer, d, "bench") {
		// Vegeta's ConstantPacer makes hit i due at (i+1)/rate.
		due := began.Add(time.Duration(float64(r.Seq+1) * float64(time.Second) / rate))
		h.RecordValue(max(int64(r.Timestamp.Sub(due)/time.Microsecond), 0))
		res.sent++
		if r.Timestamp.Sub(due) > DefaultLateThreshold {
			res.late++
		}
		if r.Error != "" || r.Code != 200 {
			res.errors++
		}
	}
	ms := func(v int64) float64 { return float64(v) / 1000 }
	res.p50, res.p99, res.max = ms(h.ValueAtQuantile(50)), ms(h.ValueAtQuantile(99)), ms(h.Max())
	return res
}

func benchDuration(rate float64) time.Duration {
	if rate <= 100 {
		return 5 * time.Second
	}
	return 2 * time.Second
}

// BenchmarkLateness reports send lateness at 10, 1,000 and 5,000 req/s for
// the replayer and Vegeta, alternating (replay, vegeta, replay, vegeta) so
// that machine noise hits both; at 10/s also the replayer without its spin
// window (sleeping only).
func BenchmarkLateness(b *testing.B) {
	target := benchSink(b)
	for _, rate := range []float64{10, 1000, 5000} {
		d := benchDuration(rate)
		// Whichever tool runs first at a rate pays for heap growth and
		// the sink's connection ramp-up: warm up, unmeasured.
		runVegeta(b, target, rate, time.Second)
		for round := 1; round <= 2; round++ {
			b.Run(fmt.Sprintf("rate=%g/replay#%d", rate, round), func(b *testing.B) {
				for range b.N {
					report(b, measureCPU(func() paceResult { return runReplayer(b, target, rate, d) }))
				}
			})
			b.Run(fmt.Sprintf("rate=%g/vegeta#%d", rate, round), func(b *testing.B) {
				for range b.N {
					report(b, measureCPU(func() paceResult { return runVegeta(b, target, rate, d) }))
				}
			})
		}
		if rate <= 100 {
			b.Run(fmt.Sprintf("rate=%g/replay-nospin", rate), func(b *testing.B) {
				saved := spinWindow
				spinWindow = -1
				defer func() { spinWindow = saved }()
				for range b.N {
					report(b, measureCPU(func() paceResult { return runReplayer(b, target, rate, d) }))
				}
			})
		}
	}
}

func report(b *testing.B, r paceResult) {
	b.ReportMetric(r.p50, "p50-ms")
	b.ReportMetric(r.p99, "p99-ms")
	b.ReportMetric(r.max, "max-ms")
	b.ReportMetric(float64(r.sent), "sent")
	b.ReportMetric(float64(r.dropped), "dropped")
	b.ReportMetric(float64(r.late), "late")
	b.ReportMetric(float64(r.errors), "errors")
	b.ReportMetric(100*r.cpu, "cpu-%")
	fmt.Fprintf(os.Stderr, "%-40s %s\n", b.Name(), r)
}

// BenchmarkHighestRate finds, for each tool, the highest rate in a
// doubling (from 125/s) then bisecting search at which a 2 s run keeps p99
// lateness ≤ the bound (5 ms, and 50 ms for a busy machine) with nothing
// dropped and no errors.
func BenchmarkHighestRate(b *testing.B) {
	target := benchSink(b)
	for _, bound := range []float64{5, 50} {
		b.Run(fmt.Sprintf("p99<=%gms", bound), func(b *testing.B) { highestRate(b, target, bound) })
	}
}

func highestRate(b *testing.B, target *url.URL, bound float64) {
	ok := func(name string, r paceResult, rate float64, d time.Duration) bool {
		want := int(rate * d.Seconds())
		// Vegeta may stop one hit short at the end of the duration.
		held := r.p99 <= bound && r.dropped == 0 && r.errors == 0 && r.sent >= want-1
		fmt.Fprintf(os.Stderr, "    %-36s %7g/s %s held=%v\n", b.Name()+"/"+name, rate, r, held)
		return held
	}
	for _, tool := range []struct {
		name string
		run  func(*testing.B, *url.URL, float64, time.Duration) paceResult
	}{{"replay", runReplayer}, {"vegeta", runVegeta}} {
		runVegeta(b, target, 1000, time.Second) // warm-up, unmeasured
		b.Run(tool.name, func(b *testing.B) {
			for range b.N {
				const d = 2 * time.Second
				lo, hi := 0.0, 0.0
				for rate := 125.0; rate <= 64000; rate *= 2 {
					if ok(tool.name, tool.run(b, target, rate, d), rate, d) {
						lo = rate
					} else {
						hi = rate
						break
					}
				}
				// Bisect to within an eighth of the highest rate held.
				for hi > 0 && lo > 0 && hi-lo > lo/8 {
					mid := float64(int((lo + hi) / 2))
					if ok(tool.name, tool.run(b, target, mid, d), mid, d) {
						lo = mid
					} else {
						hi = mid
					}
				}
				b.ReportMetric(lo, "max-rate/s")
				fmt.Fprintf(os.Stderr, "%-40s highest rate held: %g/s (first failing: %g/s)\n", b.Name(), lo, hi)
			}
		})
	}
}
