//go:build linux

package replay

import (
	"testing"
	"time"
)

// Both ways an alarm sleep can end are never early: the Go timer firing
// at the timerfd's expiry, and the read of the timerfd after a Go timer
// that fired first (forced here by leads up to the whole sleep).
func TestAlarmSleepNeverEarly(t *testing.T) {
	d := 1500 * time.Microsecond
	for _, lead := range []time.Duration{0, alarmLead, d / 2, d - time.Microsecond, d, 2 * d} {
		for range 10 {
			t0 := time.Now()
			alarmSleep(d, lead)
			if got := time.Since(t0); got < d {
				t.Fatalf("alarmSleep(%v, lead %v) returned after %v", d, lead, got)
			}
		}
	}
}
