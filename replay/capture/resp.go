package capture

import (
	"bytes"
	"strconv"
	"strings"
)

// Responses are not kept (the replayer only needs requests), but what
// the server answered says what a replay will exercise: streaming
// responses (server-sent events, NDJSON) are where mid-stream faults
// bite, and the status mix shows whether the capture is of a healthy
// service. The response tracker follows the server's direction of each
// HTTP connection with RFC 9112 framing (section 6.3: no body for HEAD,
// 1xx, 204 and 304; chunked; Content-Length; else until the connection
// closes), holding only the header block of the response in progress.
// It does not wait for reordered segments: a hole makes it look for the
// next status line at a segment start, and what it missed is counted in
// Stats.ResponsesLost as "unknown".

// response tracker states.
const (
	rsHeader  = iota // collecting a header block
	rsLength         // skipping a Content-Length body
	rsChunked        // scanning a chunked body
	rsClose          // body runs to the end of the connection
	rsResync         // lost the framing: wait for a status line at a segment start
	rsDone           // tunnel or protocol switch: nothing more to see
)

// chunk scanner phases.
const (
	chSize    = iota // chunk-size line
	chData           // chunk data
	chDataEnd        // CRLF after the data
	chTrailer        // trailer lines up to an empty one
)

// maxResponseHeader bounds the header block the tracker holds.
const maxResponseHeader = 64 << 10

// maxPendingMethods bounds the request methods a connection remembers
// for the responses still to come.
const maxPendingMethods = 64

// respTracker follows one server direction.
type respTracker struct {
	state  int
	known  bool   // next is set
	next   uint32 // next expected sequence number
	buf    []byte // header block so far, or the current chunk line
	remain int64  // body bytes left (rsLength) or chunk bytes left (chData)
	phase  int    // chunk scanner phase
	// unsure: a hole fell between two responses; whether one was lost
	// shows with the next bytes.
	unsure bool
}

// sent records the method of a request for the response to come.
func (p *httpParser) sent(method string) {
	if len(p.methods) >= maxPendingMethods {
		p.methods = p.methods[1:]
	}
	p.methods = append(p.methods, method)
}

// answered returns the method of the oldest request of the connection
// not yet answered, or "" when none is known.
func (c *conn) answered() string {
	if c.client < 0 {
		return ""
	}
	p := c.h[c.client].parser
	if p == nil || len(p.methods) == 0 {
		return ""
	}
	m := p.methods[0]
	p.methods = p.methods[1:]
	return m
}

// httpSeen reports whether the client's direction of a connection is
// HTTP: responses are only tracked then (a TLS server's bytes are not
// lost responses).
func (c *conn) httpSeen() bool {
	if c.requests > 0 {
		return true
	}
	if c.client < 0 {
		return false
	}
	p := c.h[c.client].parser
	return p != nil && (p.state == psHeader || p.state == psBody || p.requests > 0)
}

// socks returns the SOCKS handshake the client's direction began with,
// or nil.
func (c *conn) socks() *socksState {
	if c.client < 0 || c.h[c.client].parser == nil {
		return nil
	}
	return c.h[c.client].parser.socks
}

