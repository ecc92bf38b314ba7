package replay

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

func TestInFlightCapDropsOnRealSockets(t *testing.T) {
	// Each response takes 250 ms; at 20/s with a cap of 2, only some
	// requests can start: the others are dropped, recorded and counted,
	// never queued or shifted.
	release := make(chan struct{})
	defer close(release)
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(250 * time.Millisecond):
		case <-release:
		}
	}))
	mem := journal.NewMemory(nil)
	_, sum := replayed(t, []*capture.Request{getReq("/a")}, Options{Target: u, Rate: 20, Duration: time.Second, MaxInFlight: 2}, WithRecorder(mem))
	// A loaded machine may also miss a slot (the replayer was late and
	// dropped it): counted apart, never as the cap's.
	if sum.Scheduled != 20 || sum.Sent+sum.Dropped != 20 || sum.DroppedInFlight == 0 ||
		sum.Dropped != sum.DroppedInFlight+sum.DroppedMissed {
		t.Fatalf("scheduled %d sent %d dropped %d (cap %d, missed %d)", sum.Scheduled, sum.Sent, sum.Dropped, sum.DroppedInFlight, sum.DroppedMissed)
	}
	// Two slots every 250 ms at most: ≤ 10 sent, and at least 6 on a
	// loaded machine.
	if sum.Sent > 10 || sum.Sent < 6 {
		t.Errorf("sent %d, want 6..10 with 2 in flight of 250 ms each over 1 s", sum.Sent)
	}
	var drops int
	for _, p := range mem.OfKind(journal.KindClientRequest) {
		ev := p.(*journal.ClientRequest)
		if ev.Outcome == journal.OutcomeDropped {
			drops++
			if ev.Sent != 0 || ev.Error != dropInFlight {
				t.Errorf("dropped event %+v", ev)
			}
		}
	}
	if drops != sum.Dropped || sum.ByOutcome[journal.OutcomeDropped] != drops {
		t.Errorf("%d drop events, summary %d / %v", drops, sum.Dropped, sum.ByOutcome)
	}
}

func TestInterruptKeepsPartialSummary(t *testing.T) {
	// Registered first, so it runs after the server's cleanup: no
	// goroutine of the replayer may outlive Run.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	var arrived atomic.Int32
	hang := make(chan struct{})
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == 3 {
			<-hang // the third request never answers
		}
	}))
	defer close(hang)
	ctx, cancel := context.WithCancel(context.Background())
	mem := journal.NewMemory(nil)
	var seen atomic.Int32
	r, err := New([]*capture.Request{getReq("/a")}, Options{Target: u, Rate: 20, Duration: time.Minute, DrainTimeout: 200 * time.Millisecond},
		WithRecorder(recorderFunc(func(p journal.Payload) {
			mem.Record(p)
			if seen.Add(1) == 4 {
				cancel()
			}
		})))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sum, err := r.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %v after cancel", took)
	}
	// Cancelled at the fourth recorded event (a stall may record a
	// dropped slot among them); a minute of schedule was planned.
	if !sum.Partial || sum.Scheduled < 4 || sum.Sent < 3 || sum.Scheduled > 40 {
		t.Errorf("partial %v scheduled %d sent %d", sum.Partial, sum.Scheduled, sum.Sent)
	}
	evs := mem.OfKind(journal.KindClientRequest)
	if len(evs) != sum.Scheduled {
		t.Errorf("%d events for %d scheduled: a request was lost", len(evs), sum.Scheduled)
	}
	var aborted int
	for _, p := range evs {
		if ev := p.(*journal.ClientRequest); strings.HasPrefix(ev.Error, "aborted") {
			aborted++
		}
	}
	if aborted != 1 || sum.Completed != sum.Sent-1 {
		t.Errorf("%d aborted, completed %d of %d sent; want the hanging one aborted", aborted, sum.Completed, sum.Sent)
	}
}

type recorderFunc func(journal.Payload)

func (f recorderFunc) Record(p journal.Payload)                    { f(p) }
func (f recorderFunc) RecordAt(_ time.Duration, p journal.Payload) { f(p) }

func TestSummaryJSON(t *testing.T) {
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	_, sum := replayed(t, []*capture.Request{getReq("/a"), {Method: "GET", Target: "/b", Incomplete: true}}, Options{Target: u, Rate: 50, Once: true})
	b, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"sent", "dropped", "late", "lateness_ms", "latency_ms", "achieved_rate_per_s", "by_outcome", "elapsed_s", "skipped_incomplete"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary JSON lacks %q: %s", k, b)
		}
	}
	lat := m["lateness_ms"].(map[string]any)
	for _, k := range []string{"p50", "p99", "max"} {
		if _, ok := lat[k]; !ok {
			t.Errorf("lateness_ms lacks %s", k)
		}
	}
	if sum.SkippedIncomplete != 1 || sum.Sent != 1 {
		t.Errorf("skipped %d sent %d", sum.SkippedIncomplete, sum.Sent)
	}
	var text strings.Builder
	sum.WriteText(&text)
	for _, want := range []string{"sent 1", "lateness", "ok 1"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, text.String())
		}
	}
}

func TestProgressLine(t *testing.T) {
	p := Progress{Elapsed: 2*time.Second + 500*time.Millisecond, Planned: 5 * time.Minute, Sent: 120, Dropped: 2, Late: 1, Rate: 10, InFlight: 4,
		ByOutcome: map[journal.Outcome]int{journal.OutcomeOK: 100, journal.OutcomeFastFail: 15, journal.OutcomeCutMidBody: 3, journal.OutcomeDropped: 2}}
	got := p.Line()
	want := "0:02 / 5:00 (4:58 left)  sent 120  10/s  in flight 4  dropped 2  late 1  cut_mid_body 3  fast_fail 15"
	if got != want {
		t.Errorf("progress\n got %q\nwant %q", got, want)
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no target", Options{}, "target URL"},
		{"bad scheme", Options{Target: mustURL("ftp://h")}, "scheme"},
		{"negative rate", Options{Target: mustURL("http://h"), Rate: -1}, "negative"},
		{"NaN rate", Options{Target: mustURL("http://h"), Rate: math.NaN()}, "finite"},
		{"NaN speed", Options{Target: mustURL("http://h"), Timing: TimingOriginal, Speed: math.NaN()}, "finite"},
		{"infinite speed", Options{Target: mustURL("http://h"), Timing: TimingOriginal, Speed: math.Inf(1)}, "finite"},
		{"bad timing", Options{Target: mustURL("http://h"), Timing: "fast"}, "timing"},
		{"bad route", Options{Target: mustURL("http://h"), Routes: []RouteMap{{Pattern: "("}}}, "routes[0]"},
		{"route both", Options{Target: mustURL("http://h"), Routes: []RouteMap{{Pattern: "a", Prefix: "/"}}}, "exactly one"},
	} {
		_, err := New([]*capture.Request{getReq("/")}, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(nil, Options{Target: mustURL("http://h")}); err == nil {
		t.Error("empty corpus accepted")
	}
}
