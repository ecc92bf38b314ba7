package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/halfopen/rehearse/journal"
)

// Client-side stream verdicts. A gateway that gives up on a streaming
// answer has already sent its 200: what it can still say is in the
// stream. OpenClaw, giving up on a turn, answers the role chunk, a
// `data: {"error": …}` event and `data: [DONE]`; a proxy whose upstream
// stream was cut ends its own chunked body cleanly after the events it
// had. Both read as complete 200s to an HTTP client. So every
// text/event-stream answer is read as events (sseCounter), and a 2xx
// stream is a failed request when
//
//   - it carries an error event: an `event: error` (Anthropic's, and the
//     SSE convention), or data that is a JSON object with a top-level
//     "error" member or "type": "error" (OpenAI-compatible gateways):
//     stream_error, whatever follows it;
//   - it ends without its terminal event: stream_cut. A stream expects a
//     terminal when its own events show an API that has one (an OpenAI
//     chat.completion.chunk: `data: [DONE]`; Anthropic's message_start:
//     message_stop), or when an earlier stream of the same route in this
//     run ended with one (the route's healthy answers have it).
//
// The event count alone is not a verdict: a short answer that ends with
// its terminal event is an answer (a model may say little), and a stream
// with no terminal in its API cannot tell a short answer from a cut one
// by length without a constant of ours. The count is recorded
// (sse_events), and a cut stream's error says how many events it had
// against the route's complete streams so far.

// maxEventData bounds the data kept of one event for the checks above
// (error events are small; a longer event is only counted).
const maxEventData = 64 << 10

// sseCounter reads a text/event-stream body as events: blocks of lines,
// one of them a data field, ended by an empty line (WHATWG HTML, "event
// stream interpretation"), and notes the error and terminal events.
type sseCounter struct {
	events  int
	lineLen int
	line    []byte // the current line, up to maxEventData
	hasData bool
	lastCR  bool

	name     []byte // the current event's event field
	data     []byte // the current event's data, lines joined by \n
	overflow bool   // data exceeded maxEventData

	errEvent []byte // the first error event's data (or name), "" none
	terminal bool   // a terminal event was seen
	dialect  string // "openai" or "anthropic" when the events show it
}

func (c *sseCounter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' && c.lastCR {
			c.lastCR = false
			continue
		}
		c.lastCR = b == '\r'
		if b == '\n' || b == '\r' {
			if c.lineLen == 0 {
				c.dispatch()
			} else {
				c.field()
			}
			c.lineLen = 0
			c.line = c.line[:0]
			continue
		}
		if len(c.line) < maxEventData {
			c.line = append(c.line, b)
		}
		c.lineLen++
	}
	return len(p), nil
}

// field takes one non-empty line: its field name and value.
func (c *sseCounter) field() {
	name, value, colon := bytes.Cut(c.line, []byte(":"))
	if colon && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch {
	case len(name) == 0: // a comment
	case string(name) == "data" && (colon || c.lineLen == 4):
		if c.hasData {
			c.data = append(c.data, '\n')
		}
		c.hasData = true
		if c.lineLen > len(c.line) || len(c.data)+len(value) > maxEventData {
			c.overflow = true
		} else {
			c.data = append(c.data, value...)
		}
	case string(name) == "event":
		c.name = append(c.name[:0], value...)
	}
}

// dispatch ends an event at an empty line.
func (c *sseCounter) dispatch() {
	if c.hasData {
		c.events++
		c.judge()
	}
	c.hasData, c.overflow = false, false
	c.name, c.data = c.name[:0], c.data[:0]
}

// judge notes what one complete event says.
func (c *sseCounter) judge() {
	name := string(c.name)
	switch name {
	case "error":
		c.noteError()
		return
	case "message_start":
		c.dialect = "anthropic"
	case "message_stop":
		c.terminal = true
	}
	d := bytes.TrimSpace(c.data)
	if string(d) == "[DONE]" {
		c.terminal = true
		return
	}
	if c.overflow || len(d) == 0 || d[0] != '{' {
		return
	}
	if c.dialect == "" && bytes.Contains(d, []byte(`"chat.completion.chunk"`)) {
		c.dialect = "openai"
	}
	// Only an event that names an error or a stop is decoded.
	if !bytes.Contains(d, []byte(`"error"`)) && !bytes.Contains(d, []byte(`"message_stop"`)) && !bytes.Contains(d, []byte(`"message_start"`)) {
		return
	}
	var top struct {
		Error json.RawMessage `json:"error"`
		Type  string          `json:"type"`
	}
	if json.Unmarshal(d, &top) != nil {
		return
	}
	switch {
	case len(top.Error) > 0 && string(top.Error) != "null", top.Type == "error":
		c.noteError()
	case top.Type == "message_stop":
		c.terminal = true
	case top.Type == "message_start":
		c.dialect = "anthropic"
	}
}

func (c *sseCounter) noteError() {
	if c.errEvent == nil {
		c.errEvent = bytes.Clone(c.data)
		if len(c.errEvent) == 0 {
			c.errEvent = []byte("event: error")
		}
	}
}

// terminalOf names the terminal event of a dialect, for messages.
func terminalOf(dialect string) string {
	if dialect == "anthropic" {
		return "event: message_stop"
	}
	return "data: [DONE]"
}

// streamRoutes is what a run knows of its routes' streams: which routes'
// streams ended with a terminal event, and their event counts.
type streamRoutes struct {
	mu sync.Mutex
	m  map[string]*routeStreams
}

type routeStreams struct {
	terminal string // the terminal the route's complete streams ended with
	min, max int    // event counts of the route's complete streams
}

// verdict judges a complete 2xx event stream of route: the failed
// outcome and why, or "" when the stream is an answer. A complete stream
// teaches the route its terminal.
func (sr *streamRoutes) verdict(route string, c *sseCounter) (journal.Outcome, string) {
	if c.errEvent != nil {
		msg := c.errEvent
		if len(msg) > 300 {
			msg = append(msg[:300:300], "…"...)
		}
		return journal.OutcomeStreamError, fmt.Sprintf("stream carried an error event after %d events: %s", c.events, msg)
	}
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.m == nil {
		sr.m = map[string]*routeStreams{}
	}
	rs := sr.m[route]
	if c.terminal {
		term := terminalOf(c.dialect)
		if rs == nil {
			sr.m[route] = &routeStreams{terminal: term, min: c.events, max: c.events}
		} else {
			rs.min, rs.max = min(rs.min, c.events), max(rs.max, c.events)
		}
		return "", ""
	}
	switch {
	case c.dialect != "" && rs != nil:
		return journal.OutcomeStreamCut, fmt.Sprintf("stream ended after %d events without its terminal event (%s); this route's complete streams had %d–%d", c.events, terminalOf(c.dialect), rs.min, rs.max)
	case c.dialect != "":
		return journal.OutcomeStreamCut, fmt.Sprintf("stream ended after %d events without its terminal event (%s)", c.events, terminalOf(c.dialect))
	case rs != nil:
		return journal.OutcomeStreamCut, fmt.Sprintf("stream ended after %d events without the terminal event (%s) this route's complete streams ended with (%d–%d events)", c.events, rs.terminal, rs.min, rs.max)
	}
	return "", ""
}
