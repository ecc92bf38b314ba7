package capture

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// parser states.
const (
	psStart  = iota // client stream start: classify (HTTP/1.x, TLS, HTTP/2, other)
	psResync        // look for the next request line at a line start
	psHeader        // expect a request line at buf[0]; wait for the header block
	psBody          // header parsed; wait for the body
	psDead          // not HTTP/1.x (or a tunnel): ignore the rest
	psServer        // the server's direction: ignore
	psSOCKS         // a SOCKS handshake: wait for the whole client side
)

// mark maps a stream offset to the packet that carried it.
type mark struct {
	off int64
	pkt int64
	ts  time.Time
}

// parserEvent tells the connection what a parser learnt about its stream.
type parserEvent int

const (
	evNone parserEvent = iota
	evServer
	evRequest
)

// httpParser extracts requests from one direction of a TCP connection.
// It holds the bytes of the request in progress only: complete requests
// are handed to emit and dropped.
type httpParser struct {
	x     *extractor
	flow  Flow
	state int
	// buf holds the unconsumed bytes; base is the stream offset of buf[0].
	buf   []byte
	arr   []byte // the array buf is a window on, reused
	base  int64
	marks []mark
	// atLineStart: buf[0] follows a newline (or the stream start), for
	// resynchronisation.
	atLineStart bool
	// scan is where the search for the end of the header block resumes.
	scan int
	// The request in progress (psBody).
	req       *http.Request
	targetErr string // why Go's URL parser refuses req's target, if it does
	hdrLen    int
	clen      int64
	chunked   bool
	cPhase    int
	cPos      int
	cRemain   int64
	trailer   int   // offset of the trailer section of a chunked body
	missing   int64 // body bytes lost to gaps (Content-Length bodies)
	dropped   int64 // body bytes dropped over the buffer limit
	tooBig    bool
	requests  int
	lastEvent parserEvent
	stopAfter bool // set by a CONNECT: the rest of the stream is a tunnel
	damaged   bool // the stream had a hole or was seen mid-way
	// methods are those of the requests not yet answered, oldest first,
	// for the response tracker (HEAD and CONNECT change response framing).
	methods []string

	// socks is the SOCKS handshake the stream began with, if any.
	socks *socksState
	// resyncing: the parser is skipping to the next request line after a
	// line it could not take (the bytes count in Stats.ResyncBytes).
	resyncing bool
}

func newParser(x *extractor, flow Flow, midStream bool) *httpParser {
	p := &httpParser{x: x, flow: flow, state: psStart, atLineStart: true}
	if midStream {
		// The first captured segment of a connection seen mid-way
		// usually starts a message: let it be a request line.
		p.state = psResync
		p.damaged = true
	}
	return p
}

// pending reports the packet number of the first byte of a request in
// progress, or MaxInt64 when none is.
func (p *httpParser) pending() int64 {
	if (p.state == psHeader && len(p.buf) > 0) || p.state == psBody {
		return p.markAt(p.base).pkt
	}
	return math.MaxInt64
}

func (p *httpParser) markAt(off int64) mark {
	// Marks are few (segments of the request in progress): scan back.
	for i := len(p.marks) - 1; i >= 0; i-- {
		if p.marks[i].off <= off {
			return p.marks[i]
		}
	}
	if len(p.marks) > 0 {
		return p.marks[0]
	}
	return mark{off: off, pkt: p.x.pkt, ts: p.x.now}
}

// consume drops n bytes from the front of the buffer.
func (p *httpParser) consume(n int) {
	if n <= 0 {
		return
	}
	p.atLineStart = p.buf[n-1] == '\n'
	p.buf = p.buf[n:]
	p.base += int64(n)
	if len(p.buf) == 0 {
		if cap(p.arr) > 64<<10 {
			p.buf, p.arr = nil, nil // don't keep a big request's array around
		} else {
			p.buf = p.arr[:0]
		}
	}
	// Keep the last mark at or before base.
	i := 0
	for i+1 < len(p.marks) && p.marks[i+1].off <= p.base {
		i++
	}
	if i > 0 {
		p.marks = append(p.marks[:0], p.marks[i:]...)
	}
	p.scan = 0
}

