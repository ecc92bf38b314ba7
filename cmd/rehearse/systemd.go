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
			d, err := manager()
			if err != nil {
				return err
			}
			j, err := pf.printable(d.Home())
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

	labelCmds := schedulerCmds{
		open: func(*cobra.Command) (scheduler, error) { return manager() },
		short: map[string]string{
			"uninstall": "Disable the timer and remove the units",
			"status":    "Show the timer's state, last exit status, next run and latest run",
			"kickstart": "Start a scheduled rehearsal now",
			"list":      "List the rehearsal services in ~/.config/systemd/user",
		},
		restartHelp: "restart a rehearsal in progress",
		started: func(label string) string {
			return fmt.Sprintf("started %s; follow it with: journalctl --user -f -u %s", label, label)
		},
	}.labelCommands()

	cmd.AddCommand(printCmd, installCmd)
	cmd.AddCommand(labelCmds...)
	return cmd
}
