// Package redact is the one rule for secrets in everything rehearse writes
// (journal, run.json, reports, junit.xml, logs, error messages, webhook
// payloads): the values of secret-looking headers, the user info of URLs,
// credential-like query parameters and Bearer/Basic credentials in text
// are replaced by one marker, Marker, wherever they come from (a capture,
// a scenario's replay.rewrite.set, metrics or health headers, a gateway
// URL, an error). Every package that writes something a person or a file
// keeps goes through it, so that the rule and its spelling are the same
// everywhere; docs/contracts.md ("Secrets") lists the names.
//
// The rule errs on the side of hiding: a value that only looks like a
// credential is hidden too, and what is hidden in a capture is also
// replayed hidden (a test token is set with replay.rewrite.set instead).
package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
)

// Marker replaces every redacted value. It is the only spelling: a reader
// (or a grep) finds every hidden value by it.
const Marker = "REDACTED"

// secretHeaders are header names that carry a credential as a whole;
// secretHeaderSuffixes mark one by the end of its name.
var (
	secretHeaders = []string{
		"authorization", "proxy-authorization", "cookie", "set-cookie",
		"api-key", "apikey", "x-api-key", "x-apikey", "x-auth", "x-amz-security-token",
	}
	secretHeaderSuffixes = []string{
		"-token", "_token", "-api-key", "_api_key", "-apikey", "-secret", "_secret",
		"-password", "_password", "-credentials", "-signature",
	}
)

