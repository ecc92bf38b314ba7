package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/launchd"
)

// scheduler is what the LaunchAgent manager and the systemd manager have in
// common: `rehearse launchd` and `rehearse systemd` share their commands
// over it.
type scheduler interface {
	Install(ctx context.Context, job launchd.Job, opts launchd.InstallOptions) (launchd.InstallResult, error)
	Uninstall(ctx context.Context, label string) (bool, error)
	Status(ctx context.Context, label string) (launchd.Status, error)
	Kickstart(ctx context.Context, label string, restart bool) error
	List() ([]launchd.Entry, error)
	Home() string
}

var (
	_ scheduler = (*launchd.Manager)(nil)
	_ scheduler = (*launchd.Systemd)(nil)
)

// schedulerCmds describes the differences between the two families of
// commands (print, install, uninstall, status, kickstart, list): the
// commands themselves are built once, by commands.
type schedulerCmds struct {
	// open returns the manager for a command; it may read flags that
	// flags added.
	open func(cmd *cobra.Command) (scheduler, error)
	// flags adds scheduler-specific flags to each command (the launchd
	// domain); nil adds none.
	flags func(cmd *cobra.Command)
	// short are the one-line helps by command name, long the longer ones
	// where there are.
	short, long map[string]string
	// launchdJob binds the job flags only launchd has (process type,
	// caffeinate) on print and install.
	launchdJob bool
	// render prints the job as print shows it (the plist, the units).
	render func(w io.Writer, sch scheduler, job launchd.Job) error
	// forceHelp explains install --force; installed says what install did
	// and where things are.
	forceHelp string
	installed func(w io.Writer, res launchd.InstallResult)
	// restartHelp explains --restart; started says what to do after a
	// kickstart.
	restartHelp string
	started     func(label string) string
}

// commands builds print, install, uninstall, status, kickstart and list.
func (s schedulerCmds) commands() []*cobra.Command {
	return append(s.jobCommands(), s.labelCommands()...)
}

// jobCommands builds print and install, the commands given a whole job.
func (s schedulerCmds) jobCommands() []*cobra.Command {
	withJob := func(name string, run func(cmd *cobra.Command, sch scheduler, jf *jobFlags) error) *cobra.Command {
		var jf jobFlags
		c := &cobra.Command{
			Use:   name,
			Short: s.short[name],
			Long:  s.long[name],
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				sch, err := s.open(cmd)
				if err != nil {
					return err
				}
				return run(cmd, sch, &jf)
			},
		}
		jf.bind(c, s.launchdJob)
		if s.flags != nil {
			s.flags(c)
		}
		return c
	}
	printCmd := withJob("print", func(cmd *cobra.Command, sch scheduler, jf *jobFlags) error {
		job, err := checkedJob(cmd.Context(), jf, sch.Home())
		if err != nil {
			return err
		}
		return s.render(cmd.OutOrStdout(), sch, job)
	})
	var force bool
	install := withJob("install", func(cmd *cobra.Command, sch scheduler, jf *jobFlags) error {
		job, err := checkedJob(cmd.Context(), jf, sch.Home())
		if err != nil {
			return err
		}
		res, err := sch.Install(cmd.Context(), job, launchd.InstallOptions{Force: force})
		if err != nil {
			return err
		}
		s.installed(cmd.OutOrStdout(), res)
		return nil
	})
	install.Flags().BoolVar(&force, "force", false, s.forceHelp)
	return []*cobra.Command{printCmd, install}
}

