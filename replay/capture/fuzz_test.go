package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/halfopen/rehearse"
)

// FuzzExtract feeds arbitrary bytes to the file reader: it must never
// panic, and every error must be a capture error wrapping
// rehearse.ErrInvalid with what was recovered before it.
func FuzzExtract(f *testing.F) {
	for _, name := range []string{"edge-sll.pcap", "edge-ipv6.pcapng", "snaplen-120.pcap", "socks.pcap", "resync.pcap"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 2500)])
	}
	// Tunnels and link layers (testdata/tunnels).
	for _, name := range []string{"erspan.pcap", "gtpu.pcap", "nested.pcap", "radiotap.pcap", "nflog.pcap", "mpls.pcap", "gretap6.pcap", "ipoib.pcap"} {
		b, err := os.ReadFile(filepath.Join("testdata", "tunnels", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 2500)])
	}
	f.Add(streamCapture(f, []byte("POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.0\r\n\r\n"), 20, 60))
	f.Add(fragCapture(f, []byte("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n"+strings.Repeat("b", 100)), 48, func(p []pkt) []pkt { return append(p, p[0]) }))
	f.Add([]byte{})
	f.Add([]byte("\x0a\x0d\x0d\x0a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		st, err := Extract(context.Background(), bytes.NewReader(data), Options{MaxFlowBuffer: 1 << 16}, func(r *Request) error {
			if r.Method == "" || r.Index != n {
				t.Fatalf("request %d: %+v", n, r)
			}
			n++
			return nil
		})
		if err != nil {
			var ce *Error
			if !errors.Is(err, rehearse.ErrInvalid) || !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a capture error", err, err)
			}
		}
		if st == nil || st.Delivered != int64(n) || st.Requests < st.Delivered {
			t.Fatalf("stats %+v, %d delivered", st, n)
		}
	})
}

// FuzzHTTPStream checks HTTP extraction from a byte stream: whatever the
// bytes, the requests recovered must not depend on how TCP cut the stream
// into segments.
func FuzzHTTPStream(f *testing.F) {
	f.Add([]byte("GET /a HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET /c HTTP/1.0\r\n\r\n"), []byte{5, 40, 41})
	f.Add([]byte("POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\nT: 1\r\n\r\nOPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"), []byte{50, 51, 52, 70})
	f.Add([]byte("junk\r\nGET http://x/y HTTP/1.1\r\nhost: x\r\n\r\n"), []byte{3})
	f.Add([]byte("\x16\x03\x01\x00\x05hello"), []byte{1})
	// A SOCKS5 handshake with a password, then HTTP; a SOCKS4a one.
	f.Add([]byte("\x05\x02\x00\x02\x01\x05alice\x04pass\x05\x01\x00\x03\x01h\x00\x50GET / HTTP/1.0\r\n\r\n"), []byte{2, 3, 9})
	f.Add([]byte("\x04\x01\x00\x50\x00\x00\x00\x01u\x00h\x00GET / HTTP/1.1\r\nHost: h\r\n\r\n"), []byte{4, 8})
	// Lines nginx takes, then lines no server takes, each followed by a
	// request to resynchronise on.
	f.Add([]byte("GET  /a HTTP/1.10  \r\nHost: h\r\n\r\nGET /v HTTP/1.0.8\r\nHost: h\r\n\r\nG@T /m HTTP/1.1\r\nX: y\r\n\r\nGET /b HTTP/1.1\r\n\r\n"), []byte{6, 30, 31, 60})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		if len(stream) == 0 || bytes.Contains(bytes.ToLower(stream), []byte("100-continue")) {
			// Expect: 100-continue is decided on what has arrived when the
			// header ends: a documented, timing-dependent heuristic.
			return
		}
		var offs []int
		pos := 0
		for _, c := range cuts {
			pos += int(c) + 1
			offs = append(offs, pos)
		}
		whole := summary(t, streamCapture(t, stream))
		split := summary(t, streamCapture(t, stream, offs...))
		if whole != split {
			t.Fatalf("segmentation changed the result:\nwhole:\n%s\nsplit at %v:\n%s", whole, offs, split)
		}
	})
}

func summary(t *testing.T, capt []byte) string {
	reqs, st, err := ReadAll(context.Background(), bytes.NewReader(capt), Options{KeepSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "%s %q %s %q %v body=%q chunked=%v trailer=%v incomplete=%v\n", r.Method, r.Target, r.Proto, r.Host, r.Header, r.Body, r.Chunked, r.Trailer, r.Incomplete)
	}
	fmt.Fprintf(&b, "tls=%d h2=%d other=%d socks=%v malformed=%v tolerated=%v resync=%d", st.TLSStreams, st.HTTP2Streams, st.OtherStreams,
		st.SOCKS, st.MalformedLines, st.ToleratedLines, st.ResyncBytes)
	return b.String()
}

// FuzzDecode decodes arbitrary frames of every link type the reader
// takes: it must never panic nor recurse without end (tunnels are
// bounded by maxEncap), and a TCP payload it returns must lie within the
// frame.
func FuzzDecode(f *testing.F) {
	for _, tc := range tunnelCases() {
		for i, p := range readPackets(f, filepath.Join("testdata", "tunnels", tc.file)) {
			if i%4 == 0 {
				f.Add(uint16(p.lt), p.data)
			}
		}
	}
	f.Add(uint16(linkRaw), ip4(47, append([]byte{0, 0, 0x65, 0x58}, make([]byte, 14)...)))
	f.Fuzz(func(t *testing.T, lt uint16, frame []byte) {
		if !supportedLink(int(lt)) {
			lt = uint16(linkRaw)
		}
		var s segment
		if decodePacket(int(lt), frame, len(frame), &s, &fragInfo{}) != decTCP || len(s.payload) == 0 {
			return
		}
		end := &frame[len(frame)-1]
		last := &s.payload[len(s.payload)-1]
		if uintptr(unsafe.Pointer(last)) > uintptr(unsafe.Pointer(end)) || uintptr(unsafe.Pointer(&s.payload[0])) < uintptr(unsafe.Pointer(&frame[0])) {
			t.Fatalf("payload outside the frame")
		}
	})
}
