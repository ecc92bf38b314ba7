package journal

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func clientFrom(seq uint64, method, route, errText string, a, b, c int64, status int, frac float64, late, ff bool, resent int) *ClientRequest {
	p := &ClientRequest{Seq: seq, Method: method, Route: route, Upstream: route, Scheduled: time.Duration(a),
		Sent: time.Duration(b), HeadersAt: time.Duration(c), Done: time.Duration(a + b), Latency: time.Duration(b - a),
		Service: time.Duration(c), Status: status, Bytes: b, Expected: c, Fraction: frac, SSEEvents: status / 7,
		Outcome: Outcome(errText), FastFail: ff, FastFailCode: method, Late: late, Error: errText,
		IdempotencyKey: late != ff, Deadline: time.Duration(c - a), BodyStamp: late, Warmup: ff && !late}
	for i := range resent % 4 {
		p.Resent = append(p.Resent, time.Duration(a+int64(i)))
	}
	if resent%2 == 1 {
		// Kept response headers: keys sorted by the encoder as
		// encoding/json sorts them, strings escaped alike.
		p.Headers = map[string]string{route: errText, "X-Chosen-Target": method, "A": ""}
	}
	return p
}

func upstreamFrom(seq uint64, method, path, ua string, a, b int64, status int, health, withSeq bool) *UpstreamRequest {
	p := &UpstreamRequest{Upstream: path, Method: method, Path: path, Remote: ua, UserAgent: ua, ProbeTag: method,
		HealthCheck: health, Delivered: health != withSeq, Fault: ua, FaultType: method, InFlight: status, Status: status,
		RetryAfter: time.Duration(a), Bytes: b, HeadersAt: time.Duration(b + a), Done: time.Duration(a - b), Outcome: Outcome(path),
		IdempotencyKey: ua, Budget: time.Duration(b), PromptTokens: a, CompletionTokens: b - a}
	if withSeq {
		p.Seq = &seq
		p.SeqFrom = ua
	}
	return p
}

// checkCodec asserts that the hand-written encoder writes what
// encoding/json writes, and that the hand-written decoder reads it back to
// what encoding/json reads.
func checkCodec(t *testing.T, e Event) {
	t.Helper()
	var want bytes.Buffer
	if err := encodeEventJSON(&want, e); err != nil {
		if _, ok := appendEventFast(nil, e); ok {
			t.Fatalf("encoding/json refuses %+v (%v), the fast encoder does not", e.Payload, err)
		}
		return
	}
	got, ok := appendEventFast(nil, e)
	if !ok {
		t.Fatalf("no fast encoding for %T", e.Payload)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("fast encoder:\n%s\nencoding/json:\n%s", got, want.Bytes())
	}
	line := bytes.TrimSpace(got)
	viaJSON, err := unmarshalGeneral(line)
	if err != nil {
		t.Fatal(err)
	}
	fast, ok := decodeFastIn(line, &interner{}, &slab{})
	if !ok {
		// Lines that the decoder leaves to encoding/json: strings it
		// cannot be sure of (invalid UTF-8 replaced on writing is valid
		// again, so this is only \u escapes of surrogates).
		if !bytes.Contains(line, []byte(`\ud`)) {
			t.Fatalf("the fast decoder refused its own line %s", line)
		}
		return
	}
	if !reflect.DeepEqual(fast, viaJSON) {
		t.Fatalf("line %s\nfast decoder %+v\nencoding/json %+v", line, fast.Payload, viaJSON.Payload)
	}
}

