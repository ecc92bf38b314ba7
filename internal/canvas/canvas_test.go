package canvas

import (
	"bytes"
	"encoding/xml"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/internal/testutil"
)

func sample() *Drawing {
	d := New(200, 100)
	d.Rect(10, 10, 50, 20, Style{Fill: Hex("#283593"), Title: `a <b> & "c"`, Class: "fault"})
	d.Rect(100, 10, 40, 40, Style{Fill: Hex("#fafafa"), Stroke: Hex("#000000"), StrokeWidth: 2})
	d.Polygon([]Point{{150, 60}, {160, 70}, {150, 80}, {140, 70}}, Style{Fill: Hex("#e65100")})
	d.Line(0, 90, 200, 90, 2, Hex("#00695c"))
	d.Text(10, 60, "Hello <world> 👋", TextStyle{Size: 14, Fill: Black})
	d.Text(190, 20, "end", TextStyle{Size: 10, Anchor: End, Fill: Black, Bold: true})
	return d
}

func TestPNGPixels(t *testing.T) {
	b, err := sample().PNG(2)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds(); got != image.Rect(0, 0, 400, 200) {
		t.Fatalf("bounds %v, want 400×200 at scale 2", got)
	}
	at := func(x, y int) color.NRGBA { return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA) }
	for _, c := range []struct {
		x, y int
		want string
		what string
	}{
		{70, 40, "#283593", "inside the rectangle"},
		{5, 5, "#ffffff", "background"},
		{240, 60, "#fafafa", "inside the stroked rectangle"},
		{200, 60, "#000000", "on its 2px stroke (4 px at scale 2)"},
		{300, 140, "#e65100", "polygon centre"},
		{100, 180, "#00695c", "line"},
	} {
		if got := HexOf(at(c.x, c.y)); got != c.want {
			t.Errorf("%s at (%d,%d): %s, want %s", c.what, c.x, c.y, got, c.want)
		}
	}
	// The text renders: dark pixels inside its box, none above it.
	dark := func(r image.Rectangle) int {
		n := 0
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				if Luminance(at(x, y)) < 0.2 {
					n++
				}
			}
		}
		return n
	}
	w := int(TextWidth("Hello <world> 👋", 14, false) * 2)
	if n := dark(image.Rect(20, 96, 20+w, 122)); n < 200 {
		t.Errorf("text: %d dark pixels in its box, want many", n)
	}
	if n := dark(image.Rect(20, 62, 190, 80)); n != 0 { // left of the stroked rectangle
		t.Errorf("%d dark pixels above the text", n)
	}
	// End-anchored text ends at x = 190.
	if n := dark(image.Rect(380, 20, 400, 42)); n != 0 {
		t.Errorf("end-anchored text spills past its anchor: %d dark pixels", n)
	}
	if n := dark(image.Rect(360, 20, 380, 42)); n == 0 {
		t.Error("end-anchored text missing left of its anchor")
	}
}

func TestSVGWellFormedAndEscaped(t *testing.T) {
	s := sample().SVG("timeline")
	var texts []string
	for _, tok := range testutil.XMLTokens(t, "the SVG", s) {
		if cd, ok := tok.(xml.CharData); ok && strings.TrimSpace(string(cd)) != "" {
			texts = append(texts, string(cd))
		}
	}
	joined := strings.Join(texts, "|")
	for _, want := range []string{`a <b> & "c"`, "Hello <world> ?", "end"} {
		if !strings.Contains(joined, want) {
			t.Errorf("SVG text %q missing from %q", want, joined)
		}
	}
	for _, want := range []string{`class="timeline"`, `class="fault"`, `fill="#283593"`, `text-anchor="end"`, `font-weight="bold"`, `stroke-width="2"`} {
		if !bytes.Contains(s, []byte(want)) {
			t.Errorf("SVG lacks %s", want)
		}
	}
}

func TestTextWidth(t *testing.T) {
	a, b := TextWidth("abc", 10, false), TextWidth("abcabc", 10, false)
	if a <= 10 || a > 25 || b < 1.9*a || b > 2.1*a {
		t.Errorf("widths abc %.1f, abcabc %.1f", a, b)
	}
	if TextWidth("abc", 20, false) < 1.9*a {
		t.Error("width does not scale with size")
	}
	if TextWidth("abc", 10, true) <= a {
		t.Error("bold is not wider")
	}
	if TextWidth("", 10, false) != 0 {
		t.Error("empty text has width")
	}
}