// feed appends in-order stream bytes and extracts what it can.
func (p *httpParser) feed(data []byte) parserEvent {
	p.lastEvent = evNone
	if p.state == psDead || p.state == psServer || len(data) == 0 {
		return evNone
	}
	if p.state == psResync && p.damaged && len(p.buf) == 0 {
		// After a hole, or in a stream seen mid-way, the bytes are not
		// where the framing says: clients write requests one by one, so a
		// request line at the start of a segment is worth trying.
		p.atLineStart = true
	}
	off := p.base + int64(len(p.buf))
	if len(p.marks) == 0 || p.marks[len(p.marks)-1].pkt != p.x.pkt {
		p.marks = append(p.marks, mark{off: off, pkt: p.x.pkt, ts: p.x.now})
	}
	if len(p.buf)+len(data) > cap(p.buf) && len(p.buf)+len(data) <= cap(p.arr) {
		// Room at the front of the array, freed by consumed requests.
		p.buf = p.arr[:copy(p.arr, p.buf)]
	}
	p.buf = append(p.buf, data...)
	if cap(p.buf) > cap(p.arr) {
		p.arr = p.buf[:cap(p.buf)]
	}
	p.process()
	return p.lastEvent
}

// gap tells the parser that n bytes are missing from the stream here.
func (p *httpParser) gap(n int64) {
	switch p.state {
	case psDead, psServer:
		return
	case psBody:
		if !p.chunked && !p.tooBig {
			have := int64(len(p.buf)-p.hdrLen) + p.missing
			if have+n <= p.clen {
				// The hole is inside a Content-Length body: the framing
				// survives, so the next request is found where it should be.
				p.missing += n
				p.process()
				return
			}
		}
	}
	if p.inRequest() {
		p.emitPartial(fmt.Sprintf("%d bytes missing from the capture", n))
	}
	p.x.st.SkippedBytes += int64(len(p.buf))
	p.consume(len(p.buf))
	p.base += n
	p.state = psResync
	p.damaged = true
	// Segments usually start at message boundaries: give the bytes right
	// after the hole a chance to be a request line.
	p.atLineStart = true
	p.req = nil
}

// finish ends the stream; a request in progress is reported incomplete.
func (p *httpParser) finish(why string) {
	if p.state == psDead || p.state == psServer {
		return
	}
	if p.inRequest() {
		p.emitPartial(why)
	} else if p.state == psResync || p.state == psStart {
		p.skip(len(p.buf))
	}
	if p.socks != nil {
		p.socks.outcome(p.x, "handshake incomplete (the connection or the capture ends first)")
	}
	p.consume(len(p.buf))
	p.state = psDead
}

// skip drops n bytes that are not part of any request.
func (p *httpParser) skip(n int) {
	p.x.st.SkippedBytes += int64(n)
	if p.resyncing {
		p.x.st.ResyncBytes += int64(n)
	}
	p.consume(n)
}

func (p *httpParser) inRequest() bool {
	return p.state == psBody || (p.state == psHeader && len(p.buf) > 0)
}

func (p *httpParser) process() {
	for {
		switch p.state {
		case psStart:
			if !p.classify() {
				return
			}
		case psResync:
			if !p.resync() {
				return
			}
		case psSOCKS:
			if !p.socksClient() {
				return
			}
		case psHeader:
			if p.stopAfter {
				// After a CONNECT: a tunnel. Plain HTTP through it (a
				// proxy's client speaking to an origin) is parsed on;
				// anything else ends the stream.
				n := 0
				for n < len(p.buf) && (p.buf[n] == '\r' || p.buf[n] == '\n') {
					n++
				}
				p.consume(n)
				if len(p.buf) == 0 {
					return
				}
				ok, more := isRequestLine(p.buf)
				if more {
					return
				}
				if !ok {
					if isTLSRecord(p.buf) {
						p.x.st.TLSStreams++
					}
					p.x.st.SkippedBytes += int64(len(p.buf))
					p.dead()
					return
				}
				p.stopAfter = false
			}
			if !p.header() {
				return
			}
		case psBody:
			if !p.body() {
				return
			}
		default:
			return
		}
	}
}