func TestCodecCases(t *testing.T) {
	for _, e := range []Event{
		{T: 0, Payload: &ClientRequest{}},
		{T: -5, Payload: &ClientRequest{Expected: -1, Outcome: OutcomeOK}},
		{T: 1, Payload: clientFrom(1<<63, "GET", "/a\"b\\c\n\t\x01\u2028\u2029é\xff<>&", "x", -1, 2, 3, 200, 0.25, true, true, 3)},
		{T: 2, Payload: clientFrom(0, "", "", "", 0, 0, 0, 0, 1e-7, false, false, 0)},
		{T: 3, Payload: clientFrom(7, "P", "/", "e", 1, 1, 1, 1, 1e21, false, false, 1)},
		{T: 4, Payload: clientFrom(7, "P", "/", "e", 1, 1, 1, 1, 123456.789e-3, false, false, 1)},
		{T: 5, Payload: &UpstreamRequest{}},
		{T: 6, Payload: upstreamFrom(9, "POST", "/v1/chat/completions", "ua \x7f \xc3", 5, 6, 503, true, true)},
		{T: 7, Payload: upstreamFrom(0, "GET", "/", "", 0, 0, 0, false, true)},
	} {
		checkCodec(t, e)
	}
}

func FuzzCodecClientRequest(f *testing.F) {
	f.Add(uint64(3), "GET", "/tools/search", "reset by peer", int64(1e9), int64(2e9), int64(3), 200, 0.5, true, false, 2)
	f.Add(uint64(0), "", "\u2028", "\xff", int64(-1), int64(0), int64(1<<62), -3, 1e-9, false, true, 0)
	f.Fuzz(func(t *testing.T, seq uint64, method, route, errText string, a, b, c int64, status int, frac float64, late, ff bool, resent int) {
		checkCodec(t, Event{T: time.Duration(a), Payload: clientFrom(seq, method, route, errText, a, b, c, status, frac, late, ff, max(resent, 0))})
	})
}

func FuzzCodecUpstreamRequest(f *testing.F) {
	f.Add(uint64(3), "GET", "/v1", "probe/1", int64(1e9), int64(2), 429, true, true)
	f.Fuzz(func(t *testing.T, seq uint64, method, path, ua string, a, b int64, status int, health, withSeq bool) {
		checkCodec(t, Event{T: time.Duration(b), Payload: upstreamFrom(seq, method, path, ua, a, b, status, health, withSeq)})
	})
}

