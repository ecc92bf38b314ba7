package rehearse

import (
	"strings"
	"testing"
)

func TestParseHTTPURL(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8080", "https://h.example/a?b=c", "http://user:pw@h:1/x"} {
		if _, err := ParseHTTPURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, c := range []struct{ raw, want string }{
		{"ftp://h/x", `want an absolute http:// or https:// URL, got "ftp://h/x"`},
		{"127.0.0.1:8080", `invalid URL "127.0.0.1:8080": first path segment in URL cannot contain colon`},
		{"http:///metrics", `URL "http:///metrics" has no host`},
		{"", `want an absolute http:// or https:// URL, got ""`},
		{"/relative", `want an absolute http:// or https:// URL`},
	} {
		_, err := ParseHTTPURL(c.raw)
		if err == nil || err.Error() != c.want && !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %s", c.raw, err, c.want)
		}
	}
	// A refused URL's credentials never reach the message, whatever is
	// wrong with it.
	for _, raw := range []string{"ftp://admin:s3cret@h/x", "http://admin:s3cret@h:badport/", "http://tok3n-s3cret@/x", "gopher://h/?api_key=s3cret"} {
		_, err := ParseHTTPURL(raw)
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: %v", raw, err)
		}
	}
}
