package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
)

func u64(v uint64) *uint64 { return &v }

// samples holds one fully populated payload per kind.
func samples() []Payload {
	return []Payload{
		&RunStart{RunID: "r1", Scenario: "weekly", ScenarioFile: "weekly.yaml", Seed: 42,
			WallStart: time.Date(2026, 11, 30, 3, 0, 0, 123456789, time.UTC), Version: "v1",
			Target: "http://127.0.0.1:8080", Rate: 10, Duration: 5 * time.Minute, Upstreams: []string{"search", "llm"},
			Platform: &Platform{OS: "darwin", Arch: "arm64", Kernel: "24.1.0", CPU: "Apple M2", NumCPU: 8, GoVersion: "go1.26",
				TimerGranularity: &TimerStats{Samples: 200, P50: 60 * time.Microsecond, P99: 2 * time.Millisecond, Max: 5 * time.Millisecond},
				TCPKeepalive:     map[string]string{"net.inet.tcp.keepidle": "7200000"}},
			Config: json.RawMessage(`{"rate":10}`)},
		&Phase{Name: "replay", Detail: "3000 requests"},
		&FaultStart{Name: "storm", Type: "status", Upstream: "search", For: 30 * time.Second,
			Params: json.RawMessage(`{"code":503}`), Probability: 1, HealthChecks: true},
		&FaultEnd{Name: "storm", Upstream: "search", Applied: 120},
		&ClientRequest{Seq: 7, Method: "POST", Route: "/tools/search", Upstream: "search",
			Scheduled: 700 * time.Millisecond, Sent: 700*time.Millisecond + 80*time.Microsecond,
			HeadersAt: 712 * time.Millisecond, Done: 720 * time.Millisecond, Latency: 20 * time.Millisecond,
			Service: 19920 * time.Microsecond, Status: 200, Bytes: 400, Expected: 1000, Fraction: 0.4,
			SSEEvents: 3, Outcome: OutcomeCutMidBody, FastFail: true, FastFailCode: "dependency_unavailable",
			Late: true, Error: "unexpected EOF <&>"},
		&UpstreamRequest{Upstream: "search", Method: "POST", Path: "/search?q=1", Seq: u64(0), SeqFrom: SeqFromBody, Remote: "127.0.0.1:5000",
			UserAgent: "gw/1", ProbeTag: "half-open", HealthCheck: true, Fault: "storm", FaultType: "retry_after",
			InFlight: 2, Status: 429, RetryAfter: 120 * time.Second, Bytes: 12, Done: time.Second, Outcome: OutcomeUpstreamComplete},
		&MetricsSample{Source: "http://127.0.0.1:9/metrics", Series: []Series{{Name: "openclaw_breaker_state",
			Labels: map[string]string{"dependency": "search"}, Value: 2}}, States: []BreakerState{{Dependency: "search", Upstream: "search", State: StateOpen}},
			Took: time.Millisecond, Error: "x"},
		&HealthSample{URL: "http://127.0.0.1:9/healthz", Status: 503, Healthy: false, Latency: time.Millisecond, Error: "e", Detail: "search down"},
		&PlatformSample{Timer: &TimerStats{Samples: 20, P50: 90 * time.Microsecond, P99: 2 * time.Millisecond, Max: 3 * time.Millisecond}, Load1: func() *float64 { v := 1.5; return &v }()},
		&BreakerTransition{Gateway: "gw0", Dependency: "search", From: StateClosed, To: StateOpen, Reason: "window"},
		&Log{Level: "warn", Source: "replay", Msg: "late"},
		&RunEnd{Reason: EndInterrupted, Partial: true, Error: "signal"},
	}
}

func TestRoundTripEveryKind(t *testing.T) {
	seen := map[Kind]bool{}
	for i, p := range samples() {
		t.Run(string(p.Kind()), func(t *testing.T) {
			seen[p.Kind()] = true
			ev := Event{T: time.Duration(i) * time.Second, Payload: p}
			line, err := Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
				t.Fatalf("not one line: %q", line)
			}
			got, err := Unmarshal(line)
			if err != nil {
				t.Fatalf("unmarshal %s: %v", line, err)
			}
			if !reflect.DeepEqual(got, ev) {
				t.Errorf("round trip\n got %#v\nwant %#v", got.Payload, ev.Payload)
			}
		})
	}
	for _, k := range Kinds() {
		if !seen[k] {
			t.Errorf("kind %s has no round-trip sample", k)
		}
	}
}

