package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
)

// fallbackGateway is the second AI gateway of the e2e tests, built the
// way OpenAI-compatible routers with a "fallback" strategy behave (a
// primary target retried with fixed waits, a per-request timeout to the
// provider, then a fallback target) and unlike agentGateway (one
// provider, jittered exponential waits):
//
//   - it forwards the client's body byte for byte (so the body stamp
//     [rehearse:seq=N] reaches both providers) and none of its headers;
//   - a 5xx, a 429 or a connection error from the primary is retried after
//     fixed waits (1, 2 and 4 s in the drills), then it falls back;
//   - a call that runs past the per-request timeout is abandoned (the
//     connection to the provider is closed) and it falls back at once:
//     a timed-out call is not retried on the same target;
//   - the fallback is tried once;
//   - a 200 is committed to the client as it comes: SSE events are
//     relayed and flushed one by one, so a stream cut upstream becomes a
//     stream ending early inside a 200 (its chunked body ends cleanly, as
//     a proxy's does), and an error event is passed through.
//
// It writes its own log (JSON lines, aigwEntry): the truth the harness's
// figures are held to.
type fallbackGateway struct {
	primary, fallback string          // provider base URLs, ".../v1"
	waits             []time.Duration // before retry 1, 2, … on the primary
	timeout           time.Duration   // per provider call
	log               *aigwLog
	client            *http.Client
	next              atomic.Uint64
}

// aigwEntry is one line of the gateway's log.
type aigwEntry struct {
	T   time.Time `json:"t"`
	Ev  string    `json:"ev"` // request, attempt_start, attempt_end, give_up, fallback, response
	Req uint64    `json:"req"`
	// Input is the client's last user message (request): where a reader
	// finds the client's own reference, as gateways log prompts at debug.
	Input  string `json:"input,omitempty"`
	Stream bool   `json:"stream,omitempty"`
	Target string `json:"target,omitempty"`
	// Attempt counts the calls to Target for this request, from 1.
	Attempt int `json:"attempt,omitempty"`
	// WaitMs is how long the gateway waited before this attempt, measured
	// from the end of the previous one (attempt_start).
	WaitMs float64 `json:"wait_ms,omitempty"`
	Status int     `json:"status,omitempty"`
	// Outcome: ok, status (a retryable status), conn_error, timeout,
	// stream_cut (the body ended or broke before [DONE]), stream_error
	// (an error event was relayed).
	Outcome   string  `json:"outcome,omitempty"`
	Events    int     `json:"events,omitempty"`
	ElapsedMs float64 `json:"elapsed_ms,omitempty"` // attempt_end, give_up: the call's duration
	// HeadersMs is when the provider's response head came, from the
	// attempt's start (attempt_end; 0: none came).
	HeadersMs float64 `json:"headers_ms,omitempty"`
	Reason    string  `json:"reason,omitempty"` // fallback: why
}

// aigwLog writes the log, one JSON object per line.
type aigwLog struct {
	mu  sync.Mutex
	f   *os.File
	enc *json.Encoder
}

func (l *aigwLog) write(e aigwEntry) {
	e.T = time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.enc.Encode(e)
}

// attemptResult is what one provider call came to.
type attemptResult struct {
	outcome   string
	status    int
	committed bool // a response went to the client: no other attempt
}

func (g *fallbackGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		// Its own health (the harness's readiness check asks for /):
		// not a request to route, not logged.
		if r.Method == http.MethodGet && (r.URL.Path == "/" || r.URL.Path == "/healthz") {
			_, _ = io.WriteString(w, `{"status":"ok"}`)
			return
		}
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	id := g.next.Add(1)
	input, stream := chatInput(body)
	g.log.write(aigwEntry{Ev: "request", Req: id, Input: input, Stream: stream})
	var res attemptResult
	var last time.Time
	reason := "retries_exhausted"
	for n := 0; n <= len(g.waits); n++ {
		var wait time.Duration
		if n > 0 {
			select {
			case <-time.After(g.waits[n-1]):
			case <-r.Context().Done():
				g.log.write(aigwEntry{Ev: "response", Req: id, Outcome: "client_gone"})
				return
			}
			wait = time.Since(last)
		}
		res, last = g.attempt(w, r.Context(), id, "primary", n+1, wait, body)
		if res.committed {
			g.respond(id, "primary", res)
			return
		}
		if res.outcome == "timeout" {
			reason = "timeout"
			break
		}
	}
	g.log.write(aigwEntry{Ev: "fallback", Req: id, Target: "fallback", Reason: reason})
	res, _ = g.attempt(w, r.Context(), id, "fallback", 1, 0, body)
	if !res.committed {
		code := http.StatusBadGateway
		if res.outcome == "timeout" {
			code = http.StatusGatewayTimeout
		}
		http.Error(w, `{"error":{"message":"all targets failed","type":"server_error"}}`, code)
		res.status = code
	}
	g.respond(id, "fallback", res)
}

