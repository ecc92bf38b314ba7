package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/replay/capture"
	"github.com/halfopen/rehearse/scenarios"
)

func newReplayCmd() *cobra.Command {
	var (
		fr         replay.FileRun
		target     string
		path       string
		setHeaders []string
		quiet      bool
	)
	o := &fr.Options
	cmd := &cobra.Command{
		Use:   "replay CAPTURE --target URL",
		Short: "Replay the HTTP requests of a capture into a gateway at a fixed rate",
		Long: `replay sends the HTTP/1.x requests of a pcap/pcapng capture to a target at a fixed
open-loop rate (10 requests per second for five minutes by default), looping over
the capture, without faults or a harness gateway: the sending side of a rehearsal
on its own.

Request i is due at start + i/rate whatever the responses do (--schedule fixed);
--schedule poisson draws exponential gaps of the same mean rate, --schedule
jittered puts each request at a random moment of its slot, both from --seed, so
that a gateway's fixed retry waits cannot meet the replay's own grid. A request that
starts more than --late-threshold after its due time is counted late; one that
would exceed --max-in-flight, or whose slot passed while the replayer was stalled,
is dropped and counted — a catch-up after a stall never spans more than
--max-lateness. Every request is stamped
with X-Rehearse-Seq and X-Rehearse-Run (and a chat request's last user message
with [rehearse:seq=N], for gateways that forward no client header) and
classified (ok, http_4xx, http_5xx, fast_fail, stream_error, stream_cut,
connect_refused, connect_timeout, reset_before_headers, headers_timeout,
cut_mid_body, deadline_mid_body, truncated, malformed, dropped).

Credentials the capture holds (Authorization, Proxy-Authorization, Cookie and
API-key headers, URL user info, credential query parameters such as api_key or
access_token: the names docs/contracts.md lists under "Secrets") are not sent:
each value is replaced by REDACTED, as 'rehearse run' does, so that production
credentials never reach a test gateway by accident. Give the gateway a test
credential with --set-header (sent exactly as written), or pass --send-credentials
to send the captured ones. Nothing is written with a credential in it: the
journal and the summary record no request headers, and of the responses only the
headers named by --keep-header (never a secret one).

POST, PUT, PATCH and DELETE requests are refused unless --allow-writes is given.
With --out DIR the journal (journal.jsonl) and summary (summary.json) are written
there. A progress line is shown when stderr is a terminal, unless --quiet.
Ctrl-C stops sending, waits briefly for requests in flight and still writes the
partial summary (exit code 130).`,
		Example: `  rehearse replay capture.pcapng --target http://127.0.0.1:8080
  rehearse replay capture.pcap --target http://gw.local:8080 --rate 50 --duration 1m --out runs/replay
  rehearse replay capture.pcap --target http://127.0.0.1:8080 --once --timing original --speed 2
  rehearse replay capture.pcap --target http://127.0.0.1:8080 --set-header "Authorization: Bearer $TEST_TOKEN"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if target == "" {
				return fmt.Errorf("%w: --target is required: the base URL of the gateway, e.g. http://127.0.0.1:8080", rehearse.ErrInvalid)
			}
			u, err := url.Parse(target)
			if err != nil || u.Host == "" {
				return fmt.Errorf("%w: --target %q: want a URL such as http://127.0.0.1:8080", rehearse.ErrInvalid, target)
			}
			o.Target = u
			if o.Once && !cmd.Flags().Changed("duration") {
				o.Duration = 0 // one pass, however long it takes
			}
			if path != "" {
				re, err := regexp.Compile(path)
				if err != nil {
					return fmt.Errorf("%w: --path: %w", rehearse.ErrInvalid, err)
				}
				fr.CaptureOptions.Filter.Path = re
			}
			for _, h := range setHeaders {
				name, value, ok := strings.Cut(h, ":")
				if !ok || strings.TrimSpace(name) == "" {
					return fmt.Errorf("%w: --set-header %q: want \"Name: value\"", rehearse.ErrInvalid, h)
				}
				fr.CaptureOptions.Rewrite.Set = append(fr.CaptureOptions.Rewrite.Set,
					capture.HeaderField{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)})
			}
			fr.Capture = args[0]
			fr.Summary = cmd.OutOrStdout()
			fr.Version = version
			d, _, restore, err := statusDisplay(cmd, quiet)
			if err != nil {
				return err
			}
			defer restore()
			if d != nil {
				// The line appears with the first count: a replay that
				// fails before it sends leaves no line behind.
				var last atomic.Pointer[replay.Progress]
				var start sync.Once
				fr.ProgressFunc = func(p replay.Progress) {
					last.Store(&p)
					start.Do(func() { d.Start(func() string { return last.Load().Line() }) })
					if p.Final {
						d.Stop() // before the summary goes to stdout
					}
				}
				defer d.Stop()
			}
			_, err = replay.RunFile(cmd.Context(), fr)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "target", "", "base URL of the gateway under test (required)")
	f.Float64Var(&o.Rate, "rate", replay.DefaultRate, "requests per second (fractional allowed)")
	f.DurationVar(&o.Duration, "duration", replay.DefaultDuration, "how long to send (with --once: an upper bound)")
	f.BoolVar(&o.Once, "once", false, "send each request of the capture once instead of looping")
	f.StringVar(&o.Timing, "timing", replay.TimingRate, "rate (fixed rate) or original (the capture's own spacing)")
	f.Float64Var(&o.Speed, "speed", replay.DefaultSpeed, "speed factor with --timing original")
	f.StringVar(&o.Schedule, "schedule", replay.ScheduleFixed, "with --timing rate: fixed (request i at i/rate), poisson (exponential gaps of the same mean) or jittered (uniformly within each slot)")
	f.Int64Var(&o.Seed, "seed", scenarios.DefaultSeed, "seed of a poisson or jittered --schedule: the same seed, the same send times")
	f.StringSliceVar(&o.KeepHeaders, "keep-header", nil, "response header whose value the journal keeps on each answer, e.g. X-Chosen-Target (repeatable; at most 8, no secret header)")
	f.IntVar(&o.MaxInFlight, "max-in-flight", replay.DefaultMaxInFlight, "cap on requests in flight; due requests beyond it are dropped")
	f.DurationVar(&o.Deadline, "deadline", replay.DefaultDeadline, "per-request deadline, to the last body byte")
	f.DurationVar(&o.ConnectTimeout, "connect-timeout", replay.DefaultConnectTimeout, "connection establishment timeout")
	f.DurationVar(&o.LateThreshold, "late-threshold", replay.DefaultLateThreshold, "send lateness beyond which a request counts as late")
	f.DurationVar(&o.MaxLateness, "max-lateness", replay.DefaultMaxLateness, "after a stall, slots later than this (with the next slot due too) are dropped, not sent in a burst")
	f.StringVar(&o.RunID, "run-id", "", "run id sent in X-Rehearse-Run (default: generated)")
	f.StringVar(&o.SeqHeader, "seq-header", replay.DefaultSeqHeader, "name of the sequence stamp header")
	f.StringVar(&o.Identity.Body, "body-stamp", replay.IdentityAuto, "write [rehearse:seq=N] into chat requests' last user message (auto) or not (off), for gateways that forward no header")
	f.StringVar(&o.Identity.JSONPath, "body-stamp-json-path", "", "append the body stamp to this JSON string instead (e.g. input.-1.text)")
	f.StringVar(&o.Identity.Template, "body-stamp-template", "", "replace this text in the captured bodies by the body stamp instead")
	f.BoolVar(&o.PreserveHost, "preserve-host", false, "send the captured Host header instead of the target's")
	f.BoolVar(&o.AllowWrites, "allow-writes", false, "replay POST, PUT, PATCH and DELETE requests")
	f.StringVar(&fr.OutDir, "out", "", "directory for journal.jsonl and summary.json")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress line")
	f.BoolVar(&fr.SummaryJSON, "json", false, "print the summary as JSON (the content of summary.json) instead of text")
	f.StringSliceVar(&fr.CaptureOptions.Filter.Methods, "method", nil, "replay only these methods (repeatable or comma-separated)")
	f.StringVar(&path, "path", "", "replay only requests whose path matches this regular expression")
	f.StringVar(&fr.CaptureOptions.Filter.Host, "host", "", "replay only requests to this host (Host header)")
	f.StringArrayVar(&setHeaders, "set-header", nil, "set a header on every request, \"Name: value\" (repeatable); sent as written, credentials included")
	f.BoolVar(&fr.SendCredentials, "send-credentials", false, "send the credentials the capture holds (Authorization, Cookie, API-key headers, URL user info, credential query parameters) instead of REDACTED")
	f.StringSliceVar(&fr.CaptureOptions.Rewrite.Drop, "drop-header", nil, "remove a header from every request (repeatable)")
	return cmd
}
