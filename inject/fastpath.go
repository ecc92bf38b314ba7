package inject

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http/httpguts"

	"github.com/halfopen/rehearse/journal"
)

// The proxy mode's fast path. A fault proxy spends most of its life passing
// through requests that no fault targets, and net/http's full machinery
// (a server goroutine reading ahead, the transport's read and write
// goroutines, parsing into and serialising out of http.Request and
// http.Response) costs more than twice a TCP relay per request
// (docs/benchmarks.md). So each gateway connection is first served here,
// one goroutine per connection, one upstream connection per gateway
// connection: the request head is read and parsed in place, checked
// against the active faults, and when none could target it the request is
// written to the real upstream with only the proxy's header rewrites
// (Host, X-Forwarded-*, hop-by-hop fields: what httputil.ReverseProxy
// does), and the response is relayed as the upstream sent it, byte for
// byte, parsed only for its framing and the journal's fields.
//
// Whatever the fast path does not take — a request an active fault could
// target, and anything unusual (HTTP/1.0, Expect, Upgrade, chunked or
// large request bodies, heads over 32 KiB, malformed input, a refused
// dial) — is handed over, unread, with its connection to the full HTTP
// path (http.Server and the reverse proxy, where every fault acts), which
// then serves that connection for the rest of its life.

// fastBuf is the size of each direction's read buffer. A request whose
// head and body do not fit is handed over.
const fastBuf = 32 << 10

// fastPathOff turns the proxy's fast path off for upstreams made while it
// is set (benchmarks comparing both paths); REHEARSE_INJECT_FASTPATH=off
// in the environment sets it, and fakeFastPathOff, from the start: an
// escape hatch, and the other half of a paired measurement.
var fastPathOff = os.Getenv("REHEARSE_INJECT_FASTPATH") == "off"

// fastProxy is what the fast path needs of a proxy-mode upstream.
type fastProxy struct {
	addr    string // host:port to dial
	host    string // the outbound Host header
	dialer  net.Dialer
	answers answerTimes // the upstream's recent answer times (fastpath_spin.go)
}

// newFastProxy returns the fast path for target, or nil when it does not
// apply (https targets, targets with a path or query to join).
func newFastProxy(target string) *fastProxy {
	t, err := url.Parse(target)
	if err != nil || t.Scheme != "http" || (t.Path != "" && t.Path != "/") || t.RawQuery != "" || t.User != nil {
		return nil
	}
	addr := t.Host
	if t.Port() == "" {
		addr = net.JoinHostPort(t.Hostname(), "80")
	}
	return &fastProxy{addr: addr, host: t.Host, dialer: net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second},
		answers: answerTimes{off: spinOff}}
}

// connQueue is the listener through which the fast path hands connections
// to the http.Server of the full path.
type connQueue struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
	addr net.Addr
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{ch: make(chan net.Conn), done: make(chan struct{}), addr: addr}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }

// push hands c over; false when the server has closed.
func (q *connQueue) push(c net.Conn) bool {
	select {
	case q.ch <- c:
		return true
	case <-q.done:
		return false
	}
}

// handedConn is a gateway connection handed to the full path with what the
// fast path had buffered but not consumed. It embeds the *net.TCPConn, so
// that faults on the hijacked connection (SetLinger for a reset, the send
// queue for a cut) reach the socket.
type handedConn struct {
	*net.TCPConn
	br *bufio.Reader
}

func (h *handedConn) Read(p []byte) (int, error) { return h.br.Read(p) }

// fastConn is one gateway connection on the fast path.
type fastConn struct {
	u      *upstream
	fp     *fastProxy
	c      *net.TCPConn
	br     *bufio.Reader
	remote string
	ip     string // the gateway's address without port, for X-Forwarded-For

	up     net.Conn
	upr    upReader // what ubr reads up through
	ubr    *bufio.Reader
	reused bool   // up has carried a request already
	watch  bool   // a wait watches the gateway for a hang-up (fastfake.go)
	body   []byte // a fake's JSON body, reused (fastfake.go)
	ending func() // called by relayN before the write that completes an answer

	out    []byte      // the outbound request, reused
	header http.Header // the request's header, reused
	names  []string    // canonical header names, in order, parallel to lines
	values []string    // backing of the header's single values
	lines  [][2]int    // spans of the header lines in the head

	completed prometheus.Counter // the requests counter of complete exchanges, looked up once
}