// labelCommands builds uninstall, status, kickstart and list.
func (s schedulerCmds) labelCommands() []*cobra.Command {
	withLabel := func(name string, run func(cmd *cobra.Command, sch scheduler, label string) error) *cobra.Command {
		var lf labelFlags
		c := &cobra.Command{
			Use:   name,
			Short: s.short[name],
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				label, err := lf.resolve()
				if err != nil {
					return err
				}
				sch, err := s.open(cmd)
				if err != nil {
					return err
				}
				return run(cmd, sch, label)
			},
		}
		lf.bind(c)
		if s.flags != nil {
			s.flags(c)
		}
		return c
	}

	uninstall := withLabel("uninstall", func(cmd *cobra.Command, sch scheduler, label string) error {
		done, err := sch.Uninstall(cmd.Context(), label)
		if errors.Is(err, launchd.ErrNotStopped) {
			// The files are gone, which is what keeps the job from
			// coming back; what the scheduler could not be told is said,
			// with what to do.
			fmt.Fprintf(cmd.OutOrStdout(), "uninstalled %s (archived runs are kept)\n  note: %v\n", label, err)
			return nil
		}
		if err != nil {
			return err
		}
		if done {
			fmt.Fprintf(cmd.OutOrStdout(), "uninstalled %s (archived runs are kept)\n", label)
		} else {
			fmt.Fprintf(cmd.OutOrStdout(), "%s is not installed; nothing to do\n", label)
		}
		return nil
	})
	status := withLabel("status", func(cmd *cobra.Command, sch scheduler, label string) error {
		st, err := sch.Status(cmd.Context(), label)
		if err != nil {
			return err
		}
		return st.Format(cmd.OutOrStdout())
	})
	var restart bool
	kickstart := withLabel("kickstart", func(cmd *cobra.Command, sch scheduler, label string) error {
		if err := sch.Kickstart(cmd.Context(), label, restart); err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), s.started(label))
		return nil
	})
	kickstart.Flags().BoolVar(&restart, "restart", false, s.restartHelp)

	list := &cobra.Command{
		Use:   "list",
		Short: s.short["list"],
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sch, err := s.open(cmd)
			if err != nil {
				return err
			}
			entries, err := sch.List()
			if err != nil {
				return err
			}
			return launchd.FormatEntries(cmd.OutOrStdout(), entries)
		},
	}
	return []*cobra.Command{uninstall, status, kickstart, list}
}

// checkedJob is the job the flags describe, resolved for home and checked
// as the scheduler will run it: print and install both get their job
// here, so neither prints or installs a job whose run would be refused.
func checkedJob(ctx context.Context, jf *jobFlags, home string) (launchd.Job, error) {
	job, err := jf.printable(home)
	if err != nil {
		return job, err
	}
	return job, checkScheduled(ctx, job)
}

// checkScheduled runs the job's own command line — "rehearse run", the
// scenario, the archive flags and the --run-arg extras, parsed by run's
// own flags — as a dry run: the scenario is checked as validate checks it
// (rehearsal.Check), with the overrides the scheduled run will have (a
// --run-arg=--duration shortens the replay for the plan check too), and a
// flag run would refuse is refused now, not at 03:00 on Monday. Nothing
// is sent or written.
func checkScheduled(ctx context.Context, job launchd.Job) error {
	args := job.Args()[1:] // the binary is the scheduler's to start
	root := newRootCmd(io.Discard, io.Discard)
	run, rest, err := root.Find(args)
	if err != nil || run.Name() != "run" {
		return fmt.Errorf("%w: the scheduled command %q is not rehearse run", rehearse.ErrInvalid, args)
	}
	if err := run.ParseFlags(rest); err != nil {
		return fmt.Errorf("%w: the scheduled command would refuse its arguments (--run-arg): %w", rehearse.ErrInvalid, err)
	}
	for _, name := range []string{"dry-run", "help"} {
		if f := run.Flags().Lookup(name); f != nil && f.Changed {
			return fmt.Errorf("%w: --run-arg=--%s: a scheduled rehearsal would run nothing", rehearse.ErrInvalid, name)
		}
	}
	if _, err := newLogger(io.Discard, run.Flag("log-level").Value.String(), run.Flag("log-format").Value.String()); err != nil {
		return fmt.Errorf("--run-arg: %w", err)
	}
	if err := run.ValidateArgs(run.Flags().Args()); err != nil {
		return fmt.Errorf("the scheduled command (--run-arg): %w", err)
	}
	if err := run.Flags().Set("dry-run", "true"); err != nil {
		return err
	}
	run.SetContext(ctx)
	return run.RunE(run, run.Flags().Args())
}