// IsSecretHeader reports whether a header carries a credential:
// Authorization, Proxy-Authorization, Cookie, Set-Cookie, Api-Key,
// X-Api-Key, X-Auth, and names ending in -Token, -Api-Key, -Secret,
// -Password, -Credentials or -Signature (with - or _), or one of extra
// (case-insensitive).
func IsSecretHeader(name string, extra ...string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, h := range secretHeaders {
		if n == h {
			return true
		}
	}
	for _, suf := range secretHeaderSuffixes {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	for _, e := range extra {
		if strings.EqualFold(e, name) {
			return true
		}
	}
	return false
}

// secretParams are query parameter names that carry credentials as a
// whole; secretParamParts mark one anywhere in its name. The parts are
// kept specific ("auth" would take "author", "key" "monkey"): a captured
// query that is redacted is also replayed redacted.
var (
	secretParams     = []string{"access_token", "api_key", "apikey", "api-key", "token", "key", "password", "passwd", "pwd", "client_secret", "sig", "signature", "auth", "secret", "credential", "credentials", "session", "sessionid", "session_id", "authorization", "jwt"}
	secretParamParts = []string{"token", "secret", "password", "passwd", "passphrase", "credential", "api_key", "apikey", "api-key", "signature", "access_key", "private_key"}
)

// secretParamSet is secretParams for lookups.
var secretParamSet = func() map[string]bool {
	m := make(map[string]bool, len(secretParams))
	for _, p := range secretParams {
		m[p] = true
	}
	return m
}()

// IsSecretParam reports whether a query parameter carries a credential:
// access_token, api_key, apikey, token, key, password, client_secret,
// sig, signature, auth, authorization, jwt, secret, session, and any name
// containing token, secret, password, passphrase, credential, api_key,
// signature, access_key or private_key (case-insensitive).
func IsSecretParam(name string) bool {
	n := strings.ToLower(name)
	if secretParamSet[n] {
		return true
	}
	for _, p := range secretParamParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

// IsSecretName reports whether a configuration key or a log attribute
// names a credential (a header or a query parameter would be hidden by
// that name). A name ending in _env names an environment variable that
// holds a credential, not the credential: it is kept.
func IsSecretName(name string) bool {
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "_env") {
		return false
	}
	return IsSecretHeader(n) || IsSecretParam(n)
}

// Query replaces the values of credential parameters in a request
// target's or URL's query, leaving everything else byte for byte. A
// target with nothing to hide is returned as it is, without allocating:
// the journal calls it for every upstream request.
func Query(target string) string {
	q := strings.IndexByte(target, '?')
	if q < 0 {
		return target
	}
	end := len(target)
	if h := strings.IndexByte(target[q:], '#'); h >= 0 {
		end = q + h
	}
	var b strings.Builder // in use once a secret is found
	copied := 0           // target[:copied] is in b
	for i := q + 1; i <= end; {
		next := end
		if k := strings.IndexByte(target[i:end], '&'); k >= 0 {
			next = i + k
		}
		param := target[i:next]
		if eq := strings.IndexByte(param, '='); eq >= 0 {
			name, value := param[:eq], param[eq+1:]
			if strings.ContainsAny(name, "%+") {
				if dec, err := url.QueryUnescape(name); err == nil {
					name = dec
				}
			}
			if value != Marker && IsSecretParam(name) {
				if copied == 0 {
					b.Grow(len(target))
				}
				b.WriteString(target[copied : i+eq+1])
				b.WriteString(Marker)
				copied = next
			}
		}
		i = next + 1
	}
	if copied == 0 {
		return target
	}
	b.WriteString(target[copied:])
	return b.String()
}

// URL redacts a URL's user info (a password, or a user name given alone,
// which is as often a token) and its credential query parameters. A
// string that is not a URL with a scheme has only its query redacted.
func URL(s string) string {
	return Query(userinfo(s))
}

// userinfo redacts the user info of one absolute URL at the start of s.
func userinfo(s string) string {
	m := userinfoRE.FindStringSubmatchIndex(s)
	if m == nil || m[0] != 0 {
		return s
	}
	return s[:m[2]] + redactUser(s[m[2]:m[3]]) + s[m[3]:]
}

// userinfoRE finds scheme://userinfo@ in text; group 1 is the user info.
var userinfoRE = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://([^/?#@\s"'<>]+)@`)

// redactUser keeps a user name beside a password (it names the account;
// the password is the secret) and hides a user name given alone.
func redactUser(ui string) string {
	if user, _, ok := strings.Cut(ui, ":"); ok {
		return user + ":" + Marker
	}
	return Marker
}

var (
	// queryRE finds a query in text: in a URL, a request target or a
	// bare "?a=b&c=d".
	queryRE = regexp.MustCompile(`\?[^\s"'<>\\]+`)
	// schemeRE finds the credential of an Authorization value in text:
	// "Bearer sk-…", "Basic dXNlcjpwdw==".
	schemeRE = regexp.MustCompile(`(?i)\b(bearer|basic)([ \t]+)([A-Za-z0-9._~+/=-]{6,})`)
	// headerLineRE finds "Name: value" header lines (an HTTP dump in an
	// error, a curl -v trace) and "Name=value" log pairs.
	headerLineRE = regexp.MustCompile(`(?im)^([ \t]*)([A-Za-z0-9_-]+)([ \t]*:[ \t]*)([^\r\n]*)`)
)

// Text redacts free text (an error message, a log line, a body excerpt):
// user info and credential query parameters of every URL or request
// target in it, the credential after "Bearer"/"Basic", and the value of
// every "Name: value" line whose name is a secret header. Go's net/http
// writes a URL's password as "***" in its errors; that becomes the marker
// too.
func Text(s string) string {
	if s == "" {
		return s
	}
	if isURL(s) {
		// A text that is one URL (a scenario's report.links entry, a
		// metrics URL) is redacted by its structure first: in free text a
		// query ends at a space or a quote, which a dashboard variable
		// (var-q=rate(x{job="api"}[5m])) may hold before an api_key.
		s = URL(s)
	}
	if strings.Contains(s, "://") {
		s = userinfoRE.ReplaceAllStringFunc(s, func(m string) string {
			i := strings.Index(m, "://") + 3
			return m[:i] + redactUser(m[i:len(m)-1]) + "@"
		})
	}
	if strings.IndexByte(s, '?') >= 0 {
		s = queryRE.ReplaceAllStringFunc(s, Query)
	}
	if strings.IndexByte(s, ' ') >= 0 || strings.IndexByte(s, '\t') >= 0 {
		s = schemeRE.ReplaceAllStringFunc(s, func(m string) string {
			sub := schemeRE.FindStringSubmatch(m)
			if sub[3] == Marker || !isCredential(sub[1], sub[3]) {
				return m
			}
			return sub[1] + sub[2] + Marker
		})
	}
	if strings.IndexByte(s, ':') >= 0 {
		s = headerLineRE.ReplaceAllStringFunc(s, func(m string) string {
			sub := headerLineRE.FindStringSubmatch(m)
			if !IsSecretHeader(sub[2]) || sub[4] == "" {
				return m
			}
			return sub[1] + sub[2] + sub[3] + Marker
		})
	}
	return s
}

// urlRE matches a text that starts as an absolute URL.
var urlRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#]`)

// isURL reports whether s is one absolute URL and nothing else: it starts
// with scheme:// and holds no line break (a URL is one line; a message
// that starts with a URL and goes on is free text).
func isURL(s string) bool {
	return urlRE.MatchString(s) && !strings.ContainsAny(s, "\r\n")
}

// isCredential tells a credential after an auth scheme from a word of
// prose ("basic health checks"): a Bearer token is anything after
// "Bearer" (a rare word in prose), a Basic credential is base64 of at
// least 8 characters with a digit or one of +/=.
func isCredential(scheme, tok string) bool {
	if strings.EqualFold(scheme, "bearer") {
		return true
	}
	return len(tok) >= 8 && strings.ContainsAny(tok, "0123456789+/=")
}

// Headers returns a copy of h with the values of secret headers replaced
// by the marker.
func Headers(h map[string]string) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		if IsSecretHeader(k) {
			v = Marker
		}
		out[k] = v
	}
	return out
}

