package launchd

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/runs"
	"github.com/halfopen/rehearse/notify"
)

// Defaults used by the command-line flags.
const (
	// DefaultArchive is where scheduled runs accumulate; "~" is the home
	// directory of the user the agent runs as.
	DefaultArchive = "~/rehearse/runs"
	// DefaultKeep is how many runs of a scenario the archive keeps: a
	// quarter of weekly runs, enough to see a trend in the history index.
	DefaultKeep = 12
	// DefaultProcessType is Standard, not Background: launchd throttles
	// Background jobs' CPU and I/O and lets their timers be coalesced,
	// which would distort the very timings (probe spacing, send lateness)
	// a rehearsal measures. Standard is what launchd uses when the key is
	// absent; writing it makes the choice visible.
	DefaultProcessType = "Standard"
	// LabelPrefix starts every label derived from a scenario name.
	LabelPrefix = "dev.rehearse."
	// LogsDir is the directory of the archive that receives the agent's
	// stdout and stderr. launchd opens these files before the run starts,
	// so they cannot live in the run's own directory, whose name is only
	// known once the run begins.
	LogsDir = "logs"
)

// Job describes one scheduled rehearsal, independently of the scheduler
// that runs it. Plist and SystemdUnits render it; Resolve fills its defaults.
type Job struct {
	// Label names the job: the launchd Label, the plist's file name and
	// the systemd unit name. Empty means LabelFor(Scenario).
	Label string
	// Binary is the absolute path of the rehearse executable. Empty means
	// the running executable with symlinks resolved, so an agent keeps
	// working when a package manager moves its "current" symlink only if
	// you reinstall; pass the stable path when you prefer that.
	Binary string
	// Scenario is the path of the scenario file; made absolute by Resolve.
	Scenario string
	// Archive is the directory runs are archived in. Empty means
	// DefaultArchive; a leading "~/" is the home directory.
	Archive string
	// Keep is how many runs of the scenario to keep; 0 means no count
	// limit (KeepFor alone decides, or everything is kept).
	Keep int
	// KeepFor keeps runs younger than this; 0 means no age limit. With
	// both limits set a run survives if either keeps it.
	KeepFor time.Duration
	// Schedule lists when the job runs; at least one entry.
	Schedule []When
	// WorkingDirectory is where the run starts. Empty means the scenario's
	// directory, so paths relative to the scenario work the same as when
	// you run it by hand from there.
	WorkingDirectory string
	// Env holds environment variables for the run; nil means none beyond
	// launchd's or systemd's minimal environment.
	Env map[string]string
	// AllowSecretEnv permits Env names that look like secrets. They are
	// refused by default because the plist or unit is a plain file that
	// backups and support bundles copy.
	AllowSecretEnv bool
	// ProcessType is the launchd ProcessType: Background, Standard,
	// Adaptive or Interactive. Empty means DefaultProcessType.
	ProcessType string
	// Caffeinate runs the rehearsal under /usr/bin/caffeinate -i so the Mac
	// cannot idle-sleep in the middle of a run (launchd only). It is off by
	// default: rehearse is then launchd's own process, so launchd's SIGTERM
	// reaches it directly (it stops cleanly and writes a partial report) and
	// "last exit code" is rehearse's. Keeping the Mac awake with pmset is
	// the primary way; see docs/mac-mini.md.
	Caffeinate bool
	// RunArgs are extra arguments for `rehearse run`, after the ones the
	// job sets (e.g. "--log-format", "json").
	RunArgs []string
	// Notify is a webhook URL that every run POSTs its summary to
	// (`rehearse run --notify`), so that a scheduled run that fails tells
	// someone. A webhook URL is a credential: a job with one is written
	// readable by its owner only (0600).
	Notify string
}

var (
	labelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	// secretName matches environment names that usually carry credentials.
	secretName = regexp.MustCompile(`(?i)(secret|token|passw|api[_-]?key|apikey|auth|credential|cookie|private[_-]?key|session|bearer)`)
	envNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// LabelFor derives the reverse-DNS label of a scenario's job:
// "weekly.yaml" → "dev.rehearse.weekly".
func LabelFor(scenario string) string { return LabelPrefix + runs.Slug(scenario) }

// ValidateLabel checks a label given by hand: reverse-DNS characters only,
// because it is also a file name and a systemd unit name.
func ValidateLabel(label string) error {
	if !labelRE.MatchString(label) || strings.Contains(label, "..") || len(label) > 200 {
		return fmt.Errorf("%w: label %q: want reverse-DNS letters, digits, '.', '-' and '_', such as dev.rehearse.weekly", rehearse.ErrInvalid, label)
	}
	return nil
}

// ParseEnv parses NAME=VALUE pairs from the command line.
func ParseEnv(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	env := make(map[string]string, len(pairs))
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok || !envNameRE.MatchString(name) {
			return nil, fmt.Errorf("%w: --env %q: want NAME=VALUE with NAME of letters, digits and '_'", rehearse.ErrInvalid, p)
		}
		if _, dup := env[name]; dup {
			return nil, fmt.Errorf("%w: --env %s given twice", rehearse.ErrInvalid, name)
		}
		env[name] = value
	}
	return env, nil
}

