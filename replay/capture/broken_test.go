package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/halfopen/rehearse"
)

// TestBrokenFiles is the corpus of broken inputs with the exact errors
// users see, and what is still recovered before the fault.
func TestBrokenFiles(t *testing.T) {
	pcap, err := os.ReadFile(filepath.Join("testdata", "edge-sll.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	ng, err := os.ReadFile(filepath.Join("testdata", "edge-ipv6.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(pcap)
	binary.LittleEndian.PutUint32(corrupt[24+8:], 0x7fffffff) // first record's captured length
	usb := bytes.Clone(pcap)
	binary.LittleEndian.PutUint32(usb[20:], 189) // USB_LINUX: named, not decoded
	ngVersion := func(major, minor uint16) []byte {
		b := bytes.Clone(ng)
		binary.LittleEndian.PutUint16(b[12:], major)
		binary.LittleEndian.PutUint16(b[14:], minor)
		return b
	}
	pcapVersion := func(major, minor uint16) []byte {
		b := bytes.Clone(pcap)
		binary.LittleEndian.PutUint16(b[4:], major)
		binary.LittleEndian.PutUint16(b[6:], minor)
		return b
	}
	kuz := bytes.Clone(pcap)
	binary.LittleEndian.PutUint32(kuz[0:], 0xa1b2cd34)

	// Packet numbers are those tshark reports: it reads 19 packets of the
	// half file and 108 of the cut pcapng (whose cut block follows packet
	// 108), then says the file "appears to have been cut short".
	tests := []struct {
		name     string
		data     []byte
		err      string
		sentinel error
		requests int // recovered before the fault
	}{
		{"empty", nil, "capture: file header: not a pcap or pcapng file: the input is empty", ErrFormat, 0},
		{"text", []byte("GET / HTTP/1.1\r\n"), "capture: file header: not a pcap or pcapng file: unknown magic number 0x47455420", ErrFormat, 0},
		{"three bytes", pcap[:3], "capture: file header: file truncated: 3 bytes is too short for a file header", ErrTruncated, 0},
		{"pcap header cut", pcap[:20], "capture: file header: file truncated: the file header is cut short", ErrTruncated, 0},
		{"pcap cut mid-file", pcap[:len(pcap)/2], "capture: packet 20: file truncated: the record is cut short (the capture was probably copied while being written)", ErrTruncated, 4},
		{"pcap cut in the last record", pcap[:len(pcap)-5], "capture: packet 110: file truncated: the record is cut short (the capture was probably copied while being written)", ErrTruncated, 12},
		{"pcap record longer than the snap length", corrupt, "capture: packet 1: corrupt record: capture length exceeds snap length: 2147483647 > 262144", ErrCorrupt, 0},
		{"unsupported link type", usb, "capture: file header: unsupported link type: USB_LINUX (189); supported: " + supportedLinks, ErrLinkType, 0},
		{"modified pcap", kuz, "capture: file header: not a pcap or pcapng file: the modified (Kuznetzov) pcap format is not supported; convert it with `editcap -F pcap IN OUT`", ErrFormat, 0},
		{"pcapng cut mid-block", ng[:len(ng)-100], "capture: packet 109: file truncated: the record is cut short (the capture was probably copied while being written)", ErrTruncated, 12},
		{"pcapng section header only", ng[:20], "capture: file header: file truncated: the file header is cut short", ErrTruncated, 0},
		// Well formed, but of a version tshark refuses too ("pcapng:
		// unknown SHB version 0.1", "pcap: major version 1 unsupported").
		{"pcapng version 0.1", ngVersion(0, 1), "capture: file header: unsupported pcapng version 0.1 (Wireshark and this reader take 1.0 and 1.2)", ErrFormat, 0},
		{"pcapng version 2.0", ngVersion(2, 0), "capture: file header: unsupported pcapng version 2.0 (Wireshark and this reader take 1.0 and 1.2)", ErrFormat, 0},
		{"pcapng version 1.1", ngVersion(1, 1), "capture: file header: unsupported pcapng version 1.1 (Wireshark and this reader take 1.0 and 1.2)", ErrFormat, 0},
		{"pcap version 1.0", pcapVersion(1, 0), "capture: file header: unsupported pcap version 1.0 (Wireshark and this reader take 2.x and later)", ErrFormat, 0},
		{"snoop", []byte("snoop\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x04"), "capture: file header: not a pcap or pcapng file: a Solaris snoop capture; convert it with `editcap -F pcapng IN OUT` (Wireshark reads it)", ErrFormat, 0},
		{"zstd", []byte("\x28\xb5\x2f\xfd\x00\x58"), "capture: file header: not a pcap or pcapng file: zstd-compressed: decompress it first (zstd -d)", ErrFormat, 0},
		{"gzip garbage", []byte{0x1f, 0x8b, 0, 0, 1, 2, 3}, "capture: file header: not a pcap or pcapng file: gzip: unexpected EOF", ErrFormat, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reqs, st, err := ReadAll(context.Background(), bytes.NewReader(tc.data), Options{})
			if err == nil {
				t.Fatalf("no error; %d requests", len(reqs))
			}
			if err.Error() != tc.err {
				t.Errorf("error\n got %q\nwant %q", err, tc.err)
			}
			if !errors.Is(err, rehearse.ErrInvalid) || !errors.Is(err, tc.sentinel) || rehearse.ExitCode(err) != rehearse.ExitInvalid {
				t.Errorf("%v: not ErrInvalid/%v", err, tc.sentinel)
			}
			if len(reqs) != tc.requests || st == nil {
				t.Errorf("%d requests recovered, want %d", len(reqs), tc.requests)
			}
		})
	}
}

// TestFormatVersionsRead: the versions Wireshark reads besides pcap 2.4
// and pcapng 1.0 (pcap 2.2, 2.3, 3.0; pcapng 1.2) are read whole.
func TestFormatVersionsRead(t *testing.T) {
	pcap, err := os.ReadFile(filepath.Join("testdata", "edge-sll.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	ng, err := os.ReadFile(filepath.Join("testdata", "edge-ipv6.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name         string
		file         []byte
		off          int
		major, minor uint16
	}{{"pcap 2.2", pcap, 4, 2, 2}, {"pcap 2.3", pcap, 4, 2, 3}, {"pcap 3.0", pcap, 4, 3, 0}, {"pcapng 1.2", ng, 12, 1, 2}} {
		b := bytes.Clone(v.file)
		binary.LittleEndian.PutUint16(b[v.off:], v.major)
		binary.LittleEndian.PutUint16(b[v.off+2:], v.minor)
		reqs, _, err := ReadAll(context.Background(), bytes.NewReader(b), Options{})
		if err != nil || len(reqs) != 12 {
			t.Errorf("%s: %d requests, %v; want 12", v.name, len(reqs), err)
		}
	}
}

func TestReadFileMissing(t *testing.T) {
	_, _, err := ReadFile(context.Background(), filepath.Join(t.TempDir(), "nope.pcap"), Options{})
	if !errors.Is(err, rehearse.ErrInvalid) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v", err)
	}
}

// An error from the callback stops the read and comes back as is.
func TestExtractCallbackError(t *testing.T) {
	stop := errors.New("stop")
	f, err := os.Open(filepath.Join("testdata", "edge-sll.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	_, err = Extract(context.Background(), f, Options{}, func(*Request) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("err %v after %d", err, n)
	}
}

func TestExtractCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var b bytes.Buffer
	s := newSynth(t, &b)
	c := s.conn("10.0.0.1:1", "10.0.0.2:80").handshake()
	for range 5000 {
		c.send([]byte("GET / HTTP/1.1\r\nHost: h\r\n\r\n"))
	}
	_, _, err := ReadAll(ctx, &b, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}
