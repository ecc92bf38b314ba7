package replay

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// An armed connection runs the wait, then the stamp, then the write, once;
// a wait cut short by an abort writes nothing.
func TestHeldConnWrite(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go io.Copy(io.Discard, b)
	var order []string
	c := &heldConn{Conn: a}
	c.hold.Store(&sendHold{
		wait:  func() error { order = append(order, "wait"); return nil },
		stamp: func() { order = append(order, "stamp") },
	})
	for range 2 {
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		order = append(order, "write")
	}
	if want := []string{"wait", "stamp", "write", "write"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	aborted := errors.New("aborted")
	c.hold.Store(&sendHold{wait: func() error { return aborted }, stamp: func() { t.Error("stamped after an abort") }})
	if n, err := c.Write([]byte("x")); n != 0 || !errors.Is(err, aborted) {
		t.Errorf("aborted wait: wrote %d, %v", n, err)
	}
	if heldOf(c) != c || heldOf(a) != nil {
		t.Error("heldOf does not find the replayer's connection")
	}
}

// A request dispatched early (10/s) reaches the gateway no earlier than
// its due time, over a kept-alive connection or a new one, and is stamped
// at or after it; a dial refused before the due time is recorded no
// earlier than it either.
func TestEarlyDispatchNeverSendsEarly(t *testing.T) {
	var mu sync.Mutex
	var arrived []time.Time
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived = append(arrived, time.Now())
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	start := time.Now()
	clk := journal.NewClock(start)
	mem := journal.NewMemory(nil)
	corpus := []*capture.Request{getReq("/a"), getReq("/b"), getReq("/c"), getReq("/d")}
	replayed(t, corpus, Options{Target: u, Rate: 10, Once: true, Deadline: 2 * time.Second}, WithRecorder(mem), WithClock(clk))
	evs := mem.OfKind(journal.KindClientRequest)
	if len(evs) != len(corpus) || len(arrived) != len(corpus) {
		t.Fatalf("%d events, %d arrivals; want %d", len(evs), len(arrived), len(corpus))
	}
	for i, e := range evs {
		ev := e.(*journal.ClientRequest)
		if ev.Outcome != journal.OutcomeOK || ev.Sent < ev.Scheduled {
			t.Errorf("request %d: %s, sent %v before due %v", i, ev.Outcome, ev.Sent, ev.Scheduled)
		}
		if due := start.Add(ev.Scheduled); arrived[i].Before(due) {
			t.Errorf("request %d arrived %v before its due time", i, due.Sub(arrived[i]))
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	ln.Close()
	ev := replayOne(t, closed, nil, Options{Rate: 10})
	if ev.Outcome != journal.OutcomeConnectRefused || ev.Sent < ev.Scheduled || ev.Done < ev.Scheduled {
		t.Errorf("refused dial: %s, sent %v done %v, due %v", ev.Outcome, ev.Sent, ev.Done, ev.Scheduled)
	}
}
