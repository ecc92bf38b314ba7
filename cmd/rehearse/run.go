package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/internal/runs"
	"github.com/halfopen/rehearse/notify"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/num"
	"github.com/halfopen/rehearse/scenarios"
)

const runLong = `Run a rehearsal: replay the scenario's capture into the gateway under test at
a fixed rate while the upstreams misbehave on the scenario's schedule, then
write the run directory: journal.jsonl (every event), run.json, report.html,
report.md with timeline.svg, and junit.xml.

SCENARIO is a scenario file or the name of a built-in drill (rehearse
scenarios list). Flags given on the command line win over the file.

The scenario and its capture are checked before anything is created: a bad
capture (not a pcap or pcapng file, truncated, nothing replayable) leaves no
run directory. With --dry-run the plan is printed (capture summary, gateway,
upstreams and ports, fault timeline, expectations) and nothing is sent or
written.

A run owns its directory: a --out that holds a run is refused (exit 2), one
another run is recording into too (exit 3); nothing of that run is touched.
The run is complete only when its whole set of reports is written (run.complete,
last); with --archive only a complete run becomes latest, and retention (--keep,
--keep-for) applies to this scenario's runs only, never touching a run that is
recording.

Exit codes: 0 every expectation met; 1 an expectation failed; 2 invalid input;
3 harness or environment failure (gateway unreachable, port taken, --out in use,
reports that could not be written, the harness stalled, the gateway under test
stopped answering mid-run); 130 interrupted (the journal is intact, a partial
report is written, the expectations are not evaluated).`

const runExamples = `  rehearse run weekly                              # built-in weekly drill, built-in gateway
  rehearse run ci-503.yaml --junit out/junit.xml   # in CI
  rehearse run my.yaml --gateway http://127.0.0.1:8080 --duration 1m
  rehearse run my.yaml --dry-run                   # the plan, checked; nothing runs
  rehearse run retry-storm --gateway-mode naive    # the same storm on a naive gateway`

