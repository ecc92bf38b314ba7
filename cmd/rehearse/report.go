package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/runs"
	"github.com/halfopen/rehearse/internal/stats"
	"github.com/halfopen/rehearse/reports"
	"github.com/halfopen/rehearse/reports/compare"
	"github.com/halfopen/rehearse/reports/expect"
	"github.com/halfopen/rehearse/reports/history"
	"github.com/halfopen/rehearse/reports/render"
)

func newReportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Rebuild, compare and index rehearsal reports from their journals",
		Long: `Reports are pure functions of a run's journal: render rebuilds a run
directory's run.json, report.html, report.md, timeline.svg and junit.xml;
compare puts two sets of runs side by side (e.g. macOS vs Linux) and says
which figures differ beyond noise; history indexes a directory of runs with
trends of the key figures, per scenario and platform.`,
	}
	cmd.AddCommand(newReportRenderCmd(), newReportCompareCmd(), newReportHistoryCmd())
	return cmd
}

func newReportRenderCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "render DIR...",
		Short: "Rebuild a run directory's reports from its journal.jsonl",
		Long: `Rebuild run.json, report.html, report.md, timeline.svg and junit.xml in each
run directory from its journal.jsonl, and evaluate the expectations recorded
in the journal. As for rehearse run: exit code 1 when an expectation failed,
3 when the journal shows a harness failure (the run failed, the harness
stalled, the gateway under test stopped answering); an interrupted run's
expectations are not evaluated, and rebuilding its reports exits 0.`,
		Example: "  rehearse report render runs/2026-11-30",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var failed error
			for _, dir := range args {
				a, results, err := reports.RenderDir(dir)
				if err != nil {
					return err
				}
				bad := 0
				for _, r := range results {
					if !r.Passed {
						bad++
					}
				}
				partial := ""
				if a.Run.Partial {
					partial = " (partial run)"
				}
				verdict := fmt.Sprintf("%d of %d expectations met%s", len(results)-bad, len(results), partial)
				switch h, in := a.HarnessFailure(), a.Interrupted(); {
				case h != "":
					// As rehearse run says it: exit 3, nothing judged.
					verdict = fmt.Sprintf("%d expectations not evaluated (harness failure: %s)", len(results), h)
					if failed == nil {
						failed = fmt.Errorf("%w: %s: %s", rehearse.ErrEnvironment, dir, h)
					}
				case in != "":
					// Nothing against the gateway: a run cut short.
					verdict = fmt.Sprintf("%d expectations not evaluated (%s)", len(results), in)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s; wrote %s, %s, %s, %s, %s\n", dir,
					verdict, render.RunFile, render.HTMLFile, render.MarkdownFile, render.TimelineFile, render.JUnitFile)
				if !a.Judged() {
					continue
				}
				if err := expect.Failed(results); err != nil && failed == nil {
					failed = fmt.Errorf("%s: %w", dir, err)
				}
			}
			return failed
		},
	}
}

