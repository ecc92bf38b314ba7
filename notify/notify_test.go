package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

type hook struct {
	mu     sync.Mutex
	bodies [][]byte
	ctypes []string
	codes  []int // answers in order; 200 after they run out
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.bodies = append(h.bodies, b)
	h.ctypes = append(h.ctypes, r.Header.Get("Content-Type"))
	code := http.StatusOK
	if len(h.codes) > 0 {
		code, h.codes = h.codes[0], h.codes[1:]
	}
	h.mu.Unlock()
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "0")
	}
	w.WriteHeader(code)
	io.WriteString(w, "ok")
}

func sample() Summary {
	return Summary{Verdict: Failed, RunID: "20261201-1", Scenario: "weekly", Expectations: 7, ExitCode: 1,
		Failed: []Expectation{{Name: "opens_within", Observed: "12 s", Want: "≤ 10 s", Message: "search episode 1 opened late"}},
		Report: "/runs/x/report.html", RunDir: "/runs/x", EndedAt: time.Date(2026, 12, 1, 3, 5, 0, 0, time.UTC)}
}

func TestSendDeliversOneDocument(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	s := &Sender{URL: srv.URL + "/services/T000/B000/secret-token"}
	if err := s.Send(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	if len(h.bodies) != 1 {
		t.Fatalf("%d documents delivered, want 1", len(h.bodies))
	}
	if h.ctypes[0] != "application/json" {
		t.Errorf("Content-Type %q", h.ctypes[0])
	}
	var got map[string]any
	if err := json.Unmarshal(h.bodies[0], &got); err != nil {
		t.Fatalf("not JSON: %v: %s", err, h.bodies[0])
	}
	text, _ := got["text"].(string)
	for _, want := range []string{"weekly", "FAILED", "1 of 7", "opens_within", "/runs/x/report.html", "20261201-1"} {
		if !strings.Contains(text, want) {
			t.Errorf("text %q lacks %q", text, want)
		}
	}
	for k, want := range map[string]any{"schema": Schema, "verdict": "failed", "run_id": "20261201-1", "report": "/runs/x/report.html",
		"exit_code": 1.0, "expectations": 7.0} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	failed, _ := got["failed_expectations"].([]any)
	if len(failed) != 1 || failed[0].(map[string]any)["name"] != "opens_within" {
		t.Errorf("failed_expectations %v", got["failed_expectations"])
	}
}

func TestSendPassedHasEmptyFailedList(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	s := sample()
	s.Verdict, s.Failed, s.ExitCode = Passed, nil, 0
	if err := (&Sender{URL: srv.URL}).Send(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h.bodies[0]), `"failed_expectations":[]`) || !strings.Contains(string(h.bodies[0]), "all 7 expectations met") {
		t.Errorf("passed document: %s", h.bodies[0])
	}
}

func TestSendRetriesTransientFailures(t *testing.T) {
	h := &hook{codes: []int{http.StatusBadGateway, http.StatusTooManyRequests}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	if err := (&Sender{URL: srv.URL, Backoff: time.Millisecond}).Send(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	if len(h.bodies) != 3 {
		t.Errorf("%d attempts, want 3 (502, 429, then 200)", len(h.bodies))
	}
}

func TestSendFailureNeverShowsTheSecret(t *testing.T) {
	const secret = "hooks/T000/B000/XXXXsecretXXXX?token=abc"
	h := &hook{codes: []int{http.StatusForbidden}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	err := (&Sender{URL: srv.URL + "/" + secret, Backoff: time.Millisecond}).Send(context.Background(), sample())
	var de *DeliveryError
	if !errors.As(err, &de) || de.Status != http.StatusForbidden || de.Attempts != 1 {
		t.Fatalf("403: %v (a client error is not retried)", err)
	}
	if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "token") {
		t.Errorf("error shows the URL's secret: %v", err)
	}

	// Nothing listens: a network error, retried, then reported redacted.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	err = (&Sender{URL: "http://user:pw@" + addr + "/" + secret, Backoff: time.Millisecond, Attempts: 2}).Send(context.Background(), sample())
	if !errors.As(err, &de) || de.Attempts != 2 || de.Status != 0 {
		t.Fatalf("refused: %v", err)
	}
	for _, bad := range []string{"secret", "token", "pw"} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("error shows %q: %v", bad, err)
		}
	}
}

func TestSendStopsWhenCancelled(t *testing.T) {
	h := &hook{codes: []int{503, 503, 503}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	err := (&Sender{URL: srv.URL, Backoff: time.Hour}).Send(ctx, sample())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled during backoff: %v", err)
	}
}

func TestRedactAndParseURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.com/services/T/B/x": "https://hooks.slack.com/…",
		"http://127.0.0.1:9/":                    "http://127.0.0.1:9",
		"https://h.example?token=1":              "https://h.example/…",
		"https://u:p@h.example":                  "https://h.example/…",
		"::":                                     "(unparseable URL)",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"", "hooks.slack.com/x", "ftp://h/x", "https:///path-secret"} {
		_, err := ParseURL(bad)
		if !errors.Is(err, rehearse.ErrInvalid) {
			t.Errorf("ParseURL(%q): %v", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseURL error shows the path: %v", err)
		}
	}
	if _, err := ParseURL("https://hooks.slack.com/services/T/B/x"); err != nil {
		t.Error(err)
	}
}

func TestTextIsEscapedForChat(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	s := sample()
	s.Scenario = "<!here> a&b"
	if err := (&Sender{URL: srv.URL}).Send(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(h.bodies[0], &got)
	if text := got["text"].(string); strings.Contains(text, "<!here>") || !strings.Contains(text, "&lt;!here&gt; a&amp;b") {
		t.Errorf("text %q is not escaped for chat", text)
	}
	if got["scenario"] != "<!here> a&b" {
		t.Errorf("structured field altered: %v", got["scenario"])
	}
}
