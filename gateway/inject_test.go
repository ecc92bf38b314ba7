package gateway

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/journal"
)

// TestWithInjectUpstreams runs the gateway against the harness's own fake
// upstreams (package inject) and checks the shared conventions from the
// upstream's journal: sequence stamps forwarded, probes recognised as
// probes, canary requests recognised as health checks, and an SSE stream
// cut at 40 % passed on without opening the breaker.
func TestWithInjectUpstreams(t *testing.T) {
	clk := journal.NewClock(time.Now())
	mem := journal.NewMemory(clk)
	srv, err := inject.New(
		[]inject.UpstreamConfig{{Name: "search"}, {Name: "llm-primary"}},
		nil,
		inject.WithRecorder(mem), inject.WithClock(clk), inject.WithSeed(7),
		inject.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	cfg := fastConfig(map[string]string{"search": srv.URL("search"), "llm-primary": srv.URL("llm-primary")})
	cfg.Primary = "llm-primary"
	cfg.Retry.MaxAttempts = 1
	cfg.Canary.Interval = new(rehearse.Duration(100 * time.Millisecond))
	g, base := testGateway(t, cfg, WithRecorder(mem))
	c := &http.Client{Timeout: 5 * time.Second}

	// 503s from the fake until the breaker opens, then recovery.
	if _, err := srv.AddFault(inject.FaultSpec{Name: "storm", Type: "status", Upstream: "search",
		Params: &inject.StatusParams{Code: 503}}); err != nil {
		t.Fatal(err)
	}
	seq := 0
	send := func() clientResult {
		seq++
		return do(t, c, "POST", base+"/tools/search", HeaderSeq, fmt.Sprint(seq), HeaderRun, "run-1")
	}
	for g.Breaker("search").State() != Open {
		if seq > 20 {
			t.Fatal("breaker did not open")
		}
		send()
	}
	srv.ClearFaults("search")
	deadline := time.Now().Add(5 * time.Second)
	for g.Breaker("search").State() != Closed {
		if time.Now().After(deadline) {
			t.Fatalf("breaker %s 5s after recovery", g.Breaker("search").State())
		}
		send()
		time.Sleep(10 * time.Millisecond)
	}

	// An SSE stream cut after 4 of 10 events, reset.
	if _, err := srv.AddFault(inject.FaultSpec{Name: "cut", Type: "stream_cut", Upstream: "llm-primary",
		Params: &inject.StreamCutParams{AfterEvents: 4}}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	events := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			events++
		}
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || events != 4 || sc.Err() == nil {
		t.Fatalf("cut stream: status %d, %d events, read error %v; want 200, 4 events, a broken body", resp.StatusCode, events, sc.Err())
	}
	if st := g.Breaker("llm-primary").State(); st != Closed {
		t.Fatalf("a mid-stream cut opened the breaker: %s", st)
	}

	var probes, stamped, health, traffic int
	for _, p := range mem.OfKind(journal.KindUpstreamRequest) {
		u := p.(*journal.UpstreamRequest)
		switch {
		case u.HealthCheck:
			health++
		case u.ProbeTag != "":
			probes++
		default:
			traffic++
		}
		if u.Upstream == "search" && !u.HealthCheck {
			if u.Seq == nil {
				t.Errorf("upstream request without the forwarded sequence stamp: %+v", u)
			} else {
				stamped++
			}
		}
	}
	if probes < 2 || health == 0 || stamped == 0 {
		t.Fatalf("inject saw %d probes, %d health checks, %d stamped calls (%d other)", probes, health, stamped, traffic)
	}
	var tr int
	for _, p := range mem.OfKind(journal.KindBreakerTransition) {
		if p.(*journal.BreakerTransition).Dependency == "search" {
			tr++
		}
	}
	if tr < 3 {
		t.Fatalf("%d transitions of search recorded", tr)
	}
}
