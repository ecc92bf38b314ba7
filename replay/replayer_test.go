package replay

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// serve starts h on a loopback listener and returns its URL.
func serve(t *testing.T, h http.Handler) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

func getReq(target string) *capture.Request {
	return &capture.Request{Method: "GET", Target: target, Proto: "HTTP/1.1", Host: "prod.example.com",
		Header: []capture.HeaderField{{Name: "Host", Value: "prod.example.com"}, {Name: "Accept", Value: "application/json"}}}
}

func TestRunRealSocketsExactRate(t *testing.T) {
	var mu sync.Mutex
	var seqs []uint64
	runs := map[string]int{}
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.ParseUint(r.Header.Get("X-Rehearse-Seq"), 10, 64)
		if err != nil {
			t.Errorf("bad seq header %q", r.Header.Get("X-Rehearse-Seq"))
		}
		mu.Lock()
		seqs = append(seqs, n)
		runs[r.Header.Get("X-Rehearse-Run")]++
		mu.Unlock()
		io.WriteString(w, `{"ok":true}`)
	}))
	clock := journal.NewClock(time.Now())
	mem := journal.NewMemory(clock)
	reg := prometheus.NewPedanticRegistry()
	_, sum := replayed(t, []*capture.Request{getReq("/tools/search?q=1"), getReq("/v1/chat/completions")},
		// A shared CI machine can deschedule the process for 100 ms;
		// a 1 s catch-up bound keeps such a stall from dropping a slot,
		// so the count is exact.
		Options{Target: u, Rate: 20, Duration: 2 * time.Second, RunID: "run-1", MaxLateness: time.Second,
			Routes: []RouteMap{{Prefix: "/tools/search", Upstream: "search", Route: "/tools/{name}"}}},
		WithRecorder(mem), WithClock(clock), WithRegisterer(reg))
	if sum.Sent != 40 || sum.Scheduled != 40 || sum.Completed != 40 || sum.Dropped != 0 || sum.ByOutcome[journal.OutcomeOK] != 40 {
		t.Errorf("summary %+v: want 40 sent, completed, ok", sum)
	}
	// Per second by actual send time: exactly 20 and 20, unless a
	// stall pushed a send across the 1 s boundary (a slot is 50 ms
	// apart); then the summary must still agree with the events.
	perSecond := make([]int, 2)
	crossed := false
	var base time.Duration // the start of sending: when seq 0 was due
	for _, p := range mem.OfKind(journal.KindClientRequest) {
		if ev := p.(*journal.ClientRequest); ev.Seq == 0 {
			base = ev.Scheduled
		}
	}
	for _, p := range mem.OfKind(journal.KindClientRequest) {
		ev := p.(*journal.ClientRequest)
		if sec := int((ev.Sent - base) / time.Second); sec < len(perSecond) {
			perSecond[sec]++
		}
		if (ev.Sent-base)/time.Second != (ev.Scheduled-base)/time.Second {
			crossed = true
		}
	}
	switch {
	case !crossed && !slices.Equal(sum.AchievedRate, []int{20, 20}):
		t.Errorf("achieved rate per second %v, want [20 20]", sum.AchievedRate)
	case crossed && !slices.Equal(sum.AchievedRate, perSecond):
		t.Errorf("achieved rate per second %v, events say %v", sum.AchievedRate, perSecond)
	case crossed:
		t.Logf("a stall moved a send across a second boundary: per second %v", sum.AchievedRate)
	}
	slices.Sort(seqs)
	for i, s := range seqs {
		if s != uint64(i) {
			t.Fatalf("upstream saw seqs %v, want 0..39", seqs)
		}
	}
	if runs["run-1"] != 40 {
		t.Errorf("run header counts %v", runs)
	}
	evs := mem.OfKind(journal.KindClientRequest)
	if len(evs) != 40 {
		t.Fatalf("%d client.request events, want 40", len(evs))
	}
	var search int
	for _, p := range evs {
		ev := p.(*journal.ClientRequest)
		if ev.Sent < ev.Scheduled || ev.HeadersAt < ev.Sent || ev.Done < ev.HeadersAt || ev.Latency != ev.Done-ev.Scheduled {
			t.Errorf("event times out of order: %+v", ev)
		}
		if want := time.Duration(ev.Seq) * 50 * time.Millisecond; ev.Scheduled-clock.At(clock.Start()) < want || ev.Scheduled > want+time.Second {
			t.Errorf("seq %d scheduled at %v, want ≈ %v", ev.Seq, ev.Scheduled, want)
		}
		if ev.Upstream == "search" {
			search++
			if ev.Route != "/tools/{name}" {
				t.Errorf("route %q", ev.Route)
			}
		} else if ev.Route != "/v1/chat/completions" {
			t.Errorf("route %q", ev.Route)
		}
	}
	if search != 20 {
		t.Errorf("%d requests mapped to search, want 20", search)
	}
	if got := testutil.Gathered(t, reg, "rehearse_replay_requests_total", map[string]string{"outcome": "ok", "upstream": "search"}); got != 20 {
		t.Errorf("metric requests{ok,search} = %v", got)
	}
	if sum.Lateness.Count != 40 {
		t.Errorf("lateness histogram has %d values", sum.Lateness.Count)
	}
	t.Logf("lateness p50 %.3fms p99 %.3fms max %.3fms", sum.Lateness.P50, sum.Lateness.P99, sum.Lateness.Max)
}

func TestNewRefusesWrites(t *testing.T) {
	u := &url.URL{Scheme: "http", Host: "127.0.0.1:1"}
	corpus := []*capture.Request{getReq("/a"), {Method: "POST", Target: "/b"}, {Method: "delete", Target: "/c"}, {Method: "POST", Target: "/d"}}
	_, err := New(corpus, Options{Target: u})
	var we *WritesRefusedError
	if !errors.As(err, &we) || we.Count != 3 || !errors.Is(err, rehearse.ErrInvalid) || !errors.Is(err, ErrWritesRefused) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"3 write request", "2 POST", "1 DELETE", "--allow-writes"} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := New(corpus, Options{Target: u, AllowWrites: true}); err != nil {
		t.Errorf("with AllowWrites: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func TestTargetPasswordNeverWritten(t *testing.T) {
	creds := make(chan [2]string, 1)
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		creds <- [2]string{user, pass}
	}))
	u.User = url.UserPassword("ops", "hunter2")
	r, sum := replayed(t, []*capture.Request{getReq("/a")}, Options{Target: u, Once: true})
	b, _ := json.Marshal(sum)
	o, _ := json.Marshal(r.opt)
	if strings.Contains(string(b)+string(o), "hunter2") {
		t.Errorf("password written: %s %s", b, o)
	}
	if c := <-creds; c != [2]string{"ops", "hunter2"} {
		t.Errorf("gateway got basic auth %q, want the target URL's", c)
	}
}

// replayed builds a replayer of corpus with opt and runs it to the end,
// failing the test on either error.
func replayed(t testing.TB, corpus []*capture.Request, opt Options, opts ...Option) (*Replayer, *Summary) {
	t.Helper()
	r, err := New(corpus, opt, opts...)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r, sum
}