// serverData takes a segment of the server's direction.
func (x *extractor) serverData(c *conn, d int, s *segment) {
	seq, data := s.seq, s.payload
	if s.flags&tcpSYN != 0 {
		seq++
	}
	if ss := c.socks(); ss != nil && !ss.replyDone {
		if data, seq = x.socksServer(c, d, ss, s); len(data) == 0 {
			return
		}
	}
	if !c.httpSeen() {
		return
	}
	h := &c.h[d]
	t := c.resp
	if t == nil {
		t = &respTracker{}
		c.resp = t
	}
	if !t.known {
		t.known, t.next = true, seq
		if h.syn {
			t.next = h.isn + 1
		}
	}
	switch diff := seqDiff(t.next, seq); {
	case diff > 0 && t.state == rsLength && int64(diff) <= t.remain:
		// A hole inside a Content-Length body: the framing survives.
		t.remain -= int64(diff)
		if t.remain == 0 {
			t.state = rsHeader
		}
	case diff > 0: // a hole (or a segment ahead of one): framing lost
		t.lose(x)
	case diff < 0:
		skip := int(-diff)
		if skip >= len(data) {
			return // retransmitted
		}
		data = data[skip:]
		seq += uint32(skip)
	}
	t.next = seq + uint32(len(data)) + uint32(s.missing)
	if t.state == rsResync && len(data) > 0 {
		if isStatusLine(data) {
			t.state, t.buf = rsHeader, t.buf[:0]
		} else if t.unsure {
			// The hole fell between responses and what follows it is
			// not a response's start: something was lost.
			x.st.ResponsesLost++
		}
		t.unsure = false
	}
	t.feed(x, c, data)
	if s.missing > 0 {
		if t.state == rsHeader && isStatusLine(t.buf) {
			// The snap length cut the header block: the status is
			// known, the framing is not.
			t.count(x, c, t.buf)
		}
		t.lose(x)
	}
}

// lose gives up the framing after a hole.
func (t *respTracker) lose(x *extractor) {
	switch t.state {
	case rsDone, rsResync:
		return
	case rsHeader:
		if len(t.buf) == 0 {
			t.state, t.unsure = rsResync, true
			return
		}
	}
	x.st.ResponsesLost++
	t.state, t.buf = rsResync, t.buf[:0]
}

// feed consumes in-order bytes of the server's direction.
func (t *respTracker) feed(x *extractor, c *conn, b []byte) {
	for len(b) > 0 {
		switch t.state {
		case rsDone, rsResync, rsClose:
			return
		case rsHeader:
			if len(t.buf) == 0 {
				// Tolerate stray line ends between responses.
				for len(b) > 0 && (b[0] == '\r' || b[0] == '\n') {
					b = b[1:]
				}
				if len(b) == 0 {
					return
				}
			}
			from := max(0, len(t.buf)-3)
			t.buf = append(t.buf, b...)
			end := headerEnd(t.buf, from)
			if end < 0 {
				if len(t.buf) > maxResponseHeader || (len(t.buf) >= 12 && !isStatusLine(t.buf)) {
					x.st.ResponsesLost++
					t.state, t.buf = rsResync, t.buf[:0]
				}
				return
			}
			rest := len(t.buf) - end
			b = b[len(b)-rest:]
			t.header(x, c, t.buf[:end])
			if cap(t.buf) > 4096 {
				t.buf = nil
			} else {
				t.buf = t.buf[:0]
			}
		case rsLength:
			if b = t.skip(b); t.remain == 0 {
				t.state = rsHeader
			}
		case rsChunked:
			b = t.chunk(x, b)
		}
	}
}

// header handles a complete response header block.
// skip passes over the part of b that belongs to the body (or chunk) being
// counted, t.remain bytes at most, and returns what follows it.
func (t *respTracker) skip(b []byte) []byte {
	n := min(int64(len(b)), t.remain)
	t.remain -= n
	return b[n:]
}

func (t *respTracker) header(x *extractor, c *conn, block []byte) {
	if !isStatusLine(block) {
		x.st.ResponsesLost++
		t.state = rsResync
		return
	}
	h := t.count(x, c, block)
	code, method := h.code, h.method
	switch {
	case code == 101 || (method == "CONNECT" && code < 300):
		t.state = rsDone // another protocol follows
	case code < 200 || code == 204 || code == 304 || method == "HEAD":
		t.state = rsHeader
	case len(h.te) > 0:
		if len(h.te) >= 7 && bytes.EqualFold(h.te[len(h.te)-7:], []byte("chunked")) {
			x.st.ChunkedResponses++
			t.state, t.phase = rsChunked, chSize
		} else {
			t.state = rsClose
		}
	default:
		n, err := strconv.ParseInt(string(h.cl), 10, 64)
		switch {
		case !h.hasCL:
			t.state = rsClose
		case err != nil || n < 0:
			x.st.ResponsesLost++
			t.state = rsResync
		case n == 0:
			t.state = rsHeader
		default:
			t.state, t.remain = rsLength, n
		}
	}
}

