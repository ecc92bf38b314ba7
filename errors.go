package rehearse

import (
	"context"
	"errors"
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

	// ErrInterrupted marks a run stopped by SIGINT or SIGTERM. Exit code 130.
	ErrInterrupted = errors.New("interrupted")
)

// Exit codes of the run contract (DESIGN.md 5.5).
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
	case errors.Is(err, ErrExpectations):
		return ExitExpectations
	default:
		return ExitEnvironment
	}
}
