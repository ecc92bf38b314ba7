package launchd

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
)

// When is one entry of a schedule: a time of day, every day or on one day of
// the week, in the host's local time zone (launchd and systemd both read
// calendar entries in local time).
type When struct {
	// Daily is true for an entry that fires every day; Weekday is then
	// ignored.
	Daily bool
	// Weekday is the day of a weekly entry; time.Sunday is 0, which is also
	// launchd's convention for the Weekday key.
	Weekday time.Weekday
	// Hour is 0–23 and Minute 0–59.
	Hour, Minute int
}

// ScheduleError reports a schedule entry that cannot be parsed. It wraps
// rehearse.ErrInvalid.
type ScheduleError struct {
	// Input is the entry as given, e.g. "Mon 25:00".
	Input string
	// Reason says what is wrong and what is expected.
	Reason string
}

// Error says which entry is wrong and why.
func (e *ScheduleError) Error() string {
	return fmt.Sprintf("invalid schedule %q: %s", e.Input, e.Reason)
}

// Unwrap makes a ScheduleError an invalid-input error (exit code 2).
func (e *ScheduleError) Unwrap() error { return rehearse.ErrInvalid }

var dayNames = [7]string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

// parseDay accepts a day's full English name or any prefix of it of at least
// three letters ("Mon", "Tues", "thursday"), case-insensitively.
func parseDay(s string) (time.Weekday, bool) {
	l := strings.ToLower(s)
	if len(l) < 3 {
		return 0, false
	}
	for i, name := range dayNames {
		if strings.HasPrefix(name, l) {
			return time.Weekday(i), true
		}
	}
	return 0, false
}

// parseClock parses "HH:MM" (24-hour; the hour may have one digit).
func parseClock(input, s string) (hour, minute int, err error) {
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) < 1 || len(h) > 2 || len(m) != 2 || !digits(h) || !digits(m) {
		return 0, 0, &ScheduleError{Input: input, Reason: fmt.Sprintf("time %q: want HH:MM in 24-hour time, such as 03:00 or 21:30", s)}
	}
	hour, _ = strconv.Atoi(h)
	minute, _ = strconv.Atoi(m)
	if hour > 23 {
		return 0, 0, &ScheduleError{Input: input, Reason: fmt.Sprintf("hour %d out of range 0-23", hour)}
	}
	if minute > 59 {
		return 0, 0, &ScheduleError{Input: input, Reason: fmt.Sprintf("minute %d out of range 0-59", minute)}
	}
	return hour, minute, nil
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ParseWeekly parses a weekly entry: a day and a 24-hour time, such as
// "Mon 03:00", "monday 3:00" or "SUN 23:30".
func ParseWeekly(s string) (When, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return When{}, &ScheduleError{Input: s, Reason: `want a day and a 24-hour time, such as "Mon 03:00"`}
	}
	day, ok := parseDay(f[0])
	if !ok {
		return When{}, &ScheduleError{Input: s, Reason: fmt.Sprintf("unknown day %q: want Mon, Tue, Wed, Thu, Fri, Sat or Sun (or the full name)", f[0])}
	}
	h, m, err := parseClock(s, f[1])
	if err != nil {
		return When{}, err
	}
	return When{Weekday: day, Hour: h, Minute: m}, nil
}

// ParseDaily parses a daily entry: a 24-hour time such as "03:00".
func ParseDaily(s string) (When, error) {
	t := strings.TrimSpace(s)
	if t == "" || strings.ContainsAny(t, " \t") {
		return When{}, &ScheduleError{Input: s, Reason: "want a 24-hour time such as 03:00"}
	}
	h, m, err := parseClock(s, t)
	if err != nil {
		return When{}, err
	}
	return When{Daily: true, Hour: h, Minute: m}, nil
}

// ParseSchedule parses the --weekly and --daily entries of a command line
// into one schedule. It needs at least one entry and refuses duplicates, which
// are almost always a typo for another day.
func ParseSchedule(weekly, daily []string) ([]When, error) {
	var out []When
	seen := map[When]string{}
	add := func(in string, w When) error {
		if prev, dup := seen[w]; dup {
			return &ScheduleError{Input: in, Reason: fmt.Sprintf("same time as %q", prev)}
		}
		seen[w] = in
		out = append(out, w)
		return nil
	}
	for _, flag := range []struct {
		entries []string
		parse   func(string) (When, error)
	}{{weekly, ParseWeekly}, {daily, ParseDaily}} {
		for _, s := range flag.entries {
			w, err := flag.parse(s)
			if err != nil {
				return nil, err
			}
			if err := add(s, w); err != nil {
				return nil, err
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf(`%w: no schedule: give --weekly "Mon 03:00" (repeatable) or --daily 03:00`, rehearse.ErrInvalid)
	}
	return out, nil
}

// String formats w in the syntax ParseWeekly and ParseDaily read back:
// "Mon 03:00" or "daily 03:00".
func (w When) String() string {
	if w.Daily {
		return fmt.Sprintf("daily %02d:%02d", w.Hour, w.Minute)
	}
	return fmt.Sprintf("%s %02d:%02d", w.Weekday.String()[:3], w.Hour, w.Minute)
}

// OnCalendar formats w as a systemd calendar expression, e.g.
// "Mon *-*-* 03:00:00".
func (w When) OnCalendar() string {
	if w.Daily {
		return fmt.Sprintf("*-*-* %02d:%02d:00", w.Hour, w.Minute)
	}
	return fmt.Sprintf("%s *-*-* %02d:%02d:00", w.Weekday.String()[:3], w.Hour, w.Minute)
}

// Next returns the first time strictly after t at which w fires, in t's
// location. Around a daylight-saving change the wall time may not exist;
// time.Date normalises it the way the calendar does.
func (w When) Next(t time.Time) time.Time {
	c := time.Date(t.Year(), t.Month(), t.Day(), w.Hour, w.Minute, 0, 0, t.Location())
	for i := 0; i < 8; i++ {
		if c.After(t) && (w.Daily || c.Weekday() == w.Weekday) {
			return c
		}
		c = time.Date(c.Year(), c.Month(), c.Day()+1, w.Hour, w.Minute, 0, 0, t.Location())
	}
	return c
}

// NextRun returns the earliest firing of any entry of the schedule after t,
// or the zero time for an empty schedule.
func NextRun(schedule []When, t time.Time) time.Time {
	var best time.Time
	for _, w := range schedule {
		if n := w.Next(t); best.IsZero() || n.Before(best) {
			best = n
		}
	}
	return best
}
