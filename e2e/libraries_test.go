package e2e

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/sony/gobreaker/v2"

	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/analysis"
)

// Real Go breaker libraries as the test gateway's breaker (shapeGW's
// proxy, the library deciding every call), each library's own
// state-change callback the truth log, stamped with the gateway's clock:
//   - sony/gobreaker (its two-step breaker): consecutive failures, or a
//     failure rate over a minimum of calls in a rolling window
//     (Interval, BucketPeriod); MaxRequests calls let through per
//     half-open, closed after as many successes in a row, any failure
//     reopening it; generations (a call's result from another state is
//     ignored);
//   - failsafe-go: a failure rate over a minimum of executions in a
//     sliding time window, or failures out of the last N; a half-open
//     that lets a number of executions through at once (a permit given
//     back as each ends) and closes on a success threshold (k of the
//     last n); the open state's delay from a delay function (here an
//     exponential backoff over the opens since the last close).
//
// Each run draws its breaker's settings, its fault (a 503 storm, 429s
// with Retry-After, resets, answers slower than the gateway's timeout),
// its timing and whether healthy answers are slow, at random (the seed
// logged: REHEARSE_SHAPE_SEED repeats it), and every figure the analysis
// states is held to the library's log: an exact one must match, a bounded
// one must contain the truth. The libraries are test dependencies only:
// the binary links neither (TestLibrariesNotInTheBinary).

// errFailed is what the test gateway reports to a library for a failed
// call (failedStatus, or the proxy's error).
var errFailed = errors.New("upstream call failed")

// libBreaker is the test gateway's breaker when a library decides. admit
// asks the library whether a call may go through now and returns the
// function that tells it how the call ended; the library's state-change
// callback appends to the log.
type libBreaker struct {
	admit func() (end func(ok bool), ok bool)
	st    func() string

	mu   sync.Mutex
	logd []shapeTrans
	ends map[int]func(bool)
	next int
	// closing counts, per close in the log, the successes the library
	// says its half-open counted (0: the library does not say).
	closing []uint
}

func newLibBreaker() *libBreaker {
	return &libBreaker{logd: []shapeTrans{{At: time.Now(), To: "closed"}}, ends: map[int]func(bool){}}
}

// changed is the library's state-change callback (it may hold the
// library's own lock: it takes only b.mu).
func (b *libBreaker) changed(to string, successes uint) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logd = append(b.logd, shapeTrans{At: time.Now(), To: to})
	if to == "closed" {
		b.closing = append(b.closing, successes)
	}
}

// opened reports whether the library's log has an open.
func (b *libBreaker) opened() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.ContainsFunc(b.logd, func(tr shapeTrans) bool { return tr.To == "open" })
}

func (b *libBreaker) transitions() []shapeTrans {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.logd)
}

func (b *libBreaker) allow(time.Time) (bool, int) {
	end, ok := b.admit()
	if !ok {
		return false, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	b.ends[b.next] = end
	return true, b.next
}

func (b *libBreaker) done(_ time.Time, ok bool, id int) {
	b.mu.Lock()
	end := b.ends[id]
	delete(b.ends, id)
	b.mu.Unlock()
	if end != nil {
		end(ok)
	}
}

func (b *libBreaker) state() string { return b.st() }

func result(ok bool) error {
	if ok {
		return nil
	}
	return errFailed
}

// newGobreaker is gobreaker's two-step breaker with settings st.
func newGobreaker(st gobreaker.Settings) *libBreaker {
	b := newLibBreaker()
	name := func(s gobreaker.State) string {
		switch s {
		case gobreaker.StateOpen:
			return "open"
		case gobreaker.StateHalfOpen:
			return "half_open"
		}
		return "closed"
	}
	st.OnStateChange = func(_ string, from, to gobreaker.State) {
		// gobreaker closes after MaxRequests successes in a row.
		b.changed(name(to), uint(max(st.MaxRequests, 1)))
	}
	cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](st)
	b.admit = func() (func(bool), bool) {
		done, err := cb.Allow()
		if err != nil {
			return nil, false
		}
		return func(ok bool) { done(result(ok)) }, true
	}
	b.st = func() string { return name(cb.State()) }
	return b
}

