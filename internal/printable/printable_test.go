package printable

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"search-503", "search-503"},
		{"tab\there\nline\r", "tab\there\nline\r"},
		{"evil\x1b[31mred", "evil␛[31mred"},
		{"nul\x00bell\x07del\x7f", "nul␀bell␇del␡"},
		{"c1\u0085\u009b", "c1\ufffd\ufffd"},
		{"bad\xffutf8", "bad\ufffdutf8"},
		{"non\ufffe\uffff", "non\ufffd\ufffd"},
		{"ünïcødé ✅", "ünïcødé ✅"},
	} {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := string(Bytes([]byte(tt.in))); got != tt.want {
			t.Errorf("Bytes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzString: whatever goes in, what comes out is well-formed XML text
// and shows every printable rune of the input unchanged.
func FuzzString(f *testing.F) {
	f.Add("evil\x1b[31m\x00\x7f\u0085\xff")
	f.Add("plain")
	f.Add("\ufffe")
	f.Fuzz(func(t *testing.T, s string) {
		out := String(s)
		var v struct {
			X string `xml:"x"`
		}
		if err := xml.Unmarshal([]byte("<r><x>"+escapeXML(out)+"</x></r>"), &v); err != nil {
			t.Fatalf("String(%q) = %q is not XML text: %v", s, out, err)
		}
		if clean(s) && out != s {
			t.Fatalf("clean text changed: %q → %q", s, out)
		}
	})
}

func escapeXML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
