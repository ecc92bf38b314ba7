package inject

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/replay/capture"
)

// sseEventsOf reads an event stream into (event name, data) pairs.
func sseEventsOf(t *testing.T, body string) [][2]string {
	t.Helper()
	var out [][2]string
	var name, data string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != "" {
				out = append(out, [2]string{name, data})
			}
			name, data = "", ""
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	return out
}

func postJSON(t *testing.T, u, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// An Anthropic-shaped fake answers messages as Anthropic documents them,
// JSON and stream, on both the fast and the full path, and is charged
// its usage.
func TestAnthropicFake(t *testing.T) {
	for _, full := range []bool{false, true} {
		fakeFastPathOff = full
		s, mem := startServer(t, []UpstreamConfig{{Name: "claude", API: APIAnthropic, Healthy: &HealthyConfig{
			SSE: &SSEConfig{Events: 3, Interval: rehearse.Duration(time.Millisecond), Model: "claude-fake"}, Usage: &UsageConfig{PromptTokens: 30, CompletionTokens: 7}}}}, nil)
		fakeFastPathOff = false
		base := s.URL("claude") + "/v1/messages"
		resp, body := postJSON(t, base, `{"model":"claude-fake","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
		var msg struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []struct{ Type, Text string }
			Usage   struct {
				In  int `json:"input_tokens"`
				Out int `json:"output_tokens"`
			} `json:"usage"`
			StopReason string `json:"stop_reason"`
		}
		if err := json.Unmarshal([]byte(body), &msg); err != nil || resp.StatusCode != 200 || msg.Type != "message" || msg.Role != "assistant" ||
			len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.Usage.In != 30 || msg.Usage.Out != 7 || msg.StopReason != "end_turn" {
			t.Fatalf("full=%v: JSON answer %d %s (%v)", full, resp.StatusCode, body, err)
		}
		resp, body = postJSON(t, base, `{"model":"claude-fake","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("stream Content-Type %q", ct)
		}
		var names []string
		for _, ev := range sseEventsOf(t, body) {
			var d struct{ Type string }
			if err := json.Unmarshal([]byte(ev[1]), &d); err != nil || d.Type != ev[0] {
				t.Fatalf("event %s: data %s (type %q, %v)", ev[0], ev[1], d.Type, err)
			}
			names = append(names, ev[0])
		}
		want := "message_start content_block_start content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
		if got := strings.Join(names, " "); got != want {
			t.Fatalf("full=%v: events %s\nwant %s", full, got, want)
		}
		if !strings.Contains(body, `"usage":{"output_tokens":7}`) || !strings.Contains(body, `"input_tokens":30`) {
			t.Errorf("stream carries no usage: %s", body)
		}
		for _, e := range waitEvents(t, mem, 2) {
			if e.PromptTokens != 30 || e.CompletionTokens != 7 {
				t.Errorf("full=%v: charged %d/%d, want 30/7", full, e.PromptTokens, e.CompletionTokens)
			}
		}
	}
}

// The faults that answer a status answer in the provider's error shape,
// with Retry-After where the fault sets it.
func TestProviderErrorBodies(t *testing.T) {
	for _, tc := range []struct {
		api, path string
		fault     FaultSpec
		status    int
		check     func(body string) bool
	}{
		{APIOpenAI, "/v1/chat/completions", FaultSpec{Type: "retry_after", Params: &RetryAfterParams{After: rehearse.Duration(7 * time.Second)}}, 429,
			func(b string) bool {
				return strings.Contains(b, `"type":"requests"`) && strings.Contains(b, `"code":"rate_limit_exceeded"`)
			}},
		{APIOpenAI, "/v1/chat/completions", FaultSpec{Type: "status", Params: &StatusParams{Code: 503}}, 503,
			func(b string) bool {
				return strings.Contains(b, `"type":"server_error"`) && strings.Contains(b, `"param":null`)
			}},
		{APIAnthropic, "/v1/messages", FaultSpec{Type: "retry_after", Params: &RetryAfterParams{After: rehearse.Duration(7 * time.Second)}}, 429,
			func(b string) bool { return strings.HasPrefix(b, `{"type":"error","error":{"type":"rate_limit_error"`) }},
		{APIAnthropic, "/v1/messages", FaultSpec{Type: "status", Params: &StatusParams{Code: 529}}, 529,
			func(b string) bool {
				return strings.Contains(b, `"type":"overloaded_error","message":"injected by rehearse: Overloaded"`)
			}},
		{"", "/v1/messages", FaultSpec{Type: "status", Params: &StatusParams{Code: 503}}, 503,
			func(b string) bool { return strings.Contains(b, `"type":"api_error"`) }},
		{"", "/tools/search", FaultSpec{Type: "status"}, 503,
			func(b string) bool { return strings.Contains(b, `"code":"upstream_error"`) }},
	} {
		t.Run(tc.api+tc.path+tc.fault.Type, func(t *testing.T) {
			f := tc.fault
			f.Upstream = "llm"
			s, _ := startServer(t, []UpstreamConfig{{Name: "llm", API: tc.api}}, []FaultSpec{f})
			resp, body := postJSON(t, s.URL("llm")+tc.path, `{"messages":[]}`)
			if resp.StatusCode != tc.status || !json.Valid([]byte(body)) || !tc.check(body) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if tc.fault.Type == "retry_after" && resp.Header.Get("Retry-After") != "7" {
				t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
			}
		})
	}
}

// stream_error: the first events, then the provider's error event, and
// the 200 ends cleanly (the terminal after it only when asked); the
// upstream records error_event, and the replayer, reading the stream,
// counts a failed request.
func TestStreamErrorFault(t *testing.T) {
	zero := 0
	for _, tc := range []struct {
		name, api, path string
		p               StreamErrorParams
		wantEvents      []string // names, or data prefixes for OpenAI
	}{
		{"openai", APIOpenAI, "/v1/chat/completions", StreamErrorParams{},
			[]string{`{"id":"chatcmpl-rehearse"`, `{"error":{"message":"injected by rehearse: stream failed","type":"server_error"`}},
		{"openai terminal", APIOpenAI, "/v1/chat/completions", StreamErrorParams{Terminal: true, Message: "gave up"},
			[]string{`{"id":"chatcmpl-rehearse"`, `{"error":{"message":"gave up"`, `[DONE]`}},
		{"anthropic first", APIAnthropic, "/v1/messages", StreamErrorParams{AfterEvents: &zero},
			[]string{`error {"type":"error","error":{"type":"overloaded_error"`}},
		{"anthropic after 2", APIAnthropic, "/v1/messages", StreamErrorParams{AfterEvents: func() *int { n := 2; return &n }()},
			[]string{`message_start {"type":"message_start"`, `content_block_start {`, `error {"type":"error","error":{"type":"overloaded_error"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			s, mem := startServer(t, []UpstreamConfig{{Name: "llm", API: tc.api, Healthy: &HealthyConfig{SSE: &SSEConfig{Events: 5, Interval: rehearse.Duration(time.Millisecond)}}}},
				[]FaultSpec{{Type: "stream_error", Upstream: "llm", Params: &p}})
			resp, body := postJSON(t, s.URL("llm")+tc.path, `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			evs := sseEventsOf(t, body)
			if resp.StatusCode != 200 || len(evs) != len(tc.wantEvents) {
				t.Fatalf("%d, %d events: %s", resp.StatusCode, len(evs), body)
			}
			for i, w := range tc.wantEvents {
				got := evs[i][1]
				if evs[i][0] != "" {
					got = evs[i][0] + " " + got
				}
				if !strings.HasPrefix(got, w) {
					t.Errorf("event %d: %s, want %s…", i, got, w)
				}
			}
			if e := waitEvents(t, mem, 1)[0]; e.Outcome != journal.OutcomeUpstreamErrorEvent || e.Status != 200 || e.FaultType != "stream_error" {
				t.Errorf("upstream event %+v", e)
			}

			// The replayer reads the same answer as a failed request.
			u, _ := url.Parse(s.URL("llm"))
			req := &capture.Request{Method: "POST", Target: tc.path, Header: []capture.HeaderField{{Name: "Content-Type", Value: "application/json"}},
				Body: []byte(`{"stream":true,"messages":[{"role":"user","content":"hi"}]}`)}
			rmem := journal.NewMemory(nil)
			r, err := replay.New([]*capture.Request{req}, replay.Options{Target: u, Once: true, AllowWrites: true}, replay.WithRecorder(rmem))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if ev := rmem.OfKind(journal.KindClientRequest)[0].(*journal.ClientRequest); ev.Outcome != journal.OutcomeStreamError {
				t.Errorf("client outcome %s (%s), want stream_error", ev.Outcome, ev.Error)
			}
		})
	}
}

// A request that asked for no stream passes whole.
func TestStreamErrorPassesJSON(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "llm", API: APIOpenAI}}, []FaultSpec{{Type: "stream_error", Upstream: "llm"}})
	resp, body := postJSON(t, s.URL("llm")+"/v1/chat/completions", `{"messages":[]}`)
	if resp.StatusCode != 200 || !strings.Contains(body, `"object":"chat.completion"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if e := waitEvents(t, mem, 1)[0]; e.Outcome != journal.OutcomeUpstreamComplete {
		t.Errorf("outcome %s", e.Outcome)
	}
}

func TestAPIConfigChecked(t *testing.T) {
	for _, u := range []UpstreamConfig{{Name: "a", API: "gemini"}, {Name: "b", API: APIOpenAI, Mode: ModeTCP, Target: "127.0.0.1:1"}} {
		if _, err := u.withDefaults(); err == nil {
			t.Errorf("%+v accepted", u)
		}
	}
	if _, err := newStreamError(&StreamErrorParams{AfterEvents: func() *int { n := -1; return &n }()}); err == nil {
		t.Error("after_events -1 accepted")
	}
}

// An Anthropic fake's answers are the same bytes and events on the fast
// path as behind net/http (messages JSON and stream, a stamped body, a
// generic path on the same upstream), and the fast path keeps them.
func TestAnthropicFakeFastPathSameAsFull(t *testing.T) {
	cfg := UpstreamConfig{Name: "claude", API: APIAnthropic, Healthy: &HealthyConfig{
		BodyBytes: 600, SSE: &SSEConfig{Events: 3, Interval: rehearse.Duration(5 * time.Millisecond)}}}
	p := startFakePair(t, cfg, nil)
	msgs := `{"model":"c","max_tokens":9,"messages":[{"role":"user","content":"hi [rehearse:seq=12]"}]}`
	reqs := []string{
		post("/v1/messages", msgs),
		post("/v1/messages", `{"stream":true,`+msgs[1:]),
		"GET /v1/models HTTP/1.1\r\nHost: up\r\n\r\n",
	}
	p.script(t, reqs...)
	evs := sameEvents(t, p, len(reqs), 100*time.Millisecond)
	if handedOver(p.fast) != 0 {
		t.Error("the fast path handed a connection over")
	}
	if e := evs[0]; e.Seq == nil || *e.Seq != 12 || e.SeqFrom != journal.SeqFromBody || e.Bytes != 600 || e.PromptTokens != 200 {
		t.Errorf("messages event %+v", e)
	}
	if e := evs[2]; e.PromptTokens != 0 {
		t.Errorf("a models listing charged tokens: %+v", e)
	}
}