// newFailsafe is failsafe-go's breaker built by cfg, run through
// failsafe's own executor (the path a delay function needs): each call is
// an execution that waits, inside the executor, for the proxy's result.
func newFailsafe(cfg circuitbreaker.Builder[int]) *libBreaker {
	b := newLibBreaker()
	name := func(s circuitbreaker.State) string {
		switch s {
		case circuitbreaker.OpenState:
			return "open"
		case circuitbreaker.HalfOpenState:
			return "half_open"
		}
		return "closed"
	}
	cb := cfg.OnStateChanged(func(e circuitbreaker.StateChangedEvent) {
		// The event's metrics are the old state's: leaving half-open for
		// closed, the successes it counted.
		b.changed(name(e.NewState), e.Metrics().Successes())
	}).Build()
	ex := failsafe.With[int](cb)
	b.admit = func() (func(bool), bool) {
		admitted, outcome, over := make(chan struct{}), make(chan bool), make(chan struct{})
		go func() {
			defer close(over)
			_, _ = ex.Get(func() (int, error) {
				close(admitted)
				return 0, result(<-outcome)
			})
		}()
		select {
		case <-admitted:
		case <-over:
			return nil, false // circuitbreaker.ErrOpen
		}
		return func(ok bool) { outcome <- ok; <-over }, true
	}
	b.st = func() string { return name(cb.State()) }
	return b
}

// libCase is one library configuration drawn at random.
type libCase struct {
	desc string
	br   *libBreaker
	// probesAtOnce is the most calls one half-open lets through at once.
	probesAtOnce int
	// successes is what successes_to_close must be when a success closed
	// it, from the library's rule; 0: taken from the library's log.
	successes int
}

// libFault draws a fault on app at a random moment: type, params.
func libFault(r *rand.Rand) (desc, yaml string, timeout time.Duration) {
	at := between(r, 2*time.Second, 3500*time.Millisecond)
	dur := between(r, 1500*time.Millisecond, 3*time.Second)
	timeout = between(r, 400*time.Millisecond, 900*time.Millisecond)
	kinds := []string{
		"type: status, params: {code: 503}",
		fmt.Sprintf("type: retry_after, params: {after: %ds}", 1+r.IntN(3)),
		"type: reset",
		"type: latency, params: {fixed: 2s}",
	}
	k := kinds[r.IntN(len(kinds))]
	desc = fmt.Sprintf("fault %s at %s for %s, gateway timeout %s", k, at, dur, timeout)
	yaml = fmt.Sprintf("  - {name: app-fault, upstream: app, at: %s, for: %s, %s}\n", at, dur, k)
	return desc, yaml, timeout
}

