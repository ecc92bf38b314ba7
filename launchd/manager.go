package launchd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/runs"
)

// Sentinel errors of the install, uninstall, status and kickstart operations.
var (
	// ErrExists: a different agent or unit is installed under the label;
	// Force replaces it.
	ErrExists = errors.New("a different job is installed under this label")
	// ErrNotInstalled: there is no such agent or unit.
	ErrNotInstalled = errors.New("not installed")
	// ErrRunning: a rehearsal is running now and the operation would kill
	// it.
	ErrRunning = errors.New("a rehearsal is running")
)

// InstallOptions modify an install.
type InstallOptions struct {
	// Force replaces an agent or unit of the same label whose content
	// differs (a different scenario, schedule, …). Without it, install
	// refuses and says which keys differ.
	Force bool
}

// InstallResult says what an install did.
type InstallResult struct {
	// Job is the resolved job that was installed.
	Job Job
	// Files are the files written (the plist, or the unit files).
	Files []string
	// Changed is false when the same job was already installed and loaded
	// and nothing was done.
	Changed bool
	// Replaced is true when a different job of the same label was replaced
	// (with Force).
	Replaced bool
}

// Manager installs and controls LaunchAgents with launchctl. Its logic is
// OS-independent; only the default Runner and user id are macOS-specific.
type Manager struct {
	s           settings
	unsupported error
}

// New returns a Manager. Without WithRunner on a system other than macOS,
// every launchctl operation returns an error wrapping ErrUnsupported (the
// Manager can still say where files would go).
func New(opts ...Option) (*Manager, error) {
	s, err := newSettings(opts)
	if err != nil {
		return nil, err
	}
	m := &Manager{s: s}
	if s.run == nil {
		run, uid, err := defaultLaunchctl()
		if err != nil {
			m.unsupported = fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
		}
		m.s.run = run
		if !s.hasUID {
			m.s.uid = uid
		}
	} else if !s.hasUID {
		m.s.uid = os.Getuid()
	}
	return m, nil
}

// Home returns the home directory the Manager resolves "~/" against.
func (m *Manager) Home() string { return m.s.home }

// PlistPath returns where the agent of label lives:
// ~/Library/LaunchAgents/<label>.plist.
func (m *Manager) PlistPath(label string) string {
	return filepath.Join(m.s.home, "Library", "LaunchAgents", label+".plist")
}

func (m *Manager) domainTarget() string { return m.s.domain + "/" + strconv.Itoa(m.s.uid) }

func (m *Manager) serviceTarget(label string) string { return m.domainTarget() + "/" + label }

func (m *Manager) launchctl(ctx context.Context, args ...string) ([]byte, error) {
	return m.s.run(ctx, launchctlPath, args...)
}

// printInfo is what status needs from `launchctl print`.
type printInfo struct {
	State    string
	PID      int
	Runs     int
	LastExit string
}

// loaded asks launchd about label; a service launchd does not know is not
// an error but loaded == false.
func (m *Manager) loaded(ctx context.Context, label string) (bool, printInfo, error) {
	out, err := m.launchctl(ctx, "print", m.serviceTarget(label))
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && (ce.ExitCode == 113 || bytes.Contains(ce.Output, []byte("Could not find service"))) {
			return false, printInfo{}, nil
		}
		return false, printInfo{}, err
	}
	return true, parsePrint(out), nil
}

// unloadPoll and unloadTries bound the wait for launchd to forget a
// service after bootout: bootout can return while the old instance is still
// being torn down, and a bootstrap in that window fails with "Bootstrap
// failed: 5: Input/output error".
const (
	unloadPoll  = 100 * time.Millisecond
	unloadTries = 50
)