// fastReq is one request head parsed in place.
type fastReq struct {
	method, target, path, host string
	head                       []byte // the head, CRLF CRLF included (in br's buffer)
	bodyLen                    int
	close                      bool
	connTokens                 []string // names listed in Connection
}

// acceptFast accepts connections until ln closes, serving each on the
// fast path (the proxy's, or the fake's: fastfake.go).
func (u *upstream) acceptFast(ln net.Listener) {
	u.acceptConns(ln, func(c net.Conn) {
		tc, ok := c.(*net.TCPConn)
		if !ok {
			c.Close()
			return
		}
		u.serveFast(tc)
	})
}

// serveFast serves one gateway connection, proxy or fake, until it closes
// or is handed over.
func (u *upstream) serveFast(c *net.TCPConn) {
	fc := &fastConn{u: u, fp: u.fast, c: c, br: bufio.NewReaderSize(c, fastBuf), remote: c.RemoteAddr().String(), header: http.Header{},
		completed: u.s.m.requests.WithLabelValues(u.cfg.Name, string(journal.OutcomeUpstreamComplete))}
	fc.ip, _, _ = net.SplitHostPort(fc.remote)
	defer fc.dropUp()
	for {
		r, ok, err := fc.readHead()
		if err != nil {
			c.Close()
			return
		}
		if ok {
			var body []byte
			if r.bodyLen > 0 {
				b, _ := fc.br.Peek(len(r.head) + r.bodyLen) // buffered by readHead
				body = b[len(r.head):]
			}
			info, probe := u.classifyParts(r.method, r.path, fc.header, body)
			serve := fc.exchange
			if u.fake != nil {
				serve = fc.fakeExchange
			}
			if u.targetable(info) {
				ok = false
			} else if done, handed := serve(&r, info, probe); handed {
				ok = false
			} else if done {
				c.Close()
				return
			} else {
				continue
			}
		}
		// The full path takes the connection, this request unread.
		if !u.handoff.push(&handedConn{TCPConn: c, br: fc.br}) {
			c.Close()
		}
		return
	}
}

// targetable reports whether an active fault could act on the request,
// without counting it (the full path's pick does that).
func (u *upstream) targetable(info reqInfo) bool {
	for _, f := range *u.faults.Load() {
		if httpUsable(f) && f.active.Load() && (!info.health || f.spec.HealthChecks) && f.match.matches(info) {
			return true
		}
	}
	return false
}

var crlfcrlf = []byte("\r\n\r\n")

// readHead waits for the next request's head and parses it without
// consuming it. ok is false when the fast path does not take the request;
// err is set when the connection is done (closed between requests, or a
// read failed).
func (fc *fastConn) readHead() (r fastReq, ok bool, err error) {
	want := 1
	var buf []byte
	for {
		if _, err := fc.br.Peek(want); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return r, false, nil
			}
			if fc.br.Buffered() > 0 {
				return r, false, nil // a partial request: the full path answers it
			}
			return r, false, err
		}
		buf, _ = fc.br.Peek(fc.br.Buffered())
		if i := bytes.Index(buf, crlfcrlf); i >= 0 {
			buf = buf[:i+4]
			break
		}
		want = len(buf) + 1
	}
	if !fc.parseHead(buf, &r) {
		return r, false, nil
	}
	if len(buf)+r.bodyLen > fastBuf {
		return r, false, nil
	}
	if r.bodyLen > 0 {
		if _, err := fc.br.Peek(len(buf) + r.bodyLen); err != nil {
			return r, false, nil
		}
	}
	r.head = buf
	return r, true, nil
}

