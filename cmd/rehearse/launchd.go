package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/runs"
	"github.com/halfopen/rehearse/launchd"
)

// jobFlags are the flags that describe a scheduled job, shared by
// `launchd print|install` and `systemd print|install`.
type jobFlags struct {
	scenario, label, binary, archive, keepFor, workdir, processType, notify string
	weekly, daily, env, runArgs                                             []string
	keep                                                                    int
	allowSecretEnv, caffeinate                                              bool
}

func (f *jobFlags) bind(cmd *cobra.Command, forLaunchd bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.scenario, "scenario", "", "scenario file to rehearse (required)")
	fs.StringArrayVar(&f.weekly, "weekly", nil, `weekly run, day and 24-hour local time, e.g. "Mon 03:00" (repeatable)`)
	fs.StringArrayVar(&f.daily, "daily", nil, "daily run at a 24-hour local time, e.g. 03:00 (repeatable)")
	fs.StringVar(&f.label, "label", "", "job label (default dev.rehearse.<scenario name>)")
	fs.StringVar(&f.binary, "binary", "", "absolute path of the rehearse binary (default: this executable, symlinks resolved)")
	fs.StringVar(&f.archive, "archive", launchd.DefaultArchive, "directory the runs are archived in, one <date>-<scenario> directory per run")
	fs.IntVar(&f.keep, "keep", launchd.DefaultKeep, "keep the last N runs of the scenario (0: no count limit)")
	fs.StringVar(&f.keepFor, "keep-for", "", `also keep runs younger than this, e.g. "8w", "30d" (default: no age limit)`)
	fs.StringVar(&f.workdir, "workdir", "", "working directory of the run (default: the scenario's directory)")
	fs.StringArrayVar(&f.env, "env", nil, "environment variable NAME=VALUE for the run (repeatable)")
	fs.BoolVar(&f.allowSecretEnv, "allow-secret-env", false, "allow --env names that look like secrets (stored in plain text)")
	fs.StringVar(&f.notify, "notify", "", "webhook URL each run POSTs its JSON summary to (rehearse run --notify); the job file is then written owner-only")
	fs.StringArrayVar(&f.runArgs, "run-arg", nil, `extra argument for "rehearse run" (repeatable), e.g. --run-arg=--gateway --run-arg=http://127.0.0.1:8080`)
	if forLaunchd {
		fs.StringVar(&f.processType, "process-type", launchd.DefaultProcessType, "launchd ProcessType: Background, Standard, Adaptive or Interactive")
		fs.BoolVar(&f.caffeinate, "caffeinate", false, "run under /usr/bin/caffeinate -i so the Mac cannot idle-sleep mid-run (see docs/mac-mini.md)")
	}
}

func (f *jobFlags) job() (launchd.Job, error) {
	sched, err := launchd.ParseSchedule(f.weekly, f.daily)
	if err != nil {
		return launchd.Job{}, err
	}
	env, err := launchd.ParseEnv(f.env)
	if err != nil {
		return launchd.Job{}, err
	}
	keepFor, err := runs.ParseAge(f.keepFor)
	if err != nil {
		return launchd.Job{}, err
	}
	if f.scenario == "" {
		return launchd.Job{}, fmt.Errorf("%w: --scenario is required", rehearse.ErrInvalid)
	}
	return launchd.Job{
		Label: f.label, Binary: f.binary, Scenario: f.scenario, Archive: f.archive,
		Keep: f.keep, KeepFor: keepFor, Schedule: sched, WorkingDirectory: f.workdir,
		Env: env, AllowSecretEnv: f.allowSecretEnv, ProcessType: f.processType,
		Caffeinate: f.caffeinate, RunArgs: f.runArgs, Notify: f.notify,
	}, nil
}

// printable returns the job resolved for home and checked, as print
// shows it: a plist or unit naming a missing scenario is never printed.
func (f *jobFlags) printable(home string) (launchd.Job, error) {
	job, err := f.job()
	if err != nil {
		return job, err
	}
	if job, err = job.Resolve(home); err != nil {
		return job, err
	}
	return job, launchd.CheckScenario(job)
}

// labelFlags pick an installed job by --label or by --scenario.
type labelFlags struct{ label, scenario string }

func (f *labelFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.label, "label", "", "job label")
	cmd.Flags().StringVar(&f.scenario, "scenario", "", "scenario file; the label is derived from its name")
}

func (f *labelFlags) resolve() (string, error) {
	switch {
	case f.label != "" && f.scenario != "":
		return "", fmt.Errorf("%w: give --label or --scenario, not both", rehearse.ErrInvalid)
	case f.label != "":
		return f.label, nil
	case f.scenario != "":
		return launchd.LabelFor(f.scenario), nil
	}
	return "", fmt.Errorf("%w: give --label LABEL or --scenario FILE", rehearse.ErrInvalid)
}

