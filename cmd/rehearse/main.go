// Command rehearse is a chaos-rehearsal and traffic-replay harness for API
// and agent gateways: it replays captured traffic into a gateway at a fixed
// rate while the gateway's upstreams misbehave on schedule, and reports what
// the gateway's circuit breakers did.
//
// This package is a thin cobra layer: each command binds flags to a library
// option struct, calls one entry point and returns its error; exit codes are
// decided in one place, rehearse.ExitCode.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run())
}

func run() int {
	// SIGINT, SIGTERM and SIGHUP (the terminal closed) cancel the context;
	// commands stop cleanly, keep what they recorded, and return an error
	// that maps to exit code 130.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	root := newRootCmd(os.Stdout, os.Stderr)
	err := root.ExecuteContext(ctx)
	if err != nil && ctx.Err() != nil && !errors.Is(err, rehearse.ErrInterrupted) {
		err = fmt.Errorf("%w: %w", rehearse.ErrInterrupted, err)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rehearse:", redact.Text(err.Error()))
	}
	return rehearse.ExitCode(err)
}
