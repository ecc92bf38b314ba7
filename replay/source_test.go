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
	// A loaded machine may drop slots (missed, in-flight cap): what was
	// sent must still be each request once, with its own body.
	if sum.SkippedIncomplete != skipped || sum.Sent+sum.Dropped != want || len(seen) != sum.Sent || sum.Sent < want/2 {
		t.Fatalf("%d distinct requests seen; sent %d, dropped %d, want %d slots; %d incomplete skipped", len(seen), sum.Sent, sum.Dropped, want, sum.SkippedIncomplete)
	}
	for k, times := range seen {
		var i, j int
		if _, err := fmt.Sscanf(k, "/item/%d body-%d", &i, &j); err != nil || i != j || times != 1 || skip(i) {
			t.Fatalf("%q seen %d times", k, times)
		}
	}
}
