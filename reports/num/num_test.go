package num

import (
	"math"
	"testing"
)

// TestSec pins the one rule for a duration's text: three significant
// digits without trailing zeros, ms below 1 s, s below 1 min, then
// minutes and whole seconds, the unit chosen after rounding.
func TestSec(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want string
	}{
		{0, "0 ms"},
		{math.Copysign(0, -1), "0 ms"},
		{0.0000004, "0 ms"},     // below the µs resolution
		{0.0000006, "0.001 ms"}, // rounds up to one µs
		{0.000054, "0.054 ms"},  // sub-ms
		{0.000124, "0.124 ms"},  // a lateness p99 is not "0 ms"
		{0.0012341, "1.23 ms"},  // three significant digits
		{0.0032, "3.2 ms"},      // trailing zero dropped
		{0.0421, "42.1 ms"},     //
		{0.35, "350 ms"},        //
		{0.4566, "457 ms"},      // rounds to nearest
		{0.9994, "999 ms"},      // stays in ms
		{0.9996, "1 s"},         // rounds to 1000 ms: the unit follows
		{1, "1 s"},              //
		{1.5, "1.5 s"},          //
		{4.2, "4.2 s"},          // 4.20 s
		{4.25, "4.25 s"},        //
		{4.2549, "4.25 s"},      //
		{12.345, "12.3 s"},      //
		{59.94, "59.9 s"},       //
		{59.96, "1 min"},        // rounds to 60 s
		{60, "1 min"},           //
		{90, "1 min 30 s"},      //
		{125.4, "2 min 5 s"},    // whole seconds from a minute
		{3600, "60 min"},        //
		{-0.35, "-350 ms"},      // negative
		{-4.25, "-4.25 s"},      //
		{-90, "-1 min 30 s"},    //
		{math.Inf(1), "∞"},      // an unbounded gap
		{math.NaN(), "—"},       //
	} {
		if got := Sec(c.s); got != c.want {
			t.Errorf("Sec(%v) = %q, want %q", c.s, got, c.want)
		}
	}
}

// TestMsIsSec: a value held in milliseconds prints as the same value in
// seconds, and the nil forms print a dash.
func TestMsIsSec(t *testing.T) {
	for _, ms := range []float64{0, 0.054, 3.2, 460, 999.6, 4250, 125400, -12} {
		if Ms(ms) != Sec(ms/1000) {
			t.Errorf("Ms(%v) = %q, Sec(%v) = %q", ms, Ms(ms), ms/1000, Sec(ms/1000))
		}
	}
	v := 460.0
	if got := MsP(&v); got != "460 ms" {
		t.Errorf("MsP(460) = %q", got)
	}
	if MsP(nil) != "—" || SecP(nil) != "—" {
		t.Error("nil is not a dash")
	}
}

// TestAt: a moment keeps the millisecond the journal stamps it with,
// where Sec would round 117.307 s to "117 s".
func TestAt(t *testing.T) {
	for in, want := range map[float64]string{117.307: "117.307 s", 4.1: "4.100 s", 0: "0.000 s", 2.3005: "2.301 s", math.Inf(1): "∞"} {
		if got := At(in); got != want {
			t.Errorf("At(%v) = %q, want %q", in, got, want)
		}
	}
}
