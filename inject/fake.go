package inject

import (
	"bytes"
	"encoding/json"
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
	api  string // the provider API it speaks (provider.go)
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
	if isChat(h.api, r.URL.Path) && x != nil {
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
		if _, err := w.Write(body); err == nil && onWire(x, w) {
			x.setWrote(wroteAll)
		}
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
	if onWire(x, w) && x.wroteOK() {
		x.setWrote(wroteAll) // the last chunk is net/http's, on return
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

// jsonBody builds the healthy JSON body for a request for path.
func (h *fakeHandler) jsonBody(path string) []byte {
	return h.appendJSONBody(make([]byte, 0, max(h.cfg.BodyBytes, 256)), path)
}

// appendJSONBody appends the healthy JSON body for a request for path to
// dst, padded to BodyBytes (a body's fixed fields make it at least about
// 100 bytes). It appends rather than formats: the fast path writes it
// into its reused buffer.
func (h *fakeHandler) appendJSONBody(dst []byte, path string) []byte {
	if isChat(h.api, path) && dialect(h.api, path) == APIAnthropic {
		return h.appendAnthropicMessage(dst)
	}
	start := len(dst)
	var sfx [192]byte
	suffix := sfx[:0]
	if isChat(h.api, path) {
		dst = append(dst, `{"id":"chatcmpl-rehearse","object":"chat.completion","created":`...)
		dst = strconv.AppendInt(dst, time.Now().Unix(), 10)
		dst = append(dst, `,"model":`...)
		dst = strconv.AppendQuote(dst, h.cfg.SSE.Model)
		dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":"`...)
		suffix = append(suffix, `"},"finish_reason":"stop"}],"usage":`...)
		suffix = h.appendUsage(suffix)
		suffix = append(suffix, "}\n"...)
	} else {
		dst = append(dst, `{"upstream":`...)
		dst = strconv.AppendQuote(dst, h.name)
		dst = append(dst, `,"path":`...)
		dst = strconv.AppendQuote(dst, path)
		dst = append(dst, `,"ok":true,"data":"`...)
		suffix = append(suffix, "\"}\n"...)
	}
	dst = appendFiller(dst, h.cfg.BodyBytes-(len(dst)-start)-len(suffix))
	return append(dst, suffix...)
}

// appendUsage appends the OpenAI-style usage block of a chat completion.
func (h *fakeHandler) appendUsage(dst []byte) []byte {
	u := h.cfg.Usage
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, u.PromptTokens, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, u.CompletionTokens, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.PromptTokens+u.CompletionTokens, 10)
	return append(dst, '}')
}

const fillerText = "the quick brown fox jumps over the lazy dog "

// appendFiller appends n bytes of plain text, safe inside a JSON string.
func appendFiller(dst []byte, n int) []byte {
	for n > 0 {
		k := min(n, len(fillerText))
		dst = append(dst, fillerText[:k]...)
		n -= k
	}
	return dst
}

// sseEvents are the events of one stream for path: Anthropic's messages
// stream (anthropicEvents) for an Anthropic upstream, else a
// chat-completions stream: Events content chunks, a finish chunk, a usage
// chunk, then "data: [DONE]"; slices of one buffer.
func (h *fakeHandler) sseEvents(path string, created int64) [][]byte {
	if dialect(h.api, path) == APIAnthropic {
		return h.anthropicEvents()
	}
	sse := h.cfg.SSE
	buf := make([]byte, 0, (sse.Events+2)*(200+len(sse.Model))+128)
	ends := make([]int, 0, sse.Events+3)
	head := func() {
		buf = append(buf, `data: {"id":"chatcmpl-rehearse","object":"chat.completion.chunk","created":`...)
		buf = strconv.AppendInt(buf, created, 10)
		buf = append(buf, `,"model":`...)
		buf = strconv.AppendQuote(buf, sse.Model)
	}
	for i := 0; i < sse.Events; i++ {
		head()
		buf = append(buf, `,"choices":[{"index":0,"delta":{`...)
		if i == 0 {
			buf = append(buf, `"role":"assistant",`...)
		}
		buf = append(buf, `"content":"token`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, " \"},\"finish_reason\":null}]}\n\n"...)
		ends = append(ends, len(buf))
	}
	head()
	buf = append(buf, `,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"...)
	ends = append(ends, len(buf))
	head()
	buf = append(buf, `,"choices":[],"usage":`...)
	buf = h.appendUsage(buf)
	buf = append(buf, "}\n\n"...)
	ends = append(ends, len(buf))
	buf = append(buf, "data: [DONE]\n\n"...)
	ends = append(ends, len(buf))
	events := make([][]byte, len(ends))
	from := 0
	for i, end := range ends {
		events[i] = buf[from:end:end]
		from = end
	}
	return events
}

// serveSSE streams a chat-completions response (sseEvents), Interval
// apart.
func (h *fakeHandler) serveSSE(w http.ResponseWriter, r *http.Request, x *Exchange) {
	events := h.sseEvents(r.URL.Path, time.Now().Unix())
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
		if onWire(x, w) && x.wroteOK() {
			x.setWrote(streamWrote(i, len(events)))
		}
	}
}

// onWire reports whether w writes straight to the exchange's connection:
// what the handler writes through a fault's writer (which may buffer,
// slow or rewrite it) says nothing of what the gateway got.
func onWire(x *Exchange, w http.ResponseWriter) bool {
	return x != nil && w == x.W
}

// streamWrote is how far a stream of n events is written once event i
// is: its last event is the end marker ([DONE], message_stop), the
// content is every event before it.
func streamWrote(i, n int) wroteState {
	switch i {
	case n - 1:
		return wroteAll
	case n - 2:
		return wroteContent
	}
	return wroteNone
}
