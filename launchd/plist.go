package launchd

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"time"

	"howett.net/plist"

	"github.com/halfopen/rehearse"
)

// Plist is the LaunchAgent property list of a job, with launchd's key names
// (see launchd.plist(5)). It is rendered with howett.net/plist as XML with
// Apple's DTD header; keys come out sorted, so output is byte-stable.
type Plist struct {
	Label                 string             `plist:"Label"`
	ProgramArguments      []string           `plist:"ProgramArguments"`
	StartCalendarInterval []CalendarInterval `plist:"StartCalendarInterval"`
	WorkingDirectory      string             `plist:"WorkingDirectory,omitempty"`
	StandardOutPath       string             `plist:"StandardOutPath,omitempty"`
	StandardErrorPath     string             `plist:"StandardErrorPath,omitempty"`
	EnvironmentVariables  map[string]string  `plist:"EnvironmentVariables,omitempty"`
	ProcessType           string             `plist:"ProcessType,omitempty"`
	// RunAtLoad is written explicitly as false: loading the agent (at
	// install or at login) must not start a rehearsal against whatever
	// gateway happens to be running.
	RunAtLoad bool `plist:"RunAtLoad"`
}

// CalendarInterval is one StartCalendarInterval entry. A missing key is a
// wildcard, so a daily entry has no Weekday.
type CalendarInterval struct {
	// Weekday is 0 (Sunday) to 6; nil for every day.
	Weekday *int `plist:"Weekday,omitempty"`
	Hour    int  `plist:"Hour"`
	Minute  int  `plist:"Minute"`
}

// Interval converts a schedule entry to its StartCalendarInterval form.
func (w When) Interval() CalendarInterval {
	ci := CalendarInterval{Hour: w.Hour, Minute: w.Minute}
	if !w.Daily {
		d := int(w.Weekday)
		ci.Weekday = &d
	}
	return ci
}

// When converts a StartCalendarInterval entry back to a schedule entry.
// launchd also accepts 7 for Sunday.
func (ci CalendarInterval) When() When {
	if ci.Weekday == nil {
		return When{Daily: true, Hour: ci.Hour, Minute: ci.Minute}
	}
	return When{Weekday: time.Weekday(*ci.Weekday % 7), Hour: ci.Hour, Minute: ci.Minute}
}

// Plist returns the job's property list. The job must be resolved.
func (j Job) Plist() Plist {
	p := Plist{
		Label:             j.Label,
		ProgramArguments:  j.Args(),
		WorkingDirectory:  j.WorkingDirectory,
		StandardOutPath:   filepath.Join(j.Archive, LogsDir, j.Label+".out.log"),
		StandardErrorPath: filepath.Join(j.Archive, LogsDir, j.Label+".err.log"),
		ProcessType:       j.ProcessType,
	}
	if j.Caffeinate {
		p.ProgramArguments = append([]string{"/usr/bin/caffeinate", "-i"}, p.ProgramArguments...)
	}
	for _, w := range j.Schedule {
		p.StartCalendarInterval = append(p.StartCalendarInterval, w.Interval())
	}
	if len(j.Env) > 0 {
		p.EnvironmentVariables = make(map[string]string, len(j.Env))
		for k, v := range j.Env {
			p.EnvironmentVariables[k] = v
		}
	}
	return p
}

// Render writes the property list as XML, with a trailing newline.
func (p Plist) Render() ([]byte, error) {
	var buf bytes.Buffer
	enc := plist.NewEncoderForFormat(&buf, plist.XMLFormat)
	enc.Indent("\t")
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("render plist: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// ParsePlist reads a LaunchAgent property list (XML or binary).
func ParsePlist(data []byte) (Plist, error) {
	var p Plist
	if _, err := plist.Unmarshal(data, &p); err != nil {
		return Plist{}, fmt.Errorf("%w: parse plist: %w", rehearse.ErrInvalid, err)
	}
	return p, nil
}

// Schedule returns the plist's calendar entries as a schedule.
func (p Plist) Schedule() []When {
	out := make([]When, 0, len(p.StartCalendarInterval))
	for _, ci := range p.StartCalendarInterval {
		out = append(out, ci.When())
	}
	return out
}

// ArchiveDir returns the --archive argument of the plist's program, or ""
// for an agent that was not made by rehearse.
func (p Plist) ArchiveDir() string { return argAfter(p.ProgramArguments, "--archive") }

func argAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// diffKeys lists the top-level keys on which two property lists differ, to
// say precisely why an existing agent is not the one being installed. Data
// that does not parse differs as a whole.
func diffKeys(old, new []byte) []string {
	var a, b map[string]any
	if _, err := plist.Unmarshal(old, &a); err != nil {
		return []string{"(existing file is not a valid plist)"}
	}
	if _, err := plist.Unmarshal(new, &b); err != nil {
		return []string{"(new plist)"}
	}
	return changedKeys(a, b, func(x, y any) bool { return reflect.DeepEqual(x, y) })
}

// changedKeys lists, sorted, the keys whose values differ between a and b
// (a key present on one side only differs).
func changedKeys[V any](a, b map[string]V, equal func(x, y V) bool) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if y, ok := b[k]; !ok || !equal(a[k], y) {
			out = append(out, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
