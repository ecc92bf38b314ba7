package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/reports"
)

func newReportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Rebuild, compare and index rehearsal reports from their journals",
		Long: `Reports are pure functions of a run's journal: render rebuilds a run
directory's run.json, report.html, report.md, timeline.svg and junit.xml;
compare puts two runs side by side (e.g. macOS vs Linux); history indexes a
directory of runs with trends of the key figures.`,
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
in the journal. Exit code 1 when an expectation failed, as for rehearse run.`,
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
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %d of %d expectations met%s; wrote %s, %s, %s, %s, %s\n", dir,
					len(results)-bad, len(results), partial, reports.RunFile, reports.HTMLFile, reports.MarkdownFile, reports.TimelineFile, reports.JUnitFile)
				if err := reports.Failed(results); err != nil && failed == nil {
					failed = fmt.Errorf("%s: %w", dir, err)
				}
			}
			return failed
		},
	}
}

func newReportCompareCmd() *cobra.Command {
	var (
		labels []string
		out    string
		tol    = reports.DefaultTolerance
	)
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two runs side by side (e.g. macOS vs Linux)",
		Long: `Compare the figures of two run directories side by side with deltas (B − A),
flagging differences beyond the tolerance, with both platforms' facts (OS,
timer granularity, TCP keepalive) and the two timelines aligned at the first
fault start. Without --out the Markdown comparison goes to stdout; with --out
DIR, compare.html, compare.md and the two aligned timelines are written there.`,
		Example: "  rehearse report compare runs/mac runs/linux --label macOS --label linux --out cmp/",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(labels) > 2 {
				return fmt.Errorf("%w: --label given %d times: give it at most twice (A, then B)", rehearse.ErrInvalid, len(labels))
			}
			if tol.Abs < 0 || tol.Rel < 0 {
				return fmt.Errorf("%w: tolerances must not be negative", rehearse.ErrInvalid)
			}
			var l [2]string
			copy(l[:], labels)
			c, err := reports.CompareDirs(args[0], args[1], l, tol)
			if err != nil {
				return err
			}
			if out == "" {
				_, err := cmd.OutOrStdout().Write(reports.CompareMarkdown(c))
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return fmt.Errorf("%w: --out: %w", rehearse.ErrEnvironment, err)
			}
			if err := reports.WriteComparison(out, c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d figures differ beyond the tolerance; wrote %v to %s\n", c.Flagged, reports.CompareFiles, out)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label for A, then for B (default: the directory names)")
	cmd.Flags().StringVar(&out, "out", "", "directory to write compare.html and compare.md into (created if needed)")
	cmd.Flags().Float64Var(&tol.Abs, "tolerance-abs", reports.DefaultTolerance.Abs, "flag a delta only beyond this absolute value (seconds or counts)")
	cmd.Flags().Float64Var(&tol.Rel, "tolerance-rel", reports.DefaultTolerance.Rel, "flag a delta only beyond this fraction of A's value")
	return cmd
}

func newReportHistoryCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "history DIR",
		Short: "Index a directory of runs with trends of the key figures",
		Long: `Index every run directory directly under DIR (subdirectories holding run.json
or journal.jsonl), oldest first, with the key figures of each run and their
trends, as index.html and index.md in DIR (or --out).`,
		Example: "  rehearse report history ~/Library/Application\\ Support/rehearse/runs",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := reports.History(args[0])
			if err != nil {
				return err
			}
			if out == "" {
				out = args[0]
			}
			if err := reports.WriteHistory(out, h); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d runs indexed; wrote index.html and index.md to %s\n", len(h.Runs), out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write index.html and index.md into (default: DIR)")
	return cmd
}
