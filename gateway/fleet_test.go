package gateway

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
)

const (
	envFleetChild    = "REHEARSE_GATEWAY_FLEET_CHILD"
	envFleetInstance = "REHEARSE_GATEWAY_FLEET_INSTANCE"
)

// fleetChild runs this test binary as one gateway process of a fleet when
// the parent test asks for it: config as JSON in the environment, address
// printed on stdout, serving until stdin closes.
func fleetChild() bool {
	raw := os.Getenv(envFleetChild)
	if raw == "" {
		return false
	}
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	g, err := New(cfg, WithInstance(os.Getenv(envFleetInstance)), WithLogger(logger))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = g.Close()
	}()
	fmt.Printf("ADDR %s\n", ln.Addr())
	if err := g.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	os.Exit(0)
	return true
}

// startRedis starts a real redis-server on a free loopback port and
// returns its address; it is stopped by PID at cleanup.
func startRedis(t *testing.T) (addr string, stop func()) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed: the fleet test needs a real Redis (apt-get install redis-server)")
	}
	addr = testutil.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	// Ready when it says so.
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var log strings.Builder
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				ready <- nil
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		ready <- fmt.Errorf("redis-server exited before ready:\n%s", log.String())
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("redis-server not ready after 10s")
	}
	return addr, stop
}

type fleetMember struct {
	name   string
	base   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *testutil.SyncBuffer
}

func startMember(t *testing.T, name string, cfg Config) *fleetMember {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envFleetChild+"="+string(raw), envFleetInstance+"="+name)
	m := &fleetMember{name: name, cmd: cmd, stderr: &testutil.SyncBuffer{}}
	cmd.Stderr = m.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if m.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, m.stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		t.Fatalf("%s did not start: %q %v\n%s", name, line, err, m.stderr.String())
	}
	m.base = "http://" + strings.TrimSpace(strings.TrimPrefix(line, "ADDR "))
	return m
}

// TestFleetProbeLeases runs three gateway processes sharing a real Redis:
// cluster-wide, probes to the failing upstream are at least
// probe_interval − jitter apart; with Redis killed, each process keeps
// probing locally, no more often than coord_fallback_interval, and says
// so in its metrics.
func TestFleetProbeLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("fleet test runs 3 processes for ~6s")
	}
	redisAddr, stopRedis := startRedis(t)
	up := newUpstream(t)
	up.set(status(503))

	cfg := fastConfig(map[string]string{"search": up.URL})
	cfg.Retry.MaxAttempts = 1
	cfg.Breaker.Cooldown = rehearse.Duration(300 * time.Millisecond)
	cfg.Breaker.CooldownMax = rehearse.Duration(300 * time.Millisecond)
	cfg.Coord = "redis://" + redisAddr + "/0"
	cfg.CoordFallbackInterval = rehearse.Duration(time.Second)
	// The test machine is shared and runs -race: give Redis calls more
	// slack than the 200ms default, so the first phase measures leases,
	// not the fail-safe.
	cfg.CoordTimeout = rehearse.Duration(time.Second)
	cfg.Canary.Interval = new(rehearse.Duration(100 * time.Millisecond))
	cfg.Canary.Path = "/healthz"

	var members []*fleetMember
	for i := range 3 {
		members = append(members, startMember(t, fmt.Sprintf("gw%d", i+1), cfg))
	}
	// Two clients a member.
	var bases []string
	for _, m := range members {
		bases = append(bases, m.base, m.base)
	}
	stop := loadClients(bases, 5*time.Millisecond, func(c *http.Client, base string) {
		req, _ := http.NewRequest("POST", base+"/tools/search", strings.NewReader("{}"))
		if resp, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	const phase = 3 * time.Second
	time.Sleep(phase)
	killedAt := time.Now()
	stopRedis()
	time.Sleep(phase)
	stop()

	calls, maxInFlight := up.snapshot()
	var before, after []arrival
	for _, a := range calls {
		if !a.Probe {
			continue
		}
		if a.At.Before(killedAt) {
			before = append(before, a)
		} else {
			after = append(after, a)
		}
	}
	if maxInFlight != 1 {
		t.Errorf("max probes in flight across the fleet: %d, want 1", maxInFlight)
	}
	// With Redis: cluster-wide spacing ≥ 250ms − 50ms jitter.
	if len(before) < 3 {
		t.Fatalf("only %d probes with Redis up", len(before))
	}
	instances := map[string]bool{}
	minGap := time.Hour
	for i, a := range before {
		instances[a.Via] = true
		if i > 0 {
			minGap = min(minGap, a.At.Sub(before[i-1].At))
		}
	}
	if minGap < 200*time.Millisecond {
		t.Errorf("cluster-wide probe spacing with Redis: min %s, want ≥ 200ms", minGap)
	}
	if max := int(phase/(250*time.Millisecond)) + 1; len(before) > max {
		t.Errorf("%d probes in %s with Redis, want ≤ %d", len(before), phase, max)
	}
	t.Logf("with Redis: %d probes from %d instances, min cluster-wide spacing %s", len(before), len(instances), minGap)

	// Without Redis: local probing, each instance ≥ 1s apart.
	per := map[string][]time.Time{}
	for _, a := range after {
		per[a.Via] = append(per[a.Via], a.At)
	}
	if len(per) < 2 {
		t.Errorf("after Redis died only %d instances probed: fail-safe should keep probing locally", len(per))
	}
	minLocal := time.Hour
	for inst, times := range per {
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		for i := 2; i < len(times); i++ { // the first gap straddles the switch
			gap := times[i].Sub(times[i-1])
			minLocal = min(minLocal, gap)
			if gap < 950*time.Millisecond {
				t.Errorf("%s: probes %s apart without Redis, want ≥ 1s", inst, gap)
			}
		}
		if len(times) > int(phase/time.Second)+2 {
			t.Errorf("%s: %d probes in %s without Redis", inst, len(times), phase)
		}
	}
	t.Logf("without Redis: min per-instance spacing %s, probes per instance %v", minLocal, func() map[string]int {
		out := map[string]int{}
		for k, v := range per {
			out[k] = len(v)
		}
		return out
	}())
	for _, m := range members {
		mm := scrape(t, m.base)
		if v, ok := mm[MetricCoordUp+"{}"]; !ok || v != 0 {
			t.Errorf("%s: %s = %v (present %v), want 0", m.name, MetricCoordUp, v, ok)
		}
		if mm[MetricCoordErrors+"{}"] == 0 {
			t.Errorf("%s: no coordinator errors counted", m.name)
		}
		if !strings.Contains(m.stderr.String(), "fleet coordinator unreachable") {
			t.Errorf("%s: no log line about the fail-safe", m.name)
		}
	}
}