// Whatever line the fast decoder accepts, encoding/json reads the same
// way; what it refuses is left to encoding/json.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range []string{
		`{"t":1,"kind":"client.request","seq":1,"method":"GET","route":"/a","scheduled":5,"outcome":"ok","resent":[1,2]}`,
		`{"t":1,"kind":"upstream.request","upstream":"u","method":"GET","path":"/","seq":null,"in_flight":1,"outcome":"completed"}`,
		`{"t":1,"kind":"upstream.request","seq":18446744073709551615,"path":"\u00e9\n\/"}`,
		`{"t":1,"kind":"client.request","status":1e3}`,
		`{"t":1,"kind":"client.request","fraction":-0.5E-3,"late":true,"resent":[]}`,
		`{"t":1,"kind":"client.request","SEQ":2}`,
		`{"t":1,"kind":"client.request","seq":1,"seq":2,"error":"\ud83d\ude00"}`,
		`{"t":01,"kind":"client.request"}`,
		`{"t":-9223372036854775808,"kind":"client.request","scheduled":9223372036854775807,"status":-1}`,
		`{"t":9223372036854775808,"kind":"client.request"}`,
		`{"t":1,"kind":"upstream.request","seq":18446744073709551616}`,
		`{"t":1,"kind":"upstream.request","seq":-1}`,
		`{"t":1,"kind":"client.request"} `,
		`{"t":1,"kind":"client.request","seq":1,"outcome":"ok","headers":{"X-Chosen-Target":"backup","\u00e9":"a\nb"}}`,
		`{"t":1,"kind":"client.request","headers":{"A":"1","A":"2"}}`,
		`{"t":1,"kind":"client.request","headers":{"A":null}}`,
		`{"t":1,"kind":"client.request","headers":{}}`,
		`{"t":1,"kind":"client.request","headers":null}`,
		`{"t":1,"kind":"client.request","headers":{"A":1}}`,
		`{"t":1,"kind":"client.request","seq":1099511627776,"outcome":"ok","warmup":true}`,
		`{"t":1,"kind":"client.request","warmup":false,"warmup":1}`,
		`{"t":1,"kind":"client.request","warmup":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, ok := decodeFastIn(line, &interner{}, &slab{})
		if !ok {
			return
		}
		viaJSON, err := unmarshalGeneral(line)
		if err != nil {
			t.Fatalf("fast decoder accepted %s, encoding/json: %v", line, err)
		}
		if !reflect.DeepEqual(fast, viaJSON) {
			t.Fatalf("line %s\nfast decoder %+v\nencoding/json %+v", line, fast.Payload, viaJSON.Payload)
		}
	})
}

// benchClientRequest is a typical client.request of a chat completion.
var benchClientRequest = Event{T: 1e9, Payload: &ClientRequest{Seq: 42, Method: "POST", Route: "/v1/chat/completions", Upstream: "llm", Scheduled: 1e9, Sent: 1e9 + 5e4, HeadersAt: 1e9 + 2e6, Done: 1e9 + 3e6, Latency: 3e6, Service: 2.95e6, Status: 200, Bytes: 812, Expected: 812, Outcome: OutcomeOK}}

// BenchmarkEncodeFast is the writer's encoding of the frequent kinds: no
// allocation once the buffer has grown.
func BenchmarkEncodeFast(b *testing.B) {
	seq := uint64(42)
	for _, e := range []Event{
		benchClientRequest,
		{T: 1e9, Payload: &UpstreamRequest{Upstream: "llm", Method: "POST", Path: "/v1/chat/completions", Seq: &seq, Remote: "127.0.0.1:53422", UserAgent: "gateway/1.0", InFlight: 3, Status: 200, Bytes: 812, Done: 1e9 + 2e6, Outcome: OutcomeUpstreamComplete}},
	} {
		b.Run(string(e.Kind()), func(b *testing.B) { benchEncode(b, encodeEvent, e) })
	}
}

// BenchmarkEncodeJSON is the same through encoding/json, for comparison.
func BenchmarkEncodeJSON(b *testing.B) { benchEncode(b, encodeEventJSON, benchClientRequest) }

// benchEncode encodes e again and again into one buffer.
func benchEncode(b *testing.B, encode func(*bytes.Buffer, Event) error, e Event) {
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := encode(&buf, e); err != nil {
			b.Fatal(err)
		}
	}
}

// benchLines are a client.request and an upstream.request as the Writer
// writes them.
func benchLines(tb testing.TB) [][]byte {
	seq := uint64(49883)
	var lines [][]byte
	for _, e := range []Event{benchClientRequest, {T: 997661000000, Payload: &UpstreamRequest{Upstream: "llm-primary", Method: "GET", Path: "/x", Seq: &seq,
		InFlight: 1, Status: 200, Done: 997666000000, Outcome: OutcomeUpstreamComplete}}} {
		l, ok := appendEventFast(nil, e)
		if !ok {
			tb.Fatal("no fast encoding")
		}
		lines = append(lines, bytes.TrimSpace(l))
	}
	return lines
}

// Decoding the frequent kinds into a reused slab allocates nothing once
// the names are interned: the hot path of DecodeTransient.
func TestDecodeFastAllocs(t *testing.T) {
	lines := benchLines(t)
	in, sl := &interner{}, &slab{reuse: true}
	i := 0
	allocs := testing.AllocsPerRun(2000, func() { // both kinds each run: the average is rounded down
		if i%(chunkLines/2) == 0 {
			sl.rewind()
		}
		for _, l := range lines {
			if _, ok := decodeFastIn(l, in, sl); !ok {
				t.Fatal("not decoded")
			}
		}
		i++
	})
	if allocs != 0 {
		t.Errorf("%v allocations per pair of lines, want 0", allocs)
	}
}

// BenchmarkDecodeFast decodes a client.request and an upstream.request as
// the Writer writes them, the way Decode does (shared names, payloads
// from a reused slab): the per-line cost of reading a large journal.
func BenchmarkDecodeFast(b *testing.B) {
	lines := benchLines(b)
	in, sl := &interner{}, &slab{reuse: true}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%chunkLines == 0 {
			sl.rewind()
		}
		if _, ok := decodeFastIn(lines[i%2], in, sl); !ok {
			b.Fatal("not decoded")
		}
	}
}
