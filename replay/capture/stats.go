package capture

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
)

// Sentinel errors, for branching with errors.Is. Every error the reader
// returns also matches rehearse.ErrInvalid (exit code 2): the capture is
// bad input.
var (
	// ErrFormat: the input is not a pcap or pcapng file, or uses a
	// variant of the format the reader does not take.
	ErrFormat = errors.New("not a pcap or pcapng file")
	// ErrTruncated: the file ends in the middle of a block or record.
	ErrTruncated = errors.New("file truncated")
	// ErrCorrupt: a block or record header is inconsistent.
	ErrCorrupt = errors.New("corrupt record")
	// ErrLinkType: no interface of the capture has a link type the reader
	// decodes.
	ErrLinkType = errors.New("unsupported link type")
)

// Error is an unreadable capture: which packet (1-based, as Wireshark
// numbers frames; 0 for the file header) and why. Requests recovered
// before the fault are still delivered.
type Error struct {
	// Packet is the number of the packet whose record could not be read;
	// 0 means the file header.
	Packet int64
	// Err is the cause: one of the sentinels above, wrapping the
	// reader's own error where there is one.
	Err error
}

func (e *Error) Error() string {
	if e.Packet == 0 {
		return "capture: file header: " + e.Err.Error()
	}
	return fmt.Sprintf("capture: packet %d: %v", e.Packet, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports that a capture error is invalid input (exit code 2).
func (e *Error) Is(target error) bool { return target == rehearse.ErrInvalid }

// Warning is something the reader recovered from: a packet cut by the snap
// length, a gap in a TCP stream, an incomplete request.
type Warning struct {
	// Packet is the 1-based packet number the warning is about.
	Packet int64 `json:"packet"`
	// Flow is the connection concerned, when there is one.
	Flow string `json:"flow,omitempty"`
	Msg  string `json:"msg"`
}

func (w Warning) String() string {
	if w.Flow != "" {
		return fmt.Sprintf("packet %d: %s: %s", w.Packet, w.Flow, w.Msg)
	}
	return fmt.Sprintf("packet %d: %s", w.Packet, w.Msg)
}

// Stats counts what each stage of the reader saw. The stages narrow:
// packets → TCP segments → streams → requests → incomplete. It encodes to
// JSON with snake_case keys, for run records.
type Stats struct {
	// Format is "pcap" or "pcapng", with "+gzip" when compressed.
	Format string `json:"format"`
	// Packets is the number of packet records read; Bytes their captured
	// length in total.
	Packets int64 `json:"packets"`
	Bytes   int64 `json:"bytes"`
	// LinkTypes counts packets per link type name (LinkTypeName).
	LinkTypes map[string]int64 `json:"link_types"`
	// NotIP, NotTCP and Malformed count packets that did not reach TCP:
	// other protocols, and packets too short or inconsistent to decode.
	// UnknownLink counts packets on interfaces of a link type the reader
	// does not decode.
	NotIP       int64 `json:"not_ip"`
	NotTCP      int64 `json:"not_tcp"`
	Malformed   int64 `json:"malformed"`
	UnknownLink int64 `json:"unknown_link"`

	// Link layers and tunnels. Tunnels counts, by kind ("GRE", "VXLAN",
	// "MPLS", …), the packets decapsulated (a packet in two tunnels
	// counts once in each); Skipped counts, by cause in words, the
	// packets that did not reach TCP: a link type not decoded (named and
	// numbered), a tunnel not followed or malformed, 802.11 frames
	// without data, other ethertypes and IP protocols.
	Tunnels map[string]int64 `json:"tunnels"`
	Skipped map[string]int64 `json:"skipped"`

	// Fragments counts IPv4 and IPv6 fragments of TCP datagrams (and of
	// tunnels: GRE, IPIP, 6in4, MPLS-in-IP, UDP to a tunnel's port);
	// Reassembled the datagrams rebuilt from them (each then counts as one
	// TCP segment). FragmentsDropped counts, by reason, the fragments
	// that never became part of a datagram (timeout, memory limit,
	// overlaps, snap-length cuts, end of capture); FragmentDuplicates the
	// copies of fragments already held. FragmentBytesPeak is the most
	// memory the held fragments took (Options.MaxFragmentBytes bounds it).
	Fragments          int64            `json:"fragments"`
	Reassembled        int64            `json:"reassembled"`
	FragmentsDropped   map[string]int64 `json:"fragments_dropped"`
	FragmentDuplicates int64            `json:"fragment_duplicates"`
	FragmentBytesPeak  int64            `json:"fragment_bytes_peak"`
	// Cut counts packets shortened by the capture's snap length.
	Cut int64 `json:"cut"`
	// Segments is the number of TCP segments; PayloadBytes the TCP payload
	// they carried.
	Segments     int64 `json:"segments"`
	PayloadBytes int64 `json:"payload_bytes"`
	// Retransmitted counts segments whose bytes had all been seen;
	// Overlapping those that partly repeated seen bytes; OutOfOrder those
	// that arrived ahead of a hole and waited for it.
	Retransmitted int64 `json:"retransmitted"`
	Overlapping   int64 `json:"overlapping"`
	OutOfOrder    int64 `json:"out_of_order"`
	// Gaps counts holes in streams that the capture never filled;
	// GapBytes the bytes missing.
	Gaps     int64 `json:"gaps"`
	GapBytes int64 `json:"gap_bytes"`
	// Streams is the number of TCP connections seen; MidStream those whose
	// start (SYN) was not captured; HTTPStreams those that carried at
	// least one request.
	Streams     int64 `json:"streams"`
	MidStream   int64 `json:"mid_stream"`
	HTTPStreams int64 `json:"http_streams"`
	// TLSStreams, HTTP2Streams and OtherStreams count client streams that
	// began with a TLS handshake, the HTTP/2 preface, or anything else that
	// is not HTTP/1.x.
	TLSStreams   int64 `json:"tls_streams"`
	HTTP2Streams int64 `json:"http2_streams"`
	OtherStreams int64 `json:"other_streams"`
	// OtherProtocols counts, by name, the other streams whose first bytes
	// name their protocol plainly (a Redis command, a PostgreSQL startup
	// message).
	OtherProtocols map[string]int64 `json:"other_protocols,omitempty"`
	// SkippedBytes counts client bytes that were not part of any request
	// (before resynchronising on a request line after a gap or a
	// mid-stream start).
	SkippedBytes int64 `json:"skipped_bytes"`

	// Proxies and tolerant request lines (docs/capture.md).
	//
	// SOCKS counts the client streams that began with a SOCKS handshake,
	// by version and outcome in words: "SOCKS5: followed" (the tunnel
	// opened and what it carries is read like any stream), "SOCKS4:
	// handshake failed: request rejected or failed", "SOCKS5: unsupported
	// command BIND", "SOCKS5: handshake incomplete (…)".
	SOCKS map[string]int64 `json:"socks,omitempty"`
	// MalformedLines counts, by what was malformed ("method", "target",
	// "version", "bare CR in the request line"), the lines that have a
	// request line's shape but that neither Go's net/http nor nginx
	// takes; each is delivered as an incomplete request and the parser
	// resynchronises on the next request line. ResyncBytes counts the
	// bytes skipped to get there (also in SkippedBytes).
	MalformedLines map[string]int64 `json:"malformed_lines,omitempty"`
	ResyncBytes    int64            `json:"resync_bytes"`
	// ToleratedLines counts, by form, the request lines net/http refuses
	// and nginx takes (several spaces, "HTTP/1.10"), read as nginx reads
	// them.
	ToleratedLines map[string]int64 `json:"tolerated_lines,omitempty"`
	// FlushedIdle counts flows closed because they were idle longer than
	// Options.IdleTimeout; FlushedLimit those closed to stay under
	// Options.MaxFlows.
	FlushedIdle  int64 `json:"flushed_idle"`
	FlushedLimit int64 `json:"flushed_limit"`
	// Requests is the number of requests extracted (including
	// incomplete ones); Filtered those the filter dropped; Delivered those
	// passed on. Incomplete counts requests that could not be recovered
	// whole.
	Requests   int64 `json:"requests"`
	Filtered   int64 `json:"filtered"`
	Delivered  int64 `json:"delivered"`
	Incomplete int64 `json:"incomplete"`
	// RawTargets counts delivered requests whose target Go's URL parser
	// refuses (Request.TargetError), kept as written.
	RawTargets int64 `json:"raw_targets"`
	// RequestsRefused counts, by net/http's reason, the requests whose
	// header block net/http refuses; each is also delivered incomplete.
	RequestsRefused map[string]int64 `json:"requests_refused"`
	// Responses counts the final responses seen on HTTP connections
	// (responses are followed, not kept); ResponseStatus splits them by
	// class ("2xx", "5xx"). StreamingResponses counts, by media type,
	// those that stream events (text/event-stream, NDJSON);
	// ChunkedResponses those with chunked transfer coding. ResponsesLost
	// counts the times a hole or a framing error in a server's stream
	// made the tracker lose count (responses in it are not counted).
	Responses          int64            `json:"responses"`
	ResponseStatus     map[string]int64 `json:"response_status"`
	StreamingResponses map[string]int64 `json:"streaming_responses"`
	ChunkedResponses   int64            `json:"chunked_responses"`
	ResponsesLost      int64            `json:"responses_lost"`
	// Methods counts delivered requests per method.
	Methods map[string]int64 `json:"methods"`
	// Warnings holds the first MaxWarnings warnings; WarningsDropped counts
	// the rest.
	Warnings        []Warning `json:"warnings"`
	WarningsDropped int64     `json:"warnings_dropped"`
}

func newStats() *Stats {
	return &Stats{LinkTypes: map[string]int64{}, Methods: map[string]int64{}, FragmentsDropped: map[string]int64{}, RequestsRefused: map[string]int64{},
		OtherProtocols: map[string]int64{}, ResponseStatus: map[string]int64{}, StreamingResponses: map[string]int64{},
		Tunnels: map[string]int64{}, Skipped: map[string]int64{},
		SOCKS: map[string]int64{}, MalformedLines: map[string]int64{}, ToleratedLines: map[string]int64{}}
}

func (s *Stats) warn(max int, w Warning) {
	if len(s.Warnings) < max {
		// A warning may quote a request's target, with URL user info or
		// a credential parameter; warnings are printed and logged even
		// when the requests keep their secrets (a replay), so they are
		// always redacted (only the kept ones: the rest are counted).
		w.Msg = redact.Text(w.Msg)
		s.Warnings = append(s.Warnings, w)
		return
	}
	s.WarningsDropped++
}

// String is the one-line summary: the count at each stage, and a hint when
// the capture holds no plaintext HTTP.
func (s *Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d packets → %d TCP segments → %d streams → %d requests (%d incomplete)",
		s.Packets, s.Segments, s.Streams, s.Requests, s.Incomplete)
	if s.Filtered > 0 {
		fmt.Fprintf(&b, ", %d filtered out", s.Filtered)
	}
	if s.Gaps > 0 {
		fmt.Fprintf(&b, "; %d gaps (%d bytes missing)", s.Gaps, s.GapBytes)
	}
	if s.Reassembled > 0 || len(s.FragmentsDropped) > 0 {
		var lost int64
		for _, n := range s.FragmentsDropped {
			lost += n
		}
		fmt.Fprintf(&b, "; %d IP datagrams reassembled from %d fragments", s.Reassembled, s.Fragments)
		if lost > 0 {
			fmt.Fprintf(&b, " (%d fragments dropped: see --stats)", lost)
		}
	}
	if s.Cut > 0 {
		fmt.Fprintf(&b, "; %d packets cut by the snap length (capture with tcpdump -s 0 to keep whole packets)", s.Cut)
	}
	if h := s.Hint(); h != "" {
		b.WriteString("; ")
		b.WriteString(h)
	}
	return b.String()
}

// Hint explains an empty or thin result: encrypted streams, HTTP/2, no TCP
// at all. It is empty when requests were found and nothing else stands out.
func (s *Stats) Hint() string {
	if s.Requests > 0 {
		// Beside requests, TLS and HTTP/2 streams stand out (they may be
		// the traffic that was meant); other protocols are usually a
		// database or a cache on the same link, noise here.
		return strings.Join(s.streams(false), "; ")
	}
	if parts := s.NotHTTP(); len(parts) > 0 {
		return "0 HTTP requests; " + strings.Join(parts, "; ")
	}
	return ""
}

// NotHTTP says, one clause a kind, what in the capture is not plaintext
// HTTP/1.x: no packets, no TCP, then the TLS, HTTP/2 and other streams
// (NotHTTPStreams), each with what to capture instead. Every message about
// what a capture holds besides requests (the summary, the plan's skipped
// lines, `rehearse validate`, a run refused) uses these words, so that the
// reasons read the same everywhere.
func (s *Stats) NotHTTP() []string {
	var parts []string
	switch {
	case s.Packets == 0:
		parts = append(parts, "the capture holds no packets")
	case s.UnknownLink == s.Packets:
		parts = append(parts, fmt.Sprintf("%d packets, none of a link type the reader decodes: %s", s.Packets, s.SkippedText(3)))
	case s.Segments == 0 && s.Fragments > 0:
		parts = append(parts, fmt.Sprintf("no whole TCP segment: %d IP fragments could not be reassembled (see --stats)", s.Fragments))
	case s.Segments == 0 && len(s.Skipped) > 0:
		hint := ""
		if s.onlyOtherProtocols() {
			hint = " (check the capture filter)"
		}
		parts = append(parts, fmt.Sprintf("%d packets, none of them a TCP segment: %s%s", s.Packets, s.SkippedText(3), hint))
	case s.Segments == 0:
		parts = append(parts, fmt.Sprintf("%d packets, none of them a TCP segment (check the capture filter)", s.Packets))
	}
	return append(parts, s.NotHTTPStreams()...)
}

// onlyOtherProtocols reports whether every skipped packet was plainly
// another protocol (not a tunnel, link type or frame the reader could not
// follow): then the capture filter is what to check.
func (s *Stats) onlyOtherProtocols() bool {
	for k := range s.Skipped {
		if !strings.HasPrefix(k, "not IP: ") && !strings.HasPrefix(k, "not TCP: ") {
			return false
		}
	}
	return true
}

// SkippedText lists the n most frequent causes of Skipped with their
// counts, and how many other causes there are.
func (s *Stats) SkippedText(n int) string {
	var parts []string
	all := sortedCounts(s.Skipped)
	for i, c := range all {
		if i == n {
			parts = append(parts, fmt.Sprintf("%d more causes (see --stats)", len(all)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s", c.Count, c.Name))
	}
	return strings.Join(parts, ", ")
}

// NotHTTPStreams is the part of NotHTTP about TCP streams: TLS, HTTP/2 and
// other protocols, one clause each (none when every stream was HTTP/1.x).
func (s *Stats) NotHTTPStreams() []string { return s.streams(true) }

func (s *Stats) streams(others bool) []string {
	var parts []string
	if s.TLSStreams > 0 {
		parts = append(parts, fmt.Sprintf("%d TLS %s (capture in front of TLS termination, or plaintext upstream traffic)",
			s.TLSStreams, plural(s.TLSStreams, "stream", "streams")))
	}
	if s.HTTP2Streams > 0 {
		parts = append(parts, fmt.Sprintf("%d HTTP/2 %s (not replayed: capture HTTP/1.1)",
			s.HTTP2Streams, plural(s.HTTP2Streams, "stream", "streams")))
	}
	if n := s.socksNotFollowed(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d SOCKS %s not followed (%s)", n, plural(n, "tunnel", "tunnels"), s.socksWhy()))
	}
	if others && s.OtherStreams > 0 {
		parts = append(parts, fmt.Sprintf("%d TCP %s not HTTP/1.x%s", s.OtherStreams, plural(s.OtherStreams, "stream", "streams"), s.ProtocolsText()))
	}
	return parts
}

// ProtocolsText names the recognised protocols among the other streams,
// as " (3 Redis)", or "" when none was recognised.
func (s *Stats) ProtocolsText() string {
	if len(s.OtherProtocols) == 0 {
		return ""
	}
	var parts []string
	for _, c := range sortedCounts(s.OtherProtocols) {
		parts = append(parts, fmt.Sprintf("%d %s", c.Count, c.Name))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sortedCounts returns map entries by descending count, then name.
func sortedCounts(m map[string]int64) []struct {
	Name  string
	Count int64
} {
	out := make([]struct {
		Name  string
		Count int64
	}, 0, len(m))
	for k, v := range m {
		out = append(out, struct {
			Name  string
			Count int64
		}{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// socksNotFollowed counts the SOCKS handshakes whose tunnel was not read
// (failed, unsupported command, cut short).
func (s *Stats) socksNotFollowed() int64 {
	var n int64
	for k, v := range s.SOCKS {
		if !strings.HasSuffix(k, ": followed") {
			n += v
		}
	}
	return n
}

// socksWhy says why SOCKS tunnels were not followed, one clause a cause.
func (s *Stats) socksWhy() string {
	var parts []string
	for _, c := range sortedCounts(s.SOCKS) {
		if !strings.HasSuffix(c.Name, ": followed") {
			parts = append(parts, fmt.Sprintf("%d %s", c.Count, c.Name))
		}
	}
	return strings.Join(parts, "; ")
}
