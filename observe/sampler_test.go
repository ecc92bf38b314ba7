package observe

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

func TestPlatformSamplerRecordsEachInterval(t *testing.T) {
	mem := journal.NewMemory(nil)
	tk := newManualTicker()
	s := NewPlatformSampler(time.Hour, WithRecorder(mem), tk.option())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	tk.C <- time.Now() // the first sample is taken at once; two more intervals
	tk.C <- time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-tk.stopped
	var got []*journal.PlatformSample
	for _, e := range mem.Events() {
		if p, ok := e.Payload.(*journal.PlatformSample); ok {
			got = append(got, p)
		}
	}
	// Samples at start and after each of the two intervals; the last may
	// be cut by the cancel.
	if len(got) < 2 || len(got) > 3 {
		t.Fatalf("%d samples", len(got))
	}
	for _, p := range got[:2] {
		tg := p.Timer
		if tg == nil || tg.Samples < 1 || tg.Samples > PlatformBurst || tg.P50 > tg.P99 || tg.P99 > tg.Max {
			t.Errorf("timer sample %+v", tg)
		}
		if runtime.GOOS == "linux" && (p.Load1 == nil || *p.Load1 < 0) {
			t.Errorf("load average %v", p.Load1)
		}
	}
}

func TestPlatformSamplerStopsAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	mem := journal.NewMemory(nil)
	if err := NewPlatformSampler(0, WithRecorder(mem)).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(mem.Events()); n != 0 {
		t.Errorf("%d samples recorded after cancel", n)
	}
}

func TestParseLoadavg(t *testing.T) {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b[0:], 3072) // 1.5 × fscale 2048
	binary.LittleEndian.PutUint32(b[4:], 2048)
	binary.LittleEndian.PutUint64(b[16:], 2048)
	if l, ok := parseLoadavg(b); !ok || l != 1.5 {
		t.Errorf("load %v %v", l, ok)
	}
	if _, ok := parseLoadavg(b[:12]); ok {
		t.Error("short struct accepted")
	}
	if _, ok := parseLoadavg(make([]byte, 24)); ok {
		t.Error("zero scale accepted")
	}
}
