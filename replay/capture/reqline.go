package capture

import (
	"bytes"
	"strconv"
)

// A request line is taken as a tolerant server takes it: what Go's
// net/http server or nginx accepts, whichever is more lenient, so that a
// request a real server answered is never lost. From their sources
// (net/http's parseRequestLine, ParseHTTPVersion and validMethod; nginx
// 1.22's ngx_http_parse_request_line):
//
//   - method: Go takes any token ("get" too); nginx upper-case letters,
//     '-' and '_';
//   - separators: Go exactly one space; nginx one or more, and spaces
//     after the version;
//   - version: Go "HTTP/" digit "." digit, major 1 for its HTTP/1 server;
//     nginx "HTTP/1." and up to three minor digits ("HTTP/1.10");
//     neither takes "HTTP/1.0.8", "HTTP/2.0" on a text line, or no
//     version but for nginx's HTTP/0.9 GET;
//   - line end: CRLF or a bare LF for both.
//
// The target runs to the last space before the version, as before: real
// clients send targets with spaces and control bytes, which are kept and
// replayed as written (Request.TargetError). A line that has the shape of
// a request line (a word, a space, ..., " HTTP/" near its end) but that
// no such server takes is reported as a malformed request saying what was
// malformed, and the parser looks for the next request line after it.

// Tolerated request-line forms that Go's net/http refuses, for the stats.
const (
	tolSpaces      = 1 << iota // several spaces between method, target and version
	tolTrailing                // spaces after the version
	tolMinorDigits             // a minor version of two or three digits
)

// toleratedNames says each tolerated form in words.
var toleratedNames = []struct {
	bit  int
	name string
}{
	{tolSpaces, "several spaces between method, target and version (nginx takes them)"},
	{tolTrailing, "spaces after the version (nginx takes them)"},
	{tolMinorDigits, "a minor version of two or three digits (nginx takes HTTP/1.10)"},
}

// reqLine is a request line scanned in place: offsets into the buffer.
type reqLine struct {
	methodEnd            int // method is b[:methodEnd]
	targetStart, tgtEnd  int
	versionStart, verEnd int
	end                  int // past the LF
	tolerated            int // tol* bits
}

// isTchar reports whether c may appear in a token (RFC 9110 5.6.2), as
// Go's validMethod checks.
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// maxMethod bounds the method the scanner waits for: a longer first word
// is not a request line.
const maxMethod = 24

// scanRequestLine scans the request line at the start of b. ok: a line a
// tolerant server takes; more: more bytes are needed to tell; otherwise
// what says what is malformed when the line has a request line's shape
// ("" when it has not: not HTTP, or not a line start).
func scanRequestLine(b []byte) (l reqLine, ok, more bool, what string) {
	i := 0
	for i < len(b) && i < maxMethod && isTchar(b[i]) {
		i++
	}
	if i == len(b) {
		return l, false, i < maxMethod, ""
	}
	if i == 0 || b[i] != ' ' {
		if i == 0 || i == maxMethod {
			return l, false, false, ""
		}
		// A word with a byte that is not a token's: a malformed method
		// when the line ends like a request line.
		what, more := shapedLike(b, "method")
		return l, false, more, what
	}
	l.methodEnd = i
	// The line end.
	j := i + 1
	if k := bytes.IndexByte(b[j:min(len(b), maxRequestLine)], '\n'); k >= 0 {
		j += k
	} else {
		return l, false, len(b) < maxRequestLine, ""
	}
	l.end = j + 1
	if j > 0 && b[j-1] == '\r' {
		j--
	}
	if bytes.IndexByte(b[i:j], '\r') >= 0 {
		what, _ := shapedLike(b, "bare CR in the request line")
		return l, false, false, what
	}
	// Spaces after the version (nginx).
	e := j
	for e > i && b[e-1] == ' ' {
		e--
	}
	if e < j {
		l.tolerated |= tolTrailing
	}
	// The version: the last word.
	v := bytes.LastIndexByte(b[i:e], ' ') + i + 1
	l.versionStart, l.verEnd = v, e
	// The target: between the spaces after the method and before the
	// version.
	t := i
	for t < v && b[t] == ' ' {
		t++
	}
	te := v - 1
	for te > t && b[te-1] == ' ' {
		te--
	}
	if t-i > 1 || v-1-te > 0 {
		l.tolerated |= tolSpaces
	}
	l.targetStart, l.tgtEnd = t, te
	digits, good := httpVersion(b[v:e])
	switch {
	case !good:
		if bytes.HasPrefix(b[v:e], []byte("HTTP/")) {
			return l, false, false, "version"
		}
		return l, false, false, ""
	case te <= t:
		return l, false, false, "target"
	}
	if digits > 1 {
		l.tolerated |= tolMinorDigits
	}
	return l, true, false, ""
}

