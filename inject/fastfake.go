package inject

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/halfopen/rehearse/internal/wait"
	"github.com/halfopen/rehearse/journal"
)

// The fake mode's fast path. A fake upstream answers most requests with
// its healthy response, and net/http's server costs more than that answer:
// per request a background-read goroutine to notice a hang-up and the
// hand-offs between it and the handler, each of which wakes a thread on
// an idle vCPU. So, as in the proxy mode (fastpath.go), each gateway
// connection is first served on one goroutine of its own: the request
// head is parsed in place (the proxy fast path's parser), checked against
// the active faults without counting it (targetable), and a request no
// active fault could target is answered here with the bytes the full
// path's fakeHandler would make net/http send: the same status line, the
// same header fields in net/http's order (the handler's map sorted by
// name, then Date, Connection: close when the request asked for it,
// Transfer-Encoding: chunked), Content-Length or chunked framing as
// net/http chooses it (each flush of the handler one chunk), the same
// body, the same waits. The journal event and the metrics are the full
// path's.
//
// While it waits (the healthy latency, the pause between events or
// chunks) the full path's request context is cancelled when the gateway
// hangs up, because net/http reads the connection in the background until
// bytes of a next request arrive. Here the wait is that read, with a
// deadline, on the connection's own goroutine: no second goroutine.
//
// Whatever else comes — a request a fault could target, a HEAD that
// would be answered chunked, and everything the proxy fast path does not
// take (HTTP/1.0, Expect, Upgrade, chunked or large request bodies,
// malformed heads) — is handed over unread with its connection to the
// full path (http.Server and fakeHandler behind the faults), which serves
// that connection for the rest of its life. A fault whose window opens
// while a response is being written here does not touch that response,
// as on the full path, where faults are picked when a request arrives;
// the connection's next request is handed over.

// fakeFastPathOff turns the fake mode's fast path off for upstreams made
// while it is set (tests and benchmarks comparing both paths;
// REHEARSE_INJECT_FASTPATH=off sets it from the start).
var fakeFastPathOff = fastPathOff

// fastFake is what the fast path needs to answer as a fake upstream's
// healthy handler: the response heads, rendered once.
type fastFake struct {
	h      *fakeHandler
	status []byte // the status line, CRLF included
	// The handler's header fields as net/http writes them (sorted): for a
	// JSON answer with Content-Length those sorted before and after it,
	// for a chunked JSON answer and for an event stream all of them.
	jsonPre, jsonPost []byte
	chunkedHead       []byte
	sseHead           []byte
	retryAfter        string // the Retry-After field sent, "" when none
}

// newFastFake returns the fast path of a fake upstream, or nil when its
// healthy answer is one the fast path does not reproduce: a status
// without a body, or configured header fields that change net/http's
// framing or its own fields (Content-Length, Transfer-Encoding, Trailer,
// Connection, Date).
func newFastFake(h *fakeHandler) *fastFake {
	code := h.cfg.Status
	if code < 200 || code > 999 || code == http.StatusNoContent || code == http.StatusNotModified {
		return nil
	}
	base := http.Header{}
	for k, v := range h.cfg.Headers {
		base.Set(k, v)
	}
	for k := range base {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Trailer", "Connection", "Date":
			return nil
		}
		if len(k) >= len(http.TrailerPrefix) && k[:len(http.TrailerPrefix)] == http.TrailerPrefix {
			return nil
		}
	}
	ff := &fastFake{h: h, retryAfter: base.Get("Retry-After")}
	// writeStatusLine in net/http.
	if text := http.StatusText(code); text != "" {
		ff.status = fmt.Appendf(nil, "HTTP/1.1 %d %s\r\n", code, text)
	} else {
		ff.status = fmt.Appendf(nil, "HTTP/1.1 %03d status code %d\r\n", code, code)
	}
	render := func(h http.Header, exclude func(string) bool) []byte {
		ex := map[string]bool{}
		for k := range h {
			if exclude != nil && exclude(k) {
				ex[k] = true
			}
		}
		var b bytes.Buffer
		h.WriteSubset(&b, ex)
		return b.Bytes()
	}
	js := base.Clone()
	js.Set("Content-Type", "application/json")
	// Content-Length is not among the fields (refused above): the pieces
	// are those sorted before and after the place it takes.
	ff.jsonPre = render(js, func(k string) bool { return k > "Content-Length" })
	ff.jsonPost = render(js, func(k string) bool { return k < "Content-Length" })
	ff.chunkedHead = render(js, nil)
	sse := base.Clone()
	sse.Set("Content-Type", "text/event-stream")
	sse.Set("Cache-Control", "no-cache")
	ff.sseHead = render(sse, nil)
	return ff
}

// answer kinds: a JSON body with Content-Length, a chunked JSON body, an
// event stream.
const (
	answerJSON = iota
	answerChunked
	answerSSE
)