// libDrill rehearses one drawn case and holds the analysis to the
// library's log.
func libDrill(t *testing.T, name string, draw func(r *rand.Rand) libCase) {
	t.Helper()
	r := shapeRand(t)
	lc := draw(r)
	fdesc, faults, timeout := libFault(r)
	healthy := ""
	if r.IntN(2) == 0 {
		healthy = "{latency: {fixed: 300ms}}"
	}
	desc := fmt.Sprintf("%s; %s; healthy answers %q", lc.desc, fdesc, healthy)
	t.Log("breaker: " + desc)
	g, res := shapeDrillFaults(t, lc.br, name, healthy, faults, timeout)
	ua := res.Analysis.Upstreams["app"]
	if ua == nil || len(ua.Episodes) != 1 {
		t.Fatalf("want one episode on app, analysis has %+v", ua)
	}
	// What the analysis may call the shape: a half-open letting live
	// calls through, one at a time or several; ambiguous where a quick
	// success cannot be told from a timer.
	shape := analysis.ShapeLiveProbe + "|" + analysis.ShapeUnknown
	if lc.probesAtOnce > 1 {
		shape += "|" + analysis.ShapeLiveProbes
	}
	want := lc.successes
	if want == 0 {
		lc.br.mu.Lock()
		if n := len(lc.br.closing); n > 0 {
			want = int(lc.br.closing[n-1])
		}
		lc.br.mu.Unlock()
	}
	var ws *int
	if want > 0 {
		ws = &want
	}
	if !lc.br.opened() {
		// The drawn breaker never opened on the drawn fault (gobreaker's
		// rolling window counts a failure in its request's bucket: calls
		// that time out late in the window can leave the rate under the
		// threshold throughout). The analysis must say so: no cycle, so
		// no shape and no successes to close.
		t.Log("the library's log has no open: the analysis must state none")
		shape, ws = "", nil
	}
	// checkShape accepts an unknown only where the analysis states why the
	// evidence cannot fix it: a close with no latest moment and no success
	// count (maybe_probe) when the call after which traffic resumed was
	// quick and alone — a probe's success, several quick probes or a
	// timer look alike from outside — or when it came while a call of the
	// half-open was in flight or as its answer did (a slot an earlier
	// success gave back); probes "at least" the count seen then, for the
	// same reason. Every other figure is held exactly or to its bounds.
	checkShape(t, g, res, desc, shape, ws)
	checkLibCycles(t, g, res)
}

// checkLibCycles holds what checkShape does not to the library's log:
// each probe's outcome, the cooldown progression (each open's wait to its
// half-open), and that no call counted as leaked (a library never lets a
// call through while open).
func checkLibCycles(t *testing.T, g *shapeGW, res *rehearsal.Result) {
	t.Helper()
	failed := t.Failed() // checkShape printed the log then
	ep := res.Analysis.Upstreams["app"].Episodes[0]
	wall := res.Analysis.Run.WallStart
	truth := g.truth(wall, ep.StartS)
	if ep.Leaked != 0 {
		t.Errorf("leaked = %d: the library let no call through while open", ep.Leaked)
	}
	if len(truth) != len(ep.Cycles) {
		return // checkShape said so
	}
	g.mu.Lock()
	log := g.log()
	g.mu.Unlock()
	for i, tc := range truth {
		cy := ep.Cycles[i]
		if len(tc.Probes) == len(cy.Probes) {
			for j, p := range tc.Probes {
				if p.OK != cy.Probes[j].OK {
					t.Errorf("cycle %d probe %d at %.3f: ok %v, the library was told %v", i+1, j+1, cy.Probes[j].AtS, cy.Probes[j].OK, p.OK)
				}
			}
		}
		// The library's cooldowns: from each open to the half-open after
		// it, within the cycle. A half-open is entered when the first
		// call after the delay asks (gobreaker, failsafe): the probe's
		// arrival.
		var cool []float64
		openAt := -1.0
		end := math.Inf(1)
		if tc.CloseAt != nil {
			end = *tc.CloseAt
		}
		for _, tr := range log {
			at := tr.At.Sub(wall).Seconds()
			if at < tc.OpenAt-1e-9 || at > end {
				continue
			}
			switch tr.To {
			case "open":
				openAt = at
			case "half_open":
				if openAt >= 0 {
					cool = append(cool, at-openAt)
				}
				openAt = -1
			}
		}
		what := fmt.Sprintf("cycle %d cooldowns (s)", i+1)
		// The log's waits, and, when the call after which traffic
		// resumed may have been the half-open's probe (which the
		// analysis does not count: probes are the least there were),
		// the log's less that probe's, the one not measured.
		logs := [][]float64{cool}
		if cy.MaybeProbe && len(cool) > 0 {
			logs = append(logs, cool[:len(cool)-1])
		}
		why := cooldownsHold(cy, logs[0]) // the reason given: the whole log's
		for _, c := range logs[1:] {
			if why != "" && cooldownsHold(cy, c) == "" {
				why = ""
			}
		}
		if why != "" {
			t.Errorf("%s: measured %v, the library's log %v: %s", what, ms(cy.CooldownsS), ms(cool), why)
			continue
		}
		t.Logf("%s: measured %v, the library's log %v", what, ms(cy.CooldownsS), ms(cool))
	}
	if !failed && t.Failed() {
		// The library's log and its calls, to read a failure against
		// (checkShape prints them when it fails itself).
		for _, tr := range log {
			t.Logf("gateway: %.4f %s", tr.At.Sub(wall).Seconds(), tr.To)
		}
		g.mu.Lock()
		for _, k := range g.calls {
			if at := k.At.Sub(wall).Seconds(); at >= ep.StartS-0.5 && at < ep.EndS+1 {
				t.Logf("gateway call: %.4f – %.4f ok %v", at, k.End.Sub(wall).Seconds(), k.OK)
			}
		}
		g.mu.Unlock()
	}
}

