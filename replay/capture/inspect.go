package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/halfopen/rehearse"
)

// Inspect output formats.
const (
	FormatTable = "table"
	FormatJSONL = "jsonl"
)

// DefaultInspectFormat is the format of `rehearse inspect` without
// --format.
const DefaultInspectFormat = FormatTable

// InspectOptions configure Inspect.
type InspectOptions struct {
	// Options are the reader's filters, redaction and limits.
	Options
	// Format is FormatTable (the zero value) or FormatJSONL.
	Format string
	// Stats adds per-stage, per-link-type, per-method and per-route
	// counts, and the warnings, after the requests (on Stderr for JSONL,
	// so that Stdout stays one JSON object per line).
	Stats bool
	// Stdout receives the requests; Stderr the summary line. Nil discards.
	Stdout, Stderr io.Writer
}

// TimeFormat is RFC 3339 with nanoseconds, as `inspect --format jsonl`
// writes "ts".
const TimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// record is one line of `inspect --format jsonl` (docs/contracts.md).
type record struct {
	Index      int                 `json:"index"`
	TS         string              `json:"ts"`
	Flow       string              `json:"flow"`
	Method     string              `json:"method"`
	Target     string              `json:"target"`
	Proto      string              `json:"proto"`
	Host       string              `json:"host"`
	Headers    map[string][]string `json:"headers"`
	BodyLen    int                 `json:"body_len"`
	Chunked    bool                `json:"chunked,omitempty"`
	Trailers   map[string][]string `json:"trailers,omitempty"`
	Incomplete bool                `json:"incomplete,omitempty"`
	Problem    string              `json:"problem,omitempty"`
	// TargetError: Go's URL parser refuses the target, which is kept
	// and replayed as written.
	TargetError string `json:"target_error,omitempty"`
}

func toRecord(r *Request) record {
	rec := record{
		Index: r.Index, TS: r.Time.Format(TimeFormat), Flow: r.Flow.String(),
		Method: r.Method, Target: r.Target, Proto: r.Proto, Host: r.Host,
		Headers: r.Values(), BodyLen: len(r.Body), Chunked: r.Chunked,
		Incomplete: r.Incomplete, Problem: r.Problem, TargetError: r.TargetError,
	}
	if len(r.Trailer) > 0 {
		rec.Trailers = (&Request{Header: r.Trailer}).Values()
	}
	return rec
}

// Inspect reads the capture at path ("-" for standard input) and writes
// what it holds: a table or JSON Lines on Stdout, then a summary line on
// Stderr. It returns the stats and the reader's error, if any, after
// writing everything recovered before it.
func Inspect(ctx context.Context, path string, opt InspectOptions) (*Stats, error) {
	stdout, stderr := opt.Stdout, opt.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	switch opt.Format {
	case "", FormatTable, FormatJSONL:
	default:
		return nil, fmt.Errorf("%w: format %q: want table or jsonl", rehearse.ErrInvalid, opt.Format)
	}
	routes := map[string]int64{}
	hosts := map[string]int64{}
	var (
		emit  func(*Request) error
		flush func() error
	)
	if opt.Format == FormatJSONL {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		emit = func(r *Request) error { return enc.Encode(toRecord(r)) }
		flush = func() error { return nil }
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "#\tTIME\tFLOW\tMETHOD\tTARGET\tHOST\tBODY\tNOTE")
		rows := 0
		emit = func(r *Request) error {
			note := ""
			if r.Chunked {
				note = "chunked"
			}
			if r.TargetError != "" {
				note = "raw target, sent verbatim (Go's URL parser: " + r.TargetError + ")"
			}
			if r.Incomplete {
				note = "INCOMPLETE: " + r.Problem
			}
			_, err := fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.Index, r.Time.Format("2006-01-02 15:04:05.000000"),
				r.Flow, r.Method, cell(r.Target, 80), cell(r.Host, 40), len(r.Body), note)
			// Align in blocks, so that a huge capture streams.
			if rows++; rows%1000 == 0 && err == nil {
				err = tw.Flush()
			}
			return err
		}
		flush = tw.Flush
	}
	st, err := ExtractFile(ctx, path, opt.Options, func(r *Request) error {
		routes[r.Method+" "+r.Path()]++
		hosts[r.Host]++
		return emit(r)
	})
	if ferr := flush(); err == nil && ferr != nil {
		err = fmt.Errorf("%w: writing output: %w", rehearse.ErrEnvironment, ferr)
	}
	if opt.Stats && st != nil {
		w := stdout
		if opt.Format == FormatJSONL {
			w = stderr
		}
		writeStats(w, st, routes, hosts)
	}
	// A file that could not be read at all gets its error, not a summary
	// of nothing.
	if st != nil && (err == nil || st.Packets > 0) {
		fmt.Fprintf(stderr, "%s: %s\n", displayName(path), st)
	}
	return st, err
}

