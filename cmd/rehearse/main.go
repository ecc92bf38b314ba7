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
	"io/fs"
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
	root := newRootCmd(os.Stdout, os.Stderr)
	ctx := stopOnSignals(promisesOutcome(root, os.Args[1:]))
	// A reader that goes away (rehearse inspect … | head -1) made the
	// next write to stdout kill the process with SIGPIPE (exit 141),
	// before the deferred clean-ups ran (inspect builtin:'s temporary
	// capture stayed in /tmp). With SIGPIPE caught, the write returns
	// EPIPE, the command returns, its clean-ups run, and the end is
	// quiet (closedOutput). Notify rather than Ignore: an ignored signal
	// stays ignored in child processes (redis-server, launchctl).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	err := executeRoot(ctx, root)
	if closedOutput(err) {
		return rehearse.ExitOK
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, rehearse.ErrInterrupted) {
		err = fmt.Errorf("%w: %w", rehearse.ErrInterrupted, err)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rehearse:", redact.Text(err.Error()))
	}
	return rehearse.ExitCode(err)
}

// closedOutput reports whether err is a write to a standard output or
// error whose reader has gone, which ends a command as a pipe's reader
// wished: quietly, exit 0, as cat or grep do. A broken pipe to anything
// else (a socket to the gateway) is the command's own error.
func closedOutput(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Op == "write" && (pe.Path == os.Stdout.Name() || pe.Path == os.Stderr.Name()) &&
		errors.Is(pe.Err, syscall.EPIPE)
}

// stopOnSignals returns a context cancelled by the first SIGINT, SIGTERM
// or SIGHUP. A second one ends the process at once with exit code 130: a
// command blocked where no context reaches (a read of standard input that
// never comes, the open of a named pipe) would otherwise swallow every
// signal but SIGKILL. What was written stays; the journal is line by
// line, so it is a valid prefix, as after kill -9.
//
// outcome says whether the command promises an outcome line, which the
// forced exit then prints.
func stopOnSignals(outcome bool) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-sigs
		cancel()
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "rehearse: %v again: stopping now, without cleanup\n", sig)
		if outcome {
			fmt.Fprintln(os.Stdout, "outcome: interrupted")
		}
		os.Exit(rehearse.ExitInterrupted)
	}()
	return ctx
}