// ErrSecretEnv is returned for an environment variable whose name looks like
// a secret when Job.AllowSecretEnv is false.
var ErrSecretEnv = errors.New("environment variable looks like a secret")

// Resolve returns the job with its defaults filled and its paths absolute,
// or an error wrapping rehearse.ErrInvalid. home is the home directory used
// for "~/" paths. It does not check that the files exist: a plist may be
// printed for another machine; Install checks.
func (j Job) Resolve(home string) (Job, error) {
	if j.Scenario == "" {
		return j, fmt.Errorf("%w: no scenario: give --scenario FILE", rehearse.ErrInvalid)
	}
	var err error
	if j.Scenario, err = absPath(j.Scenario, home); err != nil {
		return j, err
	}
	if j.Label == "" {
		j.Label = LabelFor(j.Scenario)
	}
	if err := ValidateLabel(j.Label); err != nil {
		return j, err
	}
	if j.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return j, fmt.Errorf("%w: cannot find the rehearse executable (%w): give --binary", rehearse.ErrEnvironment, err)
		}
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		j.Binary = exe
	}
	if j.Binary, err = absPath(j.Binary, home); err != nil {
		return j, err
	}
	if j.Archive == "" {
		j.Archive = DefaultArchive
	}
	if j.Archive, err = absPath(j.Archive, home); err != nil {
		return j, err
	}
	if j.WorkingDirectory == "" {
		j.WorkingDirectory = filepath.Dir(j.Scenario)
	}
	if j.WorkingDirectory, err = absPath(j.WorkingDirectory, home); err != nil {
		return j, err
	}
	if j.Notify != "" {
		if _, err := notify.ParseURL(j.Notify); err != nil {
			return j, err
		}
	}
	for _, p := range append([]string{j.Label, j.Binary, j.Scenario, j.Archive, j.WorkingDirectory, j.Notify}, j.RunArgs...) {
		if strings.ContainsAny(p, "\x00\n\r") {
			return j, fmt.Errorf("%w: %q: paths and arguments must not contain newlines or NUL", rehearse.ErrInvalid, p)
		}
	}
	if j.Keep < 0 {
		return j, fmt.Errorf("%w: keep %d: want 0 (no count limit) or more", rehearse.ErrInvalid, j.Keep)
	}
	if j.KeepFor < 0 {
		return j, fmt.Errorf("%w: keep-for %s: must not be negative", rehearse.ErrInvalid, j.KeepFor)
	}
	if len(j.Schedule) == 0 {
		return j, fmt.Errorf(`%w: no schedule: give --weekly "Mon 03:00" (repeatable) or --daily 03:00`, rehearse.ErrInvalid)
	}
	for _, w := range j.Schedule {
		if w.Hour < 0 || w.Hour > 23 || w.Minute < 0 || w.Minute > 59 || w.Weekday < 0 || w.Weekday > 6 {
			return j, &ScheduleError{Input: w.String(), Reason: "out of range"}
		}
	}
	if j.ProcessType == "" {
		j.ProcessType = DefaultProcessType
	}
	switch j.ProcessType {
	case "Background", "Standard", "Adaptive", "Interactive":
	default:
		return j, fmt.Errorf("%w: process type %q: want Background, Standard, Adaptive or Interactive", rehearse.ErrInvalid, j.ProcessType)
	}
	for _, name := range slices.Sorted(maps.Keys(j.Env)) {
		if !envNameRE.MatchString(name) {
			return j, fmt.Errorf("%w: environment variable name %q: want letters, digits and '_'", rehearse.ErrInvalid, name)
		}
		if !j.AllowSecretEnv && secretName.MatchString(name) {
			return j, fmt.Errorf("%w: %w: %s would be stored in plain text in the agent's file; pass --allow-secret-env if you accept that, or let the scenario read it from a file", rehearse.ErrInvalid, ErrSecretEnv, name)
		}
	}
	return j, nil
}

// absPath expands a leading "~/" and makes p absolute and clean.
func absPath(p, home string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home == "" {
			return "", fmt.Errorf("%w: cannot expand %q: no home directory", rehearse.ErrEnvironment, p)
		}
		p = filepath.Join(home, p[1:])
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%w: path %q: %w", rehearse.ErrInvalid, p, err)
	}
	return a, nil
}

// Args returns the command line the scheduler runs: the rehearse binary,
// "run", the scenario and the archive flags. The run's own directory is
// decided by `rehearse run --archive` when it starts.
func (j Job) Args() []string {
	args := []string{j.Binary, "run", j.Scenario, "--archive", j.Archive}
	if j.Keep > 0 {
		args = append(args, "--keep", strconv.Itoa(j.Keep))
	}
	if j.KeepFor > 0 {
		// A Go duration string, which `rehearse run --keep-for` (a
		// duration flag) and ParseAge both read.
		args = append(args, "--keep-for", j.KeepFor.String())
	}
	if j.Notify != "" {
		args = append(args, "--notify", j.Notify)
	}
	return append(args, j.RunArgs...)
}
