package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/scenarios"
)

func newValidateCmd() *cobra.Command {
	var remote bool
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check scenario files without running them",
		Long: `Check scenario files strictly, as rehearse run would: unknown fields, wrong
types, bad durations, references to upstreams that do not exist, invalid fault
parameters. Every problem is reported as file:line:col. The capture is read as
run reads it, with the scenario's filter and rewrite: a file that is not a
pcap or pcapng file, a truncated one, or one with no request to replay (TLS
only, another protocol, everything filtered out) is refused with the reason.
So is a plan that can only fail: an expectation the run cannot observe
(metrics_lag_max with no metrics source; closes_within, successes_to_close_min,
metrics_lag_max or fails_back_within with a fault that lasts to the replay's
end; healthy_unaffected or cost_amplification_max with a fault from the
replay's start; fails_over_within or fails_back_within with a single upstream) and, for a gateway given by url, upstreams on ports picked at start. run, run --dry-run
and the launchd and systemd print and install commands make the same check.
A listen address beyond loopback is refused unless --allow-remote is given, as
run refuses it. Exit code 2 when any file is invalid.`,
		Example: "  rehearse validate scenarios/*.yaml",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var errs []error
			for _, path := range args {
				sc, err := scenarios.Resolve(path)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				sc.AllowRemote = remote
				plan, err := rehearsal.Check(cmd.Context(), sc)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%s: %d upstreams, %d faults, %g req/s for %s; %d replayable requests in the capture%s)\n",
					path, sc.Name, len(sc.Upstreams), len(sc.Faults), sc.Replay.Rate, sc.Replay.Duration, plan.Replayable, skippedText(plan))
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVar(&remote, "allow-remote", false, "accept listen addresses beyond loopback, as run --allow-remote does")
	return cmd
}

// skippedText says, for validate's ok line, what of the capture will not
// be replayed and why, or "" when nothing.
func skippedText(p *rehearsal.Plan) string {
	if s := p.Skipped(); len(s) > 0 {
		return "; skipped: " + strings.Join(s, ", ")
	}
	return ""
}