// respHeader is what the tracker reads of a response header block.
type respHeader struct {
	code        int
	method      string // of the request it answers
	contentType []byte
	te          []byte
	cl          []byte
	hasCL       bool
}

// count counts a response by its status line and header block (cut
// short or whole) and returns what framing needs. It allocates nothing:
// it runs for every response of the capture.
func (t *respTracker) count(x *extractor, c *conn, block []byte) respHeader {
	var h respHeader
	h.code = int(block[9]-'0')*100 + int(block[10]-'0')*10 + int(block[11]-'0')
	if h.code >= 200 || h.code == 101 {
		// A final response answers the oldest request (1xx are interim).
		h.method = c.answered()
	}
	for rest := block[lineEnd(block):]; len(rest) > 0; {
		n := lineEnd(rest)
		line := rest[:n]
		rest = rest[n:]
		name, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		val = bytes.TrimSpace(val)
		switch {
		case h.contentType == nil && bytes.EqualFold(name, []byte("Content-Type")):
			h.contentType = val
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			h.te = val
		case !h.hasCL && bytes.EqualFold(name, []byte("Content-Length")):
			h.cl, h.hasCL = val, true
		}
	}
	if h.code >= 200 {
		x.st.Responses++
		x.st.ResponseStatus[statusClass[min(h.code/100, 9)]]++
		mt := h.contentType
		if i := bytes.IndexByte(mt, ';'); i >= 0 {
			mt = mt[:i]
		}
		if mt = bytes.TrimSpace(mt); len(mt) > 0 {
			if name := streamingType(mt); name != "" {
				x.st.StreamingResponses[name]++
			}
		}
	}
	return h
}

var statusClass = [10]string{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx", "6xx", "7xx", "8xx", "9xx"}

// chunk scans chunked framing without keeping the data, and returns
// what follows the part of b it consumed.
func (t *respTracker) chunk(x *extractor, b []byte) []byte {
	for len(b) > 0 && t.state == rsChunked {
		switch t.phase {
		case chSize, chTrailer:
			nl := bytes.IndexByte(b, '\n')
			if nl < 0 {
				t.buf = append(t.buf, b...)
				if len(t.buf) > 4096 {
					x.st.ResponsesLost++
					t.state, t.buf = rsResync, t.buf[:0]
				}
				return nil
			}
			t.buf = append(t.buf, b[:nl]...)
			b = b[nl+1:]
			line := strings.TrimRight(string(t.buf), "\r")
			t.buf = t.buf[:0]
			if t.phase == chTrailer {
				if line == "" {
					t.state = rsHeader
				}
				continue
			}
			if i := strings.IndexByte(line, ';'); i >= 0 {
				line = line[:i]
			}
			n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
			switch {
			case err != nil || n < 0:
				x.st.ResponsesLost++
				t.state = rsResync
			case n == 0:
				t.phase = chTrailer
			default:
				t.phase, t.remain = chData, n
			}
		case chData:
			if b = t.skip(b); t.remain == 0 {
				t.phase = chDataEnd
			}
		case chDataEnd:
			if b[0] == '\r' {
				b = b[1:]
				continue
			}
			if b[0] == '\n' {
				b = b[1:]
				t.phase = chSize
				continue
			}
			x.st.ResponsesLost++
			t.state = rsResync
		}
	}
	return b
}

// streamingTypes are the media types whose responses are streams of
// events: server-sent events, and JSON text sequences in their common
// names.
var streamingTypes = []string{"text/event-stream", "application/x-ndjson", "application/ndjson", "application/jsonl",
	"application/x-jsonlines", "application/jsonlines", "application/stream+json", "application/json-seq"}

// streamingType returns the name of a streaming media type, or "".
func streamingType(mt []byte) string {
	for _, s := range streamingTypes {
		if bytes.EqualFold(mt, []byte(s)) {
			return s
		}
	}
	return ""
}
