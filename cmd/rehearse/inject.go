package main

import (
	"fmt"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse/inject"
)

func newInjectCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inject",
		Short: "Serve misbehaving upstreams standalone, for manual drills",
		Long: `Serve the upstreams and faults of a config file (the upstreams: and faults:
sections of a scenario) without replaying traffic: point a gateway at them
and drive the faults by hand through the control API. See docs/FAULTS.md.`,
	}
	cmd.AddCommand(newInjectServeCmd(), newInjectTypesCmd())
	return cmd
}

func newInjectServeCmd() *cobra.Command {
	var (
		o    inject.ServeOptions
		seed int64
	)
	cmd := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Run fake, proxy and TCP upstreams with their faults until Ctrl-C",
		Long: `Run the upstreams of FILE (fake, HTTP reverse proxy or TCP relay) with the
fault timeline of FILE, timed from now, until interrupted (exit code 130 on
Ctrl-C, SIGTERM or SIGHUP). Prints each upstream's address, and the control
API's; both listen on loopback only unless --allow-remote is given:

  curl -s localhost:PORT/faults
  curl -s -X POST localhost:PORT/faults -H 'Content-Type: application/json' \
       -d '{"type":"status","upstream":"search","for":"30s","params":{"code":503}}'
  curl -s -X DELETE localhost:PORT/faults

The control API refuses what a web page open in a browser on this machine could
send it (loopback does not stop a page): a Host header other than localhost, an
IP address or its own name with its port (DNS rebinding), an Origin other than
its own or Sec-Fetch-Site other than same-origin/none (403), and a POST, or a
DELETE with a body, whose Content-Type is not application/json or
application/yaml (415: forms and text/plain).

With --token (or REHEARSE_CONTROL_TOKEN, which keeps it out of the process
list) every request must carry "Authorization: Bearer TOKEN" (401 otherwise).
With --allow-remote and a --control address other machines can reach, a token
is required: without one, a random token is generated and printed once with the
control API's address.`,
		Example: "  rehearse inject serve --config upstreams.yaml --control 127.0.0.1:7070 --journal drill.jsonl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("seed") {
				o.Seed = &seed
			}
			o.Out = cmd.OutOrStdout()
			o.Logger = slog.Default()
			if o.Token == "" {
				// From the environment, so that it is not in the process
				// list (nor shown as a flag default in --help).
				o.Token = os.Getenv("REHEARSE_CONTROL_TOKEN")
			}
			return inject.Serve(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.ConfigPath, "config", "c", "", "config file with upstreams: and faults: sections (required)")
	f.StringVar(&o.Control, "control", inject.DefaultControlListen, `control API listen address; "" disables it`)
	f.StringVar(&o.JournalPath, "journal", "", "write the journal (JSON Lines) to this file")
	f.Int64Var(&seed, "seed", 0, "seed for per-request fault decisions (overrides the config's seed)")
	f.BoolVar(&o.AllowRemote, "allow-remote", false, "allow a non-loopback --control or upstream listen address (the control API then requires a token)")
	f.StringVar(&o.Token, "token", "", "require \"Authorization: Bearer TOKEN\" on the control API (default $REHEARSE_CONTROL_TOKEN; generated and printed with --allow-remote beyond loopback)")
	return cmd
}

func newInjectTypesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "types",
		Short: "List the fault types of the catalogue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, t := range inject.FaultTypes() {
				fmt.Fprintf(tw, "%s\t%s\n", t, inject.FaultTypeSummary(t))
			}
			return tw.Flush()
		},
	}
}
