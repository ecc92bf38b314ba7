package inject

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// faultedSeqs runs n requests carrying seqs 1..n, from 8 concurrent
// workers, against a fresh server with the given seed, and returns the
// seqs that were faulted.
func faultedSeqs(t *testing.T, seed int64, n int) []uint64 {
	s, mem := startServer(t, []UpstreamConfig{{Name: "search"}},
		[]FaultSpec{{Name: "flaky", Type: "status", Upstream: "search", Probability: 0.5}}, WithSeed(seed))
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	seqs := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range seqs {
				req, _ := http.NewRequest("GET", s.URL("search"), nil)
				req.Header.Set("X-Rehearse-Seq", strconv.Itoa(i))
				resp, err := c.Do(req)
				if err != nil {
					t.Error(err)
					continue
				}
				resp.Body.Close()
			}
		}()
	}
	for i := 1; i <= n; i++ {
		seqs <- i
	}
	close(seqs)
	wg.Wait()
	c.CloseIdleConnections()
	s.Close()
	var out []uint64
	for _, ev := range upstreamEvents(mem) {
		if ev.Fault != "" {
			out = append(out, *ev.Seq)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func TestSameSeedSameDecisions(t *testing.T) {
	const n = 200
	a := faultedSeqs(t, 7, n)
	b := faultedSeqs(t, 7, n)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("same seed, different decisions:\n%v\n%v", a, b)
	}
	if len(a) < n/2-40 || len(a) > n/2+40 {
		t.Fatalf("%d of %d faulted at probability 0.5", len(a), n)
	}
	// The documented rule predicts them.
	var want []uint64
	for i := uint64(1); i <= n; i++ {
		if Decide(7, "flaky", "seq:"+strconv.FormatUint(i, 10)+":0", 0.5) {
			want = append(want, i)
		}
	}
	if fmt.Sprint(a) != fmt.Sprint(want) {
		t.Fatalf("decisions do not follow the documented rule")
	}
	if c := faultedSeqs(t, 8, n); fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatal("different seeds made the same decisions")
	}
}

