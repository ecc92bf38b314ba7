package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// pkt is one captured frame.
type pkt struct {
	ts   time.Time
	lt   int
	data []byte // the frame, link-layer header included
	orig int
}

// readPackets reads every frame of a real capture (pcap, pcap.gz or
// pcapng) with pcapgo.
func readPackets(t testing.TB, path string) []pkt {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return readPacketsFrom(t, b)
}

// readPacketsFrom is readPackets on a capture in memory.
func readPacketsFrom(t testing.TB, b []byte) []pkt {
	t.Helper()
	f := bytes.NewReader(b)
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		t.Fatal(err)
	}
	f.Seek(0, io.SeekStart)
	// pcapng gives each packet's link type (interfaces may differ); pcap
	// has one for the file.
	var read func() ([]byte, gopacket.CaptureInfo, error)
	var linkType func(gopacket.CaptureInfo) int
	if binary.LittleEndian.Uint32(magic[:]) == 0x0a0d0d0a {
		r, err := pcapgo.NewNgReader(f, pcapgo.NgReaderOptions{WantMixedLinkType: true})
		if err != nil {
			t.Fatal(err)
		}
		read = r.ReadPacketData
		linkType = func(ci gopacket.CaptureInfo) int { return int(ci.AncillaryData[0].(layers.LinkType)) }
	} else {
		r, err := pcapgo.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		read = r.ReadPacketData
		linkType = func(gopacket.CaptureInfo) int { return int(r.LinkType()) }
	}
	var out []pkt
	for {
		data, ci, err := read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pkt{ci.Timestamp, linkType(ci), data, ci.Length})
	}
}

// ipOf returns the IP packet of a frame (nil for non-IP frames).
func ipOf(p pkt) []byte {
	net, et, ok := decodeLink(p.lt, p.data, &segment{})
	if !ok || (et != etherIPv4 && et != etherIPv6 && et != 0) {
		return nil
	}
	return net
}

// relink wraps every IP packet in the link-layer header of lt. For NULL
// and LOOP, order is the byte order of the address family and af6 the
// value used for IPv6. vlan adds 802.1Q tags (2: QinQ) to Ethernet; 3
// puts a PPPoE session header instead.
func relink(t testing.TB, in []pkt, lt int, order binary.ByteOrder, af6 uint32, vlan int) []pkt {
	t.Helper()
	var out []pkt
	for _, p := range in {
		ip := ipOf(p)
		if ip == nil {
			continue
		}
		v6 := ip[0]>>4 == 6
		var hdr []byte
		switch lt {
		case linkNull, linkLoop:
			hdr = make([]byte, 4)
			af := uint32(2)
			if v6 {
				af = af6
			}
			order.PutUint32(hdr, af)
		case linkEthernet:
			hdr = make([]byte, 12, 22)
			copy(hdr, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2})
			if vlan == 2 {
				hdr = append(hdr, 0x88, 0xa8, 0x00, 0x64)
			}
			if vlan >= 1 {
				hdr = append(hdr, 0x81, 0x00, 0x00, 0x2a)
			}
			et := []byte{0x08, 0x00}
			if v6 {
				et = []byte{0x86, 0xdd}
			}
			if vlan == 3 {
				et = []byte{0x88, 0x64, 0x11, 0x00, 0x00, 0x2a, 0, 0, 0x00, 0x21}
				binary.BigEndian.PutUint16(et[6:], uint16(len(ip)+2))
				if v6 {
					et[9] = 0x57
				}
			}
			hdr = append(hdr, et...)
		case linkRaw, linkRaw12, linkRaw14, linkIPv4, linkIPv6:
		case linkPPP, linkPPPHDLC:
			hdr = []byte{0xff, 0x03, 0x00, 0x21}
			if v6 {
				hdr[3] = 0x57
			}
		case linkCHDLC:
			hdr = []byte{0x0f, 0x00, 0x08, 0x00}
			if v6 {
				hdr[2], hdr[3] = 0x86, 0xdd
			}
		case linkPKTAP:
			// A 108-byte PKTAP v1 header (macOS net/pktap.h) around an
			// Ethernet frame, as macOS writes for -i any.
			hdr = make([]byte, 108)
			binary.LittleEndian.PutUint32(hdr[0:], 108)
			binary.LittleEndian.PutUint32(hdr[4:], 1) // PTH_TYPE_PACKET
			binary.LittleEndian.PutUint32(hdr[8:], linkEthernet)
			copy(hdr[12:], "en0")
			et := []byte{0x08, 0x00}
			if v6 {
				et = []byte{0x86, 0xdd}
			}
			hdr = append(hdr, 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2)
			hdr = append(hdr, et...)
		default:
			t.Fatalf("relink: link type %d", lt)
		}
		data := append(hdr, ip...)
		out = append(out, pkt{p.ts, lt, data, len(data) + (p.orig - len(p.data))})
	}
	return out
}

