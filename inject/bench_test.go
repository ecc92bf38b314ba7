package inject

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// The proxy benchmarks compare, on the same machine and in the same run,
// a direct connection to a plain net/http backend with the backend behind
// inject's HTTP proxy mode, inject's tcp mode, and Toxiproxy's passthrough
// (no toxics). Toxiproxy runs as its own process: set TOXIPROXY_SERVER to
// its server binary (scripts/bench-inject.sh installs v2.5.0 with
// go install), else those cases are skipped. The *-process cases run
// inject the same way, as `rehearse inject serve` (REHEARSE_BIN), for a
// like-for-like comparison on a loaded machine.
//
//	go test -run '^$' -bench 'Proxy' -benchtime 20000x ./inject/

const benchBody = 512

// startBackend serves benchBody bytes on loopback.
func startBackend(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), benchBody)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// startToxiproxy starts the Toxiproxy server on a free port, creates a
// passthrough proxy to backend and returns its address.
func startToxiproxy(b *testing.B, backend string) string {
	bin := os.Getenv("TOXIPROXY_SERVER")
	if bin == "" {
		b.Skip("toxiproxy server not found: set TOXIPROXY_SERVER (see scripts/bench-inject.sh)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	cmd := exec.Command(bin, "-host", "127.0.0.1", "-port", port)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	api := "http://127.0.0.1:" + port
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(api + "/version")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("toxiproxy did not come up: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Post(api+"/proxies", "application/json", strings.NewReader(fmt.Sprintf(`{"name":"bench","listen":"127.0.0.1:0","upstream":%q,"enabled":true}`, backend)))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ Listen string }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != 201 {
		b.Fatalf("creating the proxy: %d %v", resp.StatusCode, err)
	}
	return p.Listen
}

// startInject serves backend through an inject upstream of mode, without
// faults, recording to an in-memory journal as a run would.
func startInject(b *testing.B, mode, backend string) string {
	target := backend
	if mode == ModeProxy {
		target = "http://" + backend
	}
	clock := journal.NewClock(time.Now())
	s, err := New([]UpstreamConfig{{Name: "bench", Mode: mode, Target: target}}, nil, WithClock(clock), WithRecorder(journal.Discard), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s.Addr("bench")
}

// startInjectProcess runs `rehearse inject serve` as its own process (like
// Toxiproxy), so that both proxies get a process's share of a loaded
// machine; REHEARSE_BIN names the binary, else the case is skipped.
func startInjectProcess(b *testing.B, mode, backend string) string {
	bin := os.Getenv("REHEARSE_BIN")
	if bin == "" {
		b.Skip("rehearse binary not given: set REHEARSE_BIN (see scripts/bench-inject.sh)")
	}
	target := backend
	if mode == ModeProxy {
		target = "http://" + backend
	}
	cfg := filepath.Join(b.TempDir(), "bench.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "upstreams:\n  - {name: bench, mode: %s, target: %q}\n", mode, target), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "inject", "serve", "--config", cfg, "--control", "", "--log-level", "error")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 4 && f[0] == "upstream" && f[1] == "bench" {
			go io.Copy(io.Discard, out)
			return strings.TrimPrefix(f[3], "http://")
		}
	}
	b.Fatalf("rehearse inject serve printed no address: %v", sc.Err())
	return ""
}

// startStdlibProxy serves a bare httputil.ReverseProxy to backend: the
// floor of any HTTP-level proxy built on net/http, to tell inject's own
// cost from the standard library's.
func startStdlibProxy(b *testing.B, backend string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	target, _ := url.Parse("http://" + backend)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 1024}
	srv := &http.Server{Handler: rp}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

type benchSetup struct {
	name  string
	start func(b *testing.B, backend string) string
}

var benchSetups = []benchSetup{
	{"direct", func(b *testing.B, backend string) string { return backend }},
	{"stdlib-reverseproxy", startStdlibProxy},
	{"inject-proxy", func(b *testing.B, backend string) string { return startInject(b, ModeProxy, backend) }},
	{"inject-proxy-full", func(b *testing.B, backend string) string {
		// Every request through net/http's server and reverse proxy, as
		// before the fast path (and as a request a fault could target).
		fastPathOff = true
		defer func() { fastPathOff = false }()
		return startInject(b, ModeProxy, backend)
	}},
	{"inject-proxy-nopoll", func(b *testing.B, backend string) string {
		// The fast path without its poll for the upstream's answer.
		spinOff = true
		defer func() { spinOff = false }()
		return startInject(b, ModeProxy, backend)
	}},
	{"inject-tcp", func(b *testing.B, backend string) string { return startInject(b, ModeTCP, backend) }},
	{"inject-proxy-process", func(b *testing.B, backend string) string { return startInjectProcess(b, ModeProxy, backend) }},
	{"inject-tcp-process", func(b *testing.B, backend string) string { return startInjectProcess(b, ModeTCP, backend) }},
	{"toxiproxy", startToxiproxy},
}

func fetch(b *testing.B, c *http.Client, url string) {
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != benchBody {
		b.Fatalf("%d bytes: %v", n, err)
	}
}

// BenchmarkProxyLatency measures one keep-alive client's sequential
// request latency, reported as p50-µs and p99-µs.
func BenchmarkProxyLatency(b *testing.B) {
	for _, setup := range benchSetups {
		b.Run(setup.name, func(b *testing.B) {
			addr := setup.start(b, startBackend(b))
			url := "http://" + addr + "/"
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			for range 200 { // warm up
				fetch(b, c, url)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				fetch(b, c, url)
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}

// BenchmarkProxyThroughput measures requests per second with 64 concurrent
// keep-alive clients.
func BenchmarkProxyThroughput(b *testing.B) {
	for _, setup := range benchSetups {
		b.Run(setup.name, func(b *testing.B) {
			addr := setup.start(b, startBackend(b))
			url := "http://" + addr + "/"
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer c.CloseIdleConnections()
			b.SetParallelism(32) // 32 × GOMAXPROCS goroutines
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					fetch(b, c, url)
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}