// cooldownsHold says how cy's cooldowns fail to hold the library's waits
// cool ("" when they hold). The count is held to its bounds
// (cooldowns_count_bounds: reopens between probes that may have gone
// unseen), exact when it has none; each measured wait, in order, to one
// of the library's within its bounds (or the tolerance when exact), the
// first to the first (checkShape holds its value). Waits of the log
// left between them are the unseen reopens, never more than the bounds
// allow; with no bounds none is left, and each wait is held to the
// library's at the same place.
func cooldownsHold(cy *analysis.Cycle, cool []float64) string {
	n := len(cy.CooldownsS)
	lo, hi := n, n
	if b := cy.CooldownsCountBounds; b != nil && b.Min != nil && b.Max != nil {
		lo, hi = int(*b.Min), int(*b.Max)
	}
	switch {
	case len(cool) < lo || len(cool) > hi:
		return fmt.Sprintf("%d waits, the count stated %d–%d", len(cool), lo, hi)
	case n == 0:
		return ""
	case len(cool) == 0:
		return "no wait in the log"
	}
	k := 1 // the next of the log's waits to match
	for j := 1; j < n; j++ {
		wlo, whi := cy.CooldownsS[j], cy.CooldownsS[j]
		if j < len(cy.CooldownsBoundsS) && cy.CooldownsBoundsS[j] != nil {
			if b := cy.CooldownsBoundsS[j]; b.Min != nil && b.Max != nil {
				wlo, whi = *b.Min, *b.Max
			}
		}
		for k < len(cool) && k-j < len(cool)-n && (cool[k] < wlo-tolerance(cool[k]) || cool[k] > whi+tolerance(cool[k])) {
			k++ // a wait the analysis did not see (within the count's bounds)
		}
		if k == len(cool) || cool[k] < wlo-tolerance(cool[k]) || cool[k] > whi+tolerance(cool[k]) {
			return fmt.Sprintf("cooldown %d measured %.3f s (bounds %.3f – %.3f) is none of the library's left in order", j+1, cy.CooldownsS[j], wlo, whi)
		}
		k++
	}
	return ""
}

