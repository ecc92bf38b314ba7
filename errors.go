package rehearse

import (
	"context"
	"errors"
	"strconv"
	"strings"
)

// Error classes. Packages wrap one of these (with %w, or through a typed
// error whose Is method reports it) so that the command line can map any
// error to the exit codes of the run contract in one place; see ExitCode.
var (
	// ErrInvalid marks bad input or usage: an invalid scenario, an
	// unreadable capture, a wrong flag combination. Exit code 2.
	ErrInvalid = errors.New("invalid input")

	// ErrEnvironment marks a harness or environment failure: the gateway
	// is unreachable, a port is taken, a file cannot be written. Exit code 3.
	ErrEnvironment = errors.New("environment failure")

	// ErrExpectations marks a run that completed but did not meet one or
	// more of its expectations. Exit code 1.
	ErrExpectations = errors.New("expectations not met")

	// ErrDiffers marks a comparison (report compare --fail-on-diff) in
	// which a figure differs beyond noise and its threshold. Exit code 1,
	// like a failed expectation: both are findings, not failures to run.
	ErrDiffers = errors.New("figures differ")

	// ErrUndecided marks a comparison (report compare --fail-on-undecided)
	// in which a figure cannot be judged: a gate that must not pass on
	// "cannot tell". Exit code 1, as ErrDiffers.
	ErrUndecided = errors.New("figures cannot be judged")

	// ErrInterrupted marks a run stopped by SIGINT, SIGTERM or SIGHUP. Exit
	// code 130.
	ErrInterrupted = errors.New("interrupted")
)

// Exit codes of the run contract (docs/contracts.md).
const (
	ExitOK           = 0
	ExitExpectations = 1
	ExitInvalid      = 2
	ExitEnvironment  = 3
	ExitInterrupted  = 130
)

// ExitCode maps an error returned by any command to the process exit code.
// A nil error is success. An error of no known class is a harness failure
// (3): the harness could not finish the job, and the user cannot fix that by
// changing the input.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrInterrupted), errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.Is(err, ErrInvalid):
		return ExitInvalid
	case errors.Is(err, ErrExpectations), errors.Is(err, ErrDiffers), errors.Is(err, ErrUndecided):
		return ExitExpectations
	default:
		return ExitEnvironment
	}
}

// ConfigError is an error in configuration input (a scenario file, an
// inject or gateway config file, a control API request, a configuration
// built in Go) at its place in the source. It is the one positioned error
// type of the harness: every package's decoding and validation returns it,
// so that every message reads the same way, file:line:col: path: message.
// It is invalid input (exit code 2).
type ConfigError struct {
	// File names the source; "" when there is none (bytes, a config built
	// in Go, a request body).
	File string
	// Line and Col are 1-based; 0 when the error is tied to no place (a
	// YAML syntax error has a line only).
	Line, Col int
	// Path is the dotted path of the offending key, e.g.
	// "faults[1].params.code"; "" for the document as a whole.
	Path string
	// Err is the cause.
	Err error
}

// Error formats the error as file:line:col: path: message, leaving out
// the parts that are unknown.
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(e.Line))
		if e.Col > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Col))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is reports that a ConfigError is invalid input.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalid }

// ConfigErrors are the errors of one input, reported together so that a
// user can fix a file in one pass. It is invalid input (exit code 2).
type ConfigErrors []*ConfigError

// Error puts one error a line.
func (es ConfigErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Is reports that ConfigErrors are invalid input.
func (es ConfigErrors) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the individual errors.
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Err returns es as an error, or nil when it is empty (a nil slice in an
// error interface is not a nil error).
func (es ConfigErrors) Err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// AtPath returns err as a *ConfigError whose path is prefixed with
// parent: a package validating a section reports paths relative to it, and
// the caller that embeds the section puts it in place. An error that is
// not a *ConfigError becomes one at parent.
func AtPath(parent string, err error) *ConfigError {
	if err == nil {
		return nil
	}
	if ce, ok := errors.AsType[*ConfigError](err); ok {
		out := *ce
		out.Path = JoinPath(parent, ce.Path)
		return &out
	}
	return &ConfigError{Path: parent, Err: err}
}

// JoinPath appends key to a dotted configuration path; an index ("[2]")
// is appended without a dot.
func JoinPath(parent, key string) string {
	switch {
	case parent == "":
		return key
	case key == "":
		return parent
	case strings.HasPrefix(key, "["):
		return parent + key
	}
	return parent + "." + key
}