// classify looks at the first bytes a client sent.
func (p *httpParser) classify() bool {
	b := p.buf
	if p.socks != nil && len(b) > 0 {
		// The first bytes through a SOCKS tunnel: it opened (whether
		// the server's reply was captured or not).
		p.socks.outcome(p.x, "followed")
	}
	switch {
	case len(b) == 0:
		return false
	case b[0] == 0x16 && len(b) < 2:
		return false // a TLS handshake record, or not: wait for one more byte
	case b[0] == 0x16 && b[1] == 3:
		p.x.st.TLSStreams++
		p.dead()
		return false
	case bytes.HasPrefix([]byte("PRI * HTTP/2.0"), b[:min(len(b), 14)]):
		if len(b) < 14 {
			return false
		}
		p.x.st.HTTP2Streams++
		p.dead()
		return false
	case (b[0] == 4 || b[0] == 5) && p.socks == nil && p.base == 0:
		if _, _, res := parseSOCKSClient(b); res != socksNot {
			p.socks = &socksState{version: int(b[0])}
			p.state = psSOCKS
			return true
		}
	}
	_, ok, more, what := scanRequestLine(b)
	switch {
	case ok:
		p.state = psHeader
		return true
	case more:
		return false
	case isStatusLine(b):
		p.server()
		return false
	}
	if method, target, n := versionless(b); n > 0 {
		// "GET /path" and no version: HTTP/0.9, or a broken client.
		// net/http refuses it and so would a gateway's HTTP/1.x parser:
		// reported and counted, never replayed, then the stream is
		// searched for proper requests.
		const why = "request line has no HTTP version"
		m := p.markAt(p.base)
		// Its header fields are not kept: whether they have arrived
		// would depend on how TCP cut the stream.
		r := &Request{Time: m.ts, Flow: p.flow, Method: method, Target: target, pkt: m.pkt,
			Incomplete: true, Problem: "malformed request: " + why}
		p.x.st.RequestsRefused[why]++
		p.x.warn(p.flow, "malformed request: "+why+"; resynchronising")
		p.emit(r)
		p.x.st.SkippedBytes += int64(n)
		p.consume(n)
		p.state = psResync
		return true
	} else if n < 0 {
		return false // wait for the line's end
	}
	if what != "" {
		p.malformedLine(what)
		return true
	}
	p.x.st.OtherStreams++
	if name := guessProtocol(b); name != "" {
		p.x.st.OtherProtocols[name]++
	}
	p.dead()
	return false
}

// respArray is the start of a Redis client command: a RESP array of bulk
// strings ("*3\r\n$3\r\nSET\r\n…"), which is how every Redis client
// sends commands.
var respArray = regexp.MustCompile(`^\*[0-9]{1,9}\r\n\$[0-9]{1,9}\r\n`)

// guessProtocol names the protocol of a client stream that is not
// HTTP/1.x when its first bytes say so plainly, for the message that
// explains an empty capture; "" when they do not.
func guessProtocol(b []byte) string {
	switch {
	case respArray.Match(b):
		return "Redis"
	case len(b) >= 8 && b[4] == 0 && b[5] == 3 && b[6] == 0 && b[7] == 0:
		// PostgreSQL StartupMessage: length, then protocol 3.0.
		return "PostgreSQL"
	}
	return ""
}

// versionless recognises a request line without an HTTP version at the
// start of a stream ("GET /x" CRLF): n is its length with the line end,
// -1 when more bytes are needed, 0 when it is not one. Only common
// methods and origin-form targets count, so that other protocols are not
// taken for HTTP.
func versionless(b []byte) (method, target string, n int) {
	sp := bytes.IndexByte(b[:min(len(b), 9)], ' ')
	if sp < 0 {
		return "", "", 0
	}
	switch string(b[:sp]) {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH":
	default:
		return "", "", 0
	}
	if len(b) == sp+1 {
		return "", "", -1
	}
	if b[sp+1] != '/' {
		return "", "", 0
	}
	nl := bytes.IndexByte(b[sp+1:min(len(b), maxRequestLine)], '\n')
	if nl < 0 {
		if len(b) >= maxRequestLine {
			return "", "", 0
		}
		return "", "", -1
	}
	t := strings.TrimSuffix(string(b[sp+1:sp+1+nl]), "\r")
	if strings.ContainsAny(t, " \r") {
		return "", "", 0
	}
	return string(b[:sp]), t, sp + 1 + nl + 1
}

