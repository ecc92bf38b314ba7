package canvas

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// Raster draws the drawing into a new RGBA image, scale pixels per drawing
// pixel (2 gives a picture that stays sharp on a high-density screen and
// in print). Shapes are anti-aliased; text uses the Go fonts.
func (d *Drawing) Raster(scale float64) *image.RGBA {
	if scale <= 0 {
		scale = 1
	}
	w, h := int(math.Ceil(d.W*scale)), int(math.Ceil(d.H*scale))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	r := rasterizer{img: img, scale: scale, faces: map[faceKey]font.Face{}}
	defer r.close()
	for _, s := range d.shapes {
		switch s.kind {
		case kindRect:
			if s.w <= 0 || s.h <= 0 {
				continue
			}
			x0, y0, x1, y1 := s.x, s.y, s.x+s.w, s.y+s.h
			r.fill([]Point{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}, s.style.Fill)
			if sw := s.style.StrokeWidth; s.style.Stroke.A != 0 && sw > 0 {
				// An SVG stroke is centred on the edge.
				c, hw := s.style.Stroke, sw/2
				r.fill(box(x0-hw, y0-hw, x1+hw, y0+hw), c)
				r.fill(box(x0-hw, y1-hw, x1+hw, y1+hw), c)
				r.fill(box(x0-hw, y0+hw, x0+hw, y1-hw), c)
				r.fill(box(x1-hw, y0+hw, x1+hw, y1-hw), c)
			}
		case kindPoly:
			r.fill(s.pts, s.style.Fill)
			// Polygon outlines are not drawn in the PNG: the marks that
			// use them have a hair-line stroke only to separate
			// overlapping marks on screen.
		case kindLine:
			dx, dy := s.w-s.x, s.h-s.y
			l := math.Hypot(dx, dy)
			if l == 0 {
				continue
			}
			nx, ny := -dy/l*s.style.StrokeWidth/2, dx/l*s.style.StrokeWidth/2
			r.fill([]Point{{s.x + nx, s.y + ny}, {s.w + nx, s.h + ny}, {s.w - nx, s.h - ny}, {s.x - nx, s.y - ny}}, s.style.Stroke)
		case kindText:
			r.text(s)
		}
	}
	return img
}

// PNG encodes the drawing as a PNG image at the given scale, at the
// fastest compression level: against the default level the report's
// timeline is 2.6 % larger and encodes about three times faster (the
// encoding had been most of the report step's CPU; docs/benchmarks.md).
func (d *Drawing) PNG(scale float64) ([]byte, error) {
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&b, d.Raster(scale)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func box(x0, y0, x1, y1 float64) []Point { return []Point{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}} }

type faceKey struct {
	size float64
	bold bool
}

type rasterizer struct {
	img   *image.RGBA
	scale float64
	z     vector.Rasterizer
	faces map[faceKey]font.Face
}

func (r *rasterizer) close() {
	for _, f := range r.faces {
		f.Close()
	}
}

// fill rasterises a polygon into its own bounding box only, so that a
// drawing of thousands of small bars costs their area, not the picture's
// area each.
func (r *rasterizer) fill(pts []Point, c color.NRGBA) {
	if len(pts) < 3 || c.A == 0 {
		return
	}
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, p := range pts {
		minX, maxX = math.Min(minX, p.X*r.scale), math.Max(maxX, p.X*r.scale)
		minY, maxY = math.Min(minY, p.Y*r.scale), math.Max(maxY, p.Y*r.scale)
	}
	bb := image.Rect(int(math.Floor(minX)), int(math.Floor(minY)), int(math.Ceil(maxX)), int(math.Ceil(maxY))).Intersect(r.img.Bounds())
	if bb.Empty() {
		return
	}
	r.z.Reset(bb.Dx(), bb.Dy())
	ox, oy := float64(bb.Min.X), float64(bb.Min.Y)
	for i, p := range pts {
		x, y := float32(p.X*r.scale-ox), float32(p.Y*r.scale-oy)
		if i == 0 {
			r.z.MoveTo(x, y)
		} else {
			r.z.LineTo(x, y)
		}
	}
	r.z.ClosePath()
	r.z.Draw(r.img, bb, image.NewUniform(c), image.Point{})
}

func (r *rasterizer) face(size float64, bold bool) font.Face {
	k := faceKey{size * r.scale, bold}
	if f, ok := r.faces[k]; ok {
		return f
	}
	f, err := opentype.NewFace(fontFor(bold), &opentype.FaceOptions{Size: k.size, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		// The Go fonts are embedded and known good; a failure here is a
		// programming error.
		panic("canvas: face: " + err.Error())
	}
	r.faces[k] = f
	return f
}

func (r *rasterizer) text(s shape) {
	txt := drawable(s.text, s.ts.Bold)
	x := s.x
	switch s.ts.Anchor {
	case Middle:
		x -= TextWidth(txt, s.ts.Size, s.ts.Bold) / 2
	case End:
		x -= TextWidth(txt, s.ts.Size, s.ts.Bold)
	}
	dr := font.Drawer{Dst: r.img, Src: image.NewUniform(s.ts.Fill), Face: r.face(s.ts.Size, s.ts.Bold),
		Dot: fixed.Point26_6{X: fixed.Int26_6(x * r.scale * 64), Y: fixed.Int26_6(s.y * r.scale * 64)}}
	dr.DrawString(txt)
}
