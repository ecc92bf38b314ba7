package journal

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LocalZone names the machine's local time zone for RunStart.TimeZone: the
// IANA name ("Europe/Berlin") from $TZ or the /etc/localtime link when one
// can be found, else the local UTC offset at t ("+01:00"), which readers
// turn into a fixed zone. Reports print wall-clock times in it beside UTC,
// so that a postmortem lines them up with the gateway's own logs.
func LocalZone(t time.Time) string {
	if tz := os.Getenv("TZ"); tz != "" && !strings.HasPrefix(tz, ":") && !strings.HasPrefix(tz, "/") {
		if _, err := time.LoadLocation(tz); err == nil {
			return tz
		}
	}
	// Both Linux and macOS link /etc/localtime into a zoneinfo tree
	// (/usr/share/zoneinfo/Europe/Berlin, /var/db/timezone/zoneinfo/...).
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if i := strings.Index(target, "zoneinfo/"); i >= 0 {
			name := filepath.ToSlash(target[i+len("zoneinfo/"):])
			if loc, err := time.LoadLocation(name); err == nil {
				_, want := t.In(time.Local).Zone()
				if _, got := t.In(loc).Zone(); got == want {
					return name
				}
			}
		}
	}
	_, off := t.In(time.Local).Zone()
	return FormatOffset(off)
}

// FormatOffset formats a UTC offset in seconds as "+01:00" / "-05:30".
func FormatOffset(off int) string {
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return string(sign) + twoDigits(off/3600) + ":" + twoDigits(off%3600/60)
}

func twoDigits(n int) string { return string(rune('0'+n/10%10)) + string(rune('0'+n%10)) }

// LoadZone turns a RunStart.TimeZone back into a location: an IANA name
// or a "+hh:mm" offset. It returns nil for "" or a name this machine's
// zone database does not know.
func LoadZone(name string) *time.Location {
	if name == "" {
		return nil
	}
	if len(name) == 6 && (name[0] == '+' || name[0] == '-') && name[3] == ':' {
		h, m := atoi2(name[1:3]), atoi2(name[4:6])
		if h < 0 || m < 0 {
			return nil
		}
		off := h*3600 + m*60
		if name[0] == '-' {
			off = -off
		}
		return time.FixedZone("UTC"+name, off)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil
	}
	return loc
}

func atoi2(s string) int {
	if s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return -1
	}
	return int(s[0]-'0')*10 + int(s[1]-'0')
}
