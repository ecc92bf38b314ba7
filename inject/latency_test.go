package inject

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

func TestLatencySample(t *testing.T) {
	ms := func(n int) rehearse.Duration { return rehearse.Duration(time.Duration(n) * time.Millisecond) }
	r := rand.New(rand.NewPCG(1, 2))
	draw := func(l *LatencyConfig, n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = l.sample(r)
		}
		slices.Sort(out)
		return out
	}
	if d := (*LatencyConfig)(nil).sample(r); d != 0 {
		t.Fatalf("nil latency sampled %v", d)
	}
	if d := (&LatencyConfig{Fixed: ms(7)}).sample(r); d != 7*time.Millisecond {
		t.Fatalf("fixed sampled %v", d)
	}
	u := draw(&LatencyConfig{Uniform: &UniformConfig{Min: ms(10), Max: ms(20)}}, 2000)
	if u[0] < 10*time.Millisecond || u[len(u)-1] > 20*time.Millisecond {
		t.Fatalf("uniform out of bounds: %v..%v", u[0], u[len(u)-1])
	}
	p := draw(&LatencyConfig{Percentiles: &PercentilesConfig{P50: ms(20), P90: ms(80), P99: ms(250)}}, 20000)
	within := func(name string, got time.Duration, want time.Duration) {
		if got < want*9/10 || got > want*11/10 {
			t.Errorf("%s = %v, want %v ± 10%%", name, got, want)
		}
	}
	within("p50", p[len(p)/2], 20*time.Millisecond)
	within("p90", p[len(p)*90/100], 80*time.Millisecond)
	within("p99", p[len(p)*99/100], 250*time.Millisecond)
	// Same seed, same draws: sampled delays repeat across runs.
	a := rand.New(rand.NewPCG(9, 9))
	b := rand.New(rand.NewPCG(9, 9))
	l := &LatencyConfig{Uniform: &UniformConfig{Min: 0, Max: ms(1000)}}
	for range 100 {
		if l.sample(a) != l.sample(b) {
			t.Fatal("same seed, different delays")
		}
	}
}

func TestHTTPBandwidthAndHeadersNeverMax(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "bw", Healthy: &HealthyConfig{BodyBytes: 6000}}, {Name: "hn"}, {Name: "bh"}}, []FaultSpec{
		{Type: "bandwidth", Upstream: "bw", Params: &BandwidthParams{BytesPerSecond: 20000}},
		{Type: "headers_never", Upstream: "hn", Params: &HeadersNeverParams{Max: rehearse.Duration(100 * time.Millisecond)}},
		{Type: "blackhole", Upstream: "bh"},
	})
	c := newClient(5 * time.Second)
	start := time.Now()
	resp, body, err := get(t, c, s.URL("bw"), nil)
	if err != nil || resp.StatusCode != 200 || len(body) != 6000 {
		t.Fatalf("bandwidth: %v, %d bytes", err, len(body))
	}
	if took := time.Since(start); took < 250*time.Millisecond || took > 3*time.Second {
		t.Fatalf("6000 bytes at 20000 B/s took %v, want about 300ms", took)
	}
	start = time.Now()
	_, _, err = get(t, c, s.URL("hn"), nil)
	if err == nil || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("headers_never max: %v after %v", err, time.Since(start))
	}
	_, _, err = get(t, newClient(150*time.Millisecond), s.URL("bh"), nil)
	if err == nil || !isTimeout(err) {
		t.Fatalf("blackhole: %v", err)
	}
	s.Close()
	for _, ev := range upstreamEvents(mem) {
		if ev.Upstream == "bh" && ev.Outcome != "stalled" {
			t.Fatalf("blackhole outcome %s", ev.Outcome)
		}
	}
}

func isTimeout(err error) bool {
	te, ok := err.(interface{ Timeout() bool })
	return ok && te.Timeout()
}
