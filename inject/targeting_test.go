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
			for _, r := range tt.reqs {
				req, _ := http.NewRequest(r.method, s.URL("u")+r.path, nil)
				for k, v := range r.hdr {
					req.Header.Set(k, v)
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			s.Close()
			evs := upstreamEvents(mem)
			for i, ev := range evs {
				if (ev.Fault != "") != tt.fault[i] {
					t.Errorf("request %d (%s %s): faulted=%v, want %v", i, tt.reqs[i].method, tt.reqs[i].path, ev.Fault != "", tt.fault[i])
				}
			}
			if evs[0].HealthCheck != (tt.reqs[0].path == "/healthz") {
				t.Errorf("health-check flag %v", evs[0].HealthCheck)
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

func TestWindow(t *testing.T) {
	const at, dur = 120 * time.Millisecond, 120 * time.Millisecond
	s, mem := startServer(t, []UpstreamConfig{{Name: "u"}},
		[]FaultSpec{{Name: "w", Type: "status", Upstream: "u", At: rehearse.Duration(at), For: rehearse.Duration(dur)}})
	c := newClient(5 * time.Second)
	status := func() int {
		resp, _, err := get(t, c, s.URL("u"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	if got := status(); got != 200 {
		t.Fatalf("before the window: %d", got)
	}
	waitState(t, s, "w", StateActive)
	if got := status(); got != 503 {
		t.Fatalf("in the window: %d", got)
	}
	waitState(t, s, "w", StateEnded)
	if got := status(); got != 200 {
		t.Fatalf("after the window: %d", got)
	}
	s.Close()
	var start, end time.Duration
	for _, e := range mem.Events() {
		switch e.Kind() {
		case journal.KindFaultStart:
			start = e.T
		case journal.KindFaultEnd:
			end = e.T
			if a := e.Payload.(*journal.FaultEnd).Applied; a != 1 {
				t.Errorf("applied %d", a)
			}
		}
	}
	if start < at || start > at+time.Second || end < at+dur || end > at+dur+time.Second {
		t.Fatalf("window recorded at %v-%v, want %v-%v", start, end, at, at+dur)
	}
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
