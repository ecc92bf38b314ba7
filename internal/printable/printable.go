// Package printable makes text from a journal safe to put in a document
// as text: control characters become visible. A fault name with an ESC in
// it made timeline.svg malformed XML (XML 1.0 allows no C0 control but
// tab, newline and carriage return, not even as a character reference)
// and put raw escape sequences in report.md and report.html, which a
// terminal showing them obeys. Validation refuses control characters in
// names; this is for what an older journal already holds, applied by the
// text escapers of every format (SVG, HTML, Markdown).
package printable

import (
	"strings"
	"unicode/utf8"
)

// String returns s with each C0 control character but tab, newline and
// carriage return replaced by its Unicode control picture (ESC shows as
// ␛, NUL as ␀), DEL by ␡, and each C1 control character, the
// noncharacters U+FFFE and U+FFFF and each byte that is not UTF-8 by
// U+FFFD. Text without any is returned as it is.
func String(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(picture(r))
		i += n
	}
	return b.String()
}

// Bytes is String for a rendered document.
func Bytes(p []byte) []byte {
	if clean(string(p)) {
		return p
	}
	return []byte(String(string(p)))
}

func clean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r >= 0x80 && r <= 0x9f || r == 0xfffe || r == 0xffff {
			return false
		}
		i += n
	}
	return true
}

func picture(r rune) rune {
	switch {
	case r == '\t', r == '\n', r == '\r':
		return r
	case r < 0x20:
		return 0x2400 + r
	case r == 0x7f:
		return 0x2421
	case r >= 0x80 && r <= 0x9f, r == 0xfffe, r == 0xffff: // the last two are not XML
		return utf8.RuneError
	}
	return r // an invalid byte decodes as utf8.RuneError already
}
