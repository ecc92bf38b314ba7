package replay

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/halfopen/rehearse/internal/seqstamp"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// A warm-up replay numbers its requests from journal.WarmupSeqBase in
// the header, the body stamp and the journal, and marks each
// client.request warmup, so that no call of it is taken for one of the
// scored replay's (numbered from 0); a replay that is not a warm-up marks
// nothing.
func TestWarmupNumbersAndMarks(t *testing.T) {
	var mu sync.Mutex
	got := map[uint64]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seq, err := strconv.ParseUint(r.Header.Get("X-Rehearse-Seq"), 10, 64)
		if err != nil {
			t.Errorf("seq header %q", r.Header.Get("X-Rehearse-Seq"))
		}
		mu.Lock()
		got[seq] = string(b)
		mu.Unlock()
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	body := []byte(`{"messages":[{"role":"user","content":"hi"}]}`)
	req := &capture.Request{Method: "POST", Target: "/v1/chat/completions",
		Header: []capture.HeaderField{{Name: "Content-Type", Value: "application/json"}}, Body: body}
	for _, warm := range []bool{true, false} {
		clear(got)
		mem := journal.NewMemory(nil)
		r, err := New([]*capture.Request{req, req, req}, Options{Target: u, Once: true, AllowWrites: true, Rate: 200, Warmup: warm}, WithRecorder(mem))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		base := uint64(0)
		if warm {
			base = journal.WarmupSeqBase
		}
		for i := range uint64(3) {
			want := `{"messages":[{"role":"user","content":"hi ` + seqstamp.String(base+i) + `"}]}`
			if got[base+i] != want {
				t.Errorf("warm-up %v: request %d: body %q, want %q (seen %v)", warm, i, got[base+i], want, got)
			}
		}
		evs := mem.OfKind(journal.KindClientRequest)
		if len(evs) != 3 {
			t.Fatalf("%d client requests", len(evs))
		}
		for _, p := range evs {
			ev := p.(*journal.ClientRequest)
			if ev.Warmup != warm || ev.Seq < base || ev.Seq >= base+3 {
				t.Errorf("warm-up %v: client.request seq %d warmup %v", warm, ev.Seq, ev.Warmup)
			}
		}
	}
}