// waitUnloaded polls `launchctl print` until launchd no longer knows label.
// If it still does after unloadTries polls, the bootstrap that follows will
// report the problem.
func (m *Manager) waitUnloaded(ctx context.Context, label string) error {
	for i := 0; i < unloadTries; i++ {
		isLoaded, _, err := m.loaded(ctx, label)
		if err != nil || !isLoaded {
			return err
		}
		t := time.NewTimer(unloadPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// parsePrint reads the top-level "key = value" lines of `launchctl print`
// for a service. The format is meant for people and changes between macOS
// releases, so unknown lines are ignored and missing keys stay zero.
func parsePrint(out []byte) printInfo {
	var info printInfo
	depth := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasSuffix(line, "{"):
			depth++
			continue
		case line == "}" || strings.HasPrefix(line, "}"):
			depth--
			continue
		}
		if depth != 1 {
			continue
		}
		k, v, ok := strings.Cut(line, " = ")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "state":
			info.State = v
		case "pid":
			info.PID, _ = strconv.Atoi(v)
		case "runs":
			info.Runs, _ = strconv.Atoi(v)
		case "last exit code":
			info.LastExit = v
		case "last terminating signal":
			if info.LastExit == "" {
				info.LastExit = "signal " + v
			}
		}
	}
	return info
}

// installable resolves job against the home directory and checks the
// files it names (checkFiles): the first step of every Install. On error
// the job is the zero Job when it did not resolve.
func (s settings) installable(job Job) (Job, error) {
	j, err := job.Resolve(s.home)
	if err != nil {
		return Job{}, err
	}
	return j, checkFiles(j)
}