func (g *fallbackGateway) respond(id uint64, target string, res attemptResult) {
	g.log.write(aigwEntry{Ev: "response", Req: id, Target: target, Status: res.status, Outcome: res.outcome})
}

// chatInput returns a chat request's last user message and whether it
// asks for a stream.
func chatInput(body []byte) (string, bool) {
	var in struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &in) != nil {
		return "", false
	}
	text := ""
	for _, m := range in.Messages {
		if m.Role == "user" {
			text = ""
			_ = json.Unmarshal(m.Content, &text)
		}
	}
	return text, in.Stream
}

// attempt makes one call to target and, on a 200 (or a status it does
// not retry), relays the answer to the client as it comes. It returns
// the result and when the call ended.
func (g *fallbackGateway) attempt(w http.ResponseWriter, ctx context.Context, id uint64, target string, n int, wait time.Duration, body []byte) (attemptResult, time.Time) {
	base := g.primary
	if target == "fallback" {
		base = g.fallback
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	start := time.Now()
	g.log.write(aigwEntry{Ev: "attempt_start", Req: id, Target: target, Attempt: n, WaitMs: msOf(wait)})
	var headers time.Duration
	end := func(res attemptResult, events int) (attemptResult, time.Time) {
		now := time.Now()
		if res.outcome == "timeout" {
			g.log.write(aigwEntry{Ev: "give_up", Req: id, Target: target, Attempt: n, ElapsedMs: msOf(now.Sub(start))})
		}
		g.log.write(aigwEntry{Ev: "attempt_end", Req: id, Target: target, Attempt: n, Status: res.status,
			Outcome: res.outcome, Events: events, ElapsedMs: msOf(now.Sub(start)), HeadersMs: msOf(headers)})
		return res, now
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	req.Header = http.Header{"Content-Type": {"application/json"}, "User-Agent": {"fallback-gateway/1"},
		"Authorization": {"Bearer gateway-own-key"}}
	resp, err := g.client.Do(req)
	if err == nil {
		headers = time.Since(start)
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return end(attemptResult{outcome: "timeout"}, 0)
		}
		return end(attemptResult{outcome: "conn_error"}, 0)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		_, _ = io.Copy(io.Discard, resp.Body)
		return end(attemptResult{outcome: "status", status: resp.StatusCode}, 0)
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	res, events := relay(w, resp.Body)
	res.status = resp.StatusCode
	if res.outcome == "stream_cut" && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		res.outcome = "timeout"
	}
	return end(res, events)
}

// relay copies an answer to the client line by line, flushing at the
// end of every SSE event, and says how it ended: ok, stream_error (an
// error event went through), or stream_cut (a stream broke or ended
// before data: [DONE]).
func relay(w http.ResponseWriter, body io.Reader) (attemptResult, int) {
	fl, _ := w.(http.Flusher)
	br := bufio.NewReader(body)
	isSSE, done, errEvent := false, false, false
	events := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			_, _ = w.Write(line)
			t := bytes.TrimRight(line, "\r\n")
			switch {
			case bytes.HasPrefix(t, []byte("data:")):
				isSSE = true
				d := bytes.TrimSpace(t[5:])
				done = done || bytes.Equal(d, []byte("[DONE]"))
				errEvent = errEvent || bytes.HasPrefix(d, []byte(`{"error"`))
			case len(t) == 0 && isSSE:
				events++
				if fl != nil {
					fl.Flush()
				}
			}
		}
		if err != nil {
			res := attemptResult{outcome: "ok", committed: true}
			switch {
			case errEvent:
				res.outcome = "stream_error"
			case isSSE && !done, !errors.Is(err, io.EOF):
				res.outcome = "stream_cut"
			}
			return res, events
		}
	}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// start serves the gateway on a loopback port, its log in logPath.
func (g *fallbackGateway) start(t *testing.T, logPath string) string {
	t.Helper()
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	g.log = &aigwLog{f: f, enc: json.NewEncoder(f)}
	// Its own transport: idle connections of one drill do not serve
	// another's gateway.
	g.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	// Registered first, so it runs after the server is closed.
	t.Cleanup(func() {
		g.client.CloseIdleConnections()
		_ = f.Close()
	})
	return "http://" + testutil.Serve(t, &http.Server{Handler: g})
}
