package inject

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// TestHoldingFaultsSeeTheGatewayHangUp: every fault that holds a request
// open (and a slow healthy answer) must notice at once when the gateway
// gives up on the request, with a body (POST) and without (GET): the
// journal then records the exchange as ended by the client at the moment
// it hung up, not as completed when the fault's delay ran out. Before
// watchBody, a latency fault on a POST slept its full delay and recorded a
// completed 200: a gateway's timeout was invisible to the analysis.
func TestHoldingFaultsSeeTheGatewayHangUp(t *testing.T) {
	const (
		hold   = 3 * time.Second        // how long the fault would hold
		hangUp = 200 * time.Millisecond // when the client gives up
		// slack bounds how long after the hang-up the upstream may record
		// the end: a loaded 2-core machine schedules the server's
		// background read late, never by a second.
		slack = time.Second
	)
	slowHealthy := &LatencyConfig{Fixed: rehearse.Duration(hold)}
	cases := []struct {
		name    string
		healthy *HealthyConfig
		fault   *FaultSpec
		want    []journal.Outcome
	}{
		{"latency", nil, &FaultSpec{Type: "latency", Params: &LatencyParams{LatencyConfig{Fixed: rehearse.Duration(hold)}}},
			[]journal.Outcome{journal.OutcomeUpstreamGone}},
		{"slow-healthy", &HealthyConfig{Latency: slowHealthy}, nil,
			[]journal.Outcome{journal.OutcomeUpstreamGone}},
		{"headers_never", nil, &FaultSpec{Type: "headers_never"},
			[]journal.Outcome{journal.OutcomeUpstreamStalled}},
		{"blackhole", nil, &FaultSpec{Type: "blackhole"},
			[]journal.Outcome{journal.OutcomeUpstreamStalled}},
		// The body faults send the headers at once and then trickle: the
		// client hangs up mid-body.
		{"slow_body", &HealthyConfig{BodyBytes: 4096}, &FaultSpec{Type: "slow_body", Params: &SlowBodyParams{Bytes: 16, Interval: rehearse.Duration(hold)}},
			[]journal.Outcome{journal.OutcomeUpstreamGone}},
		{"bandwidth", &HealthyConfig{BodyBytes: 4096}, &FaultSpec{Type: "bandwidth", Params: &BandwidthParams{BytesPerSecond: 100}},
			[]journal.Outcome{journal.OutcomeUpstreamGone}},
		{"stream_cut-stall", &HealthyConfig{BodyBytes: 4096}, &FaultSpec{Type: "stream_cut", Params: &StreamCutParams{AfterBytes: 100, Then: EndStall}},
			[]journal.Outcome{journal.OutcomeUpstreamStalled}},
	}
	for _, tc := range cases {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			t.Run(tc.name+"-"+method, func(t *testing.T) {
				t.Parallel()
				var faults []FaultSpec
				if tc.fault != nil {
					f := *tc.fault
					f.Upstream = "search"
					faults = append(faults, f)
				}
				s, mem := startServer(t, []UpstreamConfig{{Name: "search", Healthy: tc.healthy}}, faults)
				ctx, cancel := context.WithTimeout(context.Background(), hangUp)
				defer cancel()
				var body *strings.Reader
				if method == http.MethodPost {
					body = strings.NewReader(`{"model":"gpt-x","messages":[{"role":"user","content":"hello"}]}`)
				}
				var req *http.Request
				var err error
				if body != nil {
					req, err = http.NewRequestWithContext(ctx, method, s.URL("search")+"/v1/chat/completions", body)
				} else {
					req, err = http.NewRequestWithContext(ctx, method, s.URL("search")+"/tools/search", nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				start := s.now()
				resp, err := newClient(0).Do(req)
				if err == nil {
					// Headers came (the body faults): read until the
					// deadline ends the body.
					buf := make([]byte, 512)
					for err == nil {
						_, err = resp.Body.Read(buf)
					}
					resp.Body.Close()
				}
				// Wait for the upstream to record the exchange; it must do
				// so long before the fault's hold ends.
				var ev *journal.UpstreamRequest
				for deadline := time.Now().Add(hold); time.Now().Before(deadline) && ev == nil; time.Sleep(10 * time.Millisecond) {
					if evs := upstreamEvents(mem); len(evs) > 0 {
						ev = evs[0]
					}
				}
				if ev == nil {
					t.Fatalf("no upstream.request recorded within the hold (%s): the hang-up went unnoticed", hold)
				}
				ended := ev.Done - start
				if ended < hangUp-20*time.Millisecond || ended > hangUp+slack {
					t.Errorf("exchange ended %v after the request, want the hang-up at %v (+ up to %v)", ended, hangUp, slack)
				}
				ok := false
				for _, o := range tc.want {
					ok = ok || ev.Outcome == o
				}
				if !ok {
					t.Errorf("outcome %q, want one of %v (event %+v)", ev.Outcome, tc.want, ev)
				}
			})
		}
	}
}

// TestProxiedBodyReadAheadIntact: the body watchBody reads ahead is the
// body the real upstream gets, byte for byte, behind a latency fault.
func TestProxiedBodyReadAheadIntact(t *testing.T) {
	got := make(chan string, 1)
	real := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
		w.WriteHeader(204)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go real.Serve(ln)
	defer real.Close()
	s, _ := startServer(t, []UpstreamConfig{{Name: "llm", Mode: ModeProxy, Target: "http://" + ln.Addr().String()}},
		[]FaultSpec{{Type: "latency", Upstream: "llm", Params: &LatencyParams{LatencyConfig{Fixed: rehearse.Duration(50 * time.Millisecond)}}}})
	want := strings.Repeat(`{"role":"user","content":"hello"},`, 1000)
	resp, err := newClient(5*time.Second).Post(s.URL("llm")+"/v1/chat/completions", "application/json", strings.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if b := <-got; b != want {
		t.Fatalf("real upstream got %d bytes, want %d", len(b), len(want))
	}
}