// parseHead parses an HTTP/1.1 request head strictly enough for the fast
// path; anything it does not accept goes to the full path, which answers
// as net/http does.
func (fc *fastConn) parseHead(head []byte, r *fastReq) bool {
	clear(fc.header)
	fc.names, fc.lines, fc.values = fc.names[:0], fc.lines[:0], fc.values[:0]
	eol := bytes.Index(head, []byte("\r\n"))
	line := head[:eol]
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return false
	}
	rest := line[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 <= 0 || string(rest[sp2+1:]) != "HTTP/1.1" {
		return false
	}
	method, target := line[:sp1], rest[:sp2]
	for _, b := range method {
		if !isTokenByte(b) {
			return false
		}
	}
	if target[0] != '/' {
		return false
	}
	for _, b := range target {
		if b <= ' ' || b == 0x7f {
			return false
		}
	}
	// One copy of the head; the method, target, names and values are
	// slices of it (no allocation per field).
	hs := string(head)
	r.method, r.target = hs[:sp1], hs[sp1+1:sp1+1+sp2]
	if bytes.IndexByte(target, '%') < 0 {
		// What url.ParseRequestURI returns as the path of an
		// origin-form target with nothing to unescape.
		r.path, _, _ = strings.Cut(r.target, "?")
	} else {
		u, err := url.ParseRequestURI(r.target)
		if err != nil {
			return false
		}
		r.path = u.Path
	}
	r.bodyLen = 0
	haveCL, haveHost := false, false
	pos := eol + 2
	for pos < len(head)-2 {
		end := pos + bytes.Index(head[pos:], []byte("\r\n"))
		l := head[pos:end]
		colon := bytes.IndexByte(l, ':')
		if colon <= 0 {
			return false
		}
		for _, b := range l[:colon] {
			if !isTokenByte(b) {
				return false
			}
		}
		for _, b := range l[colon+1:] {
			if b < ' ' && b != '\t' || b == 0x7f {
				return false // net/http's server refuses control bytes in a value
			}
		}
		name := textproto.CanonicalMIMEHeaderKey(hs[pos : pos+colon])
		value := strings.Trim(hs[pos+colon+1:end], " \t")
		if vs, ok := fc.header[name]; ok {
			fc.header[name] = append(vs, value)
		} else {
			// Single values share one backing array, capped so that a
			// repeated field's append copies.
			fc.values = append(fc.values, value)
			n := len(fc.values)
			fc.header[name] = fc.values[n-1 : n : n]
		}
		fc.names = append(fc.names, name)
		fc.lines = append(fc.lines, [2]int{pos, end + 2})
		switch name {
		case "Content-Length":
			n, err := strconv.ParseUint(value, 10, 31)
			if err != nil || haveCL {
				return false
			}
			haveCL, r.bodyLen = true, int(n)
		case "Transfer-Encoding", "Expect", "Upgrade":
			return false
		case "Host":
			if haveHost || !httpguts.ValidHostHeader(value) {
				return false // net/http's server refuses a repeated Host (even after an empty one) and a malformed one
			}
			haveHost, r.host = true, value
		case "Connection":
			for _, tok := range strings.Split(value, ",") {
				tok = textproto.TrimString(tok)
				if strings.EqualFold(tok, "close") {
					r.close = true
				} else if strings.EqualFold(tok, "upgrade") {
					return false
				}
				if tok != "" {
					r.connTokens = append(r.connTokens, textproto.CanonicalMIMEHeaderKey(tok))
				}
			}
		}
		pos = end + 2
	}
	return r.host != ""
}

func isTokenByte(b byte) bool { return tokenBytes[b] }

// tokenBytes are the bytes of an RFC 9110 token.
var tokenBytes = func() (t [256]bool) {
	for b := '!'; b < 0x7f; b++ {
		t[b] = !strings.ContainsRune("\"(),/:;<=>?@[\\]{}", b)
	}
	return t
}()

