package replay

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/halfopen/rehearse/replay/capture"
)

// hopByHop are the connection-specific header fields of RFC 9110 section
// 7.6.1 (plus the obsolete Proxy-Connection and Keep-Alive): they describe
// the captured connection, not the request, so they are never replayed.
// Content-Length and Host are set by the replayer; Expect is dropped
// because the body is sent at once.
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
	"Content-Length", "Host", "Expect",
}

// template is a captured request prepared once for the target; build
// makes a fresh *http.Request from it for each send.
type template struct {
	method   string
	url      *url.URL
	host     string // Host header to send
	header   http.Header
	body     []byte
	route    string
	upstream string
	stamp    *stampPlan // where the body takes the sequence stamp; nil: nowhere
}

// prepare rewrites r for the target: absolute URL on the target, Host,
// hop-by-hop headers (including those named in Connection) removed. It
// returns why the request cannot be sent as captured when it cannot.
func prepare(r *capture.Request, o *Options) (template, string) {
	path, query := splitTarget(r.Target)
	u := *o.Target
	u.Path = joinPath(o.Target.Path, path)
	u.RawPath = ""
	u.RawQuery = query
	u.Fragment = ""
	// Keep the path bytes exactly as captured (escaping included).
	if esc := joinPath(o.Target.EscapedPath(), path); esc != u.EscapedPath() {
		if p, err := url.PathUnescape(esc); err == nil {
			u.Path, u.RawPath = p, esc
		}
		if u.EscapedPath() != esc {
			// net/url has no path for these bytes (an invalid
			// percent-escape such as "/%", raw non-ASCII bytes): as an
			// opaque URL, net/http writes them on the request line as
			// they are (URL.RequestURI).
			if strings.HasPrefix(esc, "//") {
				// RequestURI would turn an opaque "//…" into "http://…".
				return template{}, "target starts with // and is not a valid URL path: net/http cannot send it verbatim"
			}
			u.Opaque = esc
		}
	}
	if strings.ContainsFunc(u.RequestURI(), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return template{}, "target has control characters: net/http refuses to write them"
	}

	h := make(http.Header, len(r.Header))
	for _, f := range r.Header {
		k := textproto.CanonicalMIMEHeaderKey(f.Name)
		h[k] = append(h[k], f.Value)
	}
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
	// An empty User-Agent entry keeps Go from adding its own: the gateway
	// sees exactly the captured headers.
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = nil
	}

	host := u.Host
	if o.PreserveHost && r.Host != "" {
		host = r.Host
		if !httpguts.ValidHostHeader(host) {
			return template{}, "captured Host header net/http refuses to send (--preserve-host)"
		}
	}
	t := template{
		method: r.Method,
		url:    &u,
		host:   host,
		header: h,
		body:   r.Body,
		route:  r.Path(),
	}
	// A compressed body cannot take a stamp without being decoded.
	encoded := h.Get("Content-Encoding") != "" && !strings.EqualFold(h.Get("Content-Encoding"), "identity")
	t.stamp = planStamp(o.Identity, r.Body, encoded)
	for i := range o.Routes {
		if o.Routes[i].match(t.route) {
			t.route = o.Routes[i].label()
			t.upstream = o.Routes[i].Upstream
			break
		}
	}
	return t, ""
}

// splitTarget returns the path and raw query of a request target of any
// form.
func splitTarget(target string) (path, query string) {
	if i := strings.Index(target, "://"); i >= 0 {
		rest := target[i+3:]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			target = rest[j:]
		} else if j := strings.IndexByte(rest, '?'); j >= 0 {
			target = "/" + rest[j:]
		} else {
			target = "/"
		}
	}
	if i := strings.IndexByte(target, '#'); i >= 0 {
		target = target[:i]
	}
	path, query, _ = strings.Cut(target, "?")
	if path == "" || path == "*" || path[0] != '/' {
		// "*" (OPTIONS) and authority-form targets have no path to
		// replay on a gateway; send them to the root.
		path = "/"
	}
	return path, query
}

func joinPath(base, path string) string {
	base = strings.TrimSuffix(base, "/")
	return base + path
}

// build makes the request for send i. The body is replayed byte for byte
// (the sequence stamp aside, where Options.Identity puts one) with an
// explicit Content-Length, also when it was chunked in the capture (the
// gateway sees the same bytes, framed by length).
func (t *template) build(o *Options, seq uint64) *http.Request {
	h := make(http.Header, len(t.header)+2)
	for k, v := range t.header {
		h[k] = v
	}
	// Credentials in the target URL authenticate to the gateway, as
	// net/http's Client does, unless the capture carries its own.
	if u := t.url.User; u != nil && h.Get("Authorization") == "" {
		pw, _ := u.Password()
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)))
	}
	h.Set(o.SeqHeader, strconv.FormatUint(seq, 10))
	if o.RunID != "" {
		h.Set(o.RunHeader, o.RunID)
	}
	if k := o.IdempotencyKeys; isWrite(t.method) && h.Get(k.Header) == "" && k.stamps(seq) {
		h.Set(k.Header, "rehearse-"+o.RunID+"-"+strconv.FormatUint(seq, 10))
	}
	if o.DeadlineHeader != "" {
		h.Set(o.DeadlineHeader, strconv.FormatInt(o.Deadline.Milliseconds(), 10))
	}
	req := &http.Request{
		Method:     t.method,
		URL:        t.url,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       t.host,
	}
	if len(t.body) > 0 {
		body := t.body
		if t.stamp != nil {
			body = t.stamp.apply(body, seq)
		}
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	} else {
		req.Body = http.NoBody
	}
	return req
}

// isWrite reports whether method changes state on the server.
func isWrite(method string) bool {
	switch strings.ToUpper(method) {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}