func (p *httpParser) dead() {
	p.state = psDead
	p.consume(len(p.buf))
	p.buf, p.arr = nil, nil
	p.marks = nil
}

func (p *httpParser) server() {
	p.dead()
	p.state = psServer
	p.lastEvent = evServer
}

// resync finds the next request line at a line start.
func (p *httpParser) resync() bool {
	b := p.buf
	if len(b) == 0 {
		return false
	}
	if p.base == 0 && p.requests == 0 && isTLSRecord(b) {
		// A mid-stream start inside TLS: application data records.
		p.x.st.TLSStreams++
		p.dead()
		return false
	}
	i := 0
	if !p.atLineStart {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			p.skip(len(b))
			return false
		}
		i = nl + 1
	}
	for i < len(b) {
		_, ok, more, what := scanRequestLine(b[i:])
		if ok {
			p.skip(i)
			p.resyncing = false
			p.state = psHeader
			return true
		}
		if more {
			break
		}
		if what != "" && !p.damaged {
			// Another line a server would have refused: reported too.
			p.skip(i)
			p.malformedLine(what)
			return true
		}
		if p.requests == 0 && isStatusLine(b[i:]) {
			p.server()
			return false
		}
		nl := bytes.IndexByte(b[i:], '\n')
		if nl < 0 {
			i = len(b)
			break
		}
		i += nl + 1
	}
	p.skip(i)
	return false
}

// header waits for the end of the header block and parses it.
func (p *httpParser) header() bool {
	// Tolerate empty lines between requests (RFC 9112 2.2).
	n := 0
	for n < len(p.buf) && (p.buf[n] == '\r' || p.buf[n] == '\n') {
		n++
	}
	if n > 0 {
		p.consume(n)
	}
	b := p.buf
	if len(b) == 0 {
		return false
	}
	line, ok, more, what := scanRequestLine(b)
	if !ok {
		if more {
			return false
		}
		if what != "" {
			p.malformedLine(what)
			return true
		}
		p.x.warn(p.flow, "bytes where a request should start are not a request line; resynchronising")
		p.state = psResync
		p.resyncing = true
		return true
	}
	end := headerEnd(b, p.scan)
	if end < 0 {
		if len(b) > p.x.opt.MaxHeaderBytes {
			p.emitPartial(fmt.Sprintf("header block larger than %d bytes", p.x.opt.MaxHeaderBytes))
			p.consume(lineEnd(b))
			p.state = psResync
			return true
		}
		p.scan = max(0, len(b)-3)
		return false
	}
	req, targetErr, err := p.parseRequest(b[:end])
	if err != nil {
		// net/http refuses the header block: the request is reported
		// (incomplete, so never replayed) with the reason and counted, and
		// the parser resynchronises after its request line, since its
		// framing cannot be trusted.
		why := refusedReason(err)
		p.x.st.RequestsRefused[why]++
		p.x.warn(p.flow, "malformed request: "+why+"; resynchronising")
		p.emitPartial("malformed request: net/http refuses it: " + why)
		p.consume(lineEnd(b))
		p.state = psResync
		return true
	}
	p.tolerated(line.tolerated)
	p.req = req
	p.targetErr = targetErr
	p.hdrLen = end
	p.missing, p.dropped, p.tooBig = 0, 0, false
	p.chunked = len(req.TransferEncoding) > 0
	p.clen = req.ContentLength
	if p.chunked {
		p.clen = -1
		p.cPhase, p.cPos = 0, end
	} else if p.clen < 0 {
		p.clen = 0 // a request without framing has no body (RFC 9112 6.3)
	}
	if p.clen > int64(p.x.opt.MaxFlowBuffer) {
		p.tooBig = true
	}
	p.state = psBody
	return true
}

