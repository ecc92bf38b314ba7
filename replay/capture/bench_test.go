package capture

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
)

// benchMB is the size of the generated capture: REHEARSE_BENCH_MB, 64 by
// default (make bench); the 1 GB figure in docs/benchmarks.md comes from
// REHEARSE_BENCH_MB=1024.
func benchMB() int {
	if n, err := strconv.Atoi(os.Getenv("REHEARSE_BENCH_MB")); err == nil && n > 0 {
		return n
	}
	return 64
}

// writeBigCapture writes about mb megabytes of agent-gateway-like HTTP
// traffic with pcapgo: 1000 concurrent keep-alive connections, replaced
// after about 50 requests each, MSS-sized segments, responses, pure ACKs,
// 10 % of requests pipelined in threes, 5 % chunked, 1 % 64 KB uploads.
// It returns the number of requests written.
func writeBigCapture(tb testing.TB, path string, mb int) int {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	var size countWriter
	size.w = bw
	s := newSynth(tb, &size)
	rng := rand.New(rand.NewPCG(7, 11))
	const conns = 1000
	live := make([]*sconn, conns)
	left := make([]int, conns)
	port := 10000
	open := func(i int) {
		port++
		c := s.conn(fmt.Sprintf("10.1.%d.%d:%d", port/60000%250, i%250+1, 1024+port%60000), "10.0.0.2:8080")
		c.cseq, c.sseq = rng.Uint32(), rng.Uint32()
		live[i], left[i] = c.handshake(), 30+rng.IntN(40)
	}
	for i := range conns {
		open(i)
	}
	body := []byte(strings.Repeat(`{"tool_call_id":"call_0001","name":"search","arguments":{"query":"circuit breaker","top_k":5}}`, 700))
	requests := 0
	req := func() []byte {
		requests++
		switch x := rng.IntN(100); {
		case x < 30:
			return fmt.Appendf(nil, "GET /tools/weather?city=Oslo&n=%d HTTP/1.1\r\nHost: gw.internal:8080\r\nUser-Agent: openclaw-agent/0.9\r\nAccept: application/json\r\nAuthorization: Bearer sk-fake-%08x\r\n\r\n", requests, rng.Uint32())
		case x < 35:
			n := 200 + rng.IntN(2000)
			return fmt.Appendf(nil, "POST /tools/vectors HTTP/1.1\r\nHost: gw.internal:8080\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", n, body[:n])
		case x < 36:
			n := 64 << 10
			return fmt.Appendf(nil, "POST /tools/vectors HTTP/1.1\r\nHost: gw.internal:8080\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", n, body[:n])
		default:
			n := 100 + rng.IntN(3000)
			return fmt.Appendf(nil, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw.internal:8080\r\nContent-Type: application/json\r\nX-Api-Key: fake-%08x\r\nX-Request-Id: req-%d\r\nContent-Length: %d\r\n\r\n%s", rng.Uint32(), requests, n, body[:n])
		}
	}
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 300\r\n\r\n" + string(body[:300]))
	for size.n < int64(mb)<<20 {
		i := rng.IntN(conns)
		c := live[i]
		msg := req()
		if rng.IntN(10) == 0 {
			msg = append(append(msg, req()...), req()...)
		}
		for off := 0; off < len(msg); off += 1448 {
			c.send(msg[off:min(off+1448, len(msg))])
		}
		c.reply(resp)
		c.s.frame(c.cli, c.srv, c.cseq, c.sseq, tcpACK, nil)
		if left[i]--; left[i] == 0 {
			c.close()
			open(i)
		}
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
	return requests
}

type countWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.w.Write(p)
}

// BenchmarkExtract reads a generated capture with Extract and with
// `tshark -Y http.request` in the same run. Peak RSS is measured the same
// way for both: a child process (this test binary re-run as
// TestExtractHelper, or tshark) and its rusage.
func BenchmarkExtract(b *testing.B) {
	mb := benchMB()
	path := filepath.Join(b.TempDir(), "big.pcap")
	start := time.Now()
	wrote := writeBigCapture(b, path, mb)
	fi, _ := os.Stat(path)
	b.Logf("generated %s: %d MB, %d requests in %v", path, fi.Size()>>20, wrote, time.Since(start).Round(time.Millisecond))

	b.Run("rehearse", func(b *testing.B) {
		b.SetBytes(fi.Size())
		b.ReportAllocs()
		stopHeap := testutil.HeapPeak(func(ms *runtime.MemStats) uint64 { return ms.HeapInuse })
		var n int64
		for b.Loop() {
			st, err := ExtractFile(context.Background(), path, Options{}, func(*Request) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			n = st.Delivered
		}
		peak := stopHeap()
		if n != int64(wrote) {
			b.Fatalf("%d requests, wrote %d", n, wrote)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "req/s")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		rss, cpu, _ := childRSS(b, exec.Command(os.Args[0], "-test.run=^TestExtractHelper$"), "REHEARSE_EXTRACT_FILE="+path)
		b.ReportMetric(rss, "peak-RSS-MB")
		// CPU seconds of one read, in the child: the fair figure on a
		// shared machine, where wall time depends on the neighbours.
		b.ReportMetric(float64(fi.Size())/(1<<20)/cpu, "MB/cpu-s")
	})
	b.Run("tshark", func(b *testing.B) {
		if _, err := exec.LookPath("tshark"); err != nil {
			b.Skip("tshark not installed: no comparison")
		}
		b.SetBytes(fi.Size())
		var rss, cpu float64
		var lines int
		for b.Loop() {
			cmd := exec.Command("tshark", "-r", path, "-n", "-d", "tcp.port==8080,http", "-Y", "http.request", "-T", "fields", "-e", "http.request.method")
			rss, cpu, lines = childRSS(b, cmd)
		}
		b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "req/s")
		b.ReportMetric(rss, "peak-RSS-MB")
		b.ReportMetric(float64(fi.Size())/(1<<20)/cpu, "MB/cpu-s")
		b.Logf("tshark printed %d lines (pipelined requests share a line) for %d requests", lines, wrote)
	})
}

// childRSS runs cmd and returns its peak RSS in MB, its CPU time (user +
// system) in seconds and its output lines.
func childRSS(b *testing.B, cmd *exec.Cmd, env ...string) (rss, cpu float64, lines int) {
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%v: %v", cmd.Args, err)
	}
	lines = strings.Count(string(out), "\n")
	cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, cpu, lines
	}
	rss = float64(ru.Maxrss) / 1024 // kilobytes on Linux
	if runtime.GOOS == "darwin" {
		rss = float64(ru.Maxrss) / (1 << 20) // bytes on macOS
	}
	return rss, cpu, lines
}

// TestExtractHelper is the child process of BenchmarkExtract's RSS
// measurement; it does nothing in a normal test run.
func TestExtractHelper(t *testing.T) {
	path := os.Getenv("REHEARSE_EXTRACT_FILE")
	if path == "" {
		t.Skip("helper process for BenchmarkExtract")
	}
	st, err := ExtractFile(context.Background(), path, Options{}, func(*Request) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(st)
}
