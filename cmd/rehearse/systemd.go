package main

import (
	"fmt"
	"io"

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
For the timer to fire while you are logged out: loginctl enable-linger $USER.

print and install check the scheduled command line as a dry run first (exit 2
on a scenario validate refuses). install asks the user manager before writing
(exit 3 and nothing written when systemctl --user cannot reach it) and removes
what it wrote if systemctl then fails: all or nothing. uninstall removes the
units even when the user manager cannot be reached, and says so.`,
		Example: `  rehearse systemd print --scenario weekly.yaml --weekly "Mon 03:00"
  rehearse systemd install --scenario weekly.yaml --weekly "Mon 03:00"
  rehearse systemd status --scenario weekly.yaml`,
	}
	cmd.AddCommand(schedulerCmds{
		open: func(*cobra.Command) (scheduler, error) { return launchd.NewSystemd(opts...) },
		short: map[string]string{
			"print":     "Print the service and timer units (nothing is installed)",
			"install":   "Install the units and enable the timer (systemctl --user)",
			"uninstall": "Disable the timer and remove the units",
			"status":    "Show the timer's state, last exit status, next run and latest run",
			"kickstart": "Start a scheduled rehearsal now",
			"list":      "List the rehearsal services in ~/.config/systemd/user",
		},
		render: func(w io.Writer, sch scheduler, job launchd.Job) error {
			svc, tmr := job.SystemdUnits()
			svcPath, tmrPath := sch.(*launchd.Systemd).UnitPaths(job.Label)
			_, err := fmt.Fprintf(w, "# ---- %s\n%s\n# ---- %s\n%s", svcPath, svc, tmrPath, tmr)
			return err
		},
		forceHelp: "replace different units installed under the same label",
		installed: func(w io.Writer, res launchd.InstallResult) {
			printInstalled(w, res, "journalctl --user -u "+res.Job.Label)
			fmt.Fprintln(w, "  note:     for runs while you are logged out: loginctl enable-linger $USER")
		},
		restartHelp: "restart a rehearsal in progress",
		started: func(label string) string {
			return fmt.Sprintf("started %s; follow it with: journalctl --user -f -u %s", label, label)
		},
	}.commands()...)
	return cmd
}
