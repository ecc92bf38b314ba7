package journal

import (
	"testing"
	"time"
)

func TestLocalZoneFromTZ(t *testing.T) {
	t.Setenv("TZ", "America/New_York")
	if got := LocalZone(time.Now()); got != "America/New_York" {
		t.Errorf("LocalZone with TZ set: %q", got)
	}
	t.Setenv("TZ", "Not/A_Zone")
	if got := LocalZone(time.Now()); got == "Not/A_Zone" {
		t.Error("an unknown TZ is recorded as a zone name")
	} else if LoadZone(got) == nil {
		t.Errorf("LocalZone fallback %q does not load", got)
	}
}

func TestLoadZone(t *testing.T) {
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		off  int
	}{{"Europe/Berlin", 7200}, {"+05:30", 19800}, {"-03:00", -10800}, {"UTC", 0}} {
		loc := LoadZone(c.name)
		if loc == nil {
			t.Errorf("%s: nil", c.name)
			continue
		}
		if _, off := at.In(loc).Zone(); off != c.off {
			t.Errorf("%s: offset %d, want %d", c.name, off, c.off)
		}
	}
	for _, bad := range []string{"", "+5:30", "+ab:00", "Mars/Olympus"} {
		if LoadZone(bad) != nil {
			t.Errorf("LoadZone(%q) is not nil", bad)
		}
	}
	if FormatOffset(-19800) != "-05:30" || FormatOffset(3600) != "+01:00" {
		t.Error("FormatOffset")
	}
}
