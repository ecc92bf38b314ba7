// Package num is the one place reports turn numbers and times into text
// and take a median: every figure, statement and table prints a value
// the same way, whichever layer computed it.
package num

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Plural says "1 call", "2 calls".
func Plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Sec is the one text of a duration in every report (Markdown, HTML,
// SVG titles and axis, JUnit, compare, history, stdout): seconds in,
// "4.25 s", "350 ms", "0.054 ms", "2 min 5 s" out. The rule:
//   - three significant digits, trailing zeros dropped ("4.2 s" is
//     4.20 s, "4 s" is 4.00 s), never finer than a microsecond (the
//     finest resolution any figure is measured at);
//   - milliseconds below one second, seconds from one second, minutes
//     and whole seconds from one minute (three digits of a second count
//     are whole seconds there anyway); the unit is chosen after rounding,
//     so 999.6 ms is "1 s" and 59.96 s is "1 min";
//   - zero is "0 ms", a negative value has a leading "-", an infinity is
//     "∞" and NaN "—".
//
// Machine-read text is not this: run.json keeps numbers, scenarios and
// flags keep Go duration strings ("250ms") that users type.
func Sec(s float64) string { return durText(s * 1000) }

// At is a moment into the run, s seconds from its start, to the
// millisecond the journal stamps it with ("12.301 s"): text that names
// one observation a reader looks up in the journal or the gateway's log,
// where Sec's three significant digits would lose it.
func At(s float64) string {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return durText(s * 1000)
	}
	return strconv.FormatFloat(math.Round(s*1000)/1000, 'f', 3, 64) + " s"
}

// Ms is Sec of a value held in milliseconds.
func Ms(ms float64) string { return durText(ms) }

func durText(ms float64) string {
	switch {
	case math.IsNaN(ms):
		return "—"
	case math.IsInf(ms, 0):
		if ms < 0 {
			return "-∞"
		}
		return "∞"
	}
	sign := ""
	if ms < 0 {
		sign, ms = "-", -ms
	}
	ms = math.Round(ms*1000) / 1000 // the microsecond resolution
	if ms == 0 {
		return "0 ms"
	}
	if v, text := sig3(ms, 3); v < 1000 {
		return sign + text + " ms"
	}
	if v, text := sig3(ms/1000, 2); v < 60 {
		return sign + text + " s"
	}
	total := int64(math.Round(ms / 1000))
	m, sec := total/60, total%60
	if sec == 0 {
		return fmt.Sprintf("%s%d min", sign, m)
	}
	return fmt.Sprintf("%s%d min %d s", sign, m, sec)
}

// sig3 rounds v > 0 to three significant digits, at most maxDec
// decimals, and gives the rounded value and its text without trailing
// zeros.
func sig3(v float64, maxDec int) (float64, string) {
	dec := min(max(2-int(math.Floor(math.Log10(v))), 0), maxDec)
	text := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Contains(text, ".") {
		text = strings.TrimRight(strings.TrimRight(text, "0"), ".")
	}
	r, _ := strconv.ParseFloat(text, 64)
	return r, text
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

// MsP is Ms of *p, or a dash when unknown.
func MsP(p *float64) string {
	if p == nil {
		return "—"
	}
	return Ms(*p)
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