// checkFiles verifies, at install time, what launchd will need next week:
// an executable binary and a readable scenario. Failing now beats a silent
// failure at 03:00 on Monday.
func checkFiles(j Job) error {
	fi, err := os.Stat(j.Binary)
	if err != nil {
		return fmt.Errorf("%w: rehearse binary: %w", rehearse.ErrInvalid, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%w: rehearse binary %s is not an executable file", rehearse.ErrInvalid, j.Binary)
	}
	return CheckScenario(j)
}

// CheckScenario verifies that the job's scenario (a resolved, absolute
// path) is a readable regular file: what install checks, and what print
// checks too, so that a plist or unit naming a missing file is never the
// output of a successful command.
func CheckScenario(j Job) error {
	f, err := os.Open(j.Scenario)
	if err != nil {
		return fmt.Errorf("%w: scenario: %w", rehearse.ErrInvalid, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: scenario %s is not a regular file", rehearse.ErrInvalid, j.Scenario)
	}
	return nil
}

// filePerm is 0600 when the file holds environment values the user allowed
// despite looking like secrets or a webhook URL, else 0644.
func filePerm(j Job) os.FileMode {
	if j.Notify != "" {
		return 0o600
	}
	for name := range j.Env {
		if secretName.MatchString(name) {
			return 0o600
		}
	}
	return 0o644
}

// Install writes the job's plist to ~/Library/LaunchAgents/<label>.plist
// atomically and loads it with `launchctl enable` and `launchctl bootstrap`.
// Installing the same job again is a no-op; a different job under the same
// label is refused (ErrExists) unless opts.Force, which unloads it first —
// stopping a rehearsal in progress, if one is running. It is all or
// nothing: the launchd domain must answer before anything is written
// (ErrUnreachable otherwise), and when launchctl refuses the agent the
// previous plist is put back (and loaded again if it was) or the new one
// removed, with the directories the install created.
func (m *Manager) Install(ctx context.Context, job Job, opts InstallOptions) (InstallResult, error) {
	if m.unsupported != nil {
		return InstallResult{}, m.unsupported
	}
	j, err := m.s.installable(job)
	res := InstallResult{Job: j}
	if err != nil {
		return res, err
	}
	data, err := j.Plist().Render()
	if err != nil {
		return res, err
	}
	path := m.PlistPath(j.Label)
	old, err := os.ReadFile(path)
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("%w: read %s: %w", rehearse.ErrEnvironment, path, err)
	}
	if err := m.reachable(ctx); err != nil {
		return res, fmt.Errorf("%w (nothing was installed)", err)
	}
	isLoaded, _, err := m.loaded(ctx, j.Label)
	if err != nil {
		return res, err
	}
	same := existed && bytes.Equal(old, data)
	if same && isLoaded {
		m.s.log.Info("agent already installed and loaded", "label", j.Label, "path", path)
		return res, nil
	}
	if !same && (existed || isLoaded) {
		if !opts.Force {
			why := "it is loaded in launchd but has no plist at " + path
			if existed {
				why = "its plist differs in " + strings.Join(diffKeys(old, data), ", ")
			}
			return res, fmt.Errorf("%w: %w: %s: %s; pass --force to replace it", rehearse.ErrInvalid, ErrExists, j.Label, why)
		}
		res.Replaced = true
		if isLoaded {
			if _, err := m.launchctl(ctx, "bootout", m.serviceTarget(j.Label)); err != nil {
				return res, err
			}
			if err := m.waitUnloaded(ctx, j.Label); err != nil {
				return res, err
			}
		}
	}
	var t txn
	if err := m.load(ctx, &t, j, path, data); err != nil {
		err = t.failed(err)
		if existed && isLoaded {
			// The agent that was there runs again, as before the install.
			if _, rerr := m.launchctl(ctx, "bootstrap", m.domainTarget(), path); rerr != nil {
				err = fmt.Errorf("%w; the agent it replaced could not be loaded again: %w", err, rerr)
			}
		}
		return res, err
	}
	res.Files = []string{path}
	res.Changed = true
	m.s.log.Info("agent installed", "label", j.Label, "path", path, "next_run", NextRun(j.Schedule, m.s.now()).Format(time.RFC3339))
	return res, nil
}

// reachable checks that launchd has the domain the agent goes in: the
// gui domain exists only while the user is logged in at the screen.
func (m *Manager) reachable(ctx context.Context) error {
	_, err := m.launchctl(ctx, "print", m.domainTarget())
	if err == nil {
		return nil
	}
	if m.s.domain == "gui" {
		return fmt.Errorf("%w: launchd has no domain %s (%w): the gui domain exists while this user is logged in at the Mac's screen; log in there, or install into the background domain with --domain user (works over SSH)",
			ErrUnreachable, m.domainTarget(), err)
	}
	return fmt.Errorf("%w: launchd has no domain %s (%w): run this as the user the agent is for, logged in (an SSH login will do)",
		ErrUnreachable, m.domainTarget(), err)
}

// load writes the plist (with the archive's log directory, which launchd
// does not create) and loads it; what it writes is recorded in t.
func (m *Manager) load(ctx context.Context, t *txn, j Job, path string, data []byte) error {
	// launchd opens StandardOutPath and StandardErrorPath itself and does
	// not create their directory.
	if err := t.mkdirAll(filepath.Join(j.Archive, LogsDir)); err != nil {
		return err
	}
	if err := t.write(path, data, filePerm(j)); err != nil {
		return err
	}
	// A label disabled earlier (launchctl disable) cannot be bootstrapped;
	// enabling is harmless otherwise.
	if _, err := m.launchctl(ctx, "enable", m.serviceTarget(j.Label)); err != nil {
		return err
	}
	if _, err := m.launchctl(ctx, "bootstrap", m.domainTarget(), path); err != nil {
		if m.s.domain == "gui" {
			return fmt.Errorf("%w (over SSH without a GUI login, try --domain user)", err)
		}
		return err
	}
	return nil
}

// Uninstall unloads the agent (`launchctl bootout`) if launchd has it and
// removes its plist. It reports whether there was anything to remove; an
// agent that is not installed is not an error. The plist goes even when
// launchd cannot be asked or refuses the bootout: then the error wraps
// ErrNotStopped and says what could not be done.
func (m *Manager) Uninstall(ctx context.Context, label string) (bool, error) {
	if m.unsupported != nil {
		return false, m.unsupported
	}
	if err := ValidateLabel(label); err != nil {
		return false, err
	}
	isLoaded, _, stopErr := m.loaded(ctx, label)
	if stopErr == nil && isLoaded {
		_, stopErr = m.launchctl(ctx, "bootout", m.serviceTarget(label))
	}
	path := m.PlistPath(label)
	err := os.Remove(path)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		if stopErr != nil {
			return false, stopErr
		}
		return isLoaded, nil
	default:
		return isLoaded, fmt.Errorf("%w: remove %s: %w", rehearse.ErrEnvironment, path, err)
	}
	if stopErr != nil {
		return true, fmt.Errorf("%w: the agent could not be unloaded: %w; it will not load at the next login, and launchctl bootout %s unloads it now",
			ErrNotStopped, stopErr, m.serviceTarget(label))
	}
	return true, nil
}