func newReportCompareCmd() *cobra.Command {
	var (
		labels     []string
		out        string
		format     string
		scenario   string
		force      bool
		failOnDiff bool
		failUndec  bool
		thresholds []string
		level      float64
	)
	cmd := &cobra.Command{
		Use:   "compare A... --vs B...",
		Short: "Compare two sets of runs figure by figure (e.g. macOS vs Linux), beyond noise",
		Long: `Compare two sets of runs of the same drill. Each side is one or more run
directories, or archive directories whose run subdirectories are all taken
(--scenario keeps one scenario's). Every timing figure is compared on all its
samples (every probe interval, cooldown and cycle, in every run): per figure,
n, median and p10–p90 on each side, the difference (B − A) of the sides'
run values (each run's median) with a confidence interval, and whether it is
beyond noise. The interval is Student's t over the runs, the run-to-run
spread pooled over both sides and never below what a run's own samples and
the measurement's resolution leave (the request interval, one call, the
figure's bounds); the level (--level) holds for all figures at once. A
figure is flagged when its interval excludes zero and the difference is at
least its threshold (defaults: 2 ms or 0.5 % for timings, 1 call for counts,
0.02 for ratios; --threshold KEY=VALUE per figure).

Two runs a side judge every figure (one run against two too). With one run
a side, figures with one value per run cannot be judged; stderr and the
report list them and how many runs a side would judge them, and
--fail-on-undecided makes that exit 1.

Runs of different drills (scenario digests) are refused unless --force;
every configuration difference that remains is listed, a label contradicting
a run's platform is a warning, and flagged figures are tied to the platform
facts that differ (timer lateness and load measured during the runs).

Two arguments without --vs compare one run with another. Without --out the
comparison goes to stdout (--format md or json); with --out DIR,
compare.html, compare.md, compare.json and compare-timelines.svg are written.
Exit codes: 0 compared; 1 with --fail-on-diff when a figure is flagged, or
with --fail-on-undecided when a figure cannot be judged; 2 bad input (no
runs, different drills without --force, bad flags).`,
		Example: `  rehearse report compare runs/linux-* --vs runs/mac-* --label Linux --label macOS --out cmp/
  rehearse report compare ~/rehearse/runs --vs ci-runs/ --scenario weekly --fail-on-diff
  rehearse report compare a b --format json --threshold probe_spacing=5ms --threshold cooldowns=1%`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, raw []string) error {
			cmd.InitDefaultHelpFlag()
			cmd.InheritedFlags() // merge the root's persistent flags into cmd.Flags()
			a, b, flags := splitSides(cmd, raw)
			if err := cmd.Flags().Parse(flags); err != nil {
				return fmt.Errorf("%w: %w", rehearse.ErrInvalid, err)
			}
			if h, _ := cmd.Flags().GetBool("help"); h {
				return cmd.Help()
			}
			if b == nil {
				if len(a) != 2 {
					return fmt.Errorf("%w: give two runs (A B), or sets of runs: A... --vs B...", rehearse.ErrInvalid)
				}
				a, b = a[:1], a[1:]
			}
			if len(a) == 0 || len(b) == 0 {
				return fmt.Errorf("%w: each side needs at least one run or archive directory (A... --vs B...)", rehearse.ErrInvalid)
			}
			if len(labels) > 2 {
				return fmt.Errorf("%w: --label given %d times: give it at most twice (A, then B)", rehearse.ErrInvalid, len(labels))
			}
			if format != "md" && format != "json" {
				return fmt.Errorf("%w: --format %q: want md or json", rehearse.ErrInvalid, format)
			}
			if !(level > 0 && level < 1) { // NaN too
				return fmt.Errorf("%w: --level %v: want a confidence level between 0 and 1, e.g. 0.95", rehearse.ErrInvalid, level)
			}
			opt := compare.CompareOptions{Scenario: scenario, Force: force, Stats: stats.Options{Level: level}, Version: buildVersion()}
			copy(opt.Labels[:], labels)
			th, err := parseThresholds(thresholds)
			if err != nil {
				return err
			}
			opt.Thresholds = th
			c, err := compare.CompareSets(a, b, opt)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out != "" {
				if err := os.MkdirAll(out, 0o755); err != nil {
					return fmt.Errorf("%w: --out: %w", rehearse.ErrEnvironment, err)
				}
				if err := compare.WriteComparison(out, c); err != nil {
					return err
				}
			}
			switch {
			case format == "json":
				j, err := compare.CompareJSON(c)
				if err != nil {
					return err
				}
				if _, err := w.Write(j); err != nil {
					return err
				}
			case out == "":
				if _, err := w.Write(compare.CompareMarkdown(c, false)); err != nil {
					return err
				}
			default:
				fmt.Fprintf(w, "%s; wrote %s to %s\n", c.Headline(), strings.Join(compare.CompareFiles, ", "), out)
			}
			for _, warn := range c.Warnings {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", warn)
			}
			if failOnDiff && c.Flagged > 0 {
				return fmt.Errorf("%w: %s", rehearse.ErrDiffers, c.Headline())
			}
			if failUndec && c.Unjudged > 0 {
				return fmt.Errorf("%w: %s (--fail-on-undecided)", rehearse.ErrUndecided, c.Headline())
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&labels, "label", nil, "label for A, then for B (default: the first directory's name)")
	f.StringVar(&out, "out", "", "directory to write compare.html, compare.md, compare.json and compare-timelines.svg into (created if needed)")
	f.StringVar(&format, "format", "md", "what goes to stdout: md or json")
	f.StringVar(&scenario, "scenario", "", "keep only runs of this scenario (name or digest prefix) from archive directories")
	f.BoolVar(&force, "force", false, "compare runs of different drills (scenario digests) instead of refusing")
	f.BoolVar(&failOnDiff, "fail-on-diff", false, "exit 1 when a figure differs beyond noise and its threshold")
	f.BoolVar(&failUndec, "fail-on-undecided", false, "exit 1 when a figure cannot be judged (e.g. one value per run and one run a side), for gates that must not pass on \"cannot tell\"")
	f.StringArrayVar(&thresholds, "threshold", nil, "KEY=VALUE practical threshold of one figure: 5ms (timings), 2 (counts, ratios) or 1% of A's median; keys: "+strings.Join(compare.FigureKeys(), ", "))
	f.Float64Var(&level, "level", stats.DefaultLevel, "confidence level of the comparison: the chance that identical configurations have no figure flagged")
	return cmd
}

// splitSides splits compare's raw arguments into side A (before --vs),
// side B (after it; nil without --vs) and the flags, which may come
// anywhere. A flag that takes a value takes the next argument.
func splitSides(cmd *cobra.Command, raw []string) (a, b, flags []string) {
	side := &a
	for i := 0; i < len(raw); i++ {
		t := raw[i]
		switch {
		case t == "--vs" && b == nil:
			b = []string{}
			side = &b
		case t == "--":
			*side = append(*side, raw[i+1:]...)
			return a, b, flags
		case strings.HasPrefix(t, "-") && t != "-":
			flags = append(flags, t)
			if strings.Contains(t, "=") {
				continue
			}
			var fl *pflag.Flag
			if strings.HasPrefix(t, "--") {
				fl = cmd.Flags().Lookup(t[2:])
			} else if len(t) == 2 {
				fl = cmd.Flags().ShorthandLookup(t[1:])
			}
			if fl != nil && fl.NoOptDefVal == "" && i+1 < len(raw) {
				flags = append(flags, raw[i+1])
				i++
			}
		default:
			*side = append(*side, t)
		}
	}
	return a, b, flags
}

// parseThresholds reads --threshold KEY=VALUE flags: a duration for a
// timing, a number for a count or ratio, or N% of A's median. Two flags
// for one key combine (absolute and relative).
func parseThresholds(list []string) (map[string]stats.Threshold, error) {
	out := map[string]stats.Threshold{}
	for _, s := range list {
		k, v, ok := strings.Cut(s, "=")
		unit := compare.FigureUnit(k)
		if !ok || unit == "" {
			return nil, fmt.Errorf("%w: --threshold %q: want KEY=VALUE with KEY one of %s", rehearse.ErrInvalid, s, strings.Join(compare.FigureKeys(), ", "))
		}
		t, ok := out[k]
		if !ok {
			t = stats.Threshold{}
		}
		bad := func(want string) error {
			return fmt.Errorf("%w: --threshold %s: %q is not %s", rehearse.ErrInvalid, k, v, want)
		}
		switch {
		case strings.HasSuffix(v, "%"):
			f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if err != nil || f < 0 {
				return nil, bad("a percentage such as 1%")
			}
			t.Rel = f / 100
		case unit == compare.UnitMs:
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return nil, bad("a duration such as 5ms")
			}
			t.Abs = float64(d) / float64(time.Millisecond)
		default:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, bad("a non-negative number")
			}
			t.Abs = f
		}
		out[k] = t
	}
	return out, nil
}

func newReportHistoryCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "history DIR",
		Short: "Index a directory of runs with trends of the key figures",
		Long: `Index every run directory directly under DIR (subdirectories holding run.json
or journal.jsonl), oldest first, with the key figures of each run and their
trends, as index.html and index.md in DIR (or --out). A run that is still
recording, or was killed before its reports were whole, is listed as such
and not linked.`,
		Example: "  rehearse report history ~/Library/Application\\ Support/rehearse/runs",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Runs that are recording, or were killed, are listed as
			// such: never read as reports, never linked.
			h, err := runs.History(args[0])
			if err != nil {
				return err
			}
			if out == "" {
				out = args[0]
			}
			if err := history.WriteHistory(out, h); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d runs indexed; wrote index.html and index.md to %s\n", len(h.Runs), out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write index.html and index.md into (default: DIR)")
	return cmd
}
