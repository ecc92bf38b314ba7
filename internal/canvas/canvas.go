// Package canvas is a small retained drawing: rectangles, polygons, lines
// and text in pixel coordinates, recorded once and encoded as SVG or PNG.
// The report's timeline is drawn once onto a Drawing, so timeline.svg and
// timeline.png are the same picture: a layout decision (where a label fits,
// which row a fault bar takes) is made once, not once per format.
//
// Text is laid out with the Go fonts (golang.org/x/image/font/gofont), which
// the PNG encoder renders and TextWidth measures. The SVG names the Go font
// first and falls back to the viewer's sans-serif, which is no wider, so a
// label measured to fit still fits.
package canvas

import (
	"fmt"
	"image/color"
	"strings"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// Anchor is where a text's x coordinate sits along the text.
type Anchor int

// Text anchors, as SVG's text-anchor.
const (
	Start Anchor = iota
	Middle
	End
)

// Style is how a filled shape looks. A zero Stroke draws no outline.
type Style struct {
	Fill        color.NRGBA
	Stroke      color.NRGBA
	StrokeWidth float64
	// Title is the shape's tooltip in the SVG (a <title> child); the PNG
	// has no tooltips, so anything a reader needs must also be drawn.
	Title string
	// Class is an SVG class attribute, for tests and stylesheets; it never
	// changes how the shape is drawn.
	Class string
}

// TextStyle is how a text looks.
type TextStyle struct {
	Size   float64 // font size in pixels
	Bold   bool
	Anchor Anchor
	Fill   color.NRGBA
	Title  string
	Class  string
}

// Point is a position in pixels.
type Point struct{ X, Y float64 }

type shapeKind int

const (
	kindRect shapeKind = iota
	kindPoly
	kindLine
	kindText
)

type shape struct {
	kind       shapeKind
	x, y, w, h float64 // rect; line uses x,y → w,h as the second point
	pts        []Point
	style      Style
	text       string
	ts         TextStyle
}

// Drawing is a picture W × H pixels: shapes in the order drawn (later ones
// on top) over a white background.
type Drawing struct {
	W, H   float64
	shapes []shape
}

// New returns an empty drawing of the given size. H may be set later
// (Drawing.H), once the layout knows how tall the picture is.
func New(w, h float64) *Drawing { return &Drawing{W: w, H: h} }

// Len is the number of shapes drawn so far; with Insert it lets a layout
// draw something under shapes it has already placed (a grid under the
// bars, sized once the bars are known).
func (d *Drawing) Len() int { return len(d.shapes) }

// Insert puts the shapes of other under the shapes drawn from index at on,
// as if they had been drawn then.
func (d *Drawing) Insert(at int, other *Drawing) {
	at = min(max(at, 0), len(d.shapes))
	d.shapes = append(d.shapes[:at], append(append([]shape(nil), other.shapes...), d.shapes[at:]...)...)
}

// Place draws the shapes of other over d with other's origin at (dx, dy),
// so that pictures laid out on their own (two timelines) become one
// picture, in SVG and in PNG alike. d's size is not changed.
func (d *Drawing) Place(other *Drawing, dx, dy float64) {
	for _, s := range other.shapes {
		s.x += dx
		s.y += dy
		switch s.kind {
		case kindLine:
			// w, h are a line's second point.
			s.w += dx
			s.h += dy
		case kindPoly:
			pts := make([]Point, len(s.pts))
			for i, p := range s.pts {
				pts[i] = Point{p.X + dx, p.Y + dy}
			}
			s.pts = pts
		}
		d.shapes = append(d.shapes, s)
	}
}

// Rect draws a w × h rectangle with its top-left corner at (x, y).
// Negative sizes are drawn as empty.
func (d *Drawing) Rect(x, y, w, h float64, s Style) {
	d.shapes = append(d.shapes, shape{kind: kindRect, x: x, y: y, w: max(w, 0), h: max(h, 0), style: s})
}

// Polygon draws a closed polygon.
func (d *Drawing) Polygon(pts []Point, s Style) {
	d.shapes = append(d.shapes, shape{kind: kindPoly, pts: append([]Point(nil), pts...), style: s})
}

// Line draws a straight line of the given width and colour.
func (d *Drawing) Line(x1, y1, x2, y2, width float64, c color.NRGBA) {
	d.shapes = append(d.shapes, shape{kind: kindLine, x: x1, y: y1, w: x2, h: y2, style: Style{Stroke: c, StrokeWidth: width}})
}

// Text draws s with its baseline at y.
func (d *Drawing) Text(x, y float64, s string, t TextStyle) {
	d.shapes = append(d.shapes, shape{kind: kindText, x: x, y: y, text: s, ts: t})
}

// Hex parses "#rrggbb" (or "#rrggbbaa"); it panics on anything else, as
// colours are constants of the caller.
func Hex(s string) color.NRGBA {
	var c color.NRGBA
	c.A = 0xff
	switch len(s) {
	case 7:
		if _, err := fmt.Sscanf(s, "#%02x%02x%02x", &c.R, &c.G, &c.B); err != nil {
			panic("canvas: bad colour " + s)
		}
	case 9:
		if _, err := fmt.Sscanf(s, "#%02x%02x%02x%02x", &c.R, &c.G, &c.B, &c.A); err != nil {
			panic("canvas: bad colour " + s)
		}
	default:
		panic("canvas: bad colour " + s)
	}
	return c
}

// HexOf formats c as "#rrggbb", ignoring alpha.
func HexOf(c color.NRGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

type fonts struct {
	regular, bold *sfnt.Font
}

var loadFonts = sync.OnceValue(func() fonts {
	r, err := sfnt.Parse(goregular.TTF)
	if err != nil {
		panic("canvas: Go Regular: " + err.Error())
	}
	b, err := sfnt.Parse(gobold.TTF)
	if err != nil {
		panic("canvas: Go Bold: " + err.Error())
	}
	return fonts{r, b}
})

func fontFor(bold bool) *sfnt.Font {
	f := loadFonts()
	if bold {
		return f.bold
	}
	return f.regular
}

// drawable replaces the runes the Go fonts have no glyph for (emoji, most
// CJK) with '?', so that the PNG never shows a blank box and the width
// TextWidth measured is the width drawn.
func drawable(s string, bold bool) string {
	f := fontFor(bold)
	var buf sfnt.Buffer
	return strings.Map(func(r rune) rune {
		if r < 0x20 {
			return ' '
		}
		if g, err := f.GlyphIndex(&buf, r); err != nil || g == 0 {
			return '?'
		}
		return r
	}, s)
}

// TextWidth is the advance width of s in pixels at the given size, in the
// Go font the PNG is drawn with (kerning included).
func TextWidth(s string, size float64, bold bool) float64 {
	f := fontFor(bold)
	var buf sfnt.Buffer
	ppem := fixed.Int26_6(size * 64)
	var w fixed.Int26_6
	prev := sfnt.GlyphIndex(0)
	for _, r := range drawable(s, bold) {
		g, err := f.GlyphIndex(&buf, r)
		if err != nil {
			continue
		}
		if prev != 0 {
			if k, err := f.Kern(&buf, prev, g, ppem, font.HintingNone); err == nil {
				w += k
			}
		}
		if a, err := f.GlyphAdvance(&buf, g, ppem, font.HintingNone); err == nil {
			w += a
		}
		prev = g
	}
	return float64(w) / 64
}