// JSON redacts a JSON document for the record (a scenario's configuration
// in run.start, a webhook payload): the string value of every object
// member whose name is a secret (IsSecretName: an Authorization under
// rewrite.set, a credential, a token) becomes the marker, and every other
// string is redacted as Text (URLs with user info or credential
// parameters). Member order, numbers and duplicate names are kept; the
// output is compact. A document that is not one valid JSON value is
// returned redacted as Text, and so is no longer JSON.
func JSON(doc []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	w := &jsonWriter{dec: d}
	tok, err := d.Token()
	if err == nil {
		err = w.value(tok, false)
	}
	if err == nil {
		if _, e := d.Token(); !errors.Is(e, io.EOF) {
			err = errors.New("trailing data")
		}
	}
	if err != nil {
		return []byte(Text(string(doc)))
	}
	return w.out.Bytes()
}

// jsonWriter re-encodes a token stream with secrets hidden.
type jsonWriter struct {
	dec *json.Decoder
	out bytes.Buffer
	str bytes.Buffer
}

// value writes the value that starts with tok; secret says its member
// name (or an enclosing array's) names a credential.
func (w *jsonWriter) value(tok json.Token, secret bool) error {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			w.out.WriteByte('{')
			for first := true; w.dec.More(); first = false {
				k, err := w.dec.Token()
				if err != nil {
					return err
				}
				key, ok := k.(string)
				if !ok {
					return fmt.Errorf("object key %v", k)
				}
				if !first {
					w.out.WriteByte(',')
				}
				w.string(key)
				w.out.WriteByte(':')
				v, err := w.dec.Token()
				if err != nil {
					return err
				}
				if err := w.value(v, IsSecretName(key)); err != nil {
					return err
				}
			}
			if _, err := w.dec.Token(); err != nil { // '}'
				return err
			}
			w.out.WriteByte('}')
		case '[':
			w.out.WriteByte('[')
			for first := true; w.dec.More(); first = false {
				v, err := w.dec.Token()
				if err != nil {
					return err
				}
				if !first {
					w.out.WriteByte(',')
				}
				if err := w.value(v, secret); err != nil {
					return err
				}
			}
			if _, err := w.dec.Token(); err != nil { // ']'
				return err
			}
			w.out.WriteByte(']')
		default:
			return fmt.Errorf("unexpected %v", t)
		}
	case string:
		// A value already redacted is kept as it is: the gateway writes
		// a credential as "REDACTED sha256:<fingerprint>".
		if secret && t != "" && !strings.HasPrefix(t, Marker) {
			t = Marker
		} else {
			t = Text(t)
		}
		w.string(t)
	case json.Number:
		w.out.WriteString(t.String())
	case bool:
		if t {
			w.out.WriteString("true")
		} else {
			w.out.WriteString("false")
		}
	case nil:
		w.out.WriteString("null")
	default:
		return fmt.Errorf("unexpected token %T", tok)
	}
	return nil
}

// string writes s as a JSON string, HTML characters unescaped (as the
// journal's encoder writes them).
func (w *jsonWriter) string(s string) {
	w.str.Reset()
	enc := json.NewEncoder(&w.str)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	w.out.Write(bytes.TrimSuffix(w.str.Bytes(), []byte("\n")))
}

// SlogAttr is a slog.HandlerOptions.ReplaceAttr that applies the rule to
// every log record: the message and every string, error or Stringer value
// are redacted as Text, and the value of an attribute named like a secret
// (IsSecretName: "authorization", "token"…) is the marker. The time, level
// and source are left alone.
func SlogAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 {
		switch a.Key {
		case slog.TimeKey, slog.LevelKey, slog.SourceKey:
			return a
		}
	}
	var s string
	switch a.Value.Kind() {
	case slog.KindString:
		s = a.Value.String()
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
			if v == nil {
				return a
			}
			s = v.Error()
		case fmt.Stringer:
			s = v.String()
		default:
			return a
		}
	default:
		return a
	}
	if a.Key != slog.MessageKey && IsSecretName(a.Key) && s != "" {
		return slog.String(a.Key, Marker)
	}
	if r := Text(s); r != s {
		return slog.String(a.Key, r)
	}
	return a
}