// hopByHop are the request fields the proxy does not forward
// (httputil.ReverseProxy's list), with the X-Forwarded-* fields it sets.
var hopByHop = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Host": true, "Forwarded": true, "X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true,
}

// outbound builds the request for the real upstream in fc.out: the
// request line as received, the header with the reverse proxy's rewrites,
// the body.
func (fc *fastConn) outbound(r *fastReq) []byte {
	b := fc.out[:0]
	b = append(b, r.head[:bytes.Index(r.head, []byte("\r\n"))+2]...)
	b = append(b, "Host: "...)
	b = append(b, fc.fp.host...)
	b = append(b, "\r\n"...)
	hasUA := false
	for i, name := range fc.names {
		if hopByHop[name] {
			if name == "Te" && strings.EqualFold(fc.header.Get("Te"), "trailers") {
				b = append(b, "Te: trailers\r\n"...)
			}
			continue
		}
		skip := false
		for _, tok := range r.connTokens {
			if tok == name {
				skip = true
			}
		}
		if skip {
			continue
		}
		if name == "User-Agent" {
			hasUA = true
		}
		sp := fc.lines[i]
		b = append(b, r.head[sp[0]:sp[1]]...)
	}
	_ = hasUA // no User-Agent is added when the gateway sent none, as ReverseProxy
	if fc.ip != "" {
		b = append(b, "X-Forwarded-For: "...)
		b = append(b, fc.ip...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "X-Forwarded-Host: "...)
	b = append(b, r.host...)
	b = append(b, "\r\nX-Forwarded-Proto: http\r\n"...)
	if r.close {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "\r\n"...)
	if r.bodyLen > 0 {
		body, _ := fc.br.Peek(len(r.head) + r.bodyLen)
		b = append(b, body[len(r.head):]...)
	}
	fc.out = b
	return b
}

// idempotent reports whether a request may be sent twice (http.Transport's
// rule for resending on a connection that closed).
func idempotent(method string, h http.Header) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return h.Get("Idempotency-Key") != "" || h.Get("X-Idempotency-Key") != ""
}

// respHead is what the fast path reads of a response head.
type respHead struct {
	status     int
	proto10    bool
	length     int64 // -1: unknown
	chunked    bool
	close      bool
	retryAfter string
	size       int // bytes of the head
}

// errBadResponse is an upstream response the fast path cannot frame.
var errBadResponse = errors.New("malformed response from the upstream")

// readResponseHead waits for the upstream's next response head and parses
// it in place (in ubr's buffer).
func (fc *fastConn) readResponseHead() (h respHead, err error) {
	want := 1
	var buf []byte
	for {
		if _, err := fc.ubr.Peek(want); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return h, errBadResponse
			}
			return h, err
		}
		buf, _ = fc.ubr.Peek(fc.ubr.Buffered())
		if i := bytes.Index(buf, crlfcrlf); i >= 0 {
			buf = buf[:i+4]
			break
		}
		want = len(buf) + 1
	}
	h.size, h.length = len(buf), -1
	eol := bytes.Index(buf, []byte("\r\n"))
	line := string(buf[:eol])
	if len(line) < 12 || !strings.HasPrefix(line, "HTTP/1.") || line[8] != ' ' {
		return h, errBadResponse
	}
	h.proto10 = line[7] == '0'
	code, err := strconv.Atoi(line[9:12])
	if err != nil || code < 100 || (len(line) > 12 && line[12] != ' ') {
		return h, errBadResponse
	}
	h.status = code
	keepAlive := false
	pos := eol + 2
	for pos < len(buf)-2 {
		end := pos + bytes.Index(buf[pos:], []byte("\r\n"))
		l := buf[pos:end]
		pos = end + 2
		colon := bytes.IndexByte(l, ':')
		if colon <= 0 {
			return h, errBadResponse
		}
		name := l[:colon]
		value := textproto.TrimBytes(l[colon+1:])
		switch {
		case asciiEqualFold(name, "content-length"):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || (h.length >= 0 && h.length != n) {
				return h, errBadResponse
			}
			h.length = n
		case asciiEqualFold(name, "transfer-encoding"):
			if !asciiEqualFold(value, "chunked") {
				return h, errBadResponse
			}
			h.chunked = true
		case asciiEqualFold(name, "connection"):
			for _, tok := range strings.Split(string(value), ",") {
				switch strings.ToLower(textproto.TrimString(tok)) {
				case "close":
					h.close = true
				case "keep-alive":
					keepAlive = true
				}
			}
		case asciiEqualFold(name, "retry-after"):
			h.retryAfter = string(value)
		}
	}
	if h.proto10 && !keepAlive {
		h.close = true
	}
	if h.chunked {
		h.length = -1
	}
	return h, nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// dial connects to the real upstream.
