package capture

import "testing"

// TestScanRequestLine: the request-line rules, case by case, with which
// server takes each line (net/http 1.26, nginx 1.22: docs/capture.md).
func TestScanRequestLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		ok         bool
		what       string // when not ok: what is malformed ("" not a request line)
		tolerated  int
	}{
		{"plain", "GET /a HTTP/1.1", true, "", 0},
		{"HTTP/1.0, bare LF end", "GET /a HTTP/1.0\n", true, "", 0},
		{"lower-case method (Go)", "get /a HTTP/1.1", true, "", 0},
		{"HTTP/1.9 (Go, nginx)", "GET /a HTTP/1.9", true, "", 0},
		{"several spaces (nginx)", "GET   /a  HTTP/1.1", true, "", tolSpaces},
		{"spaces after the version (nginx)", "GET /a HTTP/1.1   ", true, "", tolTrailing},
		{"HTTP/1.10 (nginx)", "GET /a HTTP/1.10", true, "", tolMinorDigits},
		{"target with a space (kept raw)", "GET /a b HTTP/1.1", true, "", 0},
		{"HTTP/1.0.8 (neither)", "GET /a HTTP/1.0.8", false, "version", 0},
		{"HTTP/1.1000 (neither)", "GET /a HTTP/1.1000", false, "version", 0},
		{"HTTP/2.0 on a text line", "GET /a HTTP/2.0", false, "version", 0},
		{"bad method byte", "G@T /a HTTP/1.1", false, "method", 0},
		{"no target", "GET  HTTP/1.1", false, "target", 0},
		{"bare CR", "GET /a\rb HTTP/1.1", false, "bare CR in the request line", 0},
		{"no version: not this rule's", "GET /a", false, "", 0},
		{"a status line", "HTTP/1.1 200 OK", false, "", 0},
		{"binary", "\x00\x01\x02 HTTP/1.1", false, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(tc.line)
			if b[len(b)-1] != '\n' {
				b = append(b, "\r\n"...)
			}
			l, ok, more, what := scanRequestLine(b)
			if ok != tc.ok || more || what != tc.what || (ok && l.tolerated != tc.tolerated) {
				t.Errorf("ok %v more %v what %q tolerated %b; want ok %v what %q tolerated %b", ok, more, what, l.tolerated, tc.ok, tc.what, tc.tolerated)
			}
			// Cut anywhere before the line end, it asks for more or
			// decides as the whole line does.
			for n := 1; n < len(b)-1; n++ {
				_, ok2, more2, what2 := scanRequestLine(b[:n])
				if !more2 && (ok2 != ok || what2 != what) && (ok || what != "") {
					t.Fatalf("cut at %d: ok %v what %q, whole: ok %v what %q", n, ok2, what2, ok, what)
				}
			}
		})
	}
}