// appendHead appends the response head of an answer of kind: what
// net/http's chunkWriter writes for fakeHandler's fields. length is the
// Content-Length of a JSON answer.
func (ff *fastFake) appendHead(b []byte, kind, length int, closing bool) []byte {
	b = append(b, ff.status...)
	switch kind {
	case answerJSON:
		b = append(b, ff.jsonPre...)
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(length), 10)
		b = append(b, "\r\n"...)
		b = append(b, ff.jsonPost...)
	case answerChunked:
		b = append(b, ff.chunkedHead...)
	default:
		b = append(b, ff.sseHead...)
	}
	b = append(b, "Date: "...)
	b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
	b = append(b, "\r\n"...)
	if closing {
		b = append(b, "Connection: close\r\n"...)
	}
	if kind != answerJSON {
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	return append(b, "\r\n"...)
}

// appendChunk appends p as one chunk of a chunked body (net/http's
// chunkWriter: lower-case hex size).
func appendChunk(b, p []byte) []byte {
	b = strconv.AppendInt(b, int64(len(p)), 16)
	b = append(b, "\r\n"...)
	b = append(b, p...)
	return append(b, "\r\n"...)
}

// fakeExchange answers one request as the fake's healthy handler. done:
// the gateway connection must close; handed: nothing was read, sent or
// recorded, and the full path must take the request.
func (fc *fastConn) fakeExchange(r *fastReq, info reqInfo, probe string) (done, handed bool) {
	u, s, ff := fc.u, fc.u.s, fc.u.fake
	h := ff.h
	var reqBody []byte
	if r.bodyLen > 0 {
		b, _ := fc.br.Peek(len(r.head) + r.bodyLen) // buffered by readHead
		reqBody = b[len(r.head):]
	}
	kind := answerJSON
	if wantsStream(fc.header.Get("Accept"), reqBody) {
		kind = answerSSE
	} else if h.cfg.Chunked {
		kind = answerChunked
	}
	if kind != answerJSON && r.method == http.MethodHead {
		return false, true // net/http frames neither, and keeps the connection
	}
	arrival := s.now()
	if !u.handlers.enter() {
		return true, false // closing: hang up, as the full path does
	}
	defer u.handlers.leave()
	inFlight, untrack := u.track()
	ord := u.ordinal.Add(1)
	fc.br.Discard(len(r.head) + r.bodyLen) // reqBody is not used past here
	fc.watch = true
	ev := fc.u.newEvent(r.method, r.path, fc.remote, fc.header, info, probe, inFlight)
	// The full path records the exchange, and counts it out of flight,
	// when fakeHandler returns: before net/http writes what it still
	// holds (a small answer, the last chunk). So does finish here, so that
	// a gateway's next request never finds this one still in flight.
	finished := false
	finish := func() {
		if !finished {
			finished = true
			untrack()
			fc.record(arrival, ev)
		}
	}
	defer finish()

	// A wait cut short ends the exchange as client_gone; net/http still
	// writes what ends its response (an empty 200 when the handler wrote
	// nothing, the last chunk of a chunked one: a gateway that only shut
	// its sending side gets them), and goes on reading the connection
	// until a read fails, serving what the gateway sent before.
	cut := func(tail []byte) (done, handed bool) {
		ev.Outcome = journal.OutcomeUpstreamGone
		finish()
		_, err := fc.c.Write(tail)
		return err != nil || r.close, false
	}
	if !h.cfg.Latency.isZero() && !fc.pause(h.cfg.Latency.sample(u.rand(info.seq, ord))) {
		b := append(fc.out[:0], "HTTP/1.1 200 OK\r\nDate: "...)
		b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
		b = append(b, "\r\nContent-Length: 0\r\n"...)
		if r.close {
			b = append(b, "Connection: close\r\n"...)
		}
		fc.out = append(b, "\r\n"...)
		return cut(fc.out)
	}
	if isChat(h.api, r.path) {
		// Charged as the answer starts, whether or not it arrives.
		ev.PromptTokens, ev.CompletionTokens = h.cfg.Usage.PromptTokens, h.cfg.Usage.CompletionTokens
	}
	ev.Status = h.cfg.Status
	if ff.retryAfter != "" {
		if d, ok := parseRetryAfter(ff.retryAfter, time.Now()); ok {
			ev.RetryAfter = d
		}
	}
	b := fc.out[:0]
	defer func() { fc.out = b[:0] }()
	if kind == answerJSON {
		fc.body = h.appendJSONBody(fc.body[:0], r.path)
		body := fc.body
		b = ff.appendHead(b, kind, len(body), r.close)
		if r.method != http.MethodHead {
			b = append(b, body...)
		}
		// net/http counts a HEAD answer's body as written, then drops it.
		ev.Bytes = int64(len(body))
		if r.method == http.MethodHead || len(body) <= handlerBuffer {
			// The handler returns before anything reaches the socket: the
			// exchange is complete whatever the write meets.
			ev.Outcome = journal.OutcomeUpstreamComplete
			finish()
			_, err := fc.c.Write(b)
			return err != nil || r.close, false
		}
		ev.HeadersAt = s.now() // the head goes with this write, recorded after it
		if n, err := fc.c.Write(b); err != nil {
			// Only what the connection took is written.
			ev.Bytes = int64(min(max(n-(len(b)-len(body)), 0), len(body)))
			ev.Outcome = journal.OutcomeUpstreamGone
			return true, false
		}
		ev.Outcome = journal.OutcomeUpstreamComplete
		return r.close, false
	}
	// A chunked answer: fakeHandler flushes the head, then each piece as
	// one chunk; net/http writes the last chunk once it has returned.
	// What has no pause between goes out in one write here (the same
	// bytes, a wake-up of the gateway fewer): the head with the first
	// piece, and every piece when there is no interval.
	var pieces [][]byte
	var interval time.Duration
	if kind == answerSSE {
		pieces, interval = h.sseEvents(r.path, time.Now().Unix()), h.cfg.SSE.Interval.D()
	} else {
		fc.body = h.appendJSONBody(fc.body[:0], r.path)
		body := fc.body
		for i := 0; i < len(body); i += h.cfg.ChunkBytes {
			pieces = append(pieces, body[i:min(i+h.cfg.ChunkBytes, len(body))])
		}
		interval = h.cfg.ChunkInterval.D()
	}
	// An event stream's content is every event before its last, the end
	// marker ([DONE], message_stop): a hang-up after the content is the
	// gateway finishing (journal.UpstreamRequest.Delivered), as on the
	// full path (streamWrote). A chunked JSON body's pieces are all
	// content. Bytes counts the pieces the connection took whole.
	content := len(pieces)
	if kind == answerSSE {
		content--
	}
	b = ff.appendHead(b, kind, 0, r.close)
	var endsBuf [16]int
	ends := endsBuf[:0] // where each piece of b not yet written ends in b
	written := 0        // pieces written
	for i, p := range pieces {
		if i > 0 && !fc.pause(interval) {
			ev.Delivered = written >= content
			return cut(append(b, lastChunk...)) // with what is not sent yet
		}
		b = appendChunk(b, p)
		ends = append(ends, len(b))
		if interval > 0 || i == len(pieces)-1 {
			if ev.HeadersAt == 0 {
				ev.HeadersAt = s.now() // the head goes with the first write
			}
			n, err := fc.c.Write(b)
			for _, end := range ends {
				if end <= n {
					ev.Bytes += int64(len(pieces[written]))
					written++
				}
			}
			if err != nil {
				ev.Outcome = journal.OutcomeUpstreamGone
				ev.Delivered = written >= content
				return true, false
			}
			b, ends = b[:0], ends[:0]
		}
	}
	ev.Outcome = journal.OutcomeUpstreamComplete
	finish()
	_, err := fc.c.Write(lastChunk)
	return err != nil || r.close, false
}