func (fc *fastConn) dial() error {
	ctx, cancel := context.WithTimeout(fc.u.s.ctx, fc.fp.dialer.Timeout)
	defer cancel()
	c, err := fc.fp.dialer.DialContext(ctx, "tcp", fc.fp.addr)
	if err != nil {
		return err
	}
	fc.up, fc.reused = c, false
	// Tracked with the gateway's connections, so that closing or pausing
	// the upstream also ends a wait for the real upstream.
	fc.u.mu.Lock()
	stopped := fc.u.stopped
	fc.u.conns[c] = struct{}{}
	fc.u.mu.Unlock()
	if stopped {
		c.Close()
	}
	fc.upr = newUpReader(c)
	if fc.ubr == nil {
		fc.ubr = bufio.NewReaderSize(&fc.upr, fastBuf)
	} else {
		fc.ubr.Reset(&fc.upr)
	}
	return nil
}

func (fc *fastConn) dropUp() {
	if fc.up != nil {
		fc.up.Close()
		fc.u.mu.Lock()
		delete(fc.u.conns, fc.up)
		fc.u.mu.Unlock()
		fc.up = nil
	}
}

// exchange forwards one request and relays its response. done: the
// gateway connection must close; handed: nothing was sent to the gateway
// or recorded, and the full path must take the request (the upstream
// could not be reached).
func (fc *fastConn) exchange(r *fastReq, info reqInfo, probe string) (done, handed bool) {
	u, s := fc.u, fc.u.s
	arrival := s.now()
	if !u.handlers.enter() {
		return true, false // closing
	}
	defer u.handlers.leave()
	inFlight, untrack := u.track()
	// The full path records an exchange, and counts it out of flight,
	// when its handler returns: before net/http writes what it still
	// holds of the answer. finish does that here before the write that
	// completes the answer (fc.ending), so that the gateway's next request
	// never finds this one still in flight.
	var ev *journal.UpstreamRequest
	finished := false
	finish := func() {
		if !finished {
			finished = true
			untrack()
			if ev != nil {
				fc.record(arrival, ev)
			}
		}
	}
	defer finish()
	// Counted as the full path counts arrivals, so that a handed-over
	// request's sampled delays draw what they would without the fast path.
	u.ordinal.Add(1)
	out := fc.outbound(r)
	var h respHead
	var err error
	if fc.up != nil && fc.reused && (fc.ubr.Buffered() > 0 || peerClosed(fc.up)) {
		// Closed by the upstream while idle, or bytes beyond its last
		// response (http.Transport notices either with its read-ahead
		// goroutine): a new connection, before anything is sent.
		fc.dropUp()
	}
	for attempt := 0; ; attempt++ {
		if fc.up == nil {
			if err := fc.dial(); err != nil {
				return false, true // the full path reports the unreachable upstream
			}
		}
		if _, err = fc.up.Write(out); err == nil {
			sent := time.Now()
			poll := fc.fp.answers.spin(inFlight)
			fc.upr.spinFor(poll)
			h, err = fc.readResponseHead()
			fc.upr.spinFor(0)
			if err == nil {
				fc.fp.answers.add(time.Since(sent), poll > 0)
			}
		}
		if err == nil {
			break
		}
		// A kept-alive upstream connection may have been closed just as
		// the request went out: an idempotent request is sent once more
		// on a new connection, as http.Transport does, when nothing of a
		// response arrived.
		retry := fc.reused && attempt == 0 && fc.ubr.Buffered() == 0 && !errors.Is(err, errBadResponse) && idempotent(r.method, fc.header)
		fc.dropUp()
		if !retry {
			break
		}
	}
	fc.br.Discard(len(r.head) + r.bodyLen)
	ev = u.newEvent(r.method, r.path, fc.remote, fc.header, info, probe, inFlight)
	complete := func(bytes int64) {
		ev.Bytes, ev.Outcome = bytes, journal.OutcomeUpstreamComplete
		finish()
	}
	if err != nil {
		// Sent, and no response: answer as the full path's error handler.
		code, body := proxyError(fc.fp.host, err)
		resp := make([]byte, 0, 256+len(body))
		resp = append(resp, "HTTP/1.1 "...)
		resp = strconv.AppendInt(resp, int64(code), 10)
		resp = append(resp, ' ')
		resp = append(resp, http.StatusText(code)...)
		resp = append(resp, "\r\nContent-Type: application/json\r\nDate: "...)
		resp = time.Now().UTC().AppendFormat(resp, http.TimeFormat)
		resp = append(resp, "\r\nContent-Length: "...)
		resp = strconv.AppendInt(resp, int64(len(body)), 10)
		resp = append(resp, "\r\n\r\n"...)
		resp = append(resp, body...)
		ev.Status = code
		complete(int64(len(body))) // a small answer: net/http would write it after the handler returned
		if _, werr := fc.c.Write(resp); werr != nil {
			return true, false
		}
		return r.close, false
	}
	fc.reused = true
	// Informational responses go through as they are; the final one
	// follows on the same connection.
	for h.status >= 100 && h.status < 200 && h.status != http.StatusSwitchingProtocols {
		if err := fc.relayN(int64(h.size), nil); err != nil {
			ev.Outcome = relayOutcome(err)
			return true, false
		}
		if h, err = fc.readResponseHead(); err != nil {
			ev.Outcome = journal.OutcomeUpstreamCut
			return true, false
		}
	}
	ev.Status = h.status
	// The final head is relayed from here on: the gateway cannot read it
	// earlier.
	ev.HeadersAt = s.now()
	if d, ok := parseRetryAfter(h.retryAfter, time.Now()); ok {
		ev.RetryAfter = d
	}
	var n int64
	switch {
	case h.status == http.StatusSwitchingProtocols:
		err = fc.relayN(int64(h.size), nil)
		if err == nil {
			n, err = fc.tunnel()
		}
		done = true
	case r.method == http.MethodHead || h.status == http.StatusNoContent || h.status == http.StatusNotModified:
		fc.ending = func() { complete(0) }
		err = fc.relayN(int64(h.size), nil)
	case h.chunked:
		if err = fc.relayN(int64(h.size), nil); err == nil {
			n, err = fc.relayChunked(complete)
		}
	case h.length >= 0:
		fc.ending = func() { complete(h.length) }
		err = fc.relayN(int64(h.size)+h.length, &n)
		n -= int64(h.size)
	default:
		// Delimited by the upstream closing: relay to the end, then
		// close the gateway's connection too.
		if err = fc.relayN(int64(h.size), nil); err == nil {
			n, err = fc.relayToEOF()
		}
		done = true
	}
	fc.ending = nil
	if finished {
		// Recorded complete before its last write, whatever that met.
		if err != nil || h.close || done {
			fc.dropUp()
		}
		return err != nil || done || h.close || r.close, false
	}
	ev.Bytes = max(n, 0)
	if err != nil {
		ev.Outcome = relayOutcome(err)
		fc.dropUp()
		return true, false
	}
	ev.Outcome = journal.OutcomeUpstreamComplete
	if h.close || done {
		fc.dropUp()
	}
	return done || h.close || r.close, false
}