func TestContrast(t *testing.T) {
	if c := Contrast(Hex("#000000"), Hex("#ffffff")); c < 20.9 || c > 21.01 {
		t.Errorf("black on white %.2f, want 21", c)
	}
	if c := Contrast(Hex("#777777"), Hex("#ffffff")); c < 4.4 || c > 4.5 {
		t.Errorf("#777 on white %.2f, want 4.48", c)
	}
	if ReadableOn(Hex("#64b5f6")) != Black || ReadableOn(Hex("#283593")) != White {
		t.Error("ReadableOn picks the lower-contrast colour")
	}
}

func TestHex(t *testing.T) {
	if c := Hex("#01020380"); c != (color.NRGBA{1, 2, 3, 0x80}) {
		t.Errorf("%v", c)
	}
	defer func() {
		if recover() == nil {
			t.Error("bad colour accepted")
		}
	}()
	Hex("red")
}

func BenchmarkRaster(b *testing.B) {
	d := New(1200, 600)
	for i := 0; i < 5000; i++ {
		d.Rect(float64(i%1000), float64(i%500), 3.4, 20, Style{Fill: Hex("#4caf50")})
	}
	for i := 0; i < 100; i++ {
		d.Text(float64(i*10), 580, "label", TextStyle{Size: 11, Fill: Black})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.Raster(2)
	}
}

// TestPlace stacks a drawing under another: the lower half of the result
// is the placed drawing, pixel for pixel, and every shape kind moved.
func TestPlace(t *testing.T) {
	top, low := New(200, 100), sample()
	top.Rect(0, 0, 200, 100, Style{Fill: Hex("#283593")})
	d := New(200, 200)
	d.Place(top, 0, 0)
	d.Place(low, 0, 100)
	if d.Len() != top.Len()+low.Len() {
		t.Fatalf("%d shapes, want %d", d.Len(), top.Len()+low.Len())
	}
	got, want := d.Raster(2), low.Raster(2)
	for y := 0; y < 200; y++ {
		for x := 0; x < 400; x++ {
			if g, w := got.RGBAAt(x, y+200), want.RGBAAt(x, y); g != w {
				t.Fatalf("pixel (%d,%d) of the placed drawing: %v, want %v", x, y, g, w)
			}
			if g := got.RGBAAt(x, y); g != (color.RGBA{0x28, 0x35, 0x93, 0xff}) {
				t.Fatalf("pixel (%d,%d) of the top drawing: %v", x, y, g)
			}
		}
	}
	// The SVG says the same: the line's both ends and the polygon moved.
	svg := string(d.SVG(""))
	for _, s := range []string{`<line x1="0" y1="190" x2="200" y2="190"`, `points="150,160 160,170 150,180 140,170"`, `<text x="10" y="160"`} {
		if !strings.Contains(svg, s) {
			t.Errorf("SVG lacks %s", s)
		}
	}
	// The placed drawing itself is left as it was.
	if !strings.Contains(string(low.SVG("")), `<line x1="0" y1="90" x2="200" y2="90"`) {
		t.Error("Place changed the drawing it placed")
	}
}

// A viewer without the Go font draws a wider fallback; each text must carry
// the width the layout measured, or labels run under their neighbours.
func TestSVGTextsCarryMeasuredWidth(t *testing.T) {
	d := New(200, 50)
	d.Text(10, 20, "fault window (named on or beside the bar)", TextStyle{Size: 11})
	d.Text(10, 40, "bold key", TextStyle{Size: 12, Bold: true})
	s := string(d.SVG(""))
	for _, c := range []struct {
		text string
		ts   TextStyle
	}{{"fault window (named on or beside the bar)", TextStyle{Size: 11}}, {"bold key", TextStyle{Size: 12, Bold: true}}} {
		want := `textLength="` + num(TextWidth(c.text, c.ts.Size, c.ts.Bold)) + `" lengthAdjust="spacingAndGlyphs"`
		if !strings.Contains(s, want) {
			t.Errorf("text %q lacks %s in\n%s", c.text, want, s)
		}
	}
}
