package launchd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
)

// Runner runs an external command (launchctl, systemctl) and returns its
// combined output. A command that ran and failed returns a *CommandError.
// Tests replace it to record the argv instead of running anything.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// CommandError is a launchctl or systemctl invocation that failed. It wraps
// rehearse.ErrEnvironment.
type CommandError struct {
	// Argv is the command line, name first.
	Argv []string
	// Output is what the command printed (stdout and stderr).
	Output []byte
	// ExitCode is the command's exit status, or -1 when it did not run.
	ExitCode int
	// Err is the underlying error.
	Err error
}

// Error says which command failed, how, and what it printed.
func (e *CommandError) Error() string {
	msg := fmt.Sprintf("%s: %v", strings.Join(e.Argv, " "), e.Err)
	if out := strings.TrimSpace(string(e.Output)); out != "" {
		msg += ": " + out
	}
	return msg
}

// Unwrap returns the class and the cause.
func (e *CommandError) Unwrap() []error { return []error{rehearse.ErrEnvironment, e.Err} }

// ExecRunner runs commands with os/exec. It is the default runner for
// systemctl everywhere and for launchctl on macOS.
func ExecRunner(ctx context.Context, name string, args ...string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err == nil {
		return out, nil
	}
	code := -1
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	return out, &CommandError{Argv: append([]string{name}, args...), Output: out, ExitCode: code, Err: err}
}

// ErrUnsupported is returned by the launchctl operations on a system without
// launchd.
var ErrUnsupported = errors.New(`launchctl is only available on macOS: use "rehearse launchd print" to see the agent's plist, or "rehearse systemd" to schedule the rehearsal with a systemd user timer`)

// DefaultDomain is the launchd domain agents are installed in: the GUI
// session of the user, where ~/Library/LaunchAgents are loaded at login.
// "user" (the user's background domain, which exists without a GUI login)
// suits a Mac that is only reached over SSH.
const DefaultDomain = "gui"

// settings are what the Options of both managers configure.
type settings struct {
	run    Runner
	home   string
	uid    int
	hasUID bool
	domain string
	config string
	now    func() time.Time
	log    *slog.Logger
}

// Option configures a Manager or a Systemd.
type Option func(*settings)

// WithRunner replaces the command runner (tests record argv with it).
func WithRunner(r Runner) Option { return func(s *settings) { s.run = r } }

// WithHome sets the home directory; the default is os.UserHomeDir.
func WithHome(dir string) Option { return func(s *settings) { s.home = dir } }

// WithUID sets the user id in launchctl domain targets ("gui/<uid>"); the
// default is the current user's on macOS.
func WithUID(uid int) Option { return func(s *settings) { s.uid, s.hasUID = uid, true } }

// WithDomain selects the launchd domain: "gui" (DefaultDomain) or "user".
func WithDomain(d string) Option { return func(s *settings) { s.domain = d } }

// WithConfigDir sets the systemd user configuration directory; the default
// is $XDG_CONFIG_HOME, else ~/.config.
func WithConfigDir(dir string) Option { return func(s *settings) { s.config = dir } }

// WithClock sets the clock used for "next run" in status; default time.Now.
func WithClock(now func() time.Time) Option { return func(s *settings) { s.now = now } }

// WithLogger sets the logger for progress messages; default slog.Default.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.log = l } }

func newSettings(opts []Option) (settings, error) {
	s := settings{domain: DefaultDomain, now: time.Now}
	for _, o := range opts {
		o(&s)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return s, fmt.Errorf("%w: no home directory: %w", rehearse.ErrEnvironment, err)
		}
		s.home = h
	}
	if s.config == "" {
		if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
			s.config = x
		} else {
			s.config = filepath.Join(s.home, ".config")
		}
	}
	if s.domain != "gui" && s.domain != "user" {
		return s, fmt.Errorf("%w: launchd domain %q: want gui or user", rehearse.ErrInvalid, s.domain)
	}
	return s, nil
}