// body waits for the body and emits the complete request.
func (p *httpParser) body() bool {
	b := p.buf
	if p.chunked {
		end, err := p.chunkEnd()
		if err != nil {
			p.emitPartial("malformed chunked body: " + err.Error())
			p.consume(p.hdrLen)
			p.state = psResync
			return true
		}
		if end < 0 {
			if len(b) > p.x.opt.MaxFlowBuffer {
				p.emitPartial(fmt.Sprintf("chunked body larger than the per-flow buffer limit (%d bytes)", p.x.opt.MaxFlowBuffer))
				p.x.st.SkippedBytes += int64(len(b) - p.hdrLen)
				p.consume(len(b))
				p.state = psResync
				return true
			}
			return false
		}
		full, _, err := p.parseRequest(b[:end])
		var body []byte
		if err == nil {
			body, err = io.ReadAll(full.Body)
		}
		if err != nil {
			p.emitPartial("malformed chunked body: " + err.Error())
			p.consume(p.hdrLen)
			p.state = psResync
			return true
		}
		r := p.build(b[:p.hdrLen], body)
		r.Chunked = true
		r.Trailer = rawFields(b[p.trailer:end])
		p.emit(r)
		p.consume(end)
		return true
	}
	if p.tooBig {
		take := min(int64(len(b)-p.hdrLen), p.clen-p.dropped-p.missing)
		if take > 0 {
			copy(b[p.hdrLen:], b[p.hdrLen+int(take):])
			p.buf = b[:len(b)-int(take)]
			p.dropped += take
		}
		if p.dropped+p.missing < p.clen {
			return false
		}
		r := p.build(p.buf[:p.hdrLen], nil)
		r.Incomplete = true
		r.Problem = fmt.Sprintf("body of %d bytes exceeds the per-flow buffer limit (%d bytes); not kept", p.clen, p.x.opt.MaxFlowBuffer)
		p.emit(r)
		p.consume(p.hdrLen)
		return true
	}
	if p.clen > 0 && p.missing == 0 && len(b) > p.hdrLen && strings.EqualFold(p.req.Header.Get("Expect"), "100-continue") {
		if ok, _ := isRequestLine(b[p.hdrLen:]); ok {
			// The server answered the headers with a final status and the
			// client moved on without sending the body.
			r := p.build(b[:p.hdrLen], nil)
			r.Incomplete = true
			r.Problem = "body never sent (Expect: 100-continue answered with a final status)"
			p.emit(r)
			p.consume(p.hdrLen)
			return true
		}
	}
	need := int64(p.hdrLen) + p.clen - p.missing
	if int64(len(b)) < need {
		return false
	}
	r := p.build(b[:p.hdrLen], b[p.hdrLen:need])
	if p.missing > 0 {
		r.Incomplete = true
		r.Problem = fmt.Sprintf("%d of %d body bytes missing from the capture", p.missing, p.clen)
	}
	p.emit(r)
	p.consume(int(need))
	return true
}

// parseRequest runs http.ReadRequest over a header block (or a whole
// chunked message). When Go's URL parser refuses the request target (an
// invalid percent-escape such as "/%" or "/%5", which scanners and broken
// clients send and gateways must cope with), the block is parsed again
// with the path replaced by "/" — the target takes no part in framing —
// and the parser's complaint is returned as targetErr: the request keeps
// its target as written, and the replayer sends it verbatim.
func (p *httpParser) parseRequest(block []byte) (req *http.Request, targetErr string, err error) {
	method, target, proto, ok := splitRequestLine(block)
	why := ""
	goProto := proto
	if _, _, good := http.ParseHTTPVersion(proto); !good && ok {
		// "HTTP/1.10", which nginx takes: the minor version plays no
		// part in a request's framing.
		goProto = "HTTP/1.1"
	}
	if ok && strings.IndexByte(target, ' ') >= 0 {
		// net/http would take the rest of the target for the version.
		why = "target contains spaces"
		err = errors.New(why)
	} else {
		if ok && !canonicalLine(block, method, target, goProto) {
			// A line nginx takes and net/http does not (several
			// spaces, spaces after the version, "HTTP/1.10"): net/http
			// parses the same request on a canonical line; the request
			// keeps its target and version as written.
			req, err = p.x.readRequest(withLine(block, method, target, goProto))
			if err == nil {
				req.Proto = proto
			}
		} else {
			req, err = p.x.readRequest(block)
		}
		var ue *url.Error
		if err == nil || !errors.As(err, &ue) || !ok {
			return req, "", err
		}
		why = ue.Err.Error()
	}
	stand := "/"
	if i := strings.Index(target, "://"); i > 0 && method != http.MethodConnect {
		// Absolute-form: keep the authority, which gives the Host.
		rest := target[i+3:]
		auth := rest[:strings.IndexAny(rest+"/", "/?")]
		stand = target[:i+3] + auth + "/"
	}
	req, err2 := p.x.readRequest(withLine(block, method, stand, goProto))
	if err2 != nil {
		return nil, "", err // refused for more than its target
	}
	req.RequestURI = target
	req.Proto = proto
	return req, why, nil
}