// TestLibraryGobreaker: sony/gobreaker decides; consecutive failures or
// a failure rate over a rolling window open it.
func TestLibraryGobreaker(t *testing.T) {
	t.Run("consecutive", func(t *testing.T) {
		t.Parallel()
		libDrill(t, "gobreaker-consecutive", func(r *rand.Rand) libCase {
			n, mr := uint32(2+r.IntN(4)), uint32(1+r.IntN(3))
			st := gobreaker.Settings{Name: "app", MaxRequests: mr, Timeout: between(r, 500*time.Millisecond, 1500*time.Millisecond),
				ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= n }}
			return libCase{desc: fmt.Sprintf("gobreaker: %d failures in a row open it, MaxRequests %d, Timeout %s", n, mr, st.Timeout),
				br: newGobreaker(st), probesAtOnce: int(mr), successes: int(mr)}
		})
	})
	t.Run("rate", func(t *testing.T) {
		t.Parallel()
		libDrill(t, "gobreaker-rate", func(r *rand.Rand) libCase {
			minCalls, rate, mr := uint32(4+r.IntN(7)), 0.3+0.3*r.Float64(), uint32(1+r.IntN(3))
			iv := between(r, time.Second, 2*time.Second)
			st := gobreaker.Settings{Name: "app", MaxRequests: mr, Timeout: between(r, 500*time.Millisecond, 1500*time.Millisecond),
				Interval: iv, BucketPeriod: iv / 4,
				ReadyToTrip: func(c gobreaker.Counts) bool {
					return c.Requests >= minCalls && float64(c.TotalFailures) >= rate*float64(c.Requests)
				}}
			return libCase{desc: fmt.Sprintf("gobreaker: a failure rate ≥ %.2f over ≥ %d calls in a rolling %s (buckets of %s) opens it, MaxRequests %d, Timeout %s",
				rate, minCalls, iv, iv/4, mr, st.Timeout), br: newGobreaker(st), probesAtOnce: int(mr), successes: int(mr)}
		})
	})
}

// TestLibraryFailsafe: failsafe-go decides; a failure rate over a time
// window with a minimum of executions, or failures out of the last N
// with an exponential backoff of the open state.
func TestLibraryFailsafe(t *testing.T) {
	t.Run("rate", func(t *testing.T) {
		t.Parallel()
		libDrill(t, "failsafe-rate", func(r *rand.Rand) libCase {
			rate, minExec := 0.3+0.3*r.Float64(), uint(4+r.IntN(7))
			period := between(r, time.Second, 2*time.Second)
			k := uint(1 + r.IntN(3))
			delay := between(r, 500*time.Millisecond, 1500*time.Millisecond)
			cfg := circuitbreaker.NewBuilder[int]().WithFailureRateThreshold(rate, minExec, period).
				WithSuccessThreshold(k).WithDelay(delay)
			return libCase{desc: fmt.Sprintf("failsafe-go: a failure rate ≥ %.2f over ≥ %d executions in %s opens it, %d successes close it, delay %s",
				rate, minExec, period, k, delay), br: newFailsafe(cfg), probesAtOnce: int(k)}
		})
	})
	t.Run("backoff", func(t *testing.T) {
		t.Parallel()
		libDrill(t, "failsafe-backoff", func(r *rand.Rand) libCase {
			f := uint(2 + r.IntN(3))
			of := f + uint(r.IntN(3))
			k := uint(1 + r.IntN(2))
			n := k + uint(r.IntN(2))
			base := between(r, 300*time.Millisecond, 600*time.Millisecond)
			capd := 4 * base
			// The opens since the last close: the delay doubles with each.
			var opens atomic.Int32
			cfg := circuitbreaker.NewBuilder[int]().WithFailureThresholdRatio(f, of).WithSuccessThresholdRatio(k, n).
				WithDelayFunc(func(failsafe.ExecutionAttempt[int]) time.Duration {
					return min(base<<(opens.Add(1)-1), capd)
				}).
				OnClose(func(circuitbreaker.StateChangedEvent) { opens.Store(0) })
			return libCase{desc: fmt.Sprintf("failsafe-go: %d failures of the last %d open it, %d successes of %d close it, delay %s doubling to %s",
				f, of, k, n, base, capd), br: newFailsafe(cfg), probesAtOnce: int(n)}
		})
	})
}

// TestLibrariesNotInTheBinary: the breaker libraries are the tests'
// gateways, never the harness's code: the binary must not link them.
func TestLibrariesNotInTheBinary(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list the binary's packages")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/halfopen/rehearse/cmd/rehearse").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, lib := range []string{"github.com/sony/gobreaker", "github.com/failsafe-go/failsafe-go"} {
			if strings.HasPrefix(dep, lib) {
				t.Errorf("the binary links %s: the breaker libraries are for the tests only", dep)
			}
		}
	}
}
