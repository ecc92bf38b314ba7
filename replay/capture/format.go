package capture

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// File headers that are well formed but not what pcapgo takes. pcapgo
// refuses every pcap version but 2.4 and skips pcapng sections of any
// version but 1.0, so a file of another version came out as "corrupt" or
// "file truncated". Wireshark reads pcap 2.x and later and pcapng 1.0 and
// 1.2 (1.2 is written by some tools and means 1.0), and refuses the rest
// as "unsupported": so do we, in its words, and hand pcapgo a header of
// the version it knows for the versions Wireshark reads.

// formatError is a well-formed file the reader does not take: it matches
// ErrFormat without printing ErrFormat's "not a pcap or pcapng file",
// which would be wrong about a pcapng of version 2.0.
type formatError struct{ msg string }

func (e *formatError) Error() string        { return e.msg }
func (e *formatError) Is(target error) bool { return target == ErrFormat }

// pcapHeader checks the version of a pcap file header and returns the
// reader pcapgo should read (the header rewritten to 2.4 when it is
// another 2.x or later).
func pcapHeader(br *bufio.Reader, order binary.ByteOrder) (io.Reader, error) {
	h, err := br.Peek(24)
	if err != nil {
		return br, nil // pcapgo says the header is cut short
	}
	major, minor := order.Uint16(h[4:6]), order.Uint16(h[6:8])
	switch {
	case major == 2 && minor == 4:
		return br, nil
	case major < 2:
		return nil, &formatError{fmt.Sprintf("unsupported pcap version %d.%d (Wireshark and this reader take 2.x and later)", major, minor)}
	}
	return rewritten(br, 24, func(h []byte) {
		order.PutUint16(h[4:6], 2)
		order.PutUint16(h[6:8], 4)
	})
}

// pcapngHeader does the same for the first section header block of a
// pcapng file: versions 1.0 and 1.2 are read.
func pcapngHeader(br *bufio.Reader) (io.Reader, error) {
	h, err := br.Peek(16)
	if err != nil {
		return br, nil
	}
	var order binary.ByteOrder
	switch binary.LittleEndian.Uint32(h[8:12]) {
	case 0x1A2B3C4D:
		order = binary.LittleEndian
	case 0x4D3C2B1A:
		order = binary.BigEndian
	default:
		return br, nil // pcapgo says what is wrong with it
	}
	major, minor := order.Uint16(h[12:14]), order.Uint16(h[14:16])
	switch {
	case major == 1 && minor == 0:
		return br, nil
	case major == 1 && minor == 2:
		return rewritten(br, 16, func(h []byte) { order.PutUint16(h[14:16], 0) })
	}
	return nil, &formatError{fmt.Sprintf("unsupported pcapng version %d.%d (Wireshark and this reader take 1.0 and 1.2)", major, minor)}
}

// rewritten returns br with its first n bytes changed by fix.
func rewritten(br *bufio.Reader, n int, fix func([]byte)) (io.Reader, error) {
	h := make([]byte, n)
	if _, err := io.ReadFull(br, h); err != nil {
		return nil, err
	}
	fix(h)
	return io.MultiReader(bytes.NewReader(h), br), nil
}

// otherFormats are the magic numbers of capture and archive formats that
// are not pcap or pcapng, with what to do about them. Wireshark reads the
// capture formats, so editcap converts them.
var otherFormats = []struct {
	magic string
	what  string
}{
	{"snoop\x00\x00\x00", "a Solaris snoop capture"},
	{"GMBU", "a Microsoft Network Monitor 2.x capture"},
	{"RTSS", "a Microsoft Network Monitor 1.x capture"},
	{"XCP\x00", "a NetXRay / Sniffer (Windows) capture"},
	{"TRSNIFF data", "a Sniffer (DOS) capture"},
	{"iptrace ", "an AIX iptrace capture"},
	{"\x28\xb5\x2f\xfd", "zstd-compressed: decompress it first (zstd -d)"},
	{"\x04\x22\x4d\x18", "LZ4-compressed: decompress it first (lz4 -d)"},
	{"\xfd7zXZ\x00", "xz-compressed: decompress it first (xz -d)"},
	{"BZh", "bzip2-compressed: decompress it first (bzip2 -d)"},
	{"PK\x03\x04", "a ZIP archive: extract the capture first"},
}

// otherFormat names the format of a file that is not a capture the reader
// takes, from its first bytes ("" when unknown).
func otherFormat(br *bufio.Reader) string {
	head, _ := br.Peek(16)
	for _, f := range otherFormats {
		if bytes.HasPrefix(head, []byte(f.magic)) {
			if bytes.Contains([]byte(f.what), []byte("compressed")) || bytes.HasPrefix([]byte(f.what), []byte("a ZIP")) {
				return f.what
			}
			return f.what + "; convert it with `editcap -F pcapng IN OUT` (Wireshark reads it)"
		}
	}
	return ""
}
