package inject

import (
	"errors"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// polls counts how many of n eligible requests a would poll for.
func polls(a *answerTimes, n int) int {
	k := 0
	for range n {
		if a.spin(1) > 0 {
			k++
		}
	}
	return k
}

func TestAnswerTimesSpin(t *testing.T) {
	var a answerTimes
	if d := a.spin(1); d != 0 {
		t.Fatalf("nothing measured yet: poll %v, want the blocked wait measured first", d)
	}
	a.add(100*time.Microsecond, false)
	if d := a.spin(1); d != spinWindow {
		t.Fatalf("blocked answers measured, polled not: poll %v, want %v", d, spinWindow)
	}
	if d := a.spin(2); d != 0 {
		t.Fatalf("another request in flight: poll %v, want none", d)
	}
	// Polling shortens the wait (an idle machine whose wake-ups cost):
	// poll, but for one request in exploreEvery.
	for range 40 {
		a.add(40*time.Microsecond, true)
	}
	if k := polls(&a, 10*exploreEvery); k != 10*exploreEvery-10 {
		t.Fatalf("polled answers sooner: %d polls of %d, want all but 1 in %d", k, 10*exploreEvery, exploreEvery)
	}
	// It does not (the upstream shares the process): block, polling one
	// request in exploreEvery.
	for range 40 {
		a.add(150*time.Microsecond, true)
	}
	if k := polls(&a, 10*exploreEvery); k != 10 {
		t.Fatalf("polled answers later: %d polls of %d, want 1 in %d", k, 10*exploreEvery, exploreEvery)
	}
	// A slow real upstream: polled answers no sooner, and beyond the window.
	var slow answerTimes
	slow.add(5*time.Millisecond, false)
	slow.add(4*time.Millisecond, true)
	if k := polls(&slow, 10*exploreEvery); k != 10 {
		t.Fatalf("slow upstream: %d polls of %d, want 1 in %d", k, 10*exploreEvery, exploreEvery)
	}
	if k := polls(&answerTimes{off: true}, 100); k != 0 {
		t.Fatalf("poll turned off: %d polls", k)
	}
}

// pair returns both ends of a loopback TCP connection.
func pair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// The poll returns what a blocking read would: the bytes, end-of-file, a
// reset as ECONNRESET; and a read after a poll that found nothing blocks
// as usual.
func TestUpReaderPoll(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no poll on windows")
	}
	c, s := pair(t)
	r := newUpReader(c)
	buf := make([]byte, 16)

	go func() { time.Sleep(time.Millisecond); s.Write([]byte("answer")) }()
	r.spinFor(time.Minute) // ends at the first byte, long before
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "answer" {
		t.Fatalf("poll read %q, %v", buf[:n], err)
	}

	go func() { time.Sleep(20 * time.Millisecond); s.Write([]byte("late")) }()
	r.spinFor(time.Microsecond) // the window ends first: the read blocks
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "late" {
		t.Fatalf("read after the poll %q, %v", buf[:n], err)
	}

	s.CloseWrite()
	r.spinFor(time.Minute)
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the peer's FIN: %d, %v; want io.EOF", n, err)
	}

	c2, s2 := pair(t)
	r2 := newUpReader(c2)
	s2.SetLinger(0)
	s2.Close() // a reset
	time.Sleep(10 * time.Millisecond)
	r2.spinFor(time.Minute)
	_, err := r2.Read(buf)
	var op *net.OpError
	if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &op) || op.Op != "read" {
		t.Fatalf("after a reset: %v; want a read error with ECONNRESET", err)
	}
}
