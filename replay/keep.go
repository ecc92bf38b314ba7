package replay

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
)

// Response headers kept in the journal (Options.KeepHeaders). A gateway
// says things about an answer only in its headers: which target it chose
// (a fallback), how often it retried, that it served from a cache. The
// scenario names the headers; each client.request event records their
// values, so that the analysis can read them from the journal later.
//
// Bounded, because every scheduled request writes an event: at most
// MaxKeepHeaders names, and each value cut to MaxKeepHeaderValue bytes.
// Secret headers (internal/redact's rule: Authorization, Set-Cookie,
// *-Token, …) are refused, not kept redacted: a value that would always
// read REDACTED tells nothing, and a scenario asking for one most likely
// means to record a credential. The journal hides them anyway, and passes
// every kept value through the free-text rule (a URL with a password).
const (
	// MaxKeepHeaders is the most response headers a replay keeps.
	MaxKeepHeaders = 8
	// MaxKeepHeaderValue is the most bytes of each kept value; a longer
	// value is cut on a character boundary and ends with "…".
	MaxKeepHeaderValue = 256
)

// checkKeepHeaders checks the names of Options.KeepHeaders and returns
// them in canonical form (X-Chosen-Target), as the journal records them.
func checkKeepHeaders(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if len(names) > MaxKeepHeaders {
		return nil, fmt.Errorf("%w: replay: %d response headers to keep; at most %d", rehearse.ErrInvalid, len(names), MaxKeepHeaders)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if err := CheckKeepHeader(n); err != nil {
			return nil, fmt.Errorf("%w: replay: keep header %q: %w", rehearse.ErrInvalid, n, err)
		}
		c := http.CanonicalHeaderKey(n)
		for _, o := range out {
			if o == c {
				return nil, fmt.Errorf("%w: replay: keep header %q named twice", rehearse.ErrInvalid, n)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// CheckKeepHeader says why a response header cannot be kept in the
// journal: not a header name, or a secret header.
func CheckKeepHeader(name string) error {
	if !httpguts.ValidHeaderFieldName(name) {
		return fmt.Errorf("not a header name")
	}
	if redact.IsSecretHeader(name) {
		return fmt.Errorf("a secret header (docs/contracts.md, \"Secrets\"): its value is never written")
	}
	return nil
}

// keptHeaders returns the values of the kept headers present in h, each
// header's values joined by ", " (RFC 9110's list form) and cut to
// MaxKeepHeaderValue bytes; nil when none is present.
func keptHeaders(names []string, h http.Header) map[string]string {
	var m map[string]string
	for _, n := range names {
		vs := h[n] // n is canonical, as net/http keys a response's headers
		if len(vs) == 0 {
			continue
		}
		if m == nil {
			m = make(map[string]string, len(names))
		}
		m[n] = capValue(strings.Join(vs, ", "))
	}
	return m
}

// capValue cuts v to MaxKeepHeaderValue bytes, ending in "…".
func capValue(v string) string {
	if len(v) <= MaxKeepHeaderValue {
		return v
	}
	const ell = "…"
	cut := MaxKeepHeaderValue - len(ell)
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + ell
}
