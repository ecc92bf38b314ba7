package inject

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

func TestProxyMode(t *testing.T) {
	// The real upstream is itself a harness fake; the proxy in front of it
	// applies the faults to its real responses.
	real, _ := startServer(t, []UpstreamConfig{{Name: "real", Healthy: &HealthyConfig{BodyBytes: 5000, Chunked: true, ChunkBytes: 250, Headers: map[string]string{"X-Real": "1"}}}}, nil)
	s, mem := startServer(t, []UpstreamConfig{{Name: "search", Mode: ModeProxy, Target: real.URL("real")}},
		[]FaultSpec{{Name: "cut", Type: "stream_cut", Upstream: "search", Match: &MatchConfig{Path: "^/cut"}, Params: &StreamCutParams{AfterBytes: 1500}}})
	c := newClient(5 * time.Second)
	resp, body, err := get(t, c, s.URL("search")+"/ok", map[string]string{"X-Rehearse-Seq": "9"})
	if err != nil || resp.StatusCode != 200 || len(body) != 5000 || resp.Header.Get("X-Real") != "1" {
		t.Fatalf("healthy through the proxy: %v, %d bytes", err, len(body))
	}
	n, err := readCut(t, s.URL("search")+"/cut", 5*time.Second)
	if n < 1500-250 || n > 1500+250 || !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("cut through the proxy: %d bytes, %v", n, err)
	}
	s.Close()
	// An exchange is journalled when its handler returns, which for the
	// healthy one may be after the cut one began: match them by path.
	evs := upstreamEvents(mem)
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2", len(evs))
	}
	ok, cut := evs[0], evs[1]
	if ok.Path != "/ok" {
		ok, cut = cut, ok
	}
	if ok.Path != "/ok" || ok.Outcome != journal.OutcomeUpstreamComplete || ok.Seq == nil || *ok.Seq != 9 ||
		cut.Path != "/cut" || cut.Outcome != journal.OutcomeUpstreamReset {
		t.Fatalf("events %+v %+v", ok, cut)
	}
}

func TestProxyModeUnknownLengthPercentWarns(t *testing.T) {
	real, _ := startServer(t, []UpstreamConfig{{Name: "real", Healthy: &HealthyConfig{BodyBytes: 3000, Chunked: true}}}, nil)
	s, mem := startServer(t, []UpstreamConfig{{Name: "search", Mode: ModeProxy, Target: real.URL("real")}},
		[]FaultSpec{{Type: "stream_cut", Upstream: "search", Params: &StreamCutParams{AfterPercent: 40}}})
	c := newClient(5 * time.Second)
	for range 2 {
		if _, body, err := get(t, c, s.URL("search"), nil); err != nil || len(body) != 3000 {
			t.Fatalf("%d bytes, %v", len(body), err)
		}
	}
	s.Close()
	logs := mem.OfKind(journal.KindLog)
	if len(logs) != 1 || !strings.Contains(logs[0].(*journal.Log).Msg, "after_percent cannot cut it") {
		t.Fatalf("logs %v", logs)
	}
}

func TestProxyModeContentLengthCut(t *testing.T) {
	real, _ := startServer(t, []UpstreamConfig{{Name: "real", Healthy: &HealthyConfig{BodyBytes: 10000}}}, nil)
	s, _ := startServer(t, []UpstreamConfig{{Name: "search", Mode: ModeProxy, Target: real.URL("real")}},
		[]FaultSpec{{Type: "stream_cut", Upstream: "search", Params: &StreamCutParams{AfterPercent: 40, Then: EndFIN}}})
	n, err := readCut(t, s.URL("search"), 5*time.Second)
	if n < 4000-512 || n > 4000+512 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("%d bytes, %v", n, err)
	}
}