// printInstalled tells the user where things are after an install.
func printInstalled(w io.Writer, res launchd.InstallResult, logs string) {
	j := res.Job
	switch {
	case !res.Changed:
		fmt.Fprintf(w, "%s is already installed, unchanged\n", j.Label)
	case res.Replaced:
		fmt.Fprintf(w, "replaced %s\n", j.Label)
	default:
		fmt.Fprintf(w, "installed %s\n", j.Label)
	}
	for _, f := range res.Files {
		fmt.Fprintf(w, "  file:     %s\n", f)
	}
	parts := make([]string, len(j.Schedule))
	for i, s := range j.Schedule {
		parts[i] = s.String()
	}
	fmt.Fprintf(w, "  schedule: %s (local time); next run %s\n", strings.Join(parts, ", "),
		launchd.NextRun(j.Schedule, time.Now()).Format("Mon 2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "  runs:     %s/<date>-%s (latest: %s)\n", j.Archive, runs.Slug(j.Scenario), filepath.Join(j.Archive, runs.LatestName))
	fmt.Fprintf(w, "  logs:     %s\n", logs)
}

func newLaunchdCmd(opts ...launchd.Option) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "launchd",
		Short: "Schedule rehearsals on macOS with a LaunchAgent",
		Long: `Schedule a scenario as a macOS LaunchAgent that runs "rehearse run SCENARIO
--archive DIR" on a calendar schedule (local time). Each run is archived in
DIR/<date>-<scenario>/, DIR/latest points to the newest, and old runs are pruned
(--keep, --keep-for). "print" works on any OS; install, uninstall, status and
kickstart call launchctl and need macOS (on Linux see "rehearse systemd").`,
		Example: `  rehearse launchd print --scenario weekly.yaml --weekly "Mon 03:00"
  rehearse launchd install --scenario weekly.yaml --weekly "Mon 03:00" --weekly "Thu 03:00"
  rehearse launchd status --scenario weekly.yaml
  rehearse launchd kickstart --scenario weekly.yaml
  rehearse launchd uninstall --label dev.rehearse.weekly`,
	}
	manager := func(extra ...launchd.Option) (*launchd.Manager, error) {
		return launchd.New(append(append([]launchd.Option(nil), opts...), extra...)...)
	}
	cmd.AddCommand(schedulerCmds{
		open: func(cmd *cobra.Command) (scheduler, error) {
			domain, _ := cmd.Flags().GetString("domain")
			if domain == "" {
				return manager()
			}
			return manager(launchd.WithDomain(domain))
		},
		flags: func(cmd *cobra.Command) {
			switch cmd.Name() {
			case "print", "list":
				// No domain: they read files, not launchd.
			case "install":
				cmd.Flags().String("domain", launchd.DefaultDomain, `launchd domain: "gui" (needs a logged-in GUI session) or "user" (works over SSH)`)
			default:
				cmd.Flags().String("domain", launchd.DefaultDomain, "launchd domain the agent was installed in")
			}
		},
		short: map[string]string{
			"print":     "Print the LaunchAgent plist (any OS; nothing is installed)",
			"install":   "Install and load the LaunchAgent (macOS)",
			"uninstall": "Unload the LaunchAgent and remove its plist (macOS)",
			"status":    "Show the agent's state, last exit status, next run and latest run (macOS)",
			"kickstart": "Start a scheduled rehearsal now (macOS)",
			"list":      "List the rehearsal agents in ~/Library/LaunchAgents (any OS)",
		},
		long: map[string]string{
			"install": `Write ~/Library/LaunchAgents/<label>.plist atomically and load it with
launchctl bootstrap. Installing the same job again changes nothing; a different
job under the same label is refused unless --force.

First the scheduled command line (rehearse run SCENARIO with the archive flags
and every --run-arg) is checked as a dry run: a scenario validate refuses, or a
flag run refuses, fails now with exit 2 and nothing written. A launchd domain
that cannot be reached (gui with nobody logged in at the screen) fails with exit
3 before anything is written, and a launchctl failure after the plist is written
removes it again: all or nothing.`,
		},
		launchdJob: true,
		render: func(w io.Writer, _ scheduler, job launchd.Job) error {
			data, err := job.Plist().Render()
			if err != nil {
				return err
			}
			_, err = w.Write(data)
			return err
		},
		forceHelp: "replace a different agent installed under the same label",
		installed: func(w io.Writer, res launchd.InstallResult) {
			printInstalled(w, res, res.Job.Plist().StandardErrorPath)
		},
		restartHelp: "kill a rehearsal in progress and start again",
		started: func(label string) string {
			return fmt.Sprintf("started %s; see \"rehearse launchd status --label %s\"", label, label)
		},
	}.commands()...)
	return cmd
}