// relayError is a failure to write to the gateway, as opposed to reading
// from the upstream.
type relayError struct{ err error }

func (e *relayError) Error() string { return e.err.Error() }
func (e *relayError) Unwrap() error { return e.err }

// relayOutcome is the journal outcome of a relay that failed with err.
func relayOutcome(err error) journal.Outcome {
	var re *relayError
	if errors.As(err, &re) {
		return journal.OutcomeUpstreamGone // the gateway hung up
	}
	// The upstream broke off its response: the gateway got it cut, as
	// the full path's reverse proxy would abort it.
	return journal.OutcomeUpstreamCut
}

// relayN relays n bytes from the upstream to the gateway, writing from the
// read buffer directly (head and body in one write when they arrived
// together); body, when set, counts the bytes relayed.
func (fc *fastConn) relayN(n int64, count *int64) error {
	for n > 0 {
		if fc.ubr.Buffered() == 0 {
			if _, err := fc.ubr.Peek(1); err != nil {
				return err
			}
		}
		k := min(int64(fc.ubr.Buffered()), n)
		b, _ := fc.ubr.Peek(int(k))
		if k == n && fc.ending != nil {
			fc.ending() // this write completes the answer
			fc.ending = nil
		}
		if _, err := fc.c.Write(b); err != nil {
			return &relayError{err}
		}
		fc.ubr.Discard(int(k))
		n -= k
		if count != nil {
			*count += k
		}
	}
	return nil
}

