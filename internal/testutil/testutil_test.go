package testutil

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestFreeAddr: the address is free (it can be bound) and never handed
// out twice.
func TestFreeAddr(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		a := FreeAddr(t)
		if seen[a] {
			t.Fatalf("%s handed out twice", a)
		}
		seen[a] = true
	}
	ln, err := net.Listen("tcp", FreeAddr(t))
	if err != nil {
		t.Fatalf("the free address cannot be bound: %v", err)
	}
	ln.Close()
}

// TestSyncBufferConcurrent writes from several goroutines while reading;
// under -race any unguarded access fails the test.
func TestSyncBufferConcurrent(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("x"))
			}
		}()
	}
	for range 50 {
		_ = b.String()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 400) {
		t.Fatalf("%d bytes, want 400", len(got))
	}
	// Bytes is a copy: a later write does not change it.
	snap := b.Bytes()
	b.Write([]byte("y"))
	if len(snap) != 400 || strings.Contains(string(snap), "y") {
		t.Fatalf("Bytes changed after a write: %d bytes", len(snap))
	}
}

// TestServeTCP: every connection gets its own handler, each connection is
// closed when its handler returns, and a handler blocked at the end of the
// test is released by a cleanup registered after ServeTCP.
func TestServeTCP(t *testing.T) {
	release := make(chan struct{})
	addr := ServeTCP(t, func(c net.Conn) {
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return
		}
		c.Write([]byte("echo " + line))
		if line == "hold\n" {
			<-release
		}
	})
	t.Cleanup(func() { close(release) })
	ask := func(msg string) (string, net.Conn) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		got, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return got, c
	}
	held, hc := ask("hold")
	defer hc.Close()
	got, c := ask("a")
	defer c.Close()
	if held != "echo hold\n" || got != "echo a\n" {
		t.Fatalf("answers %q, %q: the second connection waited for the first handler", held, got)
	}
	// The handler returned: the connection is closed.
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d more bytes: the connection was not closed after its handler", n)
	}
}

// TestGathered: the series whose labels include the wanted ones, counters
// and gauges alike; -1 for a name or labels not there.
func TestGathered(t *testing.T) {
	reg := prometheus.NewRegistry()
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "calls_total", Help: "h"}, []string{"upstream", "outcome"})
	level := prometheus.NewGauge(prometheus.GaugeOpts{Name: "level", Help: "h"})
	reg.MustRegister(calls, level)
	calls.WithLabelValues("search", "ok").Add(3)
	calls.WithLabelValues("search", "failed").Add(2)
	calls.WithLabelValues("weather", "ok").Add(7)
	level.Set(1.5)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"calls_total", map[string]string{"upstream": "search", "outcome": "failed"}, 2},
		{"calls_total", map[string]string{"upstream": "weather"}, 7},
		{"calls_total", map[string]string{"upstream": "search", "outcome": "gone"}, -1},
		{"calls_total", map[string]string{"region": "eu"}, -1},
		{"level", nil, 1.5},
		{"absent", nil, -1},
	} {
		if got := Gathered(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("Gathered(%s, %v) = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// TestServe: the server answers at the returned address while the test
// runs, and is closed at cleanup.
func TestServe(t *testing.T) {
	var addr string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	t.Run("serving", func(t *testing.T) {
		addr = Serve(t, srv)
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok" {
			t.Fatalf("body %q", body)
		}
	})
	// The subtest's cleanup closed the server: nobody listens any more.
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after the test ended", addr)
	}
}
