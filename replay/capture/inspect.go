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
	mix := newMix()
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
		mix.add(r)
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
		writeStats(w, st, mix)
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

// mix is what `inspect --stats` tells of the requests a replay would
// send: methods, routes, hosts, idempotency, and what the replayer will
// send differently or not at all.
type mix struct {
	routes, hosts map[string]int64
	total         int64
	nonIdempotent int64 // RFC 9110 section 9.2.2
	writes        int64 // what the replayer refuses without --allow-writes
	raw           int64 // targets Go refuses, sent verbatim
	rawSlash      int64 // ... of which start with "//"
	rawCtl        int64 // ... of which hold control bytes (net/http will not write them)
	noPath        int64 // "*" and authority-form targets, sent to "/"
	http10        int64 // sent as HTTP/1.1
	incomplete    map[string]int64
}

func newMix() *mix {
	return &mix{routes: map[string]int64{}, hosts: map[string]int64{}, incomplete: map[string]int64{}}
}

func (m *mix) add(r *Request) {
	m.total++
	if r.Incomplete {
		m.incomplete[reasonKind(r.Problem)]++
		return
	}
	m.routes[r.Method+" "+r.Path()]++
	m.hosts[r.Host]++
	switch strings.ToUpper(r.Method) {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
	default:
		m.nonIdempotent++
	}
	switch strings.ToUpper(r.Method) {
	case "POST", "PUT", "PATCH", "DELETE":
		m.writes++
	}
	if r.TargetError != "" {
		m.raw++
		if strings.HasPrefix(r.Path(), "//") {
			m.rawSlash++
		}
		if strings.ContainsFunc(r.Target, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
			m.rawCtl++
		}
	}
	if p := r.Path(); p == "" || p[0] != '/' {
		m.noPath++
	}
	if r.Proto == "HTTP/1.0" {
		m.http10++
	}
}

// reasonKind turns a problem into its kind, numbers replaced by N, so
// that problems can be counted together.
func reasonKind(p string) string {
	var b strings.Builder
	digits := false
	for _, c := range p {
		if c >= '0' && c <= '9' {
			if !digits {
				b.WriteByte('N')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(c)
	}
	return cell(b.String(), 100)
}

func pct(n, of int64) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(of))
}