func newRunCmd() *cobra.Command {
	var (
		ov       = scenarios.NewOverrides()
		out      string
		junit    string
		quiet    bool
		archive  string
		keep     int
		keepFor  string
		notifyTo string
		dryRun   bool
		remote   bool
	)
	cmd := &cobra.Command{
		Use:     "run SCENARIO",
		Short:   "Run a rehearsal from a scenario file or built-in drill",
		Long:    runLong,
		Example: runExamples,
		Args:    cobra.ExactArgs(1),
		// Until RunE runs, executeRoot prints the outcome line.
		Annotations: map[string]string{outcomeAnnotation: "pending"},
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			var res *rehearsal.Result
			cmd.Annotations[outcomeAnnotation] = "own"
			// Whatever happens, the last line on stdout says how it ended,
			// in words: a log scrolled past or a CI console shows it.
			defer func() {
				if dryRun && err == nil {
					fmt.Fprintln(cmd.OutOrStdout(), "outcome: valid (dry run: nothing was sent and nothing was written)")
					return
				}
				fmt.Fprintln(cmd.OutOrStdout(), redact.Text(outcomeLine(res, err)))
			}()
			if notifyTo != "" {
				if _, err := notify.ParseURL(notifyTo); err != nil {
					return err
				}
				// However the run ends, from here on, say so; a dry run
				// sends nothing, not even this.
				if !dryRun {
					defer func() { notifyRun(cmd.Context(), notifyTo, args[0], res, err) }()
				}
			}
			if out != "" && archive != "" {
				return fmt.Errorf("%w: --out and --archive are exclusive", rehearse.ErrInvalid)
			}
			sc, err := scenarios.Resolve(args[0])
			if err != nil {
				return err
			}
			if err := ov.Apply(sc); err != nil {
				return err
			}
			sc.AllowRemote = remote
			// The capture is checked before anything is created: a bad
			// one leaves no run directory and no archive entry.
			plan, err := rehearsal.Check(cmd.Context(), sc)
			if err != nil {
				return err
			}
			if dryRun {
				if err := plan.WriteText(cmd.OutOrStdout()); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout())
				return nil
			}
			opt := rehearsal.Options{OutDir: out, JUnitPath: junit, Version: buildVersion(), Plan: plan}
			d, logger, restore, err := statusDisplay(cmd, quiet)
			if err != nil {
				return err
			}
			defer restore()
			if d != nil {
				opt.Status, opt.Logger = d, logger
			}
			var a *runs.Archive
			if archive != "" {
				age, err := runs.ParseAge(keepFor)
				if err != nil {
					return fmt.Errorf("--keep-for: %w", err)
				}
				a = &runs.Archive{Dir: archive, Keep: keep, KeepFor: age}
				id, err := rehearsal.IdentityOf(sc)
				if err != nil {
					return err
				}
				// The run holds its directory from here until Finish.
				if opt.Claim, err = a.NewRun(id, time.Now()); err != nil {
					return err
				}
			}
			res, err = rehearsal.Run(cmd.Context(), sc, opt)
			if res != nil {
				printRunResult(cmd.OutOrStdout(), res)
			}
			if a != nil {
				// latest moves to a complete run; a run that left nothing
				// is gone; retention of this scenario and the history
				// index follow.
				if _, ferr := a.Finish(opt.Claim, time.Now()); ferr != nil {
					slog.Warn("archive bookkeeping", "err", ferr)
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "out", "o", "", "run directory (default runs/<UTC date>-<scenario>)")
	f.StringVar(&archive, "archive", "", "archive directory: write the run to <archive>/<date>-<scenario>, update latest, apply retention to this scenario")
	for _, o := range ov.Flags() {
		f.Var(o, o.Name, o.Usage)
	}
	f.IntVar(&keep, "keep", 0, "with --archive: keep the last N complete runs of this scenario (0: no count limit)")
	f.StringVar(&keepFor, "keep-for", "", `with --archive: keep runs younger than this, e.g. "8w", "30d" or "720h" (empty: no age limit)`)
	f.StringVar(&junit, "junit", "", "also write the JUnit XML to this file")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress display")
	f.BoolVar(&remote, "allow-remote", false, "allow the scenario's upstreams and built-in gateway to listen beyond loopback (they have no authentication)")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan (capture summary, gateway, upstreams and ports, fault timeline, expectations) and exit: 0 valid, 2 invalid; nothing is sent or written")
	f.StringVar(&notifyTo, "notify", "", "when the run ends, POST a JSON summary to this webhook URL (Slack or any JSON receiver); a failed delivery is logged, the exit code is the run's")
	return cmd
}

// outcomeLine is the run's last stdout line: its outcome in words, the
// same words as the exit code (0 met, 1 not met, 2 invalid input, 3
// harness failure, 130 interrupted).
func outcomeLine(res *rehearsal.Result, err error) string {
	switch rehearse.ExitCode(err) {
	case rehearse.ExitOK:
		if res != nil && len(res.Expectations) == 0 {
			return "outcome: met (no expectations were set)"
		}
		return "outcome: met"
	case rehearse.ExitExpectations:
		if res != nil {
			return fmt.Sprintf("outcome: not met (%d of %d expectations failed)", len(res.Failed()), len(res.Expectations))
		}
		return "outcome: not met"
	case rehearse.ExitInterrupted:
		return "outcome: interrupted"
	case rehearse.ExitInvalid:
		// As below: an error that begins with its class
		// ("invalid input: --out and --archive are exclusive") would
		// say "invalid input: invalid input:".
		return "outcome: invalid input: " + firstLine(strings.TrimPrefix(err.Error(), rehearse.ErrInvalid.Error()+": "))
	default:
		// The class is in the words already: "harness failure:
		// environment failure: …" would say it twice.
		return "outcome: harness failure: " + firstLine(strings.TrimPrefix(err.Error(), rehearse.ErrEnvironment.Error()+": "))
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func printRunResult(w io.Writer, res *rehearsal.Result) {
	state := "complete"
	if res.Partial {
		state = "partial"
	}
	harness, interrupted := "", ""
	if res.Analysis != nil {
		harness, interrupted = res.Analysis.HarnessFailure(), res.Analysis.Interrupted()
	}
	if harness != "" {
		state = "failed"
	}
	fmt.Fprintf(w, "run %s: %s\n", state, res.Dir)
	switch r := res.Replay; {
	case res.Analysis != nil && res.Analysis.Replay.Due > 0:
		// The report's figures: the lateness counts the slots a stalled
		// harness missed, which the replayer's own summary (sent
		// requests only) cannot.
		ra := res.Analysis.Replay
		fmt.Fprintf(w, "  replay: %d sent, %d dropped, lateness p99 %s\n", ra.Sent, ra.Dropped, num.MsP(ra.LatenessMs.P99))
	case r != nil:
		fmt.Fprintf(w, "  replay: %d sent, %d dropped, lateness p99 %s\n", r.Sent, r.Dropped, num.Ms(r.Lateness.P99))
	}
	switch {
	case harness != "":
		// Expectations judged nothing: listing them as FAIL would blame
		// the gateway for the harness's failure.
		fmt.Fprintf(w, "  harness failure: %s\n  expectations: %d not evaluated\n", harness, len(res.Expectations))
		res = &rehearsal.Result{Dir: res.Dir, Complete: res.Complete}
	case interrupted != "":
		// Cut short: what was recorded says nothing against the gateway
		// (a bound not reached yet, a close that had no time to come).
		cut := ""
		if n := res.Analysis.Run.CutByInterruption; n > 0 {
			cut = fmt.Sprintf(", %d %s cut", n, num.Pick(int(n), "request", "requests"))
		}
		fmt.Fprintf(w, "  %s%s\n  expectations: %d not evaluated\n", interrupted, cut, len(res.Expectations))
		res = &rehearsal.Result{Dir: res.Dir, Complete: res.Complete}
	}
	passed := 0
	for _, e := range res.Expectations {
		mark := "ok  "
		if e.Passed {
			passed++
		} else {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %-26s observed %-12s want %s\n", mark, e.Name, e.Observed, e.Want)
	}
	if len(res.Expectations) > 0 {
		fmt.Fprintf(w, "  expectations: %d of %d met\n", passed, len(res.Expectations))
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "report.html")); err == nil && res.Complete {
		abs, _ := filepath.Abs(filepath.Join(res.Dir, "report.html"))
		fmt.Fprintf(w, "  report: %s\n", abs)
	}
}
