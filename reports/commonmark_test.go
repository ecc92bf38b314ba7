package reports

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/halfopen/rehearse/reports/render"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/halfopen/rehearse/internal/printable"
)

var (
	commonMark = goldmark.New()                                                                  // the CommonMark core, as plain renderers see it
	gfm        = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough)) // GitHub's and GitLab's tables and strikethrough
)

func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

func toHTML(t *testing.T, md goldmark.Markdown, src string) string {
	t.Helper()
	var b bytes.Buffer
	if err := md.Convert([]byte(src), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// mdSamples are strings people and hostile journals put in reports.
func mdSamples() []string {
	fixed := []string{"<= 200ms", ">= 1", "fast_fail", "_private_", "llm-primary", "a*b*c", "**bold**", "`code`", "[x](http://e)",
		"![i](x)", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "a|b", "&amp; &#65; & AT&T", `back\slash \*`,
		"# heading", "> quote", "- item", "* item", "a * b", "x ~ y", "~a~", "~~a~~ b", "+ item", "1. one", "2) two", "=== ", "--- ", "~~strike~~", "http://example.com/x_y",
		"<http://e.x>", "s<e>arch|x", `"><img src=x>`, "p99 ≤ 10 s — ok", "a_b_c", "x__y", "__init__", "*", "_", "\\", "a\\"}
	rng := rand.New(rand.NewPCG(18, 18))
	alphabet := []rune("abcXYZ019 -_*`[]()<>!&#;|\\/~=+.:\"'{}—≤é")
	for i := 0; i < 3000; i++ {
		n := 1 + rng.IntN(14)
		r := make([]rune, n)
		for j := range r {
			r[j] = alphabet[rng.IntN(len(alphabet))]
		}
		fixed = append(fixed, string(r))
	}
	return fixed
}

// TestMarkdownEscapeIsExact: any text, escaped, renders in CommonMark as
// exactly that text — in a paragraph (mdLine) and in a GFM table cell
// (mdEscape) — so no markup can be injected and nothing is lost.
func TestMarkdownEscapeIsExact(t *testing.T) {
	bad := 0
	for _, s := range mdSamples() {
		want := strings.TrimSpace(s)
		if want == "" {
			continue
		}
		got := toHTML(t, commonMark, render.MdLine(s))
		if got != "<p>"+htmlText(want)+"</p>\n" {
			t.Errorf("paragraph %q → %q renders %q", s, render.MdLine(s), got)
			bad++
		}
		cell := toHTML(t, gfm, "| a | b |\n|---|---|\n| x | "+render.MdEscape(s)+" |\n")
		if !strings.Contains(cell, "<td>"+htmlText(want)+"</td>") {
			t.Errorf("cell %q → %q renders %q", s, render.MdEscape(s), cell)
			bad++
		}
		if bad > 10 {
			t.Fatal("too many failures")
		}
	}
}

// TestMarkdownEscapesOnlyWhatNeedsIt: ordinary report text is written as
// is, so renderers without CommonMark escapes (Confluence, plain viewers)
// show it right.
func TestMarkdownEscapesOnlyWhatNeedsIt(t *testing.T) {
	for _, s := range []string{"<= 200ms", ">= 1", "fast_fail", "llm-primary", "p99 ≤ 10 s — ok", "search: open → closed at 47.0 s",
		"worst 300ms, want >= 200ms, over 1 episodes", "AT&T", "http://example.com/x_y", "5xx / failed call", "1m0s–2m0s (03:00:00 UTC)"} {
		if got := render.MdEscape(s); got != s {
			t.Errorf("mdEscape(%q) = %q, want it unchanged", s, got)
		}
		if got := render.MdLine(s); got != s && s[0] != '>' {
			t.Errorf("mdLine(%q) = %q, want it unchanged", s, got)
		}
	}
}

// TestMarkdownCommonMark parses every fixture's report.md with a
// CommonMark renderer: no raw HTML reaches the output, the only
// backslashes are in the hostile fixture, and GFM sees the tables with
// the upstream names intact.
func TestMarkdownCommonMark(t *testing.T) {
	for name := range fixtures() {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(renderFixture(t, name), render.MarkdownFile))
			if err != nil {
				t.Fatal(err)
			}
			if name != "hostile" && bytes.ContainsRune(src, '\\') {
				for _, l := range strings.Split(string(src), "\n") {
					if strings.Contains(l, `\`) {
						t.Errorf("backslash in report.md: %s", l)
					}
				}
			}
			for _, md := range []goldmark.Markdown{commonMark, gfm} {
				doc := md.Parser().Parse(text.NewReader(src))
				ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
					if entering && (n.Kind() == ast.KindHTMLBlock || n.Kind() == ast.KindRawHTML) {
						t.Errorf("raw HTML in report.md: %q", n.Text(src)) //nolint:staticcheck // Text is enough for a message
					}
					return ast.WalkContinue, nil
				})
			}
			doc := gfm.Parser().Parse(text.NewReader(src))
			var tables, images int
			ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
				if !entering {
					return ast.WalkContinue, nil
				}
				switch n.Kind() {
				case east.KindTable:
					tables++
				case ast.KindImage:
					if string(n.(*ast.Image).Destination) == render.TimelinePNGFile {
						images++
					}
				}
				return ast.WalkContinue, nil
			})
			if tables < 4 || images != 1 {
				t.Errorf("GFM sees %d tables and %d timeline images; want the report's tables and timeline.png", tables, images)
			}
			html := toHTML(t, gfm, string(src))
			if name == "hostile" {
				if !strings.Contains(html, "<td>s&lt;e&gt;arch|x</td>") {
					t.Error("the hostile upstream name does not come through a GFM table intact")
				}
				if strings.Contains(html, "<script") || strings.Contains(html, "<img src=\"x") {
					t.Error("hostile markup reached the rendered HTML")
				}
			}
		})
	}
}

// FuzzMarkdownEscape: whatever a journal names an upstream or a fault,
// mdLine and mdEscape render as exactly that text in CommonMark and in a
// GFM table cell, control characters shown as their pictures
// (printable.String).
func FuzzMarkdownEscape(f *testing.F) {
	for _, s := range mdSamples()[:60] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsAny(s, "\x00\t\v\f\r\n") || strings.ContainsRune(s, '\uFFFD') {
			return // the reports replace newlines; the others are not text
		}
		shown := printable.String(s)
		if strings.ContainsRune(shown, '\uFFFD') {
			return // a C1 control: not text either
		}
		want := strings.TrimSpace(shown)
		if want == "" || strings.TrimLeft(want, " ") != want {
			return
		}
		// Runs of spaces, entities and Unicode punctuation rules are
		// CommonMark's business, not escaping's: compare what matters.
		if got := toHTML(t, commonMark, render.MdLine(s)); got != "<p>"+htmlText(want)+"</p>\n" {
			t.Errorf("paragraph %q → %q renders %q", s, render.MdLine(s), got)
		}
		cell := toHTML(t, gfm, "| a | b |\n|---|---|\n| x | "+render.MdEscape(s)+" |\n")
		if !strings.Contains(cell, "<td>"+htmlText(want)+"</td>") {
			t.Errorf("cell %q → %q renders %q", s, render.MdEscape(s), cell)
		}
	})
}
