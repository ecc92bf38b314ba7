// Package num is the one place reports turn numbers and times into text
// and take a median: every figure, statement and table prints a value
// the same way, whichever layer computed it.
package num

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Plural says "1 call", "2 calls".
func Plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Sec formats seconds for people: "4.2 s", "350 ms".
func Sec(s float64) string {
	if s < 1 && s > -1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.1f s", s)
}

// Dur formats seconds as a Go-style duration string rounded to the ms,
// or to the µs below a millisecond (a lateness p99 of 0.124 ms is
// "124µs", not "0s").
func Dur(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d > -time.Millisecond && d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// Median is the one median of the reports: the middle value, or for an
// even count the mean of the two middle values (internal/stats.Quantile
// at 0.5, the comparison's bootstrap median, agrees), an infinity kept
// as it is. It sorts a copy; 0 for no values. run.json's p50s, the
// inference's typical spacings and the comparison's medians all use it.
func Median[T ~float64 | ~int64](vs []T) T {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	a, b := s[n/2-1], s[n/2]
	if a == b || math.IsInf(float64(a), 0) || math.IsInf(float64(b), 0) {
		return max(a, b)
	}
	return (a + b) / 2
}

// Ms formats milliseconds for people: "0.054 ms", "3.2 ms", "460 ms",
// "4.25 s".
func Ms(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 10000:
		return fmt.Sprintf("%.1f s", v/1000)
	case a >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case a >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case a >= 10:
		return fmt.Sprintf("%.1f ms", v)
	case a >= 1:
		return fmt.Sprintf("%.2f ms", v)
	case a == 0:
		return "0 ms"
	default:
		return fmt.Sprintf("%.3f ms", v)
	}
}

// Num formats a count or ratio with up to 3 significant digits, never
// in exponent form.
func Num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e9 {
		return fmt.Sprintf("%.0f", v)
	}
	a := math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 0.01:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
	default:
		return fmt.Sprintf("%.2g", v) // 0.003, 0.00012: never 0.0030
	}
}

// SecP is Sec of *p, or a dash when the figure is unknown (nil).
func SecP(p *float64) string {
	if p == nil {
		return "—"
	}
	return Sec(*p)
}

// NumP is *p in format, or a dash when unknown.
func NumP(p *float64, format string) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf(format, *p)
}

// PctP is the ratio *p as a percentage with one decimal, or a dash.
func PctP(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100**p)
}

// MsP is *p milliseconds with one decimal, or a dash.
func MsP(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f ms", *p)
}

// Tri is yes or no for a known answer, a dash for an unknown one.
func Tri(p *bool, yes, no string) string {
	if p == nil {
		return "— (no 429 served)"
	}
	if *p {
		return yes
	}
	return no
}

// OrDash is s, or a dash when s is empty.
func OrDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// Ordinal says "1st", "2nd", "3rd", "11th".
func Ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// Round3 rounds to three decimals (a millisecond of a second), the
// precision run.json keeps.
func Round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Pick is one for a count of 1, many otherwise.
func Pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