// refusedReason is net/http's complaint about a request without the
// bytes it quotes (a header line net/http refuses may carry a secret),
// which also makes refusals countable by kind.
func refusedReason(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '"'); i > 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, ": ")
}

// chunkEnd advances the chunked-framing scan and returns the offset just
// past the body's trailer section, or -1 when more bytes are needed.
// It only finds the end: net/http decodes the body.
func (p *httpParser) chunkEnd() (int, error) {
	b := p.buf
	for {
		switch p.cPhase {
		case 0: // chunk-size line
			nl := bytes.IndexByte(b[p.cPos:], '\n')
			if nl < 0 {
				if len(b)-p.cPos > 4096 {
					return 0, fmt.Errorf("chunk-size line longer than 4096 bytes")
				}
				return -1, nil
			}
			line := strings.TrimRight(string(b[p.cPos:p.cPos+nl]), "\r")
			if i := strings.IndexByte(line, ';'); i >= 0 {
				line = line[:i]
			}
			n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("bad chunk size %q", line)
			}
			p.cPos += nl + 1
			if n == 0 {
				p.cPhase, p.trailer = 3, p.cPos
			} else {
				p.cRemain, p.cPhase = n, 1
			}
		case 1: // chunk data
			avail := int64(len(b) - p.cPos)
			if avail < p.cRemain {
				p.cPos += int(avail)
				p.cRemain -= avail
				return -1, nil
			}
			p.cPos += int(p.cRemain)
			p.cPhase = 2
		case 2: // CRLF after the data
			if len(b)-p.cPos < 1 || (b[p.cPos] == '\r' && len(b)-p.cPos < 2) {
				return -1, nil
			}
			if b[p.cPos] == '\r' {
				p.cPos++
			}
			if b[p.cPos] != '\n' {
				return 0, fmt.Errorf("missing CRLF after chunk data")
			}
			p.cPos++
			p.cPhase = 0
		case 3: // trailer section, up to an empty line
			nl := bytes.IndexByte(b[p.cPos:], '\n')
			if nl < 0 {
				return -1, nil
			}
			empty := nl == 0 || (nl == 1 && b[p.cPos] == '\r')
			p.cPos += nl + 1
			if empty {
				return p.cPos, nil
			}
		}
	}
}

// build makes a Request from the parsed header and the raw header block.
func (p *httpParser) build(block, body []byte) *Request {
	m := p.markAt(p.base)
	line := block[:lineEnd(block)]
	r := &Request{
		Time:   m.ts,
		Flow:   p.flow,
		Method: p.req.Method,
		Target: p.req.RequestURI,
		Proto:  p.req.Proto,
		Host:   p.req.Host,
		Header: rawFields(block[len(line):]),
		Body:   bytes.Clone(body),
		pkt:    m.pkt,

		TargetError: p.targetErr,
	}
	if body == nil {
		r.Body = nil
	}
	return r
}

// emitPartial reports the request in progress as incomplete.
func (p *httpParser) emitPartial(why string) {
	var r *Request
	if p.state == psBody && p.req != nil {
		end := min(len(p.buf), p.hdrLen+int(max(p.clen, 0)))
		var body []byte
		if !p.chunked {
			body = p.buf[p.hdrLen:end]
		}
		r = p.build(p.buf[:p.hdrLen], body)
		r.Chunked = p.chunked
	} else {
		m := p.markAt(p.base)
		method, target, proto, ok := splitRequestLine(p.buf)
		if !ok {
			return
		}
		r = &Request{Time: m.ts, Flow: p.flow, Method: method, Target: target, Proto: proto, pkt: m.pkt}
		// Keep the header fields that did arrive.
		block := p.buf[lineEnd(p.buf):]
		if e := bytes.LastIndexByte(block, '\n'); e >= 0 {
			r.Header = rawFields(block[:e+1])
			r.Host = r.Get("Host")
		}
	}
	r.Incomplete = true
	r.Problem = why
	p.emit(r)
	p.req = nil
}

