package canvas

import (
	"image/color"
	"math"
)

// Luminance is the WCAG 2 relative luminance of an opaque colour.
func Luminance(c color.NRGBA) float64 {
	lin := func(v uint8) float64 {
		s := float64(v) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c.R) + 0.7152*lin(c.G) + 0.0722*lin(c.B)
}

// Contrast is the WCAG 2 contrast ratio of two opaque colours, 1 to 21.
// WCAG AA asks 4.5 for normal text.
func Contrast(a, b color.NRGBA) float64 {
	la, lb := Luminance(a), Luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// Black and White are the two text colours ReadableOn chooses from.
var (
	Black = color.NRGBA{0x1a, 0x1a, 0x1a, 0xff}
	White = color.NRGBA{0xff, 0xff, 0xff, 0xff}
)

// ReadableOn returns the text colour, near-black or white, with the higher
// contrast on bg.
func ReadableOn(bg color.NRGBA) color.NRGBA {
	if Contrast(Black, bg) >= Contrast(White, bg) {
		return Black
	}
	return White
}
