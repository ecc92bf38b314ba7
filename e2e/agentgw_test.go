package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/scenarios"
)

// agentGateway is an AI agent runtime in miniature, built the way
// OpenClaw behaves toward its providers: it forwards no client header,
// builds its own provider request (a large system prompt, the tools, the
// client's last user message wrapped as text), always streams, and
// retries a 503 with jittered exponential waits. Only a stamp in the body
// can identify its provider calls.
type agentGateway struct {
	provider string // base URL of the provider, ".../v1"
	retries  int
	base     time.Duration // first wait; doubling, full jitter above half
	prompt   string
}

func (g *agentGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	text := ""
	for _, m := range in.Messages {
		if m.Role == "user" {
			_ = json.Unmarshal(m.Content, &text)
		}
	}
	body, _ := json.Marshal(map[string]any{
		"model":  "agent-model",
		"stream": true,
		"messages": []map[string]string{
			{"role": "system", "content": g.prompt},
			{"role": "user", "content": "<conversation channel=\"http\">\n" + text + "\n</conversation>\nAnswer the user."},
		},
		"tools": []map[string]any{{"type": "function", "function": map[string]string{"name": "search"}}},
	})
	for n := 0; ; n++ {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, g.provider+"/chat/completions", bytes.NewReader(body))
		req.Header = http.Header{"Content-Type": {"application/json"}, "User-Agent": {"agent-runtime/1"}}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err == nil && (resp.StatusCode != http.StatusServiceUnavailable || n == g.retries) {
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(flushWriter{w}, resp.Body)
			resp.Body.Close()
			return
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err != nil && n == g.retries {
			http.Error(w, "provider unreachable", http.StatusBadGateway)
			return
		}
		d := g.base << n
		d = d/2 + rand.N(d/2+1)
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
}

type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

func (g *agentGateway) start(t *testing.T) string {
	t.Helper()
	return "http://" + testutil.Serve(t, &http.Server{Handler: g})
}

// TestAgentGatewayRetriesAttributedByBodyStamp: through an agent runtime
// that forwards no header, every provider call carries the request's
// sequence number (read from the body stamp), and the retry analysis
// counts each failed turn's 1 + 3 attempts instead of "—".
func TestAgentGatewayRetriesAttributedByBodyStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("an 8 s rehearsal; skipped with -short")
	}
	up := testutil.FreeAddr(t)
	g := &agentGateway{provider: "http://" + up + "/v1", retries: 3, base: 100 * time.Millisecond,
		prompt: strings.Repeat("You are an agent. Use the tools when the user asks for facts. ", 1000)} // ~60 KB
	front := g.start(t)
	yaml := fmt.Sprintf(`version: 1
name: agent-body-stamp
gateway:
  url: %s
replay:
  rate: 5
  duration: 8s
  deadline: 5s
  filter: {path: "^/v1/chat/completions"}
  routes: [{prefix: /v1/chat/completions, upstream: llm}]
upstreams:
  - {name: llm, listen: "%s", healthy: {sse: {events: 4}}}
faults:
  - name: storm
    type: status
    upstream: llm
    at: 2s
    for: 3s
    params: {code: 503}
`, front, up)
	sc, err := scenarios.Parse(filepath.Join(t.TempDir(), "agent.yaml"), []byte(yaml))
	if err != nil {
		t.Fatalf("scenario:\n%s\n%v", yaml, err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if keep := os.Getenv("REHEARSE_E2E_OUT"); keep != "" {
		dir = filepath.Join(keep, fmt.Sprintf("agent-body-stamp-%d", time.Now().UnixNano()))
	}
	res, err := rehearsal.Run(context.Background(), sc, rehearsal.Options{OutDir: dir})
	if err != nil && !errors.Is(err, rehearse.ErrExpectations) {
		t.Fatal(err)
	}
	// Every provider call carries its client request's number, read from
	// the body: the gateway forwarded no header.
	f, err := os.Open(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	calls, fromBody := 0, 0
	_, err = journal.DecodeTransient(f, func(ev journal.Event) {
		if u, ok := ev.Payload.(*journal.UpstreamRequest); ok && !u.HealthCheck {
			calls++
			if u.Seq != nil && u.SeqFrom == journal.SeqFromBody {
				fromBody++
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 30 || fromBody != calls {
		t.Fatalf("%d provider calls, %d with a seq read from the body: want all", calls, fromBody)
	}
	r := res.Analysis.Resilience
	if r == nil || r.Upstreams["llm"] == nil {
		t.Fatalf("no retry figures for llm: %+v (notes %q)", r, res.Analysis.Notes)
	}
	rf := r.Upstreams["llm"]
	logRetryFigures(t, rf, r.Statements)
	// During the storm every turn fails all 4 attempts (waits of about
	// 0.1 + 0.2 + 0.4 s fit in the 3 s window); outside it, 1. A turn
	// straddling an edge may take 2 or 3.
	if rf.MaxAttempts != 4 || rf.Distribution["4"] < 5 || rf.Distribution["1"] < 10 {
		t.Errorf("attempts distribution %v (max %d): want turns of 1 and of 4 attempts", rf.Distribution, rf.MaxAttempts)
	}
	// The waits are measured (not "—"): none shorter than the 50 ms the
	// gateway waits at least. Their growth is not asserted: on a loaded
	// machine under -race, building and sending a 60 KB request adds
	// tens of milliseconds to the 50–100 ms first wait.
	if b := rf.Backoff; b.MinMs == nil || *b.MinMs < 45 || b.Retries < 15 {
		t.Errorf("waits %+v: want measured waits of 50 ms and more", b)
	}
}
