package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/observe"
	"github.com/halfopen/rehearse/scenarios"
)

// newLogStatesCmd reads a gateway's existing log once and shows what a log
// preset or a scenario's patterns recognise in it: the way to check
// gateway.log before a rehearsal, as `rehearse metrics` checks a preset.
func newLogStatesCmd() *cobra.Command {
	var (
		cfg      observe.LogConfig
		depMap   []string
		scenario string
		all      bool
	)
	cmd := &cobra.Command{
		Use:   "log-states [FILE]",
		Short: "Read a gateway's log once and show the breaker states its patterns recognise",
		Long: `Read a gateway's log file from its beginning and print the lines a log preset
(--preset ` + observe.PresetOpenClaw + `) or a scenario's gateway.log patterns (--scenario) recognise:
their own time, the dependency, the upstream it maps to, and the state the line
sets. With --all, lines that set no state (retries, fallbacks, provider calls)
too. A run tails the same file from its start instead (docs/metrics.md).`,
		Example: `  rehearse log-states /tmp/openclaw/openclaw.log
  rehearse log-states --scenario openclaw-429.yaml --all
  rehearse log-states gw.log --preset openclaw --map openai-main=primary`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var upstreams []string
			if scenario != "" {
				sc, err := scenarios.Load(scenario)
				if err != nil {
					return err
				}
				lc := sc.LogConfig()
				if lc == nil {
					return fmt.Errorf("%w: %s has no gateway.log", rehearse.ErrInvalid, scenario)
				}
				if cmd.Flags().Changed("preset") || cmd.Flags().Changed("format") {
					return fmt.Errorf("%w: --preset and --format come from the scenario with --scenario", rehearse.ErrInvalid)
				}
				cfg = *lc
				for _, u := range sc.Upstreams {
					upstreams = append(upstreams, u.Name)
				}
			}
			if len(args) == 1 {
				cfg.Path = args[0]
			}
			if cfg.Path == "" {
				return fmt.Errorf("%w: no log file: give it as an argument or with --scenario", rehearse.ErrInvalid)
			}
			m, err := pairs("--map", depMap)
			if err != nil {
				return err
			}
			for k, v := range m {
				if cfg.DependencyMap == nil {
					cfg.DependencyMap = map[string]string{}
				}
				cfg.DependencyMap[k] = v
			}
			names := map[string]string{"preset": "--preset", "format": "--format", "dependency_map": "--map"}
			if err := cfg.Validate(); err != nil {
				return flagError(err, names)
			}
			f, err := os.Open(cfg.Path)
			if err != nil {
				return fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
			}
			defer f.Close()
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tPATTERN\tDEPENDENCY\tUPSTREAM\tSTATE\tDETAIL")
			st, err := observe.ReadLog(cfg, f, upstreams, func(e observe.LogEntry) {
				if e.State == "" && !all {
					return
				}
				detail := fmt.Sprintf("value %g", e.Value)
				if !e.Until.IsZero() {
					detail = "until " + e.Until.UTC().Format(logTimeLayout)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format(logTimeLayout), e.Pattern,
					dash(e.Dependency), dash(e.Upstream), dash(e.State), detail)
			})
			if err != nil {
				return flagError(err, names)
			}
			tw.Flush()
			fmt.Fprintf(out, "%s: %d lines, %d recognised", cfg.Path, st.Lines, st.Recorded)
			var bad []string
			for _, b := range []struct {
				n    int
				what string
			}{{st.BadTime, "with an unreadable time"}, {st.Undecodable, "not JSON"}, {st.TooLong, "too long"}} {
				if b.n > 0 {
					bad = append(bad, fmt.Sprintf("%d %s", b.n, b.what))
				}
			}
			if len(bad) > 0 {
				fmt.Fprintf(out, " (skipped: %s)", strings.Join(bad, ", "))
			}
			fmt.Fprintln(out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Preset, "preset", observe.PresetOpenClaw, "log preset: "+observe.PresetOpenClaw)
	f.StringVar(&cfg.Format, "format", observe.DefaultLogFormat, "line format: json or text")
	f.StringArrayVar(&depMap, "map", nil, "map a gateway dependency to an upstream name: DEP=UPSTREAM (repeatable)")
	f.StringVar(&scenario, "scenario", "", "take gateway.log (path, patterns, time format) from this scenario")
	f.BoolVar(&all, "all", false, "also print recognised lines that set no state")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// logTimeLayout prints a line's time in UTC with milliseconds, so that the
// table's columns line up.
const logTimeLayout = "2006-01-02T15:04:05.000Z07:00"
