package analysis

import (
	"math"
	"time"

	// The zone database travels with the binary: a report rebuilt on a
	// machine without /usr/share/zoneinfo (a slim CI image) still shows
	// the run's local times.
	_ "time/tzdata"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/num"
)

// WallClock turns run seconds (from t = 0) into wall-clock times: UTC and
// the harness machine's local zone where the journal recorded it. The
// report prints both beside every run time, so that a reader lines its
// figures up with gateway logs and dashboards without arithmetic.
type WallClock struct {
	start time.Time
	Local *time.Location // nil when unknown or the same as UTC
}

// Clock is the run's wall clock (unknown when the journal has no start).
func (r *RunInfo) Clock() WallClock {
	c := WallClock{start: r.WallStart}
	if loc := journal.LoadZone(r.TimeZone); loc != nil && !c.start.IsZero() {
		// A machine on UTC has no second zone to show.
		if _, off := c.start.In(loc).Zone(); off != 0 || !isUTCName(loc.String()) {
			c.Local = loc
		}
	}
	return c
}

func isUTCName(n string) bool {
	return n == "UTC" || n == "Etc/UTC" || n == "UTC+00:00" || n == "Etc/GMT"
}

// Known reports whether the run's wall-clock start is known.
func (c WallClock) Known() bool { return !c.start.IsZero() }

// at is the instant of run second s.
func (c WallClock) at(s float64) time.Time {
	return c.start.Add(time.Duration(math.Round(s*1e3)) * time.Millisecond)
}

// UTC formats run second s as UTC "15:04:05"; precise adds milliseconds.
func (c WallClock) UTC(s float64, precise bool) string {
	return c.at(s).UTC().Format(clockLayout(precise))
}

// LocalTime formats run second s in the local zone, or "" when unknown.
func (c WallClock) LocalTime(s float64, precise bool) string {
	if c.Local == nil {
		return ""
	}
	return c.at(s).In(c.Local).Format(clockLayout(precise))
}

// ZoneAbbrev is the local zone's abbreviation at run second s ("CET").
func (c WallClock) ZoneAbbrev(s float64) string {
	if c.Local == nil {
		return ""
	}
	return c.at(s).In(c.Local).Format("MST")
}

func clockLayout(precise bool) string {
	if precise {
		return "15:04:05.000"
	}
	return "15:04:05"
}

// Stamp is run second s as wall-clock text, "10:31:30 UTC / 11:31:30 CET",
// or "" when the run's start is unknown.
func (c WallClock) Stamp(s float64) string {
	if !c.Known() {
		return ""
	}
	out := c.UTC(s, false) + " UTC"
	if l := c.LocalTime(s, false); l != "" {
		out += " / " + l + " " + c.ZoneAbbrev(s)
	}
	return out
}

// Span is a run-time span with its wall-clock times:
// "1m0s–2m0s (10:31:30–10:32:30 UTC / 11:31:30–11:32:30 CET)".
func (c WallClock) Span(from, to float64) string {
	out := num.Sec(from) + "–" + num.Sec(to)
	if !c.Known() {
		return out
	}
	out += " (" + c.UTC(from, false) + "–" + c.UTC(to, false) + " UTC"
	if l := c.LocalTime(from, false); l != "" {
		out += " / " + l + "–" + c.LocalTime(to, false) + " " + c.ZoneAbbrev(from)
	}
	return out + ")"
}

// Moment is a run time with its wall-clock time: "1m0s (10:31:30 UTC / …)".
func (c WallClock) Moment(s float64) string {
	if st := c.Stamp(s); st != "" {
		return num.Sec(s) + " (" + st + ")"
	}
	return num.Sec(s)
}