// relayChunked relays a chunked body as it is and returns its decoded
// length; complete is called with it before the write that ends the body.
func (fc *fastConn) relayChunked(complete func(body int64)) (int64, error) {
	var body int64
	for {
		line, err := fc.ubr.ReadSlice('\n')
		if err != nil {
			return body, err
		}
		size := line
		if i := bytes.IndexByte(size, ';'); i >= 0 {
			size = size[:i]
		}
		n, perr := strconv.ParseUint(string(textproto.TrimBytes(size)), 16, 62)
		if perr != nil {
			return body, errBadResponse
		}
		if _, err := fc.c.Write(line); err != nil {
			return body, &relayError{err}
		}
		if n == 0 {
			// Trailer fields, up to the empty line.
			for {
				line, err := fc.ubr.ReadSlice('\n')
				if err != nil {
					return body, err
				}
				end := len(textproto.TrimBytes(line)) == 0
				if end {
					complete(body)
				}
				if _, err := fc.c.Write(line); err != nil {
					return body, &relayError{err}
				}
				if end {
					return body, nil
				}
			}
		}
		var got int64
		err = fc.relayN(int64(n), &got)
		body += got
		if err != nil {
			return body, err
		}
		if err := fc.relayN(2, nil); err != nil { // the chunk's CRLF
			return body, err
		}
	}
}

// relayToEOF relays until the upstream closes.
func (fc *fastConn) relayToEOF() (int64, error) {
	var n int64
	for {
		if fc.ubr.Buffered() == 0 {
			if _, err := fc.ubr.Peek(1); errors.Is(err, io.EOF) {
				return n, nil
			} else if err != nil {
				return n, err
			}
		}
		if err := fc.relayN(int64(fc.ubr.Buffered()), &n); err != nil {
			return n, err
		}
	}
}

// tunnel relays both ways after 101 Switching Protocols until either side
// ends.
func (fc *fastConn) tunnel() (int64, error) {
	go func() {
		io.Copy(fc.up, fc.br)
		closeWrite(fc.up)
	}()
	n, err := fc.relayToEOF()
	return n, err
}

// proxyError is the full path's answer when the upstream cannot be
// reached: 504 for a timeout, else 502, with a JSON body naming host.
func proxyError(host string, err error) (int, []byte) {
	code := http.StatusBadGateway
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		code = http.StatusGatewayTimeout
	}
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		err = errors.New("the upstream closed the connection without a response")
	}
	msg := "rehearse proxy: upstream " + host + " unreachable: " + err.Error()
	return code, []byte(`{"error":{"code":"proxy_error","message":` + strconv.Quote(msg) + "}}\n")
}
