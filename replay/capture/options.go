package capture

import (
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/halfopen/rehearse/internal/redact"
)

// Defaults of the limits in Options. They bound memory by the number of
// open flows and requests in flight, never by the capture's size.
const (
	// DefaultMaxFlows is the number of TCP connections tracked at once;
	// beyond it the least recently active flow is flushed.
	DefaultMaxFlows = 65536
	// DefaultMaxFlowBuffer caps the bytes one direction of a connection
	// may hold waiting: out-of-order segments plus a request not yet
	// complete (its headers and body). A request larger than this is
	// reported incomplete.
	DefaultMaxFlowBuffer = 16 << 20
	// DefaultMaxHeaderBytes caps a request's header block, as net/http's
	// server does by default.
	DefaultMaxHeaderBytes = 1 << 20
	// DefaultIdleTimeout flushes a flow that saw no packet for this long,
	// in capture time.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultMaxWarnings caps Stats.Warnings.
	DefaultMaxWarnings = 1000
	// DefaultFragmentTimeout gives up a datagram whose fragments have not
	// all arrived this long (capture time) after its first: RFC 8200's
	// 60 s, twice Linux's IPv4 default, so that nothing a receiver could
	// have reassembled is lost.
	DefaultFragmentTimeout = 60 * time.Second
	// DefaultMaxFragmentBytes caps the memory held by IP fragments
	// waiting for the rest of their datagram (Linux's ipfrag_high_thresh
	// is 4 MB); beyond it the oldest datagrams are given up.
	DefaultMaxFragmentBytes = 4 << 20
)

// Options are the reader's filters, rewrites, redaction and limits. The
// zero value reads everything, redacts secrets and uses the Default
// limits.
type Options struct {
	// Filter selects the requests delivered; the zero Filter matches all.
	Filter Filter
	// Rewrite is applied to each delivered request; the zero Rewrite
	// changes nothing.
	Rewrite Rewrite
	// KeepSecrets turns redaction off: Authorization, Cookie and API-key
	// headers are delivered as captured. Leave it false for anything that
	// is written or shown; a replayer that must authenticate sets it.
	KeepSecrets bool
	// RedactHeaders names more headers to redact (case-insensitive).
	RedactHeaders []string
	// SkipIncomplete drops requests that could not be recovered whole
	// (they are still counted in Stats.Incomplete and warned about).
	SkipIncomplete bool
	// MaxFlows, MaxFlowBuffer, MaxHeaderBytes, IdleTimeout,
	// MaxWarnings, FragmentTimeout and MaxFragmentBytes are limits; zero
	// means the Default value.
	MaxFlows         int
	MaxFlowBuffer    int
	MaxHeaderBytes   int
	IdleTimeout      time.Duration
	MaxWarnings      int
	FragmentTimeout  time.Duration
	MaxFragmentBytes int
}

func (o Options) withDefaults() Options {
	o.MaxFlows = orDefault(o.MaxFlows, DefaultMaxFlows)
	o.MaxFlowBuffer = orDefault(o.MaxFlowBuffer, DefaultMaxFlowBuffer)
	o.MaxHeaderBytes = orDefault(o.MaxHeaderBytes, DefaultMaxHeaderBytes)
	o.IdleTimeout = orDefault(o.IdleTimeout, DefaultIdleTimeout)
	o.MaxWarnings = orDefault(o.MaxWarnings, DefaultMaxWarnings)
	o.FragmentTimeout = orDefault(o.FragmentTimeout, DefaultFragmentTimeout)
	o.MaxFragmentBytes = orDefault(o.MaxFragmentBytes, DefaultMaxFragmentBytes)
	return o
}

// orDefault is the limit v, or def when v is not positive: a negative limit
// means the default too, never "no limit" (cmp.Or would keep it).
func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Filter selects requests. Every set field must match; the zero Filter
// matches every request.
type Filter struct {
	// Methods lists the methods to keep (case-insensitive); empty keeps all.
	Methods []string
	// Path, if set, must match the target's path (Request.Path).
	Path *regexp.Regexp
	// Host, if set, must equal the request's host, with or without its
	// port (case-insensitive).
	Host string
	// Port, if set, must equal the server port of the connection.
	Port uint16
}

