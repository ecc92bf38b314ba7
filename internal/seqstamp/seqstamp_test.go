package seqstamp

import (
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want uint64
		ok   bool
	}{
		{"none", `{"messages":[{"role":"user","content":"hi"}]}`, 0, false},
		{"one", `{"content":"hi [rehearse:seq=42]"}`, 42, true},
		{"last wins", `earlier [rehearse:seq=7] then [rehearse:seq=8] end`, 8, true},
		{"torn last skipped", `[rehearse:seq=9] and [rehearse:seq=1x]`, 9, true},
		{"unterminated", `[rehearse:seq=12`, 0, false},
		{"empty digits", `[rehearse:seq=]`, 0, false},
		{"overflow skipped", `[rehearse:seq=3] [rehearse:seq=99999999999999999999]`, 3, true},
		{"zero", `[rehearse:seq=0]`, 0, true},
		{"max", `[rehearse:seq=18446744073709551615]`, 18446744073709551615, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Find([]byte(tc.body))
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Find(%q) = %d, %v; want %d, %v", tc.body, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	for _, seq := range []uint64{0, 1, 123, 1 << 40} {
		body := "system prompt " + strings.Repeat("x", 1000) + " user text " + String(seq) + " tools"
		if got, ok := Find([]byte(body)); !ok || got != seq {
			t.Fatalf("seq %d: Find = %d, %v", seq, got, ok)
		}
	}
}

func FuzzFind(f *testing.F) {
	f.Add([]byte(`{"content":"hi [rehearse:seq=42]"}`))
	f.Add([]byte(`[rehearse:seq=[rehearse:seq=5]`))
	f.Add([]byte(`[rehearse:seq=`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := Find(b)
		if !ok {
			return
		}
		// A found stamp is in the body as Append spells it (leading zeros
		// aside) and nothing after it is a stamp.
		if !strings.Contains(string(b), Prefix) {
			t.Fatalf("found %d in a body without the prefix", n)
		}
	})
}

// BenchmarkFind60KB measures the fake upstream's cost per call on an agent
// runtime's provider request (~60 KB of system prompt and tools), stamp in
// the middle: the scan the fake makes on every call.
func BenchmarkFind60KB(b *testing.B) {
	body := []byte(strings.Repeat("a system prompt sentence, ", 1200) + String(4711) + strings.Repeat(`{"tool":"x"}`, 2500))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, ok := Find(body); !ok {
			b.Fatal("not found")
		}
	}
}