// httpVersion checks "HTTP/1." and one to three digits (nginx takes up
// to three, Go one): digits is their number.
func httpVersion(v []byte) (digits int, ok bool) {
	const p = "HTTP/1."
	if len(v) < len(p)+1 || len(v) > len(p)+3 || string(v[:len(p)]) != p {
		return 0, false
	}
	for _, c := range v[len(p):] {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	return len(v) - len(p), true
}

// shapedLike returns what when the line at b has the shape of a request
// line, "" otherwise: it ends (before spaces and CRLF) in a word that
// starts "HTTP/", and it is text. more: the line's end has not arrived.
func shapedLike(b []byte, what string) (string, bool) {
	nl := bytes.IndexByte(b[:min(len(b), maxRequestLine)], '\n')
	if nl < 0 {
		return "", len(b) < maxRequestLine
	}
	line := bytes.TrimRight(b[:nl], "\r ")
	sp := bytes.LastIndexByte(line, ' ')
	if sp <= 0 || !bytes.HasPrefix(line[sp+1:], []byte("HTTP/")) {
		return "", false
	}
	for _, c := range line {
		if c < 0x20 && c != '\t' && c != '\r' || c == 0x7f {
			return "", false
		}
	}
	return what, false
}

// canonicalLine reports whether block's request line is exactly method
// SP target SP proto and a line end, as net/http parses it.
func canonicalLine(block []byte, method, target, proto string) bool {
	n := lineEnd(block)
	line := block[:n]
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return len(line) == len(method)+len(target)+len(proto)+2 && string(line[len(line)-len(proto):]) == proto
}

// withLine returns block with its request line replaced by method SP
// target SP proto CRLF.
func withLine(block []byte, method, target, proto string) []byte {
	rest := block[lineEnd(block):]
	fixed := make([]byte, 0, len(method)+len(target)+len(proto)+4+len(rest))
	fixed = append(fixed, method...)
	fixed = append(fixed, ' ')
	fixed = append(fixed, target...)
	fixed = append(fixed, ' ')
	fixed = append(fixed, proto...)
	fixed = append(fixed, "\r\n"...)
	return append(fixed, rest...)
}

// tolerated counts the forms of a request line net/http refuses and
// nginx takes.
func (p *httpParser) tolerated(bits int) {
	if bits == 0 {
		return
	}
	for _, t := range toleratedNames {
		if bits&t.bit != 0 {
			p.x.st.ToleratedLines[t.name]++
		}
	}
}

// malformedLine reports the line at buf[0], which has a request line's
// shape but which no tolerant server takes (what says which part), as a
// malformed request (incomplete: never replayed), and looks for the next
// request line after it.
func (p *httpParser) malformedLine(what string) {
	m := p.markAt(p.base)
	method, target, proto, ok := splitRequestLine(p.buf)
	if !ok {
		first, _, _ := bytes.Cut(p.buf[:lineEnd(p.buf)], []byte(" "))
		method, target = string(first), ""
	}
	why := "malformed request line: " + what
	if what == "version" {
		why += " " + strconv.Quote(cell(proto, 16))
	}
	r := &Request{Time: m.ts, Flow: p.flow, Method: method, Target: target, Proto: proto, pkt: m.pkt,
		Incomplete: true, Problem: why}
	p.x.st.MalformedLines[what]++
	p.x.warn(p.flow, why+"; resynchronising on the next request line")
	n := lineEnd(p.buf)
	p.emit(r)
	p.x.st.SkippedBytes += int64(n)
	p.consume(n)
	p.state = psResync
	p.resyncing = true
}
