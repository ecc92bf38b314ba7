package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestFastPathMatchesGeneral checks the one-pass decoder of the frequent
// kinds against the general one on every line of the reports' fixtures and
// on odd lines.
func TestFastPathMatchesGeneral(t *testing.T) {
	var lines [][]byte
	for _, n := range []string{"clean", "haproxy", "quota-violated"} {
		b, err := os.ReadFile(filepath.Join("..", "reports", "testdata", n+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.Split(bytes.TrimSpace(b), []byte("\n"))...)
	}
	lines = append(lines,
		[]byte(`{"t":5,"kind":"client.request","seq":1,"kind":"log","msg":"x","level":"info"}`), // duplicate kind
		[]byte(`{"kind":"upstream.request","t":7,"upstream":"u","in_flight":1,"outcome":"ok"}`),
		[]byte(`{"t":-3,"kind":"upstream.request","upstream":"u","seq":null,"in_flight":"x"}`),
		[]byte(`{"t":1,"kind":"client.request","seq":-1}`),
		[]byte(`{"t":99999999999999999999,"kind":"client.request"}`),
	)
	fast := 0
	for i, l := range lines {
		want, werr := unmarshalGeneral(l)
		got, gerr := Unmarshal(l)
		if _, ok := unmarshalFast(l); ok {
			fast++
		}
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("line %d %s:\n got %#v, %v\nwant %#v, %v", i, l, got.Payload, gerr, want.Payload, werr)
		}
	}
	if fast < len(lines)/2 {
		t.Errorf("the fast path decoded %d of %d lines", fast, len(lines))
	}
}

func TestDecodeTornAndCorrupt(t *testing.T) {
	defer goleak.VerifyNone(t)
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, `{"t":%d,"kind":"log","level":"info","msg":"m"}`+"\n", i)
	}
	good := b.String()
	var n int
	torn, err := Decode(strings.NewReader(good+`{"t":3001,"kind":"lo`), func(Event) { n++ })
	if err != nil || !torn || n != 3000 {
		t.Errorf("torn tail: n=%d torn=%v err=%v", n, torn, err)
	}
	n = 0
	torn, err = Decode(strings.NewReader(good+`{"t":3001,"kind":"log","level":"info","msg":"last"}`), func(Event) { n++ })
	if err != nil || torn || n != 3001 {
		t.Errorf("complete last line without newline: n=%d torn=%v err=%v", n, torn, err)
	}
	lines := strings.SplitAfter(good, "\n")
	lines[1700] = "garbage\n"
	_, err = Decode(strings.NewReader(strings.Join(lines, "")), func(Event) {})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Line != 1701 {
		t.Errorf("corrupt line: %v, want line 1701", err)
	}
	// Reader and Decode agree on every event of a journal.
	want, _, err := ReadAll(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	var got []Event
	if _, err := Decode(strings.NewReader(good), func(e Event) { got = append(got, e) }); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Decode and ReadAll differ (%v)", err)
	}
}

// Lines longer than the read buffer (256 KiB) are read whole, and the
// lines around them stay intact.
func TestDecodeLongLines(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, NewClock(time.Now()), WithFlushInterval(0))
	long := strings.Repeat("x", 700<<10)
	for i := range 1500 {
		if i%600 == 1 {
			w.RecordAt(time.Duration(i), &Log{Level: "info", Msg: long})
		} else {
			w.RecordAt(time.Duration(i), &ClientRequest{Seq: uint64(i), Method: "GET", Route: "/r", Outcome: OutcomeOK})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got []Event
	torn, err := Decode(&buf, func(e Event) { got = append(got, e) })
	if err != nil || torn || len(got) != 1500 {
		t.Fatalf("%d events, torn %v, %v", len(got), torn, err)
	}
	for i, e := range got {
		if e.T != time.Duration(i) {
			t.Fatalf("event %d has t %v", i, e.T)
		}
		if l, ok := e.Payload.(*Log); ok && l.Msg != long {
			t.Fatalf("event %d: a long line came back %d bytes long", i, len(l.Msg))
		}
	}
}

// DecodeTransient delivers the same events as Decode, to a consumer that
// copies them, and hands the frequent kinds' payloads out again from
// reused memory once their chunk is delivered (which is what it is for);
// payloads of other kinds stay the consumer's.
func TestDecodeTransientReuses(t *testing.T) {
	defer goleak.VerifyNone(t)
	var buf bytes.Buffer
	w := NewWriter(&buf, NewClock(time.Now()), WithFlushInterval(0))
	seq := func(v uint64) *uint64 { return &v }
	const n = 20 * chunkLines
	for i := range n {
		switch i % 3 {
		case 0:
			w.RecordAt(time.Duration(i), &ClientRequest{Seq: uint64(i), Method: "GET", Route: fmt.Sprintf("/r/%d", i%7), Scheduled: time.Duration(i),
				Outcome: OutcomeOK, Resent: []time.Duration{time.Duration(i)}})
		case 1:
			w.RecordAt(time.Duration(i), &UpstreamRequest{Upstream: "u", Method: "GET", Path: "/p", Seq: seq(uint64(i)), InFlight: 1, Outcome: OutcomeUpstreamComplete})
		default:
			w.RecordAt(time.Duration(i), &Log{Level: "info", Msg: fmt.Sprint(i)})
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var want []Event
	if _, err := Decode(bytes.NewReader(buf.Bytes()), func(e Event) { want = append(want, e) }); err != nil || len(want) != n {
		t.Fatalf("Decode: %d events, %v", len(want), err)
	}
	var got []Event
	seen := map[*ClientRequest]bool{}
	reused := 0
	var logs []*Log
	_, err := DecodeTransient(bytes.NewReader(buf.Bytes()), func(e Event) {
		switch p := e.Payload.(type) {
		case *ClientRequest:
			if seen[p] {
				reused++
			}
			seen[p] = true
			cp := *p
			cp.Resent = append([]time.Duration(nil), p.Resent...)
			e.Payload = &cp
		case *UpstreamRequest:
			cp := *p
			cp.Seq = seq(*p.Seq)
			e.Payload = &cp
		case *Log:
			logs = append(logs, p)
		}
		got = append(got, e)
	})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeTransient (copied) and Decode differ (%v)", err)
	}
	if reused == 0 {
		t.Errorf("no client.request payload was handed out twice in %d chunks: nothing reused", n/chunkLines)
	}
	for i, l := range logs {
		if want := fmt.Sprint(3*i + 2); l.Msg != want {
			t.Fatalf("a kept log payload changed: %q, want %q", l.Msg, want)
		}
	}
}
