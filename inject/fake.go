package inject

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/halfopen/rehearse/internal/wait"
)

// fakeHandler is a fake upstream's healthy behaviour.
type fakeHandler struct {
	cfg  HealthyConfig
	name string
}

func (h *fakeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqBody, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	drain(r)
	x := ExchangeFrom(r.Context())
	ctx := r.Context()
	if x != nil && !h.cfg.Latency.isZero() {
		if !wait.For(ctx, h.cfg.Latency.sample(x.Rand())) {
			return
		}
	}
	for k, v := range h.cfg.Headers {
		w.Header().Set(k, v)
	}
	if isChatPath(r.URL.Path) && x != nil {
		// A provider charges for an answer it generates, whether or not
		// the answer reaches the caller.
		x.SetUsage(h.cfg.Usage.PromptTokens, h.cfg.Usage.CompletionTokens)
	}
	if wantsStream(r.Header.Get("Accept"), reqBody) {
		h.serveSSE(w, r, x)
		return
	}
	body := h.jsonBody(r.URL.Path)
	w.Header().Set("Content-Type", "application/json")
	if !h.cfg.Chunked {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(h.cfg.Status)
		w.Write(body)
		return
	}
	if x != nil {
		x.SetBodyLength(int64(len(body)))
	}
	w.WriteHeader(h.cfg.Status)
	flush(w)
	for i := 0; i < len(body); i += h.cfg.ChunkBytes {
		if i > 0 && !wait.For(ctx, h.cfg.ChunkInterval.D()) {
			return
		}
		if _, err := w.Write(body[i:min(i+h.cfg.ChunkBytes, len(body))]); err != nil {
			return
		}
		flush(w)
	}
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// wantsStream reports whether a request with this Accept header and body
// asks for server-sent events: an OpenAI-style JSON body with
// "stream": true, or Accept: text/event-stream.
func wantsStream(accept string, body []byte) bool {
	if strings.Contains(accept, "text/event-stream") {
		return true
	}
	if len(body) == 0 || !bytes.Contains(body, []byte(`"stream"`)) {
		return false
	}
	var req struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(body, &req) == nil && req.Stream
}

// isChatPath reports whether a request for path is an OpenAI-style chat
// completion.
func isChatPath(path string) bool { return strings.HasSuffix(path, "/chat/completions") }

// jsonBody builds the healthy JSON body for a request for path, padded to
// BodyBytes (a body's fixed fields make it at least about 100 bytes).
func (h *fakeHandler) jsonBody(path string) []byte {
	var prefix, suffix string
	if isChatPath(path) {
		prefix = fmt.Sprintf(`{"id":"chatcmpl-rehearse","object":"chat.completion","created":%d,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"`, time.Now().Unix(), h.cfg.SSE.Model)
		suffix = fmt.Sprintf(`"},"finish_reason":"stop"}],"usage":%s}`, h.usageJSON()) + "\n"
	} else {
		prefix = fmt.Sprintf(`{"upstream":%q,"path":%q,"ok":true,"data":"`, h.name, path)
		suffix = `"}` + "\n"
	}
	pad := max(0, h.cfg.BodyBytes-len(prefix)-len(suffix))
	var b bytes.Buffer
	b.Grow(len(prefix) + pad + len(suffix))
	b.WriteString(prefix)
	b.WriteString(filler(pad))
	b.WriteString(suffix)
	return b.Bytes()
}

// usageJSON is the OpenAI-style usage block of a chat completion.
func (h *fakeHandler) usageJSON() string {
	u := h.cfg.Usage
	return fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, u.PromptTokens, u.CompletionTokens, u.PromptTokens+u.CompletionTokens)
}

const fillerText = "the quick brown fox jumps over the lazy dog "

// filler returns n bytes of plain text, safe inside a JSON string.
func filler(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat(fillerText, n/len(fillerText)+1)[:n]
}

// sseEvents are the events of one chat-completions stream: Events
// content chunks, a finish chunk, a usage chunk, then "data: [DONE]".
func (h *fakeHandler) sseEvents(created int64) [][]byte {
	sse := h.cfg.SSE
	events := make([][]byte, 0, sse.Events+3)
	chunk := func(delta, finish string) []byte {
		return fmt.Appendf(nil, `data: {"id":"chatcmpl-rehearse","object":"chat.completion.chunk","created":%d,"model":%q,"choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", created, sse.Model, delta, finish)
	}
	for i := 0; i < sse.Events; i++ {
		delta := fmt.Sprintf(`{"content":"token%d "}`, i)
		if i == 0 {
			delta = fmt.Sprintf(`{"role":"assistant","content":"token%d "}`, i)
		}
		events = append(events, chunk(delta, "null"))
	}
	usage := fmt.Appendf(nil, `data: {"id":"chatcmpl-rehearse","object":"chat.completion.chunk","created":%d,"model":%q,"choices":[],"usage":%s}`+"\n\n", created, sse.Model, h.usageJSON())
	return append(events, chunk(`{}`, `"stop"`), usage, []byte("data: [DONE]\n\n"))
}

// serveSSE streams a chat-completions response (sseEvents), Interval
// apart.
func (h *fakeHandler) serveSSE(w http.ResponseWriter, r *http.Request, x *Exchange) {
	events := h.sseEvents(time.Now().Unix())
	total := 0
	for _, e := range events {
		total += len(e)
	}
	if x != nil {
		x.SetBodyLength(int64(total))
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(h.cfg.Status)
	flush(w)
	for i, e := range events {
		if i > 0 && !wait.For(r.Context(), h.cfg.SSE.Interval.D()) {
			return
		}
		if _, err := w.Write(e); err != nil {
			return
		}
		flush(w)
	}
}
