package inject

import (
	"net/http"
	"strconv"
	"strings"
)

// Provider APIs a fake upstream speaks (UpstreamConfig.API). A fake model
// provider answers in its API's shape: the chat answer (JSON and event
// stream, with usage), the error bodies of the faults that answer a
// status, and the error event of a stream that fails mid-way
// (stream_error). Shapes as the providers document them: OpenAI's chat
// completions (a chat.completion, or chat.completion.chunk events, a
// usage chunk with empty choices, "data: [DONE]"; errors
// {"error":{"message","type","param","code"}}) and Anthropic's messages
// (a message, or message_start, content_block_start, content_block_delta
// events, content_block_stop, message_delta with the usage, message_stop;
// errors {"type":"error","error":{"type","message"}}).
const (
	// APIAuto answers chat completions (a path ending in
	// /chat/completions) as OpenAI and messages (/v1/messages) as
	// Anthropic, and everything else with the generic JSON body.
	APIAuto = ""
	// APIOpenAI is an OpenAI-compatible provider: POST …/chat/completions.
	APIOpenAI = "openai"
	// APIAnthropic is Anthropic's Messages API: POST …/messages.
	APIAnthropic = "anthropic"
)

// dialect is the provider API of a request for path on an upstream
// speaking api: the API whose shapes its answers and errors take, ""
// for the generic fake.
func dialect(api, path string) string {
	switch api {
	case APIOpenAI, APIAnthropic:
		return api
	}
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return APIOpenAI
	case strings.HasSuffix(path, "/v1/messages"):
		return APIAnthropic
	}
	return ""
}

// isChat reports whether a request for path is the chat call of the
// upstream's API: the answer that costs tokens.
func isChat(api, path string) bool {
	switch dialect(api, path) {
	case APIOpenAI:
		return strings.HasSuffix(path, "/chat/completions")
	case APIAnthropic:
		return strings.HasSuffix(path, "/messages")
	}
	return false
}

// providerErrorBody is the error body a provider of dialect d answers
// with status code, message msg; nil for the generic fake.
func providerErrorBody(d string, code int, msg string) []byte {
	switch d {
	case APIOpenAI:
		typ, ecode := "server_error", "null"
		switch {
		case code == http.StatusTooManyRequests:
			typ, ecode = "requests", `"rate_limit_exceeded"`
		case code == http.StatusUnauthorized:
			typ, ecode = "invalid_request_error", `"invalid_api_key"`
		case code < 500:
			typ = "invalid_request_error"
		}
		b := append([]byte(`{"error":{"message":`), strconv.Quote(msg)...)
		b = append(b, `,"type":"`+typ+`","param":null,"code":`+ecode+"}}\n"...)
		return b
	case APIAnthropic:
		b := append([]byte(`{"type":"error","error":{"type":"`), anthropicErrorType(code)...)
		b = append(b, `","message":`...)
		b = append(b, strconv.Quote(msg)...)
		return append(b, "},\"request_id\":\"req_rehearse\"}\n"...)
	}
	return nil
}

// anthropicErrorType is the error type Anthropic documents for a status.
func anthropicErrorType(code int) string {
	switch code {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if code >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// providerStatusText names a status for error messages, 529 included.
func providerStatusText(code int) string {
	if code == 529 {
		return "Overloaded"
	}
	return http.StatusText(code)
}

// streamErrorEvent is the event a provider of dialect d sends when its
// stream fails mid-way: OpenAI-compatible servers send
// `data: {"error": …}`; Anthropic sends `event: error` with an error
// object (overloaded_error by default).
func streamErrorEvent(d, typ, msg string) []byte {
	if d == APIAnthropic {
		b := append([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"), strconv.Quote(typ)...)
		b = append(b, `,"message":`...)
		b = append(b, strconv.Quote(msg)...)
		return append(b, "}}\n\n"...)
	}
	b := append([]byte(`data: {"error":{"message":`), strconv.Quote(msg)...)
	b = append(b, `,"type":`...)
	b = append(b, strconv.Quote(typ)...)
	return append(b, ",\"param\":null,\"code\":null}}\n\n"...)
}

// streamTerminal is the event that ends a stream of dialect d.
func streamTerminal(d string) []byte {
	if d == APIAnthropic {
		return []byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}
	return []byte("data: [DONE]\n\n")
}

// appendAnthropicMessage appends the healthy JSON answer of a messages
// call, its text padded so the body is BodyBytes long.
func (h *fakeHandler) appendAnthropicMessage(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, `{"id":"msg_rehearse","type":"message","role":"assistant","model":`...)
	dst = strconv.AppendQuote(dst, h.cfg.SSE.Model)
	dst = append(dst, `,"content":[{"type":"text","text":"`...)
	var sfx [192]byte
	suffix := append(sfx[:0], `"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":`...)
	suffix = strconv.AppendInt(suffix, h.cfg.Usage.PromptTokens, 10)
	suffix = append(suffix, `,"output_tokens":`...)
	suffix = strconv.AppendInt(suffix, h.cfg.Usage.CompletionTokens, 10)
	suffix = append(suffix, "}}\n"...)
	dst = appendFiller(dst, h.cfg.BodyBytes-(len(dst)-start)-len(suffix))
	return append(dst, suffix...)
}

// anthropicEvents are the events of one messages stream: message_start,
// content_block_start, Events text deltas, content_block_stop,
// message_delta (stop reason and output usage), message_stop.
func (h *fakeHandler) anthropicEvents() [][]byte {
	sse, us := h.cfg.SSE, h.cfg.Usage
	var events [][]byte
	ev := func(name string, data ...string) {
		b := make([]byte, 0, 160)
		b = append(b, "event: "+name+"\ndata: "...)
		for _, d := range data {
			b = append(b, d...)
		}
		events = append(events, append(b, "\n\n"...))
	}
	ev("message_start", `{"type":"message_start","message":{"id":"msg_rehearse","type":"message","role":"assistant","model":`, strconv.Quote(sse.Model),
		`,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`, strconv.FormatInt(us.PromptTokens, 10), `,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for i := 0; i < sse.Events; i++ {
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"token`, strconv.Itoa(i), ` "}}`)
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":`, strconv.FormatInt(us.CompletionTokens, 10), `}}`)
	events = append(events, streamTerminal(APIAnthropic))
	return events
}
