package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/replay/capture"
	"github.com/halfopen/rehearse/scenarios"
)

func newInspectCmd() *cobra.Command {
	var (
		opt         capture.InspectOptions
		path        string
		showSecrets bool
	)
	cmd := &cobra.Command{
		Use:   "inspect CAPTURE",
		Short: "Show the HTTP requests a pcap/pcapng capture holds",
		Long: `inspect reads a pcap or pcapng capture (any of the link types tcpdump, dumpcap
and Wireshark write on Linux and macOS; "-" reads standard input), reassembles its
TCP streams and lists the HTTP/1.x requests it holds, in capture order: the ones
'rehearse run' would replay. Secrets (Authorization, Cookie, API-key headers,
credential query parameters) are redacted unless --show-secrets is given.

A summary line with the count at each stage (packets → TCP segments → streams →
requests → incomplete) goes to stderr, with a hint when the capture holds TLS or
HTTP/2 streams that cannot be replayed.

--stats adds what a replay of the capture will exercise: the counts at each stage
(IP fragments reassembled and dropped, gaps, streams by kind), the method mix and
the share of non-idempotent requests, the most frequent hosts and routes, the
responses the servers sent (status classes, streaming responses such as
server-sent events, chunked ones), and what the replay will skip or send
differently, and why (incomplete or malformed requests, TLS and HTTP/2 streams,
write requests without --allow-writes, OPTIONS *, HTTP/1.0). Targets Go's URL
parser refuses ("GET /%") are marked: the replayer sends them verbatim.`,
		Example: `  rehearse inspect capture.pcapng
  rehearse inspect capture.pcap --format jsonl --method POST --path '^/tools/'
  tcpdump -i any -w - port 8080 | rehearse inspect - --stats
  rehearse inspect builtin:agent-gateway              # the capture bundled with the built-in drills`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if path != "" {
				re, err := regexp.Compile(path)
				if err != nil {
					return fmt.Errorf("%w: --path: %w", rehearse.ErrInvalid, err)
				}
				opt.Filter.Path = re
			}
			opt.KeepSecrets = showSecrets
			opt.Stdout, opt.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			file, cleanup, err := captureFile(args[0])
			if err != nil {
				return err
			}
			defer cleanup()
			if file != "-" {
				// A path that is no capture file (a directory, a pipe)
				// is refused before the table's header is printed.
				f, err := capture.OpenFile(file)
				if err != nil {
					return fmt.Errorf("%w: capture: %w", rehearse.ErrInvalid, err)
				}
				f.Close()
			}
			_, err = capture.Inspect(cmd.Context(), file, opt)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Format, "format", capture.DefaultInspectFormat, "output format: table or jsonl (one JSON object per request)")
	f.BoolVar(&opt.Stats, "stats", false, "add counts per stage, methods, routes, responses, what the replay skips and why, and the warnings")
	f.BoolVar(&showSecrets, "show-secrets", false, "do not redact Authorization, Cookie and API-key headers")
	f.StringSliceVar(&opt.Filter.Methods, "method", nil, "keep only these methods (repeatable or comma-separated)")
	f.StringVar(&path, "path", "", "keep only requests whose path matches this regular expression")
	f.StringVar(&opt.Filter.Host, "host", "", "keep only requests to this host (Host header, with or without port)")
	f.Uint16Var(&opt.Filter.Port, "port", 0, "keep only requests to this server port")
	f.BoolVar(&opt.SkipIncomplete, "skip-incomplete", false, "leave out requests that could not be recovered whole")
	return cmd
}

// captureFile returns a file to read the capture ref from: the path
// itself, or, for a capture bundled in the binary ("builtin:NAME", as
// scenarios name it), a temporary copy removed by cleanup.
func captureFile(ref string) (path string, cleanup func(), err error) {
	name, ok := strings.CutPrefix(ref, "builtin:")
	if !ok {
		return ref, func() {}, nil
	}
	rc, err := scenarios.OpenBuiltinCapture(name)
	if err != nil {
		return "", nil, err
	}
	defer rc.Close()
	f, err := os.CreateTemp("", "rehearse-"+name+"-*.pcapng")
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
	}
	cleanup = func() { os.Remove(f.Name()) }
	_, err = io.Copy(f, rc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
	}
	return f.Name(), cleanup, nil
}
