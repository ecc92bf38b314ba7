package replay

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// TestKeepHeadersInJournal replays into a loopback server shaped like an
// AI gateway with a fallback: it answers every third request from its
// "backup" target and says so in X-Chosen-Target, adds a retry count
// header twice (two values), an over-long trace header, and a session
// cookie nobody asked for. The journal, written to a file and read back,
// holds the asked headers' values on each answer's client.request event,
// bounded, and nothing else.
func TestKeepHeadersInJournal(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seq, _ := strconv.Atoi(r.Header.Get(DefaultSeqHeader))
		target := "primary"
		if seq%3 == 2 {
			target = "backup"
		}
		w.Header().Set("X-Chosen-Target", target)
		w.Header().Add("X-Retry-Count", "1")
		w.Header().Add("X-Retry-Count", strconv.Itoa(seq))
		w.Header().Set("X-Trace", long)
		w.Header().Set("Set-Cookie", "session=s3cr3t")
		if seq == 4 {
			w.Header().Del("X-Chosen-Target")
			w.Header().Del("X-Retry-Count")
			w.Header().Del("X-Trace")
		}
		io.WriteString(w, `{"ok":true}`)
	}))
	clock := journal.NewClock(time.Now())
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	jw, err := journal.Create(path, clock)
	if err != nil {
		t.Fatal(err)
	}
	// Six requests: 0..5, seq 2 and 5 from the fallback, seq 4 with none
	// of the headers.
	replayed(t, []*capture.Request{getReq("/v1/chat/completions")},
		Options{Target: u, Rate: 50, Duration: 120 * time.Millisecond, MaxLateness: time.Second,
			KeepHeaders: []string{"x-chosen-target", "X-Retry-Count", "X-Trace"}},
		WithRecorder(jw), WithClock(clock))
	if err := jw.Close(); err != nil {
		t.Fatal(err)
	}
	events, torn, err := journal.ReadFile(path)
	if err != nil || torn {
		t.Fatal(err, torn)
	}
	// 253 bytes of room before the ellipsis: 126 whole characters.
	cut := strings.Repeat("é", 126) + "…"
	var seen int
	for _, e := range events {
		ev, ok := e.Payload.(*journal.ClientRequest)
		if !ok {
			continue
		}
		seen++
		if ev.Seq == 4 {
			if ev.Headers != nil {
				t.Errorf("seq 4: the answer carried none of the headers, the event holds %v", ev.Headers)
			}
			continue
		}
		want := "primary"
		if ev.Seq%3 == 2 {
			want = "backup"
		}
		if got := ev.Headers["X-Chosen-Target"]; got != want {
			t.Errorf("seq %d: X-Chosen-Target %q, want %q (%v)", ev.Seq, got, want, ev.Headers)
		}
		if got, want := ev.Headers["X-Retry-Count"], fmt.Sprintf("1, %d", ev.Seq); got != want {
			t.Errorf("seq %d: X-Retry-Count %q, want %q", ev.Seq, got, want)
		}
		if got := ev.Headers["X-Trace"]; got != cut || len(got) > MaxKeepHeaderValue {
			t.Errorf("seq %d: X-Trace of %d bytes, want cut to %d ending in …", ev.Seq, len(got), len(cut))
		}
		if len(ev.Headers) != 3 {
			t.Errorf("seq %d: headers %v: only the three asked for", ev.Seq, ev.Headers)
		}
	}
	if seen != 6 {
		t.Errorf("%d client.request events, want 6", seen)
	}
}

func TestKeepHeadersRefused(t *testing.T) {
	u := serve(t, http.NotFoundHandler())
	corpus := []*capture.Request{getReq("/")}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"Set-Cookie"}, `keep header "Set-Cookie": a secret header`},
		{[]string{"X-Upstream-Token"}, `keep header "X-Upstream-Token": a secret header`},
		{[]string{"X Chosen"}, `keep header "X Chosen": not a header name`},
		{[]string{"X-A", "x-a"}, `keep header "x-a" named twice`},
		{[]string{"A", "B", "C", "D", "E", "F", "G", "H", "I"}, "9 response headers to keep; at most 8"},
	} {
		_, err := New(corpus, Options{Target: u, KeepHeaders: tc.names})
		if err == nil || !errors.Is(err, rehearse.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want an invalid-input error with %q", tc.names, err, tc.want)
		}
	}
}