func writeStats(w io.Writer, st *Stats, m *mix) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nformat\t%s\n", st.Format)
	fmt.Fprintf(tw, "packets\t%d (%d bytes)\n", st.Packets, st.Bytes)
	for _, lt := range sortedCounts(st.LinkTypes) {
		fmt.Fprintf(tw, "  link type %s\t%d\n", lt.Name, lt.Count)
	}
	fmt.Fprintf(tw, "  not IP / not TCP / malformed\t%d / %d / %d\n", st.NotIP, st.NotTCP, st.Malformed)
	for _, c := range sortedCounts(st.Tunnels) {
		fmt.Fprintf(tw, "  tunnel %s\t%d packets decapsulated\n", c.Name, c.Count)
	}
	for _, c := range sortedCounts(st.Skipped) {
		fmt.Fprintf(tw, "    skipped\t%d  %s\n", c.Count, c.Name)
	}
	fmt.Fprintf(tw, "  IP fragments\t%d → %d datagrams reassembled (%d duplicates; peak %d bytes held)\n", st.Fragments, st.Reassembled, st.FragmentDuplicates, st.FragmentBytesPeak)
	for _, r := range sortedCounts(st.FragmentsDropped) {
		fmt.Fprintf(tw, "    dropped\t%d  %s\n", r.Count, r.Name)
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
	writeRecoveryStats(tw, st)
	fmt.Fprintf(tw, "requests\t%d\n", st.Requests)
	fmt.Fprintf(tw, "  incomplete\t%d\n", st.Incomplete)
	fmt.Fprintf(tw, "  filtered out\t%d\n", st.Filtered)
	complete := m.total - sum(m.incomplete)
	for _, x := range sortedCounts(st.Methods) {
		fmt.Fprintf(tw, "  method %s\t%d (%s)\n", x.Name, x.Count, pct(x.Count, st.Delivered))
	}
	fmt.Fprintf(tw, "  non-idempotent\t%d (%s of complete requests; methods other than GET, HEAD, OPTIONS, TRACE, PUT, DELETE)\n", m.nonIdempotent, pct(m.nonIdempotent, complete))
	fmt.Fprintf(tw, "  raw targets\t%d (Go's URL parser refuses them; sent verbatim)\n", m.raw)
	for i, h := range sortedCounts(m.hosts) {
		if i == 10 {
			fmt.Fprintf(tw, "  … %d more hosts\t\n", len(m.hosts)-10)
			break
		}
		fmt.Fprintf(tw, "  host %s\t%d\n", cell(h.Name, 60), h.Count)
	}
	for i, r := range sortedCounts(m.routes) {
		if i == 10 {
			fmt.Fprintf(tw, "  … %d more routes\t\n", len(m.routes)-10)
			break
		}
		fmt.Fprintf(tw, "  route %s\t%d (%s)\n", cell(r.Name, 80), r.Count, pct(r.Count, complete))
	}
	fmt.Fprintf(tw, "responses\t%d (followed, not kept)\n", st.Responses)
	for _, c := range sortedCounts(st.ResponseStatus) {
		fmt.Fprintf(tw, "  status %s\t%d\n", c.Name, c.Count)
	}
	for _, c := range sortedCounts(st.StreamingResponses) {
		fmt.Fprintf(tw, "  streaming %s\t%d\n", c.Name, c.Count)
	}
	fmt.Fprintf(tw, "  chunked\t%d\n", st.ChunkedResponses)
	if st.ResponsesLost > 0 {
		fmt.Fprintf(tw, "  count lost\t%d times, at holes or framing errors (responses there are not counted)\n", st.ResponsesLost)
	}
	fmt.Fprintf(tw, "replay\t%d of %d requests complete; skipped or sent differently:\n", complete, m.total)
	for _, r := range sortedCounts(m.incomplete) {
		fmt.Fprintf(tw, "  skipped\t%d  %s\n", r.Count, r.Name)
	}
	if n := st.Incomplete - sum(m.incomplete); n > 0 {
		fmt.Fprintf(tw, "  skipped\t%d  incomplete (left out here by --skip-incomplete)\n", n)
	}
	if st.TLSStreams+st.HTTP2Streams+st.OtherStreams > 0 {
		fmt.Fprintf(tw, "  not replayable\t%d TLS / %d HTTP/2 / %d other streams%s\n", st.TLSStreams, st.HTTP2Streams, st.OtherStreams, st.ProtocolsText())
	}
	if m.writes > 0 {
		fmt.Fprintf(tw, "  write requests\t%d  POST, PUT, PATCH, DELETE: the replay refuses to start without --allow-writes\n", m.writes)
	}
	if m.rawSlash > 0 {
		fmt.Fprintf(tw, "  skipped\t%d  raw targets starting with //, when --target has no path (net/http cannot write them verbatim)\n", m.rawSlash)
	}
	if m.rawCtl > 0 {
		fmt.Fprintf(tw, "  skipped\t%d  targets with control bytes (net/http refuses to write them)\n", m.rawCtl)
	}
	if m.noPath > 0 {
		fmt.Fprintf(tw, "  sent to /\t%d  OPTIONS * and authority-form targets have no path to replay\n", m.noPath)
	}
	if m.http10 > 0 {
		fmt.Fprintf(tw, "  sent as HTTP/1.1\t%d  captured as HTTP/1.0\n", m.http10)
	}
	if m.writes == 0 && m.rawSlash == 0 && m.rawCtl == 0 && m.noPath == 0 && m.http10 == 0 && complete == m.total && st.TLSStreams+st.HTTP2Streams+st.OtherStreams == 0 {
		fmt.Fprintf(tw, "  nothing\t\n")
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

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// writeRecoveryStats writes what the reader did with proxies and request
// lines a strict parser would refuse: SOCKS tunnels by outcome, request
// lines tolerated as nginx tolerates them, malformed ones by what was
// malformed, and the bytes skipped to find the next request after them.
func writeRecoveryStats(tw io.Writer, st *Stats) {
	for _, c := range sortedCounts(st.SOCKS) {
		fmt.Fprintf(tw, "  %s\t%d\n", c.Name, c.Count)
	}
	for _, c := range sortedCounts(st.ToleratedLines) {
		fmt.Fprintf(tw, "  request line tolerated\t%d  %s\n", c.Count, c.Name)
	}
	for _, c := range sortedCounts(st.MalformedLines) {
		fmt.Fprintf(tw, "  malformed request line\t%d  %s (reported incomplete; the next request found after it)\n", c.Count, c.Name)
	}
	if len(st.MalformedLines) > 0 || st.ResyncBytes > 0 {
		fmt.Fprintf(tw, "  bytes skipped to resynchronise\t%d  after lines that were not request lines\n", st.ResyncBytes)
	}
}