func TestRetriesDrawAgain(t *testing.T) {
	// The same seq arriving again (a gateway retry) gets a fresh draw:
	// attempt 1 is decided by key seq:N:1.
	s, mem := startServer(t, []UpstreamConfig{{Name: "search"}},
		[]FaultSpec{{Name: "flaky", Type: "status", Upstream: "search", Probability: 0.5}}, WithSeed(3))
	c := newClient(5 * time.Second)
	for range 2 {
		if _, _, err := get(t, c, s.URL("search"), map[string]string{"X-Rehearse-Seq": "5"}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	evs := upstreamEvents(mem)
	for i, ev := range evs {
		want := Decide(3, "flaky", fmt.Sprintf("seq:5:%d", i), 0.5)
		if (ev.Fault != "") != want {
			t.Fatalf("attempt %d faulted=%v, rule says %v", i, ev.Fault != "", want)
		}
	}
}

func TestTargeting(t *testing.T) {
	type req struct {
		method, path string
		hdr          map[string]string
	}
	tests := []struct {
		name  string
		spec  FaultSpec
		reqs  []req
		fault []bool
	}{
		{"health checks spared by default", FaultSpec{Type: "status", Upstream: "u"},
			[]req{{"GET", "/healthz", nil}, {"GET", "/health", nil}, {"GET", "/x", map[string]string{"X-Health-Check": "canary"}}, {"GET", "/x", nil}},
			[]bool{false, false, false, true}},
		{"health checks faulted when asked", FaultSpec{Type: "status", Upstream: "u", HealthChecks: true},
			[]req{{"GET", "/healthz", nil}, {"GET", "/x", nil}},
			[]bool{true, true}},
		{"match path method header", FaultSpec{Type: "status", Upstream: "u", Match: &MatchConfig{Path: "^/tools/", Method: "post", Header: map[string]string{"X-Tenant": "^a", "X-Any": ""}}},
			[]req{{"POST", "/tools/x", map[string]string{"X-Tenant": "abc", "X-Any": "1"}}, {"GET", "/tools/x", map[string]string{"X-Tenant": "abc", "X-Any": "1"}},
				{"POST", "/v1/x", map[string]string{"X-Tenant": "abc", "X-Any": "1"}}, {"POST", "/tools/x", map[string]string{"X-Tenant": "b", "X-Any": "1"}},
				{"POST", "/tools/x", map[string]string{"X-Tenant": "a"}}},
			[]bool{true, false, false, false, false}},
		{"first_n", FaultSpec{Type: "status", Upstream: "u", FirstN: 2},
			[]req{{"GET", "/", nil}, {"GET", "/", nil}, {"GET", "/", nil}, {"GET", "/", nil}},
			[]bool{true, true, false, false}},
		{"every_nth counts matching requests only", FaultSpec{Type: "status", Upstream: "u", EveryNth: 2, Match: &MatchConfig{Path: "^/a"}},
			[]req{{"GET", "/a", nil}, {"GET", "/b", nil}, {"GET", "/a", nil}, {"GET", "/a", nil}, {"GET", "/a", nil}},
			[]bool{false, false, true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, mem := startServer(t, []UpstreamConfig{{Name: "u"}}, []FaultSpec{tt.spec})
			c := newClient(5 * time.Second)
			for i, r := range tt.reqs {
				req, _ := http.NewRequest(r.method, s.URL("u")+r.path, nil)
				for k, v := range r.hdr {
					req.Header.Set(k, v)
				}
				// Each event names its request (no fault here draws
				// on the seq).
				req.Header.Set("X-Rehearse-Seq", strconv.Itoa(i))
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			s.Close()
			evs := upstreamEvents(mem)
			if len(evs) != len(tt.reqs) {
				t.Fatalf("%d upstream.request events for %d requests", len(evs), len(tt.reqs))
			}
			for i, ev := range evs {
				// Sequential requests: an exchange recorded after its
				// answer reached the client (the fake fast path once
				// did) can come after the next one.
				if ev.Seq == nil {
					t.Errorf("event %d has no seq", i)
				} else if *ev.Seq != uint64(i) {
					t.Errorf("event %d is of request %d: exchanges recorded out of order", i, *ev.Seq)
				}
			}
			for _, ev := range evs {
				if ev.Seq == nil || *ev.Seq >= uint64(len(tt.reqs)) {
					continue
				}
				i := *ev.Seq
				if (ev.Fault != "") != tt.fault[i] {
					t.Errorf("request %d (%s %s): faulted=%v, want %v", i, tt.reqs[i].method, tt.reqs[i].path, ev.Fault != "", tt.fault[i])
				}
				r := tt.reqs[i]
				health := r.path == "/healthz" || r.path == "/health" || r.hdr["X-Health-Check"] != ""
				if ev.HealthCheck != health {
					t.Errorf("request %d (%s %s): health-check flag %v, want %v", i, r.method, r.path, ev.HealthCheck, health)
				}
			}
		})
	}
}

// waitState polls until the fault reaches state, for at most 5s.
func waitState(t *testing.T, s *Server, name, state string) {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for {
		for _, f := range s.Faults() {
			if f.Spec.Name == name && f.State == state {
				return
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("fault %s never became %s", name, state)
		}
	}
}

// TestWindow checks a fault's window: healthy answers before At, the
// fault from At for For, healthy ones after it, and fault.start and
// fault.end in the journal where the window opened and closed.
//
// The window is 120 ms: on a loaded machine a request meant for one phase
// can be decided in the next. The fault's state (pending, active, ended)
// only moves forward and is what decides (a fault reported active is in
// force), so an answer is judged only where the state was the same when
// the request was sent and when its answer came back; an attempt in which
// the timing let a phase go unobserved, or opened the window later than
// the test's own timer and stalls account for, is made again with the
// window twice as long, so that the test fails for a wrong answer or a
// window late every time, never for a slow moment of the machine.
func TestWindow(t *testing.T) {
	at, dur := 120*time.Millisecond, 120*time.Millisecond
	for attempt := 1; ; attempt++ {
		missed := windowAttempt(t, at, dur)
		if missed == "" || t.Failed() {
			return
		}
		if attempt == 5 {
			t.Fatalf("attempt %d (window at %v for %v): %s; no attempt of %d observed every phase on time", attempt, at, dur, missed, attempt)
		}
		t.Logf("attempt %d (window at %v for %v): %s; again with a window twice as long", attempt, at, dur, missed)
		at, dur = 2*at, 2*dur
	}
}

// windowAttempt runs TestWindow once with a window at at for dur; it
// returns what the timing left unobserved (a phase, or the window's
// opening on time), "" when nothing.
func windowAttempt(t *testing.T, at, dur time.Duration) (missed string) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "u"}},
		[]FaultSpec{{Name: "w", Type: "status", Upstream: "u", At: rehearse.Duration(at), For: rehearse.Duration(dur)}})
	defer s.Close()
	c := newClient(5 * time.Second)
	state := func() string {
		for _, f := range s.Faults() {
			if f.Spec.Name == "w" {
				return f.State
			}
		}
		t.Fatal("fault w is not listed")
		return ""
	}
	// status sends one request; same is whether the fault was in want
	// both when it was sent and when its answer came back.
	status := func(want string) (code int, same bool) {
		before := state()
		resp, _, err := get(t, c, s.URL("u"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, before == want && state() == want
	}
	// waitFor polls the state every 2 ms until it is st, and returns the
	// run time it was first seen and the longest gap between two looks
	// (how long the test itself went without running).
	waitFor := func(st string) (seen, gap time.Duration) {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(at + dur + 10*time.Second)
		last := s.now()
		for {
			got := state()
			now := s.now()
			gap, last = max(gap, now-last), now
			if got == st {
				return now, gap
			}
			select {
			case <-tick.C:
			case <-deadline:
				t.Fatalf("fault w never became %s (%s at %v)", st, got, now)
			}
		}
	}

	switch code, same := status(StatePending); {
	case !same:
		return "the request meant for before the window was not answered before it opened"
	case code != 200:
		t.Errorf("before the window (the fault pending throughout): %d, want 200", code)
	}
	// A timer of the test's own for the window's opening: how late the
	// machine let a timer for that instant run.
	ctrl := make(chan time.Duration, 1)
	time.AfterFunc(at-s.now(), func() { ctrl <- s.now() })
	activeSeen, gap := waitFor(StateActive)
	switch code, same := status(StateActive); {
	case !same:
		return "the window closed before the request meant for it was answered"
	case code != 503:
		t.Errorf("in the window (the fault active throughout): %d, want 503", code)
	}
	waitFor(StateEnded)
	// The state moves forward only: this request is decided after the end.
	if code, _ := status(StateEnded); code != 200 {
		t.Errorf("after the window: %d, want 200", code)
	}
	s.Close()
	closed := s.now()
	ctrlAt := <-ctrl

	var start, end time.Duration
	var starts, ends int
	for _, e := range mem.Events() {
		switch e.Kind() {
		case journal.KindFaultStart:
			start, starts = e.T, starts+1
		case journal.KindFaultEnd:
			end, ends = e.T, ends+1
			if a := e.Payload.(*journal.FaultEnd).Applied; a != 1 {
				t.Errorf("fault.end says %d applied, want 1", a)
			}
		}
	}
	if starts != 1 || ends != 1 {
		t.Fatalf("%d fault.start and %d fault.end recorded, want one each", starts, ends)
	}
	// fault.start is recorded as the window opens, before the state says
	// so; fault.end once the state says it ended, before Close returns.
	// Timers are never early.
	if start < at || start > activeSeen {
		t.Errorf("fault.start at %v, want within [At %v, seen active at %v]", start, at, activeSeen)
	}
	if end < at+dur || end > closed {
		t.Errorf("fault.end at %v, want within [At+For %v, closed %v]", end, at+dur, closed)
	}
	// Opened on time: no later than the test's own timer for that
	// instant ran, give or take the longest stretch the test went
	// without running and one look. A loaded machine can still hold the
	// window's goroutine back longer than anything the test saw (84 ms
	// against a 38 ms stall at load 9), once; a window that opens late
	// by the schedule's fault is late in every attempt, the longer ones
	// too.
	if late, allowed := start-at, ctrlAt-at+gap+2*time.Millisecond; late > allowed {
		return fmt.Sprintf("the window opened %v after At; the test's own timer for At ran %v after it, the test's longest stall was %v: want at most %v", late, ctrlAt-at, gap, allowed)
	}
	return ""
}

func TestInFlightAndProbeTags(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "u", ProbeTag: &ProbeTagConfig{Header: "X-Probe", UserAgent: "-"}}},
		[]FaultSpec{{Type: "latency", Upstream: "u", Params: &LatencyParams{LatencyConfig{Fixed: rehearse.Duration(150 * time.Millisecond)}}}})
	c := newClient(5 * time.Second)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := map[string]string{"User-Agent": "probe-looking-agent"}
			if i == 0 {
				h["X-Probe"] = "half-open"
			}
			if _, _, err := get(t, c, s.URL("u"), h); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	s.Close()
	maxIn, tagged := 0, 0
	for _, ev := range upstreamEvents(mem) {
		maxIn = max(maxIn, ev.InFlight)
		if ev.ProbeTag == "half-open" {
			tagged++
		} else if ev.ProbeTag != "" {
			t.Errorf("User-Agent recognition was disabled, got tag %q", ev.ProbeTag)
		}
	}
	if maxIn != 3 || tagged != 1 {
		t.Fatalf("max in flight %d, tagged %d", maxIn, tagged)
	}
}

func TestAttemptsBounded(t *testing.T) {
	f := &faultState{}
	for seq := range uint64(3 * attemptsGen) {
		if a := f.nextAttempt(seq); a != 0 {
			t.Fatalf("seq %d: attempt %d on first arrival", seq, a)
		}
	}
	if n := len(f.attempts) + len(f.oldAttempts); n > 2*attemptsGen {
		t.Fatalf("%d seqs remembered", n)
	}
	// A recent seq is remembered across a generation change.
	last := uint64(3*attemptsGen - 1)
	if a := f.nextAttempt(last); a != 1 {
		t.Fatalf("retry of a recent seq: attempt %d", a)
	}
}
