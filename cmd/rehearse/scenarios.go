package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/scenarios"
)

func newScenariosCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenarios",
		Short: "The built-in drill library",
		Long: `The built-in drills: 503 storm, 429 with Retry-After, slow reads, mid-stream
reset, headers never, isolation, flapping, deploy blip, Redis partition in a
fleet, and the weekly drill. Run one with "rehearse run NAME", or start your own
scenario from one with "rehearse scenarios init NAME".`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the built-in drills",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, d := range scenarios.Drills() {
				fmt.Fprintf(tw, "%s\t%s\n", d.Name, d.Description)
			}
			return tw.Flush()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in drill's scenario file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := scenarios.DrillSource(args[0])
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	})
	var out string
	var force bool
	initCmd := &cobra.Command{
		Use:   "init [NAME]",
		Short: "Write a built-in drill to a file to start your own scenario",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := scenarios.DefaultDrill
			if len(args) == 1 {
				name = args[0]
			}
			data, err := scenarios.DrillSource(name)
			if err != nil {
				return err
			}
			header := "# yaml-language-server: $schema=" + scenarios.SchemaID + "\n"
			if out == "-" {
				_, err := io.WriteString(cmd.OutOrStdout(), header+string(data))
				return err
			}
			if out == "" {
				out = name + ".yaml"
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(out, flags, 0o644)
			if err != nil {
				if os.IsExist(err) {
					return fmt.Errorf("%w: %s exists; use --force to overwrite", rehearse.ErrInvalid, out)
				}
				return fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
			}
			if _, err := f.WriteString(header + string(data)); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s; run it with: rehearse run %s\n", out, out)
			return nil
		},
	}
	initCmd.Flags().StringVarP(&out, "out", "o", "", "file to write (default NAME.yaml; - for standard output)")
	initCmd.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	cmd.AddCommand(initCmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of scenario files (for editor completion)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := scenarios.JSONSchema()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	})
	return cmd
}