func displayName(path string) string {
	if path == "-" {
		return "stdin"
	}
	return path
}

// cell keeps table cells to one line of bounded width.
func cell(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	if len(s) > n {
		return s[:n-1] + "…"
	}
	if s == "" {
		return "-"
	}
	return s
}

func writeStats(w io.Writer, st *Stats, routes, hosts map[string]int64) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nformat\t%s\n", st.Format)
	fmt.Fprintf(tw, "packets\t%d (%d bytes)\n", st.Packets, st.Bytes)
	for _, lt := range sortedCounts(st.LinkTypes) {
		fmt.Fprintf(tw, "  link type %s\t%d\n", lt.Name, lt.Count)
	}
	fmt.Fprintf(tw, "  not IP / not TCP / malformed\t%d / %d / %d\n", st.NotIP, st.NotTCP, st.Malformed)
	fmt.Fprintf(tw, "  IP fragments\t%d → %d datagrams reassembled (%d duplicates; peak %d bytes held)\n", st.Fragments, st.Reassembled, st.FragmentDuplicates, st.FragmentBytesPeak)
	for _, r := range sortedCounts(st.FragmentsDropped) {
		fmt.Fprintf(tw, "    dropped: %s\t%d\n", r.Name, r.Count)
	}
	fmt.Fprintf(tw, "  cut by snap length\t%d\n", st.Cut)
	fmt.Fprintf(tw, "TCP segments\t%d (%d payload bytes)\n", st.Segments, st.PayloadBytes)
	fmt.Fprintf(tw, "  retransmitted / overlapping / out of order\t%d / %d / %d\n", st.Retransmitted, st.Overlapping, st.OutOfOrder)
	fmt.Fprintf(tw, "  gaps\t%d (%d bytes)\n", st.Gaps, st.GapBytes)
	fmt.Fprintf(tw, "streams (flows)\t%d\n", st.Streams)
	fmt.Fprintf(tw, "  HTTP / TLS / HTTP2 / other\t%d / %d / %d / %d\n", st.HTTPStreams, st.TLSStreams, st.HTTP2Streams, st.OtherStreams)
	fmt.Fprintf(tw, "  started mid-stream\t%d\n", st.MidStream)
	fmt.Fprintf(tw, "  flushed idle / over the flow limit\t%d / %d\n", st.FlushedIdle, st.FlushedLimit)
	fmt.Fprintf(tw, "  bytes skipped (not in a request)\t%d\n", st.SkippedBytes)
	fmt.Fprintf(tw, "requests\t%d\n", st.Requests)
	fmt.Fprintf(tw, "  incomplete\t%d\n", st.Incomplete)
	fmt.Fprintf(tw, "  filtered out\t%d\n", st.Filtered)
	for _, m := range sortedCounts(st.Methods) {
		fmt.Fprintf(tw, "  method %s\t%d\n", m.Name, m.Count)
	}
	for i, h := range sortedCounts(hosts) {
		if i == 10 {
			break
		}
		fmt.Fprintf(tw, "  host %s\t%d\n", cell(h.Name, 60), h.Count)
	}
	for i, r := range sortedCounts(routes) {
		if i == 10 {
			fmt.Fprintf(tw, "  … %d more routes\t\n", len(routes)-10)
			break
		}
		fmt.Fprintf(tw, "  route %s\t%d\n", cell(r.Name, 80), r.Count)
	}
	tw.Flush()
	if len(st.Warnings) > 0 {
		fmt.Fprintf(w, "warnings (%d):\n", int64(len(st.Warnings))+st.WarningsDropped)
		for i, wn := range st.Warnings {
			if i == 20 {
				fmt.Fprintf(w, "  … %d more\n", int64(len(st.Warnings)-20)+st.WarningsDropped)
				break
			}
			fmt.Fprintf(w, "  %s\n", cell(wn.String(), 200))
		}
	}
}
