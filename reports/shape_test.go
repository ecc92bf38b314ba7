package reports

import "testing"

// TestFmtDurBelowMillisecond: a lateness p99 of 0.124 ms is shown in µs,
// not rounded to "0s".
func TestFmtDurBelowMillisecond(t *testing.T) {
	for s, want := range map[float64]string{0.000124: "124µs", 0.0421: "42ms", 1.5: "1.5s", 0: "0s"} {
		if got := fmtDur(s); got != want {
			t.Errorf("fmtDur(%g) = %q, want %q", s, got, want)
		}
	}
}