// writePcap writes a classic pcap file by hand, in the given byte order
// and timestamp resolution (pcapgo's writer only writes little-endian).
func writePcap(t testing.TB, path string, order binary.ByteOrder, nano bool, lt int, pkts []pkt) {
	t.Helper()
	var b bytes.Buffer
	writePcapTo(t, &b, order, nano, lt, pkts)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writePcapTo is writePcap into a buffer.
func writePcapTo(t testing.TB, b *bytes.Buffer, order binary.ByteOrder, nano bool, lt int, pkts []pkt) {
	t.Helper()
	hdr := make([]byte, 24)
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	order.PutUint32(hdr[0:], magic)
	order.PutUint16(hdr[4:], 2)
	order.PutUint16(hdr[6:], 4)
	order.PutUint32(hdr[16:], 262144)
	order.PutUint32(hdr[20:], uint32(lt))
	b.Write(hdr)
	for _, p := range pkts {
		rec := make([]byte, 16)
		order.PutUint32(rec[0:], uint32(p.ts.Unix()))
		frac := uint32(p.ts.Nanosecond())
		if !nano {
			frac /= 1000
		}
		order.PutUint32(rec[4:], frac)
		order.PutUint32(rec[8:], uint32(len(p.data)))
		order.PutUint32(rec[12:], uint32(max(p.orig, len(p.data))))
		b.Write(rec)
		b.Write(p.data)
	}
}

// tcpInfo describes the TCP segment in a frame, for the pathology edits.
type tcpInfo struct {
	ok       bool
	src, dst string
	seq      uint32
	payload  int
	ipOff    int // offset of the IP header in the frame
	tcpOff   int // offset of the TCP header
	dataOff  int // offset of the payload
}

func tcpOf(p pkt) tcpInfo {
	var s segment
	if decodePacket(p.lt, p.data, p.orig, &s, &fragInfo{}) != decTCP {
		return tcpInfo{}
	}
	ip := ipOf(p)
	ipOff := len(p.data) - len(ip)
	// The payload ends the frame: loopback frames carrying data have no
	// Ethernet padding.
	dataOff := len(p.data) - len(s.payload)
	var ihl int
	if ip[0]>>4 == 4 {
		ihl = int(ip[0]&0x0f) * 4
	} else {
		ihl = 40
	}
	return tcpInfo{ok: true, src: s.src.String(), dst: s.dst.String(), seq: s.seq, payload: len(s.payload),
		ipOff: ipOff, tcpOff: ipOff + ihl, dataOff: dataOff}
}

// resegment returns a copy of an IPv4/TCP frame carrying only payload
// bytes [from, to), with the sequence number and IP length adjusted.
// Checksums are left wrong, as on loopback captures: nobody checks them.
func resegment(p pkt, from, to int) pkt {
	ti := tcpOf(p)
	data := append([]byte(nil), p.data[:ti.dataOff]...)
	data = append(data, p.data[ti.dataOff+from:ti.dataOff+to]...)
	binary.BigEndian.PutUint32(data[ti.tcpOff+4:], ti.seq+uint32(from))
	ip := data[ti.ipOff:]
	if ip[0]>>4 == 4 {
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	} else {
		binary.BigEndian.PutUint16(ip[4:], uint16(len(ip)-40))
	}
	return pkt{p.ts, p.lt, data, len(data)}
}

// clientData returns the indexes of frames carrying payload from a
// client (destination port = server port).
func clientData(pkts []pkt, serverPort string) []int {
	var out []int
	for i, p := range pkts {
		ti := tcpOf(p)
		if ti.ok && ti.payload > 0 && hasPort(ti.dst, serverPort) {
			out = append(out, i)
		}
	}
	return out
}

func hasPort(addrPort, port string) bool {
	return len(addrPort) > len(port) && addrPort[len(addrPort)-len(port)-1:] == ":"+port
}
