package replay

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse/replay/capture"
)

// TestNewFromLargeCorpus: a corpus larger than maxTemplates, held as a
// compressed capture.Corpus, is prepared request by request as it is
// sent: one pass sends every sendable request once, each with its own
// target and body, incomplete and unsendable ones left out and counted.
func TestNewFromLargeCorpus(t *testing.T) {
	t.Run("every request sendable", func(t *testing.T) { largeCorpus(t, false) })
	t.Run("some incomplete or unsendable", func(t *testing.T) { largeCorpus(t, true) })
}

func largeCorpus(t *testing.T, gaps bool) {
	const n = maxTemplates + 500
	skip := func(i int) bool { return gaps && (i%1000 == 7 || i%1000 == 9) }
	var c capture.Corpus
	for i := range n {
		r := &capture.Request{Method: "POST", Target: fmt.Sprintf("/item/%d", i), Proto: "HTTP/1.1", Host: "h",
			Header: []capture.HeaderField{{Name: "Content-Type", Value: "text/plain"}}, Body: fmt.Appendf(nil, "body-%d", i)}
		switch {
		case !gaps:
		case i%1000 == 7:
			r.Incomplete = true
		case i%1000 == 9:
			r.Target = "/ctl\x01" // net/http will not write it
		}
		c.Append(r)
	}
	c.Done()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 64)
		k, _ := r.Body.Read(buf)
		mu.Lock()
		seen[r.URL.Path+" "+string(buf[:k])]++
		mu.Unlock()
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	r, err := NewFrom(&c, Options{Target: u, Rate: 3000, Once: true, AllowWrites: true, MaxInFlight: 512, MaxLateness: time.Minute, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if r.templates != nil {
		t.Fatal("a large corpus is prepared up front")
	}
	want, skipped := n, 0
	if gaps {
		want, skipped = n-2*5, 5 // 5 incomplete and 5 unsendable
	}
	if r.Corpus() != want || r.Unsendable()["target has control characters: net/http refuses to write them"] != skipped || (r.sendable == nil) == gaps {
		t.Fatalf("corpus %d, want %d; unsendable %v", r.Corpus(), want, r.Unsendable())
	}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// A loaded machine may drop slots (missed, in-flight cap; at 3000/s
	// under -race on two busy cores, over half of them): what was sent
	// must still be each request once, with its own body, and every drop
	// must be one of those two.
	if sum.SkippedIncomplete != skipped || sum.Sent+sum.Dropped != want || len(seen) != sum.Sent || sum.Sent == 0 ||
		sum.Dropped != sum.DroppedInFlight+sum.DroppedMissed {
		t.Fatalf("%d distinct requests seen; sent %d, dropped %d, want %d slots; %d incomplete skipped", len(seen), sum.Sent, sum.Dropped, want, sum.SkippedIncomplete)
	}
	for k, times := range seen {
		var i, j int
		if _, err := fmt.Sscanf(k, "/item/%d body-%d", &i, &j); err != nil || i != j || times != 1 || skip(i) {
			t.Fatalf("%q seen %d times", k, times)
		}
	}
}

// BenchmarkTemplate is what a send costs to get its request ready: from
// templates prepared up front (a corpus of up to maxTemplates), or
// decoded from a compressed capture.Corpus and prepared on the send
// (larger corpora), requests read in order as a replay reads them.
//
//	go test -run '^$' -bench Template -benchmem ./replay
func BenchmarkTemplate(b *testing.B) {
	mk := func(i int) *capture.Request {
		return &capture.Request{Method: "POST", Target: "/tools/search", Proto: "HTTP/1.1", Host: "gw.internal:8080",
			Header: []capture.HeaderField{{Name: "Host", Value: "gw.internal:8080"}, {Name: "User-Agent", Value: "openclaw-agent/0.9"},
				{Name: "Accept", Value: "application/json"}, {Name: "Content-Type", Value: "application/json"},
				{Name: "X-Request-Id", Value: fmt.Sprintf("req-%06d", i)}, {Name: "Authorization", Value: fmt.Sprintf("Bearer sk-fake-%08x", i)},
				{Name: "Content-Length", Value: "96"}},
			Body: fmt.Appendf(nil, `{"tool_call_id":"call_%04d","name":"search","arguments":{"query":"retry budget","top_k":5}}`, i)}
	}
	u, _ := url.Parse("http://127.0.0.1:1")
	opt := Options{Target: u, Rate: 10, AllowWrites: true, Duration: time.Second}
	small := make(Requests, maxTemplates)
	var big capture.Corpus
	for i := range 100_000 {
		if i < maxTemplates {
			small[i] = mk(i)
		}
		big.Append(mk(i))
	}
	big.Done()
	for _, tc := range []struct {
		name string
		src  Source
	}{{"prepared", small}, {"corpus", &big}} {
		b.Run(tc.name, func(b *testing.B) {
			r, err := NewFrom(tc.src, opt)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				if t := r.template(i); t.method != "POST" {
					b.Fatal(t.method)
				}
				i++
			}
		})
	}
}
