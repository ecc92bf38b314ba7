package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/internal/tty"
)

const rootLong = `rehearse rehearses how an API or agent gateway's circuit breakers behave when
its upstreams get sick. It replays HTTP requests from a pcap/pcapng capture into
the gateway at a fixed rate (10 requests per second for five minutes by default),
while fake or proxied upstreams return 503s, 429s with Retry-After, slow reads
and mid-stream resets on a schedule. It records everything in one journal and
writes a timeline report (HTML, Markdown, JSON, JUnit) of when each breaker
opened, how it probed and when it closed — measured from outside, so it works
on any gateway. Run it weekly from a LaunchAgent, in CI from scenario files,
and attach the report to postmortems.`

const rootExamples = `  # Inspect what a capture holds before replaying it
  rehearse inspect capture.pcapng

  # Run a rehearsal from a scenario file; exit code says pass or fail
  rehearse run weekly.yaml --out runs/today --junit junit.xml

  # Compare the same drill on macOS and Linux
  rehearse report compare runs/mac-* --vs runs/linux-* --label macOS --label linux --fail-on-diff

  # Schedule it weekly on a Mac
  rehearse launchd install --scenario weekly.yaml --weekly "Mon 03:00"`

// outcomeAnnotation marks a command whose last stdout line states how it
// ended (run; docs/failures.md). Its value is "pending" until the
// command's own code takes over printing the line ("own"), so that
// executeRoot can print it when cobra refused the command's flags or
// arguments before the command ran.
const outcomeAnnotation = "rehearse.outcome"

// executeRoot runs the command tree, and gives a command that promises an
// outcome line that line on every path: "rehearse run --bogus" or
// "rehearse run" with no scenario end on stdout as any invalid run does.
func executeRoot(ctx context.Context, root *cobra.Command) error {
	c, err := root.ExecuteContextC(ctx)
	if err != nil && c != nil && c.Annotations[outcomeAnnotation] == "pending" {
		fmt.Fprintln(c.OutOrStdout(), redact.Text(outcomeLine(nil, err)))
	}
	return err
}

// promisesOutcome reports whether the command args name promises an
// outcome line.
func promisesOutcome(root *cobra.Command, args []string) bool {
	c, _, err := root.Find(args)
	return err == nil && c.Annotations[outcomeAnnotation] != ""
}

// globalFlags are the flags every command shares.
type globalFlags struct {
	logLevel  string
	logFormat string
}

// newRootCmd builds the command tree. Output goes to stdout and stderr as
// given, so tests can run commands in-process.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:           "rehearse",
		Short:         "Chaos rehearsals and traffic replay for API and agent gateways",
		Long:          rootLong,
		Example:       rootExamples,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			logger, err := newLogger(stderr, g.logLevel, g.logFormat)
			if err != nil {
				return err
			}
			slog.SetDefault(logger)
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	// Flag and argument errors are usage errors: exit code 2.
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w: %w", rehearse.ErrInvalid, err)
	})

	root.AddCommand(
		newVersionCmd(),
		newRunCmd(),
		newValidateCmd(),
		newScenariosCmd(),
		newInspectCmd(),
		newReplayCmd(),
		newReportCmd(),
		newInjectCmd(),
		newLaunchdCmd(),
		newSystemdCmd(),
		newMetricsCmd(),
		newLogStatesCmd(),
		newGatewayCmd(),
	)
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command that only groups others
// (rehearse, rehearse report, scenarios, launchd…) refuse an argument that
// names none of them: a usage error (exit 2) with cobra's "did you mean"
// suggestions, instead of help and exit 0, so that a typo fails in CI. With
// no argument such a command prints its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = cobra.ArbitraryArgs
		c.SuggestionsMinimumDistance = 2
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return fmt.Errorf("%w: %s (see %s --help)", rehearse.ErrInvalid, msg, cmd.CommandPath())
		}
	}
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
}

// wrapArgs makes positional-argument errors usage errors (exit 2), for a
// command and all of its subcommands.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		args := c.Args
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				return fmt.Errorf("%w: %w", rehearse.ErrInvalid, err)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// statusDisplay is how a command shows a status line on a terminal: the
// line stays at the bottom of stderr and the log is written above it,
// through the display. It returns nil off a terminal or with --quiet;
// otherwise the default logger writes through the display until restore.
func statusDisplay(cmd *cobra.Command, quiet bool) (d *tty.Display, logger *slog.Logger, restore func(), err error) {
	if quiet || !tty.IsTerminal(cmd.ErrOrStderr()) {
		return nil, nil, func() {}, nil
	}
	d = tty.New(cmd.ErrOrStderr())
	logger, err = newLogger(d, cmd.Flag("log-level").Value.String(), cmd.Flag("log-format").Value.String())
	if err != nil {
		return nil, nil, nil, err
	}
	prev := slog.Default()
	slog.SetDefault(logger)
	return d, logger, func() { slog.SetDefault(prev) }, nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q: want debug, info, warn or error", rehearse.ErrInvalid, level)
	}
	// Every log line goes through the one redaction rule: a URL with a
	// password or a token in an error must not reach a LaunchAgent's log.
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: redact.SlogAttr}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("%w: --log-format %q: want text or json", rehearse.ErrInvalid, format)
	}
}
