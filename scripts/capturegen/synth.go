package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// synthGateway writes n requests of the gateway mix (the same requests,
// headers and order as -mode gateway with the same seed) straight to a
// pcap file with pcapgo: Ethernet/IPv4, conns keep-alive connections each
// with its handshake, one segment per request, a JSON response and a
// pure ACK per request, a request every 2 ms. It is for memory and speed
// benchmarks on large captures; the test captures are real recordings.
func synthGateway(out string, n, conns int, seed uint64) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	w := pcapgo.NewWriterNanos(bw)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		return err
	}
	rng := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	kinds := gatewayKinds(n, rng)
	s := &synthWriter{w: w, ts: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	srv := netip.MustParseAddrPort("10.0.0.2:8080")
	cs := make([]*synthConn, conns)
	for i := range cs {
		cs[i] = &synthConn{cli: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), uint16(20000+i)), srv: srv, cseq: 1000, sseq: 5000}
		s.handshake(cs[i])
	}
	for i, kind := range kinds {
		method, path, body := gatewayRequest(rng, i, kind)
		b := fmt.Appendf(nil, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, srv)
		for _, h := range gatewayHeaders(rng, i, body != "") {
			b = fmt.Appendf(b, "%s: %s\r\n", h[0], h[1])
		}
		if body != "" {
			b = append(b, "Content-Length: "+strconv.Itoa(len(body))+"\r\n"...)
		}
		b = append(append(b, "\r\n"...), body...)
		c := cs[i%conns]
		s.ts = s.ts.Add(2 * time.Millisecond)
		s.frame(c.cli, c.srv, c.cseq, c.sseq, 0x18, b)
		c.cseq += uint32(len(b))
		resp := `{"tool":"search","ok":true,"result":{"items":3}}`
		r := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(resp)) + "\r\n\r\n" + resp)
		s.frame(c.srv, c.cli, c.sseq, c.cseq, 0x18, r)
		c.sseq += uint32(len(r))
		s.frame(c.cli, c.srv, c.cseq, c.sseq, 0x10, nil)
	}
	for _, c := range cs {
		s.frame(c.cli, c.srv, c.cseq, c.sseq, 0x11, nil)
		s.frame(c.srv, c.cli, c.sseq, c.cseq+1, 0x11, nil)
		s.frame(c.cli, c.srv, c.cseq+1, c.sseq+1, 0x10, nil)
	}
	if s.err != nil {
		return s.err
	}
	return bw.Flush()
}

type synthConn struct {
	cli, srv   netip.AddrPort
	cseq, sseq uint32
}

type synthWriter struct {
	w   *pcapgo.Writer
	ts  time.Time
	buf []byte
	err error
}

func (s *synthWriter) handshake(c *synthConn) {
	s.frame(c.cli, c.srv, c.cseq-1, 0, 0x02, nil)
	s.frame(c.srv, c.cli, c.sseq-1, c.cseq, 0x12, nil)
	s.frame(c.cli, c.srv, c.cseq, c.sseq, 0x10, nil)
}

// frame writes one Ethernet/IPv4/TCP packet (checksums left zero, as
// offloading NICs capture them).
func (s *synthWriter) frame(src, dst netip.AddrPort, seq, ack uint32, flags uint8, payload []byte) {
	b := append(s.buf[:0], 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00)
	ip := len(b)
	b = append(b, 0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0)
	b = append(b, src.Addr().AsSlice()...)
	b = append(b, dst.Addr().AsSlice()...)
	binary.BigEndian.PutUint16(b[ip+2:], uint16(40+len(payload)))
	b = binary.BigEndian.AppendUint16(b, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	b = binary.BigEndian.AppendUint32(b, seq)
	b = binary.BigEndian.AppendUint32(b, ack)
	b = append(b, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0)
	b = append(b, payload...)
	s.buf = b
	s.ts = s.ts.Add(time.Microsecond)
	if err := s.w.WritePacket(gopacket.CaptureInfo{Timestamp: s.ts, CaptureLength: len(b), Length: len(b)}, b); err != nil && s.err == nil {
		s.err = err
	}
}