// Status describes an installed agent: its file, launchd's view of it, its
// schedule and its archive.
type Status struct {
	Label string
	// Path is the plist's path; Installed says whether it exists.
	Path      string
	Installed bool
	// Loaded says whether launchd (or systemd) knows the job.
	Loaded bool
	// State is the scheduler's word for the job's state, e.g. launchd's
	// "running" / "not running" or systemd's "active" / "inactive".
	State string
	// PID is the running rehearsal's process id; 0 when none.
	PID int
	// Runs is how many times launchd started the job since it was loaded.
	Runs int
	// LastExit is the last exit status as the scheduler reports it ("0",
	// "1", "(never exited)"); empty when unknown.
	LastExit string
	// Schedule is read from the installed file.
	Schedule []When
	// NextRun is the next scheduled start in local time; zero without a
	// schedule. For systemd, NextRunText holds systemd's own answer.
	NextRun     time.Time
	NextRunText string
	// Archive is the run archive from the job's arguments; LatestRun the
	// directory its "latest" link points to ("" when none).
	Archive   string
	LatestRun string
	// LatestVerdict summarises the latest run from its run.json, e.g.
	// "3 of 4 expectations met"; empty when there is no latest run.
	LatestVerdict string
}

// Status reports on the agent of label. An agent that is neither installed
// nor loaded is an ErrNotInstalled error.
func (m *Manager) Status(ctx context.Context, label string) (Status, error) {
	if m.unsupported != nil {
		return Status{}, m.unsupported
	}
	if err := ValidateLabel(label); err != nil {
		return Status{}, err
	}
	st := Status{Label: label, Path: m.PlistPath(label)}
	data, err := os.ReadFile(st.Path)
	switch {
	case err == nil:
		st.Installed = true
		p, err := ParsePlist(data)
		if err != nil {
			return st, fmt.Errorf("%s: %w", st.Path, err)
		}
		st.Schedule = p.Schedule()
		st.Archive = p.ArchiveDir()
	case !errors.Is(err, fs.ErrNotExist):
		return st, fmt.Errorf("%w: read %s: %w", rehearse.ErrEnvironment, st.Path, err)
	}
	isLoaded, info, err := m.loaded(ctx, label)
	if err != nil {
		return st, err
	}
	if !st.Installed && !isLoaded {
		return st, fmt.Errorf("%w: %w: no agent %s (looked for %s)", rehearse.ErrInvalid, ErrNotInstalled, label, st.Path)
	}
	st.Loaded = isLoaded
	st.State, st.PID, st.Runs, st.LastExit = info.State, info.PID, info.Runs, info.LastExit
	fillArchive(&st, m.s.now())
	return st, nil
}

func fillArchive(st *Status, now time.Time) {
	if len(st.Schedule) > 0 {
		st.NextRun = NextRun(st.Schedule, now)
	}
	if st.Archive != "" {
		st.LatestRun, _ = runs.Archive{Dir: st.Archive}.Latest()
	}
	if st.LatestRun != "" {
		st.LatestVerdict = verdict(st.LatestRun)
	}
}

