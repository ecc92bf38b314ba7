package replay

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// openClawGaveUp is the body OpenClaw 2026.9 answers when it gives up on
// a streaming turn (issue 28): HTTP 200, the role chunk, an error event
// and [DONE] — 288 bytes where a normal answer is ~2.5 KB.
func openClawGaveUp() string {
	role := `data: {"id":"chatcmpl-oc1","object":"chat.completion.chunk","created":1764806400,"model":"openclaw","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}` + "\n\n"
	done := "data: [DONE]\n\n"
	head, tail := `data: {"error":{"message":"`, `","type":"api_error"}}`+"\n\n"
	msg := "All models failed: primary (503)"
	msg += strings.Repeat(".", 288-len(role)-len(done)-len(head)-len(tail)-len(msg))
	return role + head + msg + tail + done
}

// chunkedSSE writes a 200 event stream with body as chunks, ended cleanly.
func chunkedSSE(body string) func(c *net.TCPConn) {
	return func(c *net.TCPConn) {
		var b strings.Builder
		b.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
		for _, ev := range strings.SplitAfter(body, "\n\n") {
			if ev != "" {
				fmt.Fprintf(&b, "%x\r\n%s\r\n", len(ev), ev)
			}
		}
		b.WriteString("0\r\n\r\n")
		write(c, b.String())
		c.Close()
	}
}

func openAIChunks(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"t%d "}}]}`+"\n\n", i)
	}
	return b.String()
}

func anthropicStream(deltas int, stop bool) string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := range deltas {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"t%d \"}}\n\n", i)
	}
	if stop {
		b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n")
		b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}
	return b.String()
}

// Each stream, served by a real socket and read by the replayer, gets its
// verdict: the exact OpenClaw failure is stream_error although it is a
// 200 ending in [DONE].
func TestStreamVerdicts(t *testing.T) {
	if n := len(openClawGaveUp()); n != 288 {
		t.Fatalf("the OpenClaw body is %d bytes, want 288", n)
	}
	for _, tc := range []struct {
		name   string
		body   string
		want   journal.Outcome
		events int
		why    string
	}{
		{"openclaw gave up", openClawGaveUp(), journal.OutcomeStreamError, 3, "All models failed"},
		{"openai complete", openAIChunks(5) + "data: [DONE]\n\n", journal.OutcomeOK, 6, ""},
		{"openai cut", openAIChunks(3), journal.OutcomeStreamCut, 3, "without its terminal event (data: [DONE])"},
		{"openai short answer", openAIChunks(1) + "data: [DONE]\n\n", journal.OutcomeOK, 2, ""},
		{"anthropic complete", anthropicStream(4, true), journal.OutcomeOK, 9, ""},
		{"anthropic cut", anthropicStream(2, false), journal.OutcomeStreamCut, 4, "event: message_stop"},
		{"anthropic overloaded", anthropicStream(1, false) + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
			journal.OutcomeStreamError, 4, "overloaded_error"},
		{"error event without json", "data: a\n\nevent: error\ndata: upstream went away\n\n", journal.OutcomeStreamError, 2, "upstream went away"},
		{"content mentioning error", `data: {"object":"chat.completion.chunk","choices":[{"delta":{"content":"\"error\" is a word"}}]}` + "\n\ndata: [DONE]\n\n", journal.OutcomeOK, 2, ""},
		{"error null", `data: {"object":"chat.completion.chunk","error":null}` + "\n\ndata: [DONE]\n\n", journal.OutcomeOK, 2, ""},
		{"unknown shape, no terminal", "data: tick\n\ndata: tick\n\n", journal.OutcomeOK, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := replayOne(t, rawServer(t, chunkedSSE(tc.body)), getReq("/v1/chat/completions"), Options{})
			if ev.Outcome != tc.want || ev.SSEEvents != tc.events || ev.Status != 200 {
				t.Fatalf("outcome %s, %d events, status %d (%s); want %s, %d events", ev.Outcome, ev.SSEEvents, ev.Status, ev.Error, tc.want, tc.events)
			}
			if !strings.Contains(ev.Error, tc.why) {
				t.Errorf("error %q does not say %q", ev.Error, tc.why)
			}
		})
	}
}

// A stream of a shape the replayer does not know is judged by its route:
// once a stream of the route ended with a terminal event in this run, a
// later one without it is cut; another route is not affected.
func TestStreamCutLearnedFromTheRoute(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 3 {
			fmt.Fprint(w, "data: {\"n\":1}\n\n")
			w.(http.Flusher).Flush()
		}
		if r.URL.Query().Get("end") == "done" {
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	corpus := []*capture.Request{getReq("/feed?end=done"), getReq("/feed?end=none"), getReq("/other?end=none")}
	mem := journal.NewMemory(nil)
	replayed(t, corpus, Options{Target: u, Once: true, Rate: 5}, WithRecorder(mem))
	got := map[uint64]*journal.ClientRequest{}
	for _, p := range mem.OfKind(journal.KindClientRequest) {
		ev := p.(*journal.ClientRequest)
		got[ev.Seq] = ev
	}
	want := []journal.Outcome{journal.OutcomeOK, journal.OutcomeStreamCut, journal.OutcomeOK}
	for i, w := range want {
		if ev := got[uint64(i)]; ev == nil || ev.Outcome != w {
			t.Errorf("request %d: %+v, want %s", i, ev, w)
		}
	}
	if ev := got[1]; ev != nil && !strings.Contains(ev.Error, "complete streams ended with (4–4 events)") {
		t.Errorf("cut stream's error %q does not give the route's complete streams", ev.Error)
	}
}

// A 5xx event stream keeps its status verdict.
func TestStreamErrorStatusKept(t *testing.T) {
	ev := replayOne(t, rawServer(t, func(c *net.TCPConn) {
		write(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/event-stream\r\nContent-Length: 31\r\n\r\nevent: error\ndata: overloaded\n\n")
		c.Close()
	}), nil, Options{FastFail: FastFailRule{Disabled: true}})
	if ev.Outcome != journal.OutcomeHTTP5xx {
		t.Fatalf("outcome %s, want http_5xx", ev.Outcome)
	}
}