// handlerBuffer is what net/http's response writer buffers of a body
// before it writes to the connection (bufferBeforeChunkingSize): a
// handler writing no more than that returns before anything is sent.
const handlerBuffer = 2048

// lastChunk ends a chunked body without trailers.
var lastChunk = []byte("0\r\n\r\n")

// pause waits d as the full path's handler does (wait.For on the
// request's context), cut short when the server closes or the gateway
// hangs up; it reports whether d elapsed. net/http notices a hang-up by
// reading the connection in the background until bytes of a next request
// arrive (fc.watch, set for each request); here that read is the wait
// itself, with a deadline.
func (fc *fastConn) pause(d time.Duration) bool {
	ctx := fc.u.s.ctx
	if d <= 0 || !fc.watch || ctx.Err() != nil {
		return wait.For(ctx, d)
	}
	end := time.Now().Add(d)
	fc.c.SetReadDeadline(end)
	_, err := fc.br.Peek(fc.br.Buffered() + 1)
	fc.c.SetReadDeadline(time.Time{})
	switch {
	case err == nil || errors.Is(err, bufio.ErrBufferFull):
		// Bytes of a next request: net/http stops watching here.
		fc.watch = false
		return wait.For(ctx, time.Until(end))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ctx.Err() == nil
	default:
		return false // the gateway hung up, or the server closed the connection
	}
}

// record ends a fast-path exchange: the journal event, stamped now, and
// the requests counter, counted first as on the full path (record).
func (fc *fastConn) record(arrival time.Duration, ev *journal.UpstreamRequest) {
	s := fc.u.s
	ev.Done = s.now()
	headReleased(ev)
	if ev.Outcome == journal.OutcomeUpstreamComplete {
		fc.completed.Inc()
	} else {
		s.m.requests.WithLabelValues(fc.u.cfg.Name, string(ev.Outcome)).Inc()
	}
	s.rec.RecordAt(arrival, ev)
}
