package capture

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Request is one HTTP/1.x request recovered from a capture, as it was on
// the wire: header order and case kept, body decoded from chunked transfer
// coding when it was chunked.
type Request struct {
	// Index is the request's position in capture order, from 0.
	Index int
	// Time is the capture timestamp of the request's first byte.
	Time time.Time
	// Flow is the TCP connection the request travelled on.
	Flow Flow
	// Method, Target and Proto are the request line, Target exactly as
	// written (origin-form, absolute-form, authority-form or "*").
	Method string
	Target string
	Proto  string
	// Host is the Host header, or the authority of an absolute-form target;
	// empty for HTTP/1.0 without either.
	Host string
	// Header holds the header fields in their original order and case.
	Header []HeaderField
	// Body is the decoded body (chunked coding removed).
	Body []byte
	// Chunked reports that the body was sent with chunked transfer coding.
	Chunked bool
	// Trailer holds the trailer fields of a chunked body, in order.
	Trailer []HeaderField
	// Incomplete reports that the request could not be recovered whole
	// (a gap in the stream, the capture ended mid-request) or that
	// net/http refuses its header block (Problem starts "malformed
	// request"); Problem says why. Incomplete requests are reported and
	// counted, never replayed.
	Incomplete bool
	Problem    string
	// TargetError is why Go's URL parser refuses Target (say `invalid URL
	// escape "%"` for "GET /% HTTP/1.1"); empty when it parses. Such a
	// request is kept with its target exactly as written, and the
	// replayer sends that target verbatim: what a gateway does with odd
	// input is part of what is rehearsed.
	TargetError string

	// pkt is the number of the packet carrying the first byte, for
	// ordering.
	pkt int64
}

// HeaderField is one header line, name as written.
type HeaderField struct {
	Name  string
	Value string
}

// Get returns the first value of the named header (case-insensitive).
func (r *Request) Get(name string) string {
	for _, f := range r.Header {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// Values returns the header as name → values, with names in canonical
// form (as net/http keys them), keeping value order.
func (r *Request) Values() map[string][]string {
	out := make(map[string][]string, len(r.Header))
	for _, f := range r.Header {
		k := canonical(f.Name)
		out[k] = append(out[k], f.Value)
	}
	return out
}

// Path returns the path of the target without the query, for any form of
// target ("*" and authority-form targets return themselves).
func (r *Request) Path() string {
	t := r.Target
	if i := strings.Index(t, "://"); i >= 0 {
		rest := t[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			t = rest[j:]
		} else {
			t = "/"
		}
	}
	if i := strings.IndexAny(t, "?#"); i >= 0 {
		t = t[:i]
	}
	return t
}

// Flow identifies a TCP connection by its client and server endpoints.
type Flow struct {
	Src netip.AddrPort
	Dst netip.AddrPort
}

// String formats the flow as src:port->dst:port (IPv6 addresses bracketed).
func (f Flow) String() string {
	return fmt.Sprintf("%s->%s", f.Src, f.Dst)
}

func canonical(name string) string {
	b := []byte(strings.ToLower(name))
	upper := true
	for i, c := range b {
		if upper && 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		upper = c == '-'
	}
	return string(b)
}
