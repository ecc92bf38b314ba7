package canvas

import (
	"bytes"
	"fmt"
	"html"
	"strconv"

	"github.com/halfopen/rehearse/internal/printable"
)

// FontFamily is the SVG's font stack: the Go font the layout was measured
// with, then common sans-serif faces. A viewer without the Go font draws a
// fallback that may be wider (DejaVu Sans is, by about 10 %), so every text
// also carries its measured width as textLength: the layout's widths hold in
// any font.
const FontFamily = `'Go', 'Helvetica Neue', Helvetica, Arial, sans-serif`

// SVG encodes the drawing as a standalone SVG document. class, when not
// empty, is the root element's class attribute. Every text is escaped.
func (d *Drawing) SVG(class string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg"`)
	if class != "" {
		fmt.Fprintf(&b, ` class="%s"`, esc(class))
	}
	fmt.Fprintf(&b, ` viewBox="0 0 %s %s" width="%s" height="%s" font-family="%s">`+"\n",
		num(d.W), num(d.H), num(d.W), num(d.H), esc(FontFamily))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", num(d.W), num(d.H))
	for _, s := range d.shapes {
		switch s.kind {
		case kindRect:
			fmt.Fprintf(&b, `<rect%s x="%s" y="%s" width="%s" height="%s"%s`, classAttr(s.style.Class), num(s.x), num(s.y), num(s.w), num(s.h), paint(s.style))
			closeTitled(&b, "rect", s.style.Title)
		case kindPoly:
			b.WriteString(`<polygon` + classAttr(s.style.Class) + ` points="`)
			for i, p := range s.pts {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(num(p.X) + "," + num(p.Y))
			}
			b.WriteString(`"` + paint(s.style))
			closeTitled(&b, "polygon", s.style.Title)
		case kindLine:
			fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n",
				num(s.x), num(s.y), num(s.w), num(s.h), HexOf(s.style.Stroke), num(s.style.StrokeWidth), opacity("stroke-opacity", s.style.Stroke.A))
		case kindText:
			anchor := ""
			switch s.ts.Anchor {
			case Middle:
				anchor = ` text-anchor="middle"`
			case End:
				anchor = ` text-anchor="end"`
			}
			weight := ""
			if s.ts.Bold {
				weight = ` font-weight="bold"`
			}
			fmt.Fprintf(&b, `<text%s x="%s" y="%s" font-size="%s"%s%s%s fill="%s"%s>`, classAttr(s.ts.Class), num(s.x), num(s.y), num(s.ts.Size),
				weight, anchor, textLength(s.text, s.ts), HexOf(s.ts.Fill), opacity("fill-opacity", s.ts.Fill.A))
			if s.ts.Title != "" {
				fmt.Fprintf(&b, "<title>%s</title>", esc(s.ts.Title))
			}
			fmt.Fprintf(&b, "%s</text>\n", esc(drawable(s.text, s.ts.Bold)))
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// textLength pins a text to the width the layout measured for it, so that a
// viewer drawing it in a wider fallback font squeezes it into the same box
// instead of running it under its neighbour.
func textLength(text string, ts TextStyle) string {
	w := TextWidth(text, ts.Size, ts.Bold)
	if w <= 0 {
		return ""
	}
	return ` textLength="` + num(w) + `" lengthAdjust="spacingAndGlyphs"`
}

func closeTitled(b *bytes.Buffer, tag, title string) {
	if title == "" {
		b.WriteString("/>\n")
		return
	}
	fmt.Fprintf(b, "><title>%s</title></%s>\n", esc(title), tag)
}

func paint(s Style) string {
	out := ` fill="` + HexOf(s.Fill) + `"` + opacity("fill-opacity", s.Fill.A)
	if s.Stroke.A != 0 && s.StrokeWidth > 0 {
		out += ` stroke="` + HexOf(s.Stroke) + `" stroke-width="` + num(s.StrokeWidth) + `"` + opacity("stroke-opacity", s.Stroke.A)
	}
	return out
}

func opacity(attr string, a uint8) string {
	if a == 0xff {
		return ""
	}
	return fmt.Sprintf(` %s="%.3g"`, attr, float64(a)/255)
}

func classAttr(c string) string {
	if c == "" {
		return ""
	}
	return ` class="` + esc(c) + `"`
}

// num formats a coordinate with at most one decimal, so that files are
// small and stable.
func num(v float64) string {
	return strconv.FormatFloat(float64(int64(v*10+sign(v)*0.5))/10, 'f', -1, 64)
}

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}

// esc makes text inert in SVG: markup escaped, control characters made
// visible (XML allows none, not even as a reference).
func esc(s string) string { return html.EscapeString(printable.String(s)) }