// Match reports whether the request passes the filter.
func (f Filter) Match(r *Request) bool {
	if len(f.Methods) > 0 && !slices.ContainsFunc(f.Methods, func(m string) bool { return strings.EqualFold(m, r.Method) }) {
		return false
	}
	if f.Path != nil && !f.Path.MatchString(r.Path()) {
		return false
	}
	if f.Host != "" && !strings.EqualFold(f.Host, r.Host) {
		h, _, err := net.SplitHostPort(r.Host)
		if err != nil || !strings.EqualFold(strings.Trim(f.Host, "[]"), h) {
			return false
		}
	}
	if f.Port != 0 && r.Flow.Dst.Port() != f.Port {
		return false
	}
	return true
}

// Rewrite changes requests for replay. The zero Rewrite changes nothing.
type Rewrite struct {
	// Host, if set, replaces the Host header and Request.Host, and the
	// authority of an absolute-form target.
	Host string
	// Set replaces headers of the same name (case-insensitive) at the
	// position of their first occurrence, or appends them.
	Set []HeaderField
	// Drop removes headers by name (case-insensitive).
	Drop []string
}

// IsZero reports whether the rewrite changes nothing.
func (rw Rewrite) IsZero() bool {
	return rw.Host == "" && len(rw.Set) == 0 && len(rw.Drop) == 0
}

// Apply returns a rewritten copy of r; r is not modified.
func (rw Rewrite) Apply(r *Request) *Request {
	c := r.Clone()
	rw.apply(c)
	return c
}

// apply rewrites c in place.
func (rw Rewrite) apply(c *Request) {
	if len(rw.Drop) > 0 {
		c.Header = slices.DeleteFunc(c.Header, func(f HeaderField) bool {
			return slices.ContainsFunc(rw.Drop, func(n string) bool { return strings.EqualFold(n, f.Name) })
		})
	}
	for _, s := range rw.Set {
		c.setHeader(s.Name, s.Value)
	}
	if rw.Host != "" {
		c.Host = rw.Host
		if c.Get("Host") != "" || c.Proto != "HTTP/1.0" {
			c.setHeader("Host", rw.Host)
		}
		if i := strings.Index(c.Target, "://"); i >= 0 {
			if u, err := url.Parse(c.Target); err == nil {
				u.Host = rw.Host
				c.Target = u.String()
			}
		}
	}
}

// setHeader replaces the first field of that name (dropping later ones)
// or appends one.
func (r *Request) setHeader(name, value string) {
	done := false
	out := r.Header[:0]
	for _, f := range r.Header {
		if strings.EqualFold(f.Name, name) {
			if done {
				continue
			}
			f.Value = value
			done = true
		}
		out = append(out, f)
	}
	r.Header = out
	if !done {
		r.Header = append(r.Header, HeaderField{Name: name, Value: value})
	}
}

// Clone returns a deep copy of the request.
func (r *Request) Clone() *Request {
	c := *r
	c.Header = slices.Clone(r.Header)
	c.Trailer = slices.Clone(r.Trailer)
	c.Body = slices.Clone(r.Body)
	return &c
}

// Redacted is the value secrets are replaced with (redact.Marker, the
// one marker of everything rehearse writes).
const Redacted = redact.Marker

// IsSecretHeader reports whether a header carries a credential
// (redact.IsSecretHeader): Authorization, Proxy-Authorization, Cookie,
// Set-Cookie, and API-key or token style names (X-Api-Key, Api-Key,
// X-Auth-Token, *-Token, *-Secret, *-Password, *-Api-Key), or one of
// extra (case-insensitive).
func IsSecretHeader(name string, extra ...string) bool {
	return redact.IsSecretHeader(name, extra...)
}

// Redact returns a copy of r with the values of secret headers and
// trailers (IsSecretHeader, plus the extra names) and of credential query
// parameters (access_token, api_key, token, key, …) replaced by
// "REDACTED". The body is not changed.
func Redact(r *Request, extra ...string) *Request {
	c := r.Clone()
	redactRequest(c, extra)
	return c
}

// redactRequest redacts c in place.
func redactRequest(c *Request, extra []string) {
	for i, f := range c.Header {
		if IsSecretHeader(f.Name, extra...) {
			c.Header[i].Value = Redacted
		}
	}
	for i, f := range c.Trailer {
		if IsSecretHeader(f.Name, extra...) {
			c.Trailer[i].Value = Redacted
		}
	}
	// An absolute-form target (a request to a proxy) may carry user info;
	// Go's URL error and the problem quote the target as written.
	c.Target = redact.URL(c.Target)
	c.TargetError = redact.Text(c.TargetError)
	c.Problem = redact.Text(c.Problem)
}
