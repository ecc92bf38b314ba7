package testutil

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
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

// TestGolden: update writes the file (and its directory), an equal output
// passes, and a different one fails naming the first line that differs.
func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golden", "out.txt.golden")
	Golden(t, path, []byte("a\nb\nc\n"), true)
	Golden(t, path, []byte("a\nb\nc\n"), false)
	for _, c := range []struct{ got, want string }{
		{"a\nB\nc\n", `line 2 (run go test -update after checking the change):` + "\n" + ` got "B"` + "\n" + `want "b"`},
		{"a\nb\n", `line 3 (run go test -update after checking the change):` + "\n" + ` got ""` + "\n" + `want "c"`},
	} {
		rec := &recordingTB{TB: t}
		Golden(rec, path, []byte(c.got), false)
		if !strings.Contains(rec.errs, c.want) {
			t.Errorf("output %q: reported %q, want it to contain %q", c.got, rec.errs, c.want)
		}
	}
	rec := &recordingTB{TB: t}
	func() {
		defer func() { recover() }()
		Golden(rec, filepath.Join(t.TempDir(), "missing.golden"), nil, false)
	}()
	if !strings.Contains(rec.errs, "run go test -update to create it") {
		t.Errorf("missing golden file: reported %q", rec.errs)
	}
}

// recordingTB records the errors a helper reports instead of failing the
// test; Fatal panics, to stop the helper as FailNow would.
type recordingTB struct {
	testing.TB
	errs string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs += fmt.Sprintf(format, args...) + "\n"
}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic("fatal")
}
func (r *recordingTB) Fatal(args ...any) {
	r.errs += fmt.Sprint(args...) + "\n"
	panic("fatal")
}

// TestListenerFile: the file is a listening socket at the returned
// address, as a child inheriting it would see it.
func TestListenerFile(t *testing.T) {
	f, addr := ListenerFile(t)
	ln, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ln.Addr().String() != addr {
		t.Fatalf("listener at %s, want %s", ln.Addr(), addr)
	}
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, _ := io.ReadAll(c)
	if string(b) != "hi" {
		t.Fatalf("read %q through the inherited listener", b)
	}
}
