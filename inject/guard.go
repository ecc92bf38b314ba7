package inject

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// ControlGuard keeps web pages away from the control API. Binding to
// loopback stops other machines, not a page open in a browser on this
// one: the page can POST a form or a text/plain body to 127.0.0.1 (no
// CORS preflight is needed for those), and through DNS rebinding it can
// even read the answers. So every request must
//
//   - name the API itself in Host: localhost, an IP literal or one of
//     Names, with the API's port (a rebinding page's requests carry the
//     attacker's host name, which never passes);
//   - come from no other origin: an Origin header, when present, must be
//     the API's own (a browser sends one on every cross-origin request and
//     on every POST), and Sec-Fetch-Site, when present, same-origin or none
//     (typed in the address bar);
//   - say it is JSON (or YAML) when it changes something: POST, PUT and
//     PATCH always, DELETE when it carries a body or a Content-Type. The
//     three types a page may send without a preflight (forms, multipart,
//     text/plain) never pass, and a JSON one makes the browser ask first,
//     which this API never grants;
//   - carry "Authorization: Bearer Token" when Token is set.
//
// A refused request gets a JSON {"error": …} with 403 (host, origin),
// 415 (content type) or 401 (token), and is never passed on.
type ControlGuard struct {
	// Port is the port the API listens on; Host and Origin must name it.
	Port int
	// Names are host names that also mean this API (the --control host,
	// the machine's name when it listens beyond loopback), besides
	// localhost and any IP literal.
	Names []string
	// Token, when set, must be sent as "Authorization: Bearer Token" on
	// every request; "" requires none.
	Token string
}

// NewControlGuard returns the guard of an API listening on addr (as
// bound: "127.0.0.1:7070"), with the host of the address asked for
// (a name such as "localhost" or "gw.example") among its names.
func NewControlGuard(addr net.Addr, asked, token string) ControlGuard {
	g := ControlGuard{Token: token}
	if ta, ok := addr.(*net.TCPAddr); ok {
		g.Port = ta.Port
	} else if _, p, err := net.SplitHostPort(addr.String()); err == nil {
		g.Port, _ = strconv.Atoi(p)
	}
	if h, _, err := net.SplitHostPort(asked); err == nil && h != "" && net.ParseIP(h) == nil {
		g.Names = append(g.Names, h)
	}
	return g
}

// Errors of refused requests, for errors.Is in tests and callers.
var (
	ErrForeignHost  = errors.New("foreign host")
	ErrCrossOrigin  = errors.New("cross-origin request")
	ErrNotJSON      = errors.New("not a JSON request")
	ErrUnauthorized = errors.New("missing or wrong token")
)

// jsonContentTypes are the types a changing request may have: the API
// decodes JSON or YAML, and none of them is one a page may send without
// a CORS preflight.
var jsonContentTypes = []string{"application/json", "application/yaml", "application/x-yaml"}

// Wrap returns h behind the guard.
func (g ControlGuard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code, err := g.check(r); err != nil {
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="rehearse inject"`)
			}
			writeError(w, code, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// check returns the status and reason a request is refused with, or nil.
func (g ControlGuard) check(r *http.Request) (int, error) {
	if !g.ownHost(r.Host) {
		return http.StatusForbidden, fmt.Errorf("%w: Host %q is not this control API (%s): a page in a browser may be trying to reach it through DNS rebinding; use http://127.0.0.1:%d or http://localhost:%d",
			ErrForeignHost, r.Host, g.hosts(), g.Port, g.Port)
	}
	if o := r.Header.Get("Origin"); o != "" && !g.ownOrigin(o, r.Host) {
		return http.StatusForbidden, fmt.Errorf("%w: Origin %q is not this control API: requests from web pages are refused", ErrCrossOrigin, o)
	}
	if s := strings.ToLower(r.Header.Get("Sec-Fetch-Site")); s != "" && s != "same-origin" && s != "none" {
		return http.StatusForbidden, fmt.Errorf("%w: Sec-Fetch-Site %q: requests from web pages are refused", ErrCrossOrigin, s)
	}
	if changes(r) {
		ct := r.Header.Get("Content-Type")
		mt, _, _ := mime.ParseMediaType(ct)
		if !containsFold(jsonContentTypes, mt) {
			return http.StatusUnsupportedMediaType, fmt.Errorf("%w: %s with Content-Type %q: send application/json (curl -H 'Content-Type: application/json', or curl --json)",
				ErrNotJSON, r.Method, ct)
		}
	}
	if g.Token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(g.Token)) != 1 {
			return http.StatusUnauthorized, fmt.Errorf("%w: send the token printed at start as \"Authorization: Bearer TOKEN\"", ErrUnauthorized)
		}
	}
	return 0, nil
}

// changes reports whether a request must say it is JSON: one that may
// change something and carries, or may carry, a body. A DELETE without a
// body needs no type: a browser cannot send a cross-origin DELETE without
// a preflight, and sends Origin with it anyway.
func changes(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	case http.MethodDelete:
		return r.ContentLength != 0 || r.Header.Get("Content-Type") != ""
	}
	return true
}

// ownHost reports whether a Host header names this API.
func (g ControlGuard) ownHost(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, "80" // no port: the scheme's default
	}
	if p, err := strconv.Atoi(port); err != nil || p != g.Port {
		return false
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil {
		// An IP literal cannot be rebound: a page that reaches this
		// socket under one came here by address, not by a name an
		// attacker controls.
		return true
	}
	return containsFold(g.Names, host)
}

// ownOrigin reports whether an Origin header is this API's own: http,
// the same host and port the request was sent to.
func (g ControlGuard) ownOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Path != "" {
		return false // "null" included: a sandboxed or opaque origin
	}
	h := u.Host
	if u.Port() == "" {
		h = net.JoinHostPort(u.Hostname(), "80")
	}
	return g.ownHost(h) && sameHostPort(h, host)
}

// sameHostPort compares two host:port values (a missing port is 80).
func sameHostPort(a, b string) bool {
	norm := func(s string) string {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			h, p = s, "80"
		}
		return strings.ToLower(strings.Trim(h, "[]")) + ":" + p
	}
	return norm(a) == norm(b)
}

// hosts lists the Host values accepted, for the refusal message.
func (g ControlGuard) hosts() string {
	names := []string{"localhost", "an IP address"}
	names = append(names, g.Names...)
	return strings.Join(names, ", ") + " with port " + strconv.Itoa(g.Port)
}

func containsFold(list []string, s string) bool {
	for _, e := range list {
		if strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}

// controlToken is the token the control API requires: the one given, or,
// when the API listens where other machines can reach it and none was
// given, a new random one (generated true) that the caller prints.
func controlToken(given string, addr net.Addr) (token string, generated bool, err error) {
	if given != "" || isLoopback(addr) {
		return given, false, nil
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", false, fmt.Errorf("generating a token: %w", err)
	}
	return hex.EncodeToString(b), true, nil
}

// isLoopback reports whether a bound address is reachable only from this
// machine.
func isLoopback(addr net.Addr) bool {
	if ta, ok := addr.(*net.TCPAddr); ok {
		return ta.IP.IsLoopback()
	}
	return false
}

// machineNames are the names this machine answers to on its network (its
// host name, and the .local name macOS announces), which a person uses to
// reach a control API listening beyond loopback.
func machineNames() []string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return nil
	}
	names := []string{h}
	if short, _, _ := strings.Cut(h, "."); !strings.HasSuffix(h, ".local") {
		names = append(names, short+".local")
	}
	return names
}