func (p *httpParser) emit(r *Request) {
	if r.Host == "" && p.socks != nil {
		// No Host header and no absolute-form target (HTTP/1.0):
		// the SOCKS request named the server.
		r.Host = p.socks.hello.target
	}
	p.requests++
	p.sent(r.Method)
	p.state = psHeader
	p.req = nil
	p.lastEvent = evRequest
	p.x.complete(r)
	if r.Method == http.MethodConnect && !r.Incomplete {
		// What follows is a tunnel (usually TLS), not HTTP requests.
		p.stopAfter = true
	}
}

// headerEnd returns the offset just past the empty line ending the header
// block, searching from from, or -1.
func headerEnd(b []byte, from int) int {
	for i := from; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j + 1
		if i < len(b) && b[i] == '\n' {
			return i + 1
		}
		if i+1 < len(b) && b[i] == '\r' && b[i+1] == '\n' {
			return i + 2
		}
	}
	return -1
}

// lineEnd returns the offset just past the first newline, or len(b).
func lineEnd(b []byte) int {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return i + 1
	}
	return len(b)
}

// maxRequestLine bounds the request line the resynchroniser waits for.
const maxRequestLine = 16 << 10

// isRequestLine reports whether b starts with a request line a tolerant
// server takes (scanRequestLine), or that more bytes are needed to tell.
// The target runs to the last space of the line: real clients send
// targets with spaces in them, which are kept (and replayed) as written.
func isRequestLine(b []byte) (ok, more bool) {
	_, ok, more, _ = scanRequestLine(b)
	return ok, more
}

// isStatusLine reports whether b starts like an HTTP/1.x response.
func isStatusLine(b []byte) bool {
	return len(b) >= 12 && string(b[:7]) == "HTTP/1." && b[8] == ' ' &&
		b[9] >= '1' && b[9] <= '5' && b[10] >= '0' && b[10] <= '9' && b[11] >= '0' && b[11] <= '9'
}

// isTLSRecord reports whether b starts with a TLS record header.
func isTLSRecord(b []byte) bool {
	return len(b) >= 5 && b[0] >= 0x14 && b[0] <= 0x17 && b[1] == 3 && b[2] <= 4
}

// splitRequestLine splits the first line of b into method, target and
// version: the method ends at the first space, the version is the last
// word, and the target is what is between, runs of spaces around it
// dropped (nginx takes several; a target may hold spaces).
func splitRequestLine(b []byte) (method, target, proto string, ok bool) {
	line := strings.TrimRight(string(b[:lineEnd(b)]), "\r\n")
	line = strings.TrimRight(line, " ")
	method, rest, ok1 := strings.Cut(line, " ")
	rest = strings.TrimLeft(rest, " ")
	k := strings.LastIndexByte(rest, ' ')
	if !ok1 || k < 0 || method == "" {
		return "", "", "", false
	}
	return method, strings.TrimRight(rest[:k], " "), rest[k+1:], true
}

// rawFields splits a header (or trailer) block into fields, keeping order
// and case; obsolete line folding is joined with a space. net/http has
// already validated the block; this only recovers what it normalises.
func rawFields(block []byte) []HeaderField {
	var out []HeaderField
	for len(block) > 0 {
		n := lineEnd(block)
		line := strings.TrimRight(string(block[:n]), "\r\n")
		block = block[n:]
		if line == "" {
			break
		}
		if (line[0] == ' ' || line[0] == '\t') && len(out) > 0 {
			out[len(out)-1].Value += " " + strings.TrimSpace(line)
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		out = append(out, HeaderField{Name: name, Value: strings.Trim(value, " \t")})
	}
	return out
}
