package launchd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

func TestParseWeekly(t *testing.T) {
	tests := []struct {
		in      string
		want    When
		wantErr string
	}{
		{in: "Mon 03:00", want: When{Weekday: time.Monday, Hour: 3}},
		{in: "monday 3:00", want: When{Weekday: time.Monday, Hour: 3}},
		{in: "SUN 23:59", want: When{Weekday: time.Sunday, Hour: 23, Minute: 59}},
		{in: "  Tues   00:30 ", want: When{Weekday: time.Tuesday, Minute: 30}},
		{in: "thursday 12:05", want: When{Weekday: time.Thursday, Hour: 12, Minute: 5}},
		{in: "Sat 0:00", want: When{Weekday: time.Saturday}},
		{in: "Mon 25:00", wantErr: `invalid schedule "Mon 25:00": hour 25 out of range 0-23`},
		{in: "Mon 03:60", wantErr: `invalid schedule "Mon 03:60": minute 60 out of range 0-59`},
		{in: "Funday 03:00", wantErr: `invalid schedule "Funday 03:00": unknown day "Funday": want Mon, Tue, Wed, Thu, Fri, Sat or Sun (or the full name)`},
		{in: "Mo 03:00", wantErr: `unknown day "Mo"`},
		{in: "3am", wantErr: `invalid schedule "3am": want a day and a 24-hour time, such as "Mon 03:00"`},
		{in: "Mon 3am", wantErr: `invalid schedule "Mon 3am": time "3am": want HH:MM in 24-hour time, such as 03:00 or 21:30`},
		{in: "Mon 3:0", wantErr: `time "3:0": want HH:MM`},
		{in: "Mon 003:00", wantErr: `time "003:00": want HH:MM`},
		{in: "Mon -1:00", wantErr: `time "-1:00": want HH:MM`},
		{in: "Mon 03:00 extra", wantErr: "want a day and a 24-hour time"},
		{in: "", wantErr: "want a day and a 24-hour time"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseWeekly(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseWeekly(%q) error = %v, want containing %q", tt.in, err, tt.wantErr)
				}
				if !errors.Is(err, rehearse.ErrInvalid) {
					t.Errorf("error %v does not wrap ErrInvalid", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseWeekly(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			back, err := ParseWeekly(got.String())
			if err != nil || back != got {
				t.Errorf("String %q does not parse back: %+v, %v", got.String(), back, err)
			}
		})
	}
}

func TestParseDaily(t *testing.T) {
	tests := []struct {
		in      string
		want    When
		wantErr string
	}{
		{in: "03:00", want: When{Daily: true, Hour: 3}},
		{in: "9:15", want: When{Daily: true, Hour: 9, Minute: 15}},
		{in: "24:00", wantErr: "hour 24 out of range 0-23"},
		{in: "3am", wantErr: `time "3am": want HH:MM`},
		{in: "Mon 03:00", wantErr: "want a 24-hour time such as 03:00"},
		{in: "", wantErr: "want a 24-hour time"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDaily(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, rehearse.ErrInvalid) {
					t.Fatalf("ParseDaily(%q) error = %v, want containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDaily(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseSchedule(t *testing.T) {
	got, err := ParseSchedule([]string{"Mon 03:00", "Thu 03:00"}, []string{"12:00"})
	if err != nil {
		t.Fatal(err)
	}
	want := []When{{Weekday: time.Monday, Hour: 3}, {Weekday: time.Thursday, Hour: 3}, {Daily: true, Hour: 12}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := ParseSchedule(nil, nil); err == nil || !strings.Contains(err.Error(), "no schedule") || !errors.Is(err, rehearse.ErrInvalid) {
		t.Errorf("empty schedule: %v", err)
	}
	if _, err := ParseSchedule([]string{"Mon 03:00", "monday 3:00"}, nil); err == nil || !strings.Contains(err.Error(), `same time as "Mon 03:00"`) {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := ParseSchedule([]string{"Mon 03:00"}, []string{"3am"}); err == nil || !strings.Contains(err.Error(), "3am") {
		t.Errorf("bad daily: %v", err)
	}
}

func TestNext(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	// Monday 30 November 2026, 10:00.
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, loc)
	tests := []struct {
		w    When
		want time.Time
	}{
		{When{Weekday: time.Monday, Hour: 3}, time.Date(2026, 12, 7, 3, 0, 0, 0, loc)},
		{When{Weekday: time.Monday, Hour: 11}, time.Date(2026, 11, 30, 11, 0, 0, 0, loc)},
		{When{Weekday: time.Monday, Hour: 10}, time.Date(2026, 12, 7, 10, 0, 0, 0, loc)}, // strictly after
		{When{Weekday: time.Sunday, Hour: 23, Minute: 30}, time.Date(2026, 12, 6, 23, 30, 0, 0, loc)},
		{When{Daily: true, Hour: 9}, time.Date(2026, 12, 1, 9, 0, 0, 0, loc)},
		{When{Daily: true, Hour: 12}, time.Date(2026, 11, 30, 12, 0, 0, 0, loc)},
	}
	for _, tt := range tests {
		if got := tt.w.Next(now); !got.Equal(tt.want) {
			t.Errorf("%v.Next = %v, want %v", tt.w, got, tt.want)
		}
	}
	sched := []When{{Weekday: time.Monday, Hour: 3}, {Daily: true, Hour: 9}}
	if got := NextRun(sched, now); !got.Equal(time.Date(2026, 12, 1, 9, 0, 0, 0, loc)) {
		t.Errorf("NextRun = %v", got)
	}
	if !NextRun(nil, now).IsZero() {
		t.Error("NextRun of empty schedule not zero")
	}
}

func TestOnCalendarRoundTrip(t *testing.T) {
	for _, w := range []When{{Weekday: time.Sunday, Hour: 23, Minute: 5}, {Daily: true, Hour: 3}} {
		back, ok := parseOnCalendar(w.OnCalendar())
		if !ok || back != w {
			t.Errorf("%q parses back to %+v, %v", w.OnCalendar(), back, ok)
		}
	}
}

func FuzzParseWeekly(f *testing.F) {
	for _, s := range []string{"Mon 03:00", "sunday 23:59", "Funday 03:00", "3am", "Mon 25:00", "Tues 1:05"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWeekly(s)
		if err != nil {
			if !errors.Is(err, rehearse.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if w.Hour < 0 || w.Hour > 23 || w.Minute < 0 || w.Minute > 59 || w.Weekday < 0 || w.Weekday > 6 {
			t.Fatalf("out of range: %+v", w)
		}
		back, err := ParseWeekly(w.String())
		if err != nil || back != w {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, w, w.String(), back, err)
		}
		if c, ok := parseOnCalendar(w.OnCalendar()); !ok || c != w {
			t.Fatalf("OnCalendar %q does not parse back", w.OnCalendar())
		}
	})
}

func FuzzParseDaily(f *testing.F) {
	for _, s := range []string{"03:00", "9:15", "24:00", "3am"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseDaily(s)
		if err != nil {
			return
		}
		if !w.Daily || w.Hour > 23 || w.Minute > 59 {
			t.Fatalf("bad %+v", w)
		}
	})
}
