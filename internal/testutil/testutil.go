// Package testutil holds what the tests of several packages need alike.
// It is imported by tests only.
package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// SyncBuffer is a bytes.Buffer safe for concurrent use: one goroutine
// writes (a process's output copier, a server's log, a redraw loop) while
// the test reads what has been written so far.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Bytes returns a copy of what has been written so far: the buffer's own
// bytes would change under the caller with the next write.
func (s *SyncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// FreeAddr returns a loopback address nobody listens on right now, for a
// server that binds its own address (a real binary, an upstream whose
// address must be known before the run starts). It is chosen and
// released, so another process could still take it: the server then
// fails to start and the test says so. Within the test binary no address
// is handed out twice, since the kernel may hand a port just released to
// the next caller, a parallel test.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addrsMu.Lock()
	defer addrsMu.Unlock()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !addrsGiven[addr] {
			addrsGiven[addr] = true
			return addr
		}
	}
}

var (
	addrsMu    sync.Mutex
	addrsGiven = map[string]bool{}
)

// ListenerFile opens a loopback listener and returns it as a file, for a
// real server started by the test to inherit (HAProxy's bind fd@N), with
// its address: the port is the kernel's, never guessed. The file is closed
// when the test ends; the child keeps its own copy.
func ListenerFile(t testing.TB) (*os.File, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the duplicate in f keeps the socket listening
	t.Cleanup(func() { f.Close() })
	return f, addr
}

// ServeTCP serves every connection of a new loopback listener with
// handle, in a goroutine each, until the test ends, and returns the
// listener's address. Each connection is closed when handle returns; at
// cleanup the listener closes and ServeTCP waits for every handler, so a
// handler that blocks must be unblocked by a cleanup registered after
// ServeTCP (cleanups run last registered first).
func ServeTCP(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// Golden compares got with the golden file at path or, when update is set
// (the package's -update flag), writes got there. A difference is reported
// at its first differing line, with how to accept the change.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	line := 0
	for line < len(g) && line < len(w) && g[line] == w[line] {
		line++
	}
	at := func(lines []string) string {
		if line < len(lines) {
			return fmt.Sprintf("%q", lines[line])
		}
		return "(end of file)"
	}
	t.Errorf("%s differs from the output at line %d (run go test -update after checking the change):\n got %s\nwant %s", path, line+1, at(g), at(w))
}

// Server is what Serve runs: an *http.Server, the reference gateway.
type Server interface {
	Serve(net.Listener) error
	Close() error
}

// Serve serves srv on a new loopback listener until the test ends and
// returns the listener's address. At cleanup it closes srv, waits for
// Serve to return, and fails the test if Serve ended with an error other
// than http.ErrServerClosed (the normal end of an *http.Server).
func Serve(t testing.TB, srv Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// Gathered gathers g and returns the value of the counter or gauge series
// name whose labels include every one of labels (an empty value matches
// an absent label, as in Prometheus); -1 when there is none.
func Gathered(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue metric
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}
