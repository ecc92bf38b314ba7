package launchd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/halfopen/rehearse"
)

// Entry is a scheduled rehearsal found on this machine.
type Entry struct {
	// Label is the job's label; Path its plist or service file.
	Label, Path string
	// Scenario is the scenario the job runs; Archive where it archives.
	Scenario, Archive string
	// Schedule is when it runs.
	Schedule []When
}

// rehearseJob reports whether a command line is one this package writes —
// "<binary> run SCENARIO … --archive DIR …", possibly behind caffeinate — and
// returns its scenario.
func rehearseJob(args []string) (scenario string, ok bool) {
	for i := 0; i+2 < len(args); i++ {
		if args[i+1] == "run" && strings.Contains(filepath.Base(args[i]), "rehearse") {
			return args[i+2], argAfter(args, "--archive") != ""
		}
	}
	return "", false
}

// List returns the rehearsal agents in ~/Library/LaunchAgents, whatever
// their label, sorted by label. It reads files only, so it works on any OS.
func (m *Manager) List() ([]Entry, error) {
	dir := filepath.Dir(m.PlistPath("x"))
	return listDir(dir, ".plist", func(path string, data []byte) (Entry, bool) {
		p, err := ParsePlist(data)
		if err != nil {
			return Entry{}, false
		}
		scenario, ok := rehearseJob(p.ProgramArguments)
		if !ok {
			return Entry{}, false
		}
		return Entry{Label: p.Label, Path: path, Scenario: scenario, Archive: p.ArchiveDir(), Schedule: p.Schedule()}, true
	})
}

// List returns the rehearsal services in the systemd user unit directory,
// with the schedule of their timers, sorted by label.
func (d *Systemd) List() ([]Entry, error) {
	return listDir(d.UnitDir(), ".service", func(path string, data []byte) (Entry, bool) {
		ex := unitValues(data)["ExecStart"]
		if len(ex) == 0 {
			return Entry{}, false
		}
		args := splitExec(ex[len(ex)-1])
		scenario, ok := rehearseJob(args)
		if !ok {
			return Entry{}, false
		}
		label := strings.TrimSuffix(filepath.Base(path), ".service")
		e := Entry{Label: label, Path: path, Scenario: scenario, Archive: argAfter(args, "--archive")}
		if tmr, err := os.ReadFile(strings.TrimSuffix(path, ".service") + ".timer"); err == nil {
			for _, v := range unitValues(tmr)["OnCalendar"] {
				if w, ok := parseOnCalendar(v); ok {
					e.Schedule = append(e.Schedule, w)
				}
			}
		}
		return e, true
	})
}

func listDir(dir, ext string, read func(path string, data []byte) (Entry, bool)) ([]Entry, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
	}
	var out []Entry
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ext) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			continue // unreadable files are someone else's
		}
		if entry, ok := read(path, data); ok {
			out = append(out, entry)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Label < out[j].Label })
	return out, nil
}

// FormatEntries writes one line per entry: label, schedule, scenario.
func FormatEntries(w io.Writer, entries []Entry) error {
	var b strings.Builder
	for _, e := range entries {
		parts := make([]string, len(e.Schedule))
		for i, s := range e.Schedule {
			parts[i] = s.String()
		}
		sched := strings.Join(parts, ", ")
		if sched == "" {
			sched = "(no schedule)"
		}
		fmt.Fprintf(&b, "%-32s %-24s %s\n", e.Label, sched, e.Scenario)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
