// Package capture turns pcap and pcapng files into the HTTP/1.x requests
// they hold: link-layer decoding, TCP reassembly and request extraction,
// streaming in memory bounded by open flows, not by the capture's size.
package capture
