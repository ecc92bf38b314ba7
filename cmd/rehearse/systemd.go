package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse/launchd"
)

func newSystemdCmd(opts ...launchd.Option) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "systemd",
		Short: "Schedule rehearsals on Linux with a systemd user timer",
		Long: `Schedule a scenario as a systemd user service (Type=oneshot) and timer
(OnCalendar from the same --weekly/--daily syntax, Persistent=true) under
~/.config/systemd/user, the Linux equivalent of "rehearse launchd". Runs are
archived the same way. Logs go to the journal: journalctl --user -u <label>.
For the timer to fire while you are logged out: loginctl enable-linger $USER.`,
		Example: `  rehearse systemd print --scenario weekly.yaml --weekly "Mon 03:00"
  rehearse systemd install --scenario weekly.yaml --weekly "Mon 03:00"
  rehearse systemd status --scenario weekly.yaml`,
	}
	manager := func() (*launchd.Systemd, error) { return launchd.NewSystemd(opts...) }

	var pf jobFlags
	printCmd := &cobra.Command{
		Use:   "print",
		Short: "Print the service and timer units (nothing is installed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			job, err := pf.job()
			if err != nil {
				return err
			}
			d, err := manager()
			if err != nil {
				return err
			}
			j, err := job.Resolve(d.Home())
			if err != nil {
				return err
			}
			svc, tmr := j.SystemdUnits()
			svcPath, tmrPath := d.UnitPaths(j.Label)
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "# ---- %s\n%s\n# ---- %s\n%s", svcPath, svc, tmrPath, tmr)
			return nil
		},
	}
	pf.bind(printCmd, false)

	var inf jobFlags
	var force bool
	installCmd := &cobra.Command{
		Use:   "install",
		Short: "Install the units and enable the timer (systemctl --user)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			job, err := inf.job()
			if err != nil {
				return err
			}
			d, err := manager()
			if err != nil {
				return err
			}
			res, err := d.Install(cmd.Context(), job, launchd.InstallOptions{Force: force})
			if err != nil {
				return err
			}
			printInstalled(cmd.OutOrStdout(), res, "journalctl --user -u "+res.Job.Label)
			fmt.Fprintln(cmd.OutOrStdout(), "  note:     for runs while you are logged out: loginctl enable-linger $USER")
			return nil
		},
	}
	inf.bind(installCmd, false)
	installCmd.Flags().BoolVar(&force, "force", false, "replace different units installed under the same label")

	var uf labelFlags
	uninstallCmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Disable the timer and remove the units",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			label, err := uf.resolve()
			if err != nil {
				return err
			}
			d, err := manager()
			if err != nil {
				return err
			}
			done, err := d.Uninstall(cmd.Context(), label)
			if err != nil {
				return err
			}
			if done {
				fmt.Fprintf(cmd.OutOrStdout(), "uninstalled %s (archived runs are kept)\n", label)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is not installed; nothing to do\n", label)
			}
			return nil
		},
	}
	uf.bind(uninstallCmd)

	var sf labelFlags
	statusCmd := &cobra.Command{
		Use:   "status",
		Short: "Show the timer's state, last exit status, next run and latest run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			label, err := sf.resolve()
			if err != nil {
				return err
			}
			d, err := manager()
			if err != nil {
				return err
			}
			st, err := d.Status(cmd.Context(), label)
			if err != nil {
				return err
			}
			return st.Format(cmd.OutOrStdout())
		},
	}
	sf.bind(statusCmd)

	var kf labelFlags
	var restart bool
	kickstartCmd := &cobra.Command{
		Use:   "kickstart",
		Short: "Start a scheduled rehearsal now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			label, err := kf.resolve()
			if err != nil {
				return err
			}
			d, err := manager()
			if err != nil {
				return err
			}
			if err := d.Kickstart(cmd.Context(), label, restart); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "started %s; follow it with: journalctl --user -f -u %s\n", label, label)
			return nil
		},
	}
	kf.bind(kickstartCmd)
	kickstartCmd.Flags().BoolVar(&restart, "restart", false, "restart a rehearsal in progress")

	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List the rehearsal services in ~/.config/systemd/user",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := manager()
			if err != nil {
				return err
			}
			entries, err := d.List()
			if err != nil {
				return err
			}
			return launchd.FormatEntries(cmd.OutOrStdout(), entries)
		},
	}

	cmd.AddCommand(printCmd, installCmd, uninstallCmd, statusCmd, kickstartCmd, listCmd)
	return cmd
}
