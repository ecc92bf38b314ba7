package main

import (
	"fmt"
	"log/slog"
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
API's; both listen on loopback only unless --allow-remote is given, since the
control API has no authentication:

  curl -s localhost:PORT/faults
  curl -s -X POST localhost:PORT/faults -d '{"type":"status","upstream":"search","for":"30s","params":{"code":503}}'
  curl -s -X DELETE localhost:PORT/faults`,
		Example: "  rehearse inject serve --config upstreams.yaml --control 127.0.0.1:7070 --journal drill.jsonl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("seed") {
				o.Seed = &seed
			}
			o.Out = cmd.OutOrStdout()
			o.Logger = slog.Default()
			return inject.Serve(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.ConfigPath, "config", "c", "", "config file with upstreams: and faults: sections (required)")
	f.StringVar(&o.Control, "control", inject.DefaultControlListen, `control API listen address; "" disables it`)
	f.StringVar(&o.JournalPath, "journal", "", "write the journal (JSON Lines) to this file")
	f.Int64Var(&seed, "seed", 0, "seed for per-request fault decisions (overrides the config's seed)")
	f.BoolVar(&o.AllowRemote, "allow-remote", false, "allow a non-loopback --control or upstream listen address (the control API has no authentication)")
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
