package inject

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/halfopen/rehearse/journal"
)

// StatusParams are the params of the "status" fault.
type StatusParams struct {
	// Code is the status code; 0 means 503.
	Code int `yaml:"code,omitempty" json:"code,omitempty"`
	// Body is the response body; "" means a small JSON error object, in
	// the upstream's provider API shape when it speaks one (provider.go).
	Body string `yaml:"body,omitempty" json:"body,omitempty"`
	// Headers are set on the response. Content-Type defaults to
	// application/json.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
}

// statusFault answers with a fixed status, body and headers.
type statusFault struct {
	code    int
	body    errorBodies
	headers map[string]string
}

func newStatus(p *StatusParams) (Fault, error) {
	code := p.Code
	if code == 0 {
		code = http.StatusServiceUnavailable
	}
	if code < 200 || code > 599 {
		return nil, fmt.Errorf("code: want 200-599, got %d", p.Code)
	}
	return &statusFault{code: code, body: errorBody(code, p.Body), headers: p.Headers}, nil
}

func (f *statusFault) Describe() string { return fmt.Sprintf("respond %d", f.code) }

func (f *statusFault) ServeHTTP(x *Exchange, _ http.Handler) {
	writeFixed(x, f.code, f.headers, f.body.of(x))
}

// errorBodies are the bodies of an error answer: the configured one, or
// a JSON error object naming the status, generic or in each provider
// API's shape, made once.
type errorBodies struct {
	generic, openai, anthropic []byte
}

// errorBody is the error bodies of status code: body as given, or the
// default error objects when it is empty.
func errorBody(code int, body string) errorBodies {
	if body != "" {
		b := []byte(body)
		return errorBodies{b, b, b}
	}
	msg := "injected by rehearse: " + providerStatusText(code)
	return errorBodies{
		generic:   fmt.Appendf(nil, `{"error":{"code":"upstream_error","status":%d,"message":%q}}`+"\n", code, msg),
		openai:    providerErrorBody(APIOpenAI, code, msg),
		anthropic: providerErrorBody(APIAnthropic, code, msg),
	}
}

// of is the body for the exchange's provider API.
func (e errorBodies) of(x *Exchange) []byte {
	switch x.api {
	case APIOpenAI:
		return e.openai
	case APIAnthropic:
		return e.anthropic
	}
	return e.generic
}

// writeFixed drains the request and writes a complete response.
func writeFixed(x *Exchange, code int, headers map[string]string, body []byte) {
	drain(x.R)
	h := x.W.Header()
	h.Set("Content-Type", "application/json")
	for k, v := range headers {
		h.Set(k, v)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	x.W.WriteHeader(code)
	if _, err := x.W.Write(body); err != nil {
		x.SetOutcome(journal.OutcomeUpstreamGone)
	}
}
