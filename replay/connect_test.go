//go:build linux || darwin

package replay

import (
	"errors"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// fullBacklog returns the address of a loopback listener that never
// accepts and whose accept queue is full, so that a new connection attempt
// gets no answer to its SYN and times out — a real connect timeout, on
// loopback.
func fullBacklog(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}).String()
	// Fill the queue until a connect attempt hangs.
	for i := 0; i < 16; i++ {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			var ne net.Error
			if ok := asNetErr(err, &ne); ok && ne.Timeout() {
				return addr
			}
			t.Skipf("cannot fill a listen backlog on this system: %v", err)
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("cannot fill a listen backlog on this system (16 connections accepted by the kernel)")
	return ""
}

func TestOutcomeConnectTimeout(t *testing.T) {
	addr := fullBacklog(t)
	ev := replayOne(t, &url.URL{Scheme: "http", Host: addr}, nil, Options{ConnectTimeout: 200 * time.Millisecond})
	if ev.Outcome != journal.OutcomeConnectTimeout {
		t.Fatalf("outcome %s (%s), want connect_timeout", ev.Outcome, ev.Error)
	}
	if svc := ev.Service; svc < 150*time.Millisecond || svc > 2*time.Second {
		t.Errorf("connect timeout after %v, want about 200ms", svc)
	}
	// The request deadline shorter than the connect timeout: still a
	// connect timeout, since no connection was made.
	ev = replayOne(t, &url.URL{Scheme: "http", Host: addr}, nil, Options{Deadline: 200 * time.Millisecond})
	if ev.Outcome != journal.OutcomeConnectTimeout {
		t.Fatalf("outcome %s (%s), want connect_timeout", ev.Outcome, ev.Error)
	}
}

func asNetErr(err error, target *net.Error) bool { return errors.As(err, target) }