func TestLinesAreFlat(t *testing.T) {
	line, err := Marshal(Event{T: 1500, Payload: &Phase{Name: "replay"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"t":1500,"kind":"phase","name":"replay"}` + "\n"; string(line) != want {
		t.Errorf("got %q, want %q", line, want)
	}
	line, _ = Marshal(Event{T: 0, Payload: &FaultEnd{}})
	if want := `{"t":0,"kind":"fault.end","name":"","upstream":"","applied":0}` + "\n"; string(line) != want {
		t.Errorf("got %q, want %q", line, want)
	}
}

func TestUnknownKindSurvives(t *testing.T) {
	line := []byte(`{"t":5,"kind":"future.thing","x":1}`)
	ev, err := Unmarshal(line)
	if err != nil {
		t.Fatal(err)
	}
	u, ok := ev.Payload.(*Unknown)
	if !ok || u.KindName != "future.thing" || string(u.Raw) != `{"x":1}` {
		t.Fatalf("got %#v", ev.Payload)
	}
	out, err := Marshal(ev)
	if err != nil || string(out) != `{"t":5,"kind":"future.thing","x":1}`+"\n" {
		t.Fatalf("re-marshal: %q %v", out, err)
	}
}

func TestWriterReaderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	w, err := Create(path, NewClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range samples() {
		w.Record(p)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	w.Record(&Log{Msg: "after close"}) // dropped, must not panic
	events, torn, err := ReadFile(path)
	if err != nil || torn {
		t.Fatalf("read: torn=%v err=%v", torn, err)
	}
	if len(events) != len(samples()) {
		t.Fatalf("read %d events, want %d", len(events), len(samples()))
	}
	for i := 1; i < len(events); i++ {
		if events[i].T < events[i-1].T {
			t.Errorf("event %d goes back in time", i)
		}
	}
}

func TestTornLastLine(t *testing.T) {
	var buf bytes.Buffer
	for i, p := range samples()[:3] {
		line, _ := Marshal(Event{T: time.Duration(i), Payload: p})
		buf.Write(line)
	}
	full := buf.Bytes()
	last, _ := Marshal(Event{T: 9, Payload: &Log{Level: "info", Msg: "cut here"}})
	for cut := 1; cut < len(last)-1; cut++ {
		data := append(append([]byte(nil), full...), last[:cut]...)
		events, torn, err := ReadAll(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if len(events) != 3 || !torn {
			t.Fatalf("cut at %d: %d events, torn=%v", cut, len(events), torn)
		}
	}
	// A complete last line without its newline is not torn.
	data := append(append([]byte(nil), full...), bytes.TrimSuffix(last, []byte("\n"))...)
	events, torn, err := ReadAll(bytes.NewReader(data))
	if err != nil || torn || len(events) != 4 {
		t.Fatalf("unterminated complete line: %d events torn=%v err=%v", len(events), torn, err)
	}
}

func TestCorruptLineNumber(t *testing.T) {
	tests := []struct {
		name, data string
		line       int
		wantMsg    string
	}{
		{"garbage", "{\"t\":1,\"kind\":\"phase\",\"name\":\"a\"}\n\nnot json\n{\"t\":2,\"kind\":\"phase\"}\n", 3, "journal line 3"},
		{"missing t", "{\"kind\":\"phase\"}\n", 1, `missing "t"`},
		{"missing kind", "{\"t\":1}\n", 1, `missing "kind"`},
		{"wrong type", "{\"t\":1,\"kind\":\"client.request\",\"seq\":\"x\"}\n", 1, "client.request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, _, err := ReadAll(strings.NewReader(tt.data))
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Line != tt.line {
				t.Fatalf("err = %v, want corrupt at line %d", err, tt.line)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err %q does not mention %q", err, tt.wantMsg)
			}
			if tt.name == "garbage" && len(events) != 1 {
				t.Errorf("events before corruption: %d, want 1", len(events))
			}
		})
	}
}

func TestConcurrentWritersNeverInterleave(t *testing.T) {
	var buf testutil.SyncBuffer
	w := NewWriter(&buf, NewClock(time.Now()), WithFlushInterval(time.Millisecond))
	const goroutines, each = 16, 500
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				w.Record(&ClientRequest{Seq: uint64(g*each + i), Route: strings.Repeat("x", i%300), Outcome: OutcomeOK})
			}
		}(g)
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	events, torn, err := ReadAll(bytes.NewReader(buf.Bytes()))
	if err != nil || torn {
		t.Fatalf("torn=%v err=%v", torn, err)
	}
	seen := make(map[uint64]bool)
	for _, e := range events {
		seen[e.Payload.(*ClientRequest).Seq] = true
	}
	if len(events) != goroutines*each || len(seen) != goroutines*each {
		t.Fatalf("got %d events (%d distinct), want %d", len(events), len(seen), goroutines*each)
	}
	if w.Count() != goroutines*each {
		t.Errorf("Count = %d", w.Count())
	}
}

// TestPeriodicFlush checks that events reach the file without Close, as a
// crash would leave them.
func TestPeriodicFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	w, err := Create(path, NewClock(time.Now()), WithFlushInterval(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Record(&Phase{Name: "replay"})
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if bytes.Contains(data, []byte(`"replay"`)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("event not flushed without Close")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestWriteErrorIsSticky(t *testing.T) {
	fw := &failWriter{}
	w := NewWriter(fw, NewClock(time.Now()), WithFlushInterval(0))
	w.Record(&Phase{Name: "a"})
	if err := w.Flush(); err == nil {
		t.Fatal("flush: no error")
	}
	w.Record(&Phase{Name: "b"})
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("close: %v", err)
	}
	if fw.n != 1 {
		t.Errorf("underlying writes after failure: %d", fw.n)
	}
}

func TestMemory(t *testing.T) {
	m := NewMemory(nil)
	m.Record(&Phase{Name: "a"})
	m.RecordAt(time.Second, &Log{Msg: "b"})
	if n := len(m.Events()); n != 2 {
		t.Fatalf("events = %d", n)
	}
	if got := m.OfKind(KindLog); len(got) != 1 || got[0].(*Log).Msg != "b" {
		t.Fatalf("OfKind = %v", got)
	}
	var _ Recorder = m
	var _ Recorder = (*Writer)(nil)
	Discard.Record(&Phase{})
}

func FuzzReader(f *testing.F) {
	for i, p := range samples() {
		line, _ := Marshal(Event{T: time.Duration(i), Payload: p})
		f.Add(line)
	}
	f.Add([]byte("{\"t\":1,\"kind\":\"phase\"}\n{\"t\":"))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for {
			ev, err := r.Next()
			if err != nil {
				var ce *CorruptError
				if !errors.Is(err, io.EOF) && !errors.As(err, &ce) {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
				if ce != nil && (ce.Line < 1 || ce.Line > bytes.Count(data, []byte("\n"))+1) {
					t.Fatalf("line %d out of range", ce.Line)
				}
				return
			}
			// Whatever reads must write back and read again to the same event.
			line, err := Marshal(ev)
			if err != nil {
				t.Fatalf("re-marshal %#v: %v", ev.Payload, err)
			}
			again, err := Unmarshal(line)
			if err != nil {
				t.Fatalf("re-read %q: %v", line, err)
			}
			line2, _ := Marshal(again)
			if !bytes.Equal(line, line2) {
				t.Fatalf("unstable:\n%s\n%s", line, line2)
			}
		}
	})
}

func BenchmarkWriter(b *testing.B) {
	w := NewWriter(io.Discard, NewClock(time.Now()))
	defer w.Close()
	p := &ClientRequest{Seq: 1, Method: "POST", Route: "/tools/search", Upstream: "search",
		Scheduled: time.Second, Sent: time.Second, HeadersAt: time.Second, Done: time.Second,
		Latency: time.Millisecond, Service: time.Millisecond, Status: 200, Bytes: 1234, Outcome: OutcomeOK}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Record(p)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkWriterFile(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "j.jsonl"), NewClock(time.Now()))
	if err != nil {
		b.Fatal(err)
	}
	p := &UpstreamRequest{Upstream: "search", Method: "POST", Path: "/search", Remote: "127.0.0.1:40000",
		InFlight: 1, Status: 503, Bytes: 20, Done: time.Second, Outcome: OutcomeUpstreamComplete}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.Record(p)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkReader(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; i < 10000; i++ {
		line, _ := Marshal(Event{T: time.Duration(i), Payload: &ClientRequest{Seq: uint64(i), Route: "/tools/x", Outcome: OutcomeOK, Status: 200}})
		buf.Write(line)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := ReadAll(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedactPayload is the redaction every event goes through before
// it is written, for the two per-request kinds (nearly every event) when
// they hold nothing to hide: the common case must cost a few byte scans.
func BenchmarkRedactPayload(b *testing.B) {
	cr := &ClientRequest{Seq: 1, Method: "POST", Route: "/tools/search", Upstream: "search", Status: 200, Outcome: OutcomeOK}
	ur := &UpstreamRequest{Upstream: "search", Method: "GET", Path: "/tools/weather?city=Oslo&units=metric", Status: 200, Outcome: OutcomeUpstreamComplete}
	b.ReportAllocs()
	for b.Loop() {
		if redactPayload(cr) != Payload(cr) || redactPayload(ur) != Payload(ur) {
			b.Fatal("a payload without secrets was copied")
		}
	}
}

// TestCreateRefusesSymlink: a journal.jsonl link in a run directory,
// dangling or not, made the journal land wherever it pointed. Create
// refuses it and writes nothing there.
func TestCreateRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "elsewhere.jsonl")
	existing := filepath.Join(t.TempDir(), "kept.txt")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{outside, existing} {
		link := filepath.Join(dir, "journal.jsonl")
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
		w, err := Create(link, NewClock(time.Now()))
		if err == nil {
			w.Close()
			t.Fatalf("%s: journal created through a link", target)
		}
		if !strings.Contains(err.Error(), "is a symbolic link") {
			t.Errorf("error %v does not say why", err)
		}
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("the dangling link's target was created: %v", err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("the link's target was truncated: %q", b)
	}
}
