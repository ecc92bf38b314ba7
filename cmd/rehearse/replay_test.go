package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

const replayCapture = "../../replay/capture/testdata/edge-sll.pcap"

func TestReplayCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Rehearse-Seq")+" "+r.Header.Get("X-Rehearse-Run"))
		mu.Unlock()
		if r.URL.Path == "/tools/vectors" && len(b) != 19998 {
			t.Errorf("vectors body %d bytes, want 19998", len(b))
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	dir := t.TempDir()

	// Writes are refused without --allow-writes: exit 2, the count and
	// the flag named.
	_, _, code := execute(t, "replay", replayCapture, "--target", "http://"+ln.Addr().String(), "--once", "--quiet")
	if code != 2 {
		t.Fatalf("without --allow-writes: exit %d", code)
	}

	out, _, code := execute(t, "replay", replayCapture, "--target", "http://"+ln.Addr().String(), "--once", "--rate", "20",
		"--allow-writes", "--run-id", "cmd-test", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "replay completed") || !strings.Contains(out, "lateness") {
		t.Errorf("human summary:\n%s", out)
	}
	var sum struct {
		Sent      int            `json:"sent"`
		Dropped   int            `json:"dropped"`
		ByOutcome map[string]int `json:"by_outcome"`
		Lateness  map[string]any `json:"lateness_ms"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := len(got)
	mu.Unlock()
	// The capture holds 12 plaintext requests. On a loaded machine a
	// stall may drop a slot (recorded, never bursted); every slot is
	// accounted for either way.
	if sum.Sent+sum.Dropped != 12 || sum.Sent < 6 || sum.Sent != n || sum.ByOutcome["ok"] != n || sum.ByOutcome["dropped"] != sum.Dropped {
		t.Errorf("summary sent %d dropped %d, outcomes %v; server saw %d", sum.Sent, sum.Dropped, sum.ByOutcome, n)
	}
	for _, g := range got {
		if !strings.HasSuffix(g, " cmd-test") {
			t.Errorf("request %q lacks the run id", g)
		}
	}
	evs, torn, err := journal.ReadFile(filepath.Join(dir, "journal.jsonl"))
	if err != nil || torn {
		t.Fatalf("journal: %v torn=%v", err, torn)
	}
	kinds := map[journal.Kind]int{}
	for _, e := range evs {
		kinds[e.Kind()]++
	}
	if kinds[journal.KindRunStart] != 1 || kinds[journal.KindRunEnd] != 1 || kinds[journal.KindClientRequest] != 12 {
		t.Errorf("journal kinds %v", kinds)
	}
}

func TestReplayCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"replay", replayCapture},                          // no target
		{"replay", replayCapture, "--target", "not a url"}, // bad target
		{"replay", replayCapture, "--target", "http://127.0.0.1:1", "--timing", "fast"},
		{"replay", "no-such-file.pcap", "--target", "http://127.0.0.1:1"},
		{"replay", replayCapture, "--target", "http://127.0.0.1:1", "--rate", "-1"},
		{"replay", replayCapture, "--target", "http://127.0.0.1:1", "--schedule", "bursty"},
		{"replay", replayCapture, "--target", "http://127.0.0.1:1", "--timing", "original", "--schedule", "poisson"},
		{"replay", replayCapture, "--target", "http://127.0.0.1:1", "--keep-header", "Authorization"},
	} {
		if _, stderr, code := execute(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
}

// --schedule, --seed and --keep-header reach the replay: the summary
// names the schedule, run.start's config holds it and the seed, and each
// answer's event holds the kept header's value.
func TestReplayCommandScheduleAndKeptHeaders(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Chosen-Target", "backup")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	dir := t.TempDir()
	out, stderr, code := execute(t, "replay", replayCapture, "--target", "http://"+ln.Addr().String(), "--once", "--rate", "50",
		"--method", "GET", "--schedule", "jittered", "--seed", "5", "--keep-header", "x-chosen-target", "--out", dir, "--json", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		Schedule string `json:"schedule"`
		Sent     int    `json:"sent"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Schedule != "jittered" || sum.Sent == 0 {
		t.Fatalf("summary %s (%v)", out, err)
	}
	evs, _, err := journal.ReadFile(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var answers int
	for _, e := range evs {
		switch p := e.Payload.(type) {
		case *journal.RunStart:
			if p.Seed != 5 || !strings.Contains(string(p.Config), `"schedule":"jittered"`) ||
				!strings.Contains(string(p.Config), `"keep_headers":["X-Chosen-Target"]`) {
				t.Errorf("run.start seed %d config %s", p.Seed, p.Config)
			}
		case *journal.ClientRequest:
			if p.Status == 200 {
				answers++
				if p.Headers["X-Chosen-Target"] != "backup" {
					t.Errorf("seq %d headers %v", p.Seq, p.Headers)
				}
			}
		}
	}
	if answers == 0 {
		t.Error("no answer in the journal")
	}
}

func TestReplayCommandTargetDown(t *testing.T) {
	addr := testutil.FreeAddr(t)
	_, _, code := execute(t, "replay", replayCapture, "--target", "http://"+addr, "--once", "--allow-writes", "--quiet")
	if code != 3 {
		t.Errorf("target down: exit %d, want 3", code)
	}
}

func TestReplayCommandJSON(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(ln)
	defer srv.Close()
	out, _, code := execute(t, "replay", replayCapture, "--target", "http://"+ln.Addr().String(), "--once", "--rate", "50",
		"--method", "GET", "--json", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var sum struct {
		Scheduled int            `json:"scheduled"`
		ByOutcome map[string]int `json:"by_outcome"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("stdout is not the JSON summary: %v\n%s", err, out)
	}
	// GET only: the writes are filtered out, so no --allow-writes needed.
	if sum.Scheduled == 0 || sum.Scheduled != sum.ByOutcome["ok"]+sum.ByOutcome["dropped"] {
		t.Errorf("summary %+v", sum)
	}
}

// --body-stamp: chat requests' last user message carries
// [rehearse:seq=N] by default, nothing with off; a bad mode is exit 2.
func TestReplayCommandBodyStamp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var chats, stamped int
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			return
		}
		mu.Lock()
		chats++
		if strings.Contains(string(b), `[rehearse:seq=`+r.Header.Get("X-Rehearse-Seq")+`]"}]`) {
			stamped++
		}
		mu.Unlock()
	})}
	go srv.Serve(ln)
	defer srv.Close()
	capture := "../../scenarios/captures/agent-gateway.pcapng"
	for _, tc := range []struct {
		mode string
		want bool
	}{{"auto", true}, {"off", false}} {
		chats, stamped = 0, 0
		_, stderr, code := execute(t, "replay", capture, "--target", "http://"+ln.Addr().String(), "--once", "--rate", "200",
			"--allow-writes", "--quiet", "--path", "^/v1/chat/completions", "--body-stamp", tc.mode)
		if code != 0 {
			t.Fatalf("--body-stamp %s: exit %d: %s", tc.mode, code, stderr)
		}
		mu.Lock()
		if chats == 0 || (stamped == chats) != tc.want || (stamped == 0) == tc.want {
			t.Errorf("--body-stamp %s: %d of %d chat requests stamped", tc.mode, stamped, chats)
		}
		mu.Unlock()
	}
	if out, stderr, code := execute(t, "replay", capture, "--target", "http://"+ln.Addr().String(), "--body-stamp", "on"); code != 2 {
		t.Errorf("--body-stamp on: exit %d (%s%s), want 2", code, out, stderr)
	}
}
