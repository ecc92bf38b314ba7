package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

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
		job, err := jf.printable(sch.Home())
		if err != nil {
			return err
		}
		return s.render(cmd.OutOrStdout(), sch, job)
	})
	var force bool
	install := withJob("install", func(cmd *cobra.Command, sch scheduler, jf *jobFlags) error {
		job, err := jf.job()
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
