// Package capture turns pcap and pcapng files into the HTTP/1.x requests
// they hold: link-layer decoding, decapsulation of tunnels (GRE, ERSPAN,
// VXLAN, Geneve, GTP-U, Teredo, L2TP, IP in IP, MPLS), IP defragmentation, TCP
// reassembly and request extraction, streaming in memory bounded by open
// flows, not by the capture's size.
//
// Extract streams the requests of a capture to a callback in capture
// order (by the packet carrying each request's first byte); ReadAll and
// ReadFile collect them. Options select requests (Filter), change them for
// replay (Rewrite), redact secrets (on by default; see Redact) and set the
// limits. Stats counts what each stage saw — packets → TCP segments →
// streams → requests → incomplete — and explains an empty result (TLS,
// HTTP/2, no TCP), naming why packets were skipped (Stats.Skipped). Inspect
// is the `rehearse inspect` command. Corpus holds requests compressed, for a
// replay that keeps a large capture.
//
// Formats, link types, how gaps are handled, the limits and where tshark
// disagrees are described in docs/capture.md.
package capture