// verdict reads the few fields of run.json (docs/contracts.md) that say
// how a run ended, without depending on the reports package.
func verdict(runDir string) string {
	data, err := os.ReadFile(filepath.Join(runDir, "run.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "no run.json: the run did not finish; see the error log"
	}
	if err != nil {
		return "run.json unreadable: " + err.Error()
	}
	var r struct {
		Run struct {
			Partial   bool   `json:"partial"`
			EndReason string `json:"end_reason"`
		} `json:"run"`
		Expectations []struct {
			Passed bool `json:"passed"`
		} `json:"expectations"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return "run.json unreadable: " + err.Error()
	}
	passed := 0
	for _, e := range r.Expectations {
		if e.Passed {
			passed++
		}
	}
	v := fmt.Sprintf("%d of %d expectations met", passed, len(r.Expectations))
	if len(r.Expectations) == 0 {
		v = "no expectations"
	}
	if r.Run.Partial {
		v += "; partial run"
		if r.Run.EndReason != "" {
			v += " (" + r.Run.EndReason + ")"
		}
	}
	return v
}

// Kickstart starts a rehearsal now (`launchctl kickstart -k`). Because -k
// would kill a rehearsal already in progress, leaving a partial run, it
// refuses with ErrRunning in that case unless restart is true.
func (m *Manager) Kickstart(ctx context.Context, label string, restart bool) error {
	if m.unsupported != nil {
		return m.unsupported
	}
	if err := ValidateLabel(label); err != nil {
		return err
	}
	isLoaded, info, err := m.loaded(ctx, label)
	if err != nil {
		return err
	}
	if !isLoaded {
		return fmt.Errorf("%w: %w: %s is not loaded in launchd; run \"rehearse launchd install\" first", rehearse.ErrInvalid, ErrNotInstalled, label)
	}
	if info.State == "running" && !restart {
		return fmt.Errorf("%w: %w (pid %d): wait for it to finish, or pass --restart to kill it and start again", rehearse.ErrInvalid, ErrRunning, info.PID)
	}
	_, err = m.launchctl(ctx, "kickstart", "-k", m.serviceTarget(label))
	return err
}

// exitMeaning explains rehearse's exit codes in status output.
func exitMeaning(code string) string {
	switch code {
	case "0":
		return "all expectations met"
	case "1":
		return "an expectation failed"
	case "2":
		return "invalid input or usage"
	case "3":
		return "harness or environment failure"
	case "130":
		return "interrupted"
	}
	return ""
}

// Format writes the status for people, one "key: value" per line.
func (s Status) Format(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "label:      %s\n", s.Label)
	inst := "no"
	if s.Installed {
		inst = "yes"
	}
	fmt.Fprintf(&b, "file:       %s (installed: %s)\n", s.Path, inst)
	loaded := "no"
	if s.Loaded {
		loaded = "yes"
	}
	fmt.Fprintf(&b, "loaded:     %s\n", loaded)
	if s.State != "" {
		state := s.State
		if s.PID > 0 {
			state += fmt.Sprintf(" (pid %d)", s.PID)
		}
		fmt.Fprintf(&b, "state:      %s\n", state)
	}
	if s.Loaded && s.Runs > 0 {
		fmt.Fprintf(&b, "runs:       %d since loaded\n", s.Runs)
	}
	if s.LastExit != "" {
		last := s.LastExit
		code, _, _ := strings.Cut(s.LastExit, ":")
		if m := exitMeaning(strings.TrimSpace(code)); m != "" {
			last += " (" + m + ")"
		}
		fmt.Fprintf(&b, "last exit:  %s\n", last)
	}
	if len(s.Schedule) > 0 {
		parts := make([]string, len(s.Schedule))
		for i, w := range s.Schedule {
			parts[i] = w.String()
		}
		fmt.Fprintf(&b, "schedule:   %s (local time)\n", strings.Join(parts, ", "))
	}
	switch {
	case s.NextRunText != "":
		fmt.Fprintf(&b, "next run:   %s\n", s.NextRunText)
	case !s.NextRun.IsZero():
		fmt.Fprintf(&b, "next run:   %s\n", s.NextRun.Format("Mon 2006-01-02 15:04 MST"))
	}
	if s.Archive != "" {
		fmt.Fprintf(&b, "archive:    %s\n", s.Archive)
		latest := s.LatestRun
		if latest == "" {
			latest = "(no run yet)"
		}
		fmt.Fprintf(&b, "latest run: %s\n", latest)
		if s.LatestVerdict != "" {
			fmt.Fprintf(&b, "verdict:    %s\n", s.LatestVerdict)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
