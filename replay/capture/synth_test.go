package capture

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// synth writes synthetic Ethernet/IPv4/TCP captures with pcapgo, for the
// parser's corner cases, the fuzz targets and the benchmark. Real-tool
// captures are in testdata; these are for what real tools cannot be made
// to send on demand.
type synth struct {
	w   *pcapgo.Writer
	ts  time.Time
	buf []byte
}

func newSynth(t testing.TB, w io.Writer) *synth {
	pw := pcapgo.NewWriterNanos(w)
	if err := pw.WriteFileHeader(262144, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	return &synth{w: pw, ts: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
}

// sconn is one synthetic connection.
type sconn struct {
	s          *synth
	cli, srv   netip.AddrPort
	cseq, sseq uint32
}

func (s *synth) conn(client, server string) *sconn {
	return &sconn{s: s, cli: netip.MustParseAddrPort(client), srv: netip.MustParseAddrPort(server), cseq: 1000, sseq: 5000}
}

func (s *synth) frame(src, dst netip.AddrPort, seq, ack uint32, flags uint8, payload []byte) {
	b := s.buf[:0]
	b = append(b, 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00)
	ip := len(b)
	b = append(b, 0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0)
	b = append(b, src.Addr().AsSlice()...)
	b = append(b, dst.Addr().AsSlice()...)
	binary.BigEndian.PutUint16(b[ip+2:], uint16(20+20+len(payload)))
	b = binary.BigEndian.AppendUint16(b, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	b = binary.BigEndian.AppendUint32(b, seq)
	b = binary.BigEndian.AppendUint32(b, ack)
	b = append(b, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0)
	b = append(b, payload...)
	s.buf = b
	s.ts = s.ts.Add(time.Millisecond)
	if err := s.w.WritePacket(gopacket.CaptureInfo{Timestamp: s.ts, CaptureLength: len(b), Length: len(b)}, b); err != nil {
		panic(err)
	}
}

func (c *sconn) handshake() *sconn {
	c.s.frame(c.cli, c.srv, c.cseq-1, 0, tcpSYN, nil)
	c.s.frame(c.srv, c.cli, c.sseq-1, c.cseq, tcpSYN|tcpACK, nil)
	c.s.frame(c.cli, c.srv, c.cseq, c.sseq, tcpACK, nil)
	return c
}

// send writes client bytes as one segment.
func (c *sconn) send(p []byte) *sconn {
	c.s.frame(c.cli, c.srv, c.cseq, c.sseq, tcpACK|0x08, p)
	c.cseq += uint32(len(p))
	return c
}

// sendSplit writes client bytes cut at the given offsets.
func (c *sconn) sendSplit(p []byte, cuts ...int) *sconn {
	last := 0
	for _, cut := range cuts {
		if cut > last && cut < len(p) {
			c.send(p[last:cut])
			last = cut
		}
	}
	return c.send(p[last:])
}

func (c *sconn) reply(p []byte) *sconn {
	c.s.frame(c.srv, c.cli, c.sseq, c.cseq, tcpACK|0x08, p)
	c.sseq += uint32(len(p))
	return c
}

func (c *sconn) close() {
	c.s.frame(c.cli, c.srv, c.cseq, c.sseq, tcpFIN|tcpACK, nil)
	c.s.frame(c.srv, c.cli, c.sseq, c.cseq+1, tcpFIN|tcpACK, nil)
	c.s.frame(c.cli, c.srv, c.cseq+1, c.sseq+1, tcpACK, nil)
}

// streamCapture is a capture of one connection carrying stream, cut at
// the given offsets.
func streamCapture(t testing.TB, stream []byte, cuts ...int) []byte {
	var b bytes.Buffer
	s := newSynth(t, &b)
	c := s.conn("10.0.0.1:40000", "10.0.0.2:8080").handshake()
	c.sendSplit(stream, cuts...)
	c.reply([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	c.close()
	return b.Bytes()
}
