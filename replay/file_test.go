package replay

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

const testCapture = "capture/testdata/edge-sll.pcap"

func TestRunFileInterrupted(t *testing.T) {
	var n atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 5 {
			cancel() // Ctrl-C in the middle of the run
		}
	}))
	dir := t.TempDir()
	sum, err := RunFile(ctx, FileRun{
		Capture: testCapture,
		Options: Options{Target: u, Rate: 50, Duration: time.Minute, AllowWrites: true},
		OutDir:  dir,
	})
	if !errors.Is(err, rehearse.ErrInterrupted) || rehearse.ExitCode(err) != rehearse.ExitInterrupted {
		t.Fatalf("err = %v, want interrupted", err)
	}
	if sum == nil || !sum.Partial || sum.Sent < 5 {
		t.Fatalf("summary %+v", sum)
	}
	var onDisk Summary
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &onDisk); err != nil || !onDisk.Partial || onDisk.Sent != sum.Sent {
		t.Errorf("summary.json partial=%v sent=%d (%v)", onDisk.Partial, onDisk.Sent, err)
	}
	evs, torn, err := journal.ReadFile(filepath.Join(dir, JournalFile))
	if err != nil || torn {
		t.Fatalf("journal: %v torn=%v", err, torn)
	}
	last, ok := evs[len(evs)-1].Payload.(*journal.RunEnd)
	if !ok || last.Reason != journal.EndInterrupted || !last.Partial {
		t.Errorf("last event %+v, want an interrupted run.end", evs[len(evs)-1])
	}
	var reqs int
	for _, e := range evs {
		if e.Kind() == journal.KindClientRequest {
			reqs++
		}
	}
	if reqs != sum.Scheduled {
		t.Errorf("%d client.request events for %d scheduled", reqs, sum.Scheduled)
	}
}

func TestOriginalTimingOnTheWire(t *testing.T) {
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	corpus := []*capture.Request{getReq("/a"), getReq("/b"), getReq("/c")}
	corpus[0].Time, corpus[1].Time, corpus[2].Time = t0, t0.Add(100*time.Millisecond), t0.Add(300*time.Millisecond)
	clock := journal.NewClock(time.Now())
	mem := journal.NewMemory(clock)
	_, sum := replayed(t, corpus, Options{Target: u, Timing: TimingOriginal, Speed: 2, Once: true}, WithRecorder(mem), WithClock(clock))
	if sum.Sent != 3 || sum.Timing != TimingOriginal || sum.Speed != 2 {
		t.Fatalf("summary %+v", sum)
	}
	evs := mem.OfKind(journal.KindClientRequest)
	byRoute := map[string]*journal.ClientRequest{}
	for _, p := range evs {
		ev := p.(*journal.ClientRequest)
		byRoute[ev.Route] = ev
	}
	base := byRoute["/a"].Scheduled
	for route, want := range map[string]time.Duration{"/a": 0, "/b": 50 * time.Millisecond, "/c": 150 * time.Millisecond} {
		ev := byRoute[route]
		if got := ev.Scheduled - base; got != want {
			t.Errorf("%s scheduled at +%v, want +%v", route, got, want)
		}
		if ev.Sent < ev.Scheduled {
			t.Errorf("%s sent before it was due", route)
		}
	}
}