func TestProxyUnreachable(t *testing.T) {
	dead := testutil.FreeAddr(t)
	s, mem := startServer(t, []UpstreamConfig{{Name: "search", Mode: ModeProxy, Target: "http://" + dead}}, nil)
	resp, body, err := get(t, newClient(5*time.Second), s.URL("search"), nil)
	if err != nil || resp.StatusCode != 502 || !strings.Contains(string(body), "unreachable") {
		t.Fatalf("%v %v %s", err, resp, body)
	}
	s.Close()
	if ev := upstreamEvents(mem)[0]; ev.Status != 502 {
		t.Fatalf("event %+v", ev)
	}
}

// echoServer is a real TCP upstream that echoes lines back.
func echoServer(t *testing.T) string {
	return testutil.ServeTCP(t, func(c net.Conn) { io.Copy(c, c) })
}

func TestTCPMode(t *testing.T) {
	target := echoServer(t)
	s, mem := startServer(t, []UpstreamConfig{{Name: "redis", Mode: ModeTCP, Target: target}}, nil)
	roundTrip := func() (string, error) {
		c, err := net.Dial("tcp", s.Addr("redis"))
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return "", err
		}
		return bufio.NewReader(c).ReadString('\n')
	}
	if got, err := roundTrip(); err != nil || got != "PING\r\n" {
		t.Fatalf("healthy relay: %q %v", got, err)
	}

	add := func(spec FaultSpec) {
		t.Helper()
		if _, err := s.AddFault(spec); err != nil {
			t.Fatal(err)
		}
	}
	add(FaultSpec{Name: "rst", Type: "reset", Upstream: "redis"})
	if _, err := roundTrip(); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reset: %v", err)
	}
	s.RemoveFault("rst")

	add(FaultSpec{Name: "hole", Type: "blackhole", Upstream: "redis"})
	c, err := net.Dial("tcp", s.Addr("redis"))
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("PING\r\n"))
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	n, err := c.Read(make([]byte, 10))
	var ne net.Error
	if n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("blackhole: %d bytes, %v", n, err)
	}
	c.Close()
	s.RemoveFault("hole")

	add(FaultSpec{Name: "slow", Type: "latency", Upstream: "redis", Params: &LatencyParams{LatencyConfig{Fixed: rehearse.Duration(100 * time.Millisecond)}}})
	start := time.Now()
	if got, err := roundTrip(); err != nil || got != "PING\r\n" || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("latency: %q %v after %v", got, err, time.Since(start))
	}
	s.RemoveFault("slow")

	add(FaultSpec{Name: "down", Type: "refuse", Upstream: "redis"})
	if _, err := roundTrip(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("refuse: %v", err)
	}
	s.RemoveFault("down")
	if got, err := roundTrip(); err != nil || got != "PING\r\n" {
		t.Fatalf("after refuse: %q %v", got, err)
	}
	s.Close()
	outcomes := map[string]journal.Outcome{}
	for _, ev := range upstreamEvents(mem) {
		outcomes[ev.Fault] = ev.Outcome
		if ev.Method != "TCP" {
			t.Errorf("method %q", ev.Method)
		}
	}
	if outcomes["rst"] != journal.OutcomeUpstreamReset || outcomes["hole"] != journal.OutcomeUpstreamStalled || outcomes[""] != journal.OutcomeUpstreamComplete {
		t.Fatalf("outcomes %v", outcomes)
	}
}

func TestTCPBandwidth(t *testing.T) {
	target := echoServer(t)
	s, _ := startServer(t, []UpstreamConfig{{Name: "redis", Mode: ModeTCP, Target: target}},
		[]FaultSpec{{Type: "bandwidth", Upstream: "redis", Params: &BandwidthParams{BytesPerSecond: 20000}}})
	c, err := net.Dial("tcp", s.Addr("redis"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const size = 8000 // 0.4s at 20 kB/s
	payload := strings.Repeat("x", size)
	start := time.Now()
	go c.Write([]byte(payload))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if took < 350*time.Millisecond || took > 2*time.Second {
		t.Fatalf("%d bytes at 20000 B/s took %v, want about 400ms", size, took)
	}
}
