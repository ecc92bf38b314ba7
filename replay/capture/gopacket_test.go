package capture

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// The hand-written link/IP/TCP decoder (decode.go) is checked against
// gopacket's layers on the same frames: wherever gopacket decodes a whole
// TCP segment (no error layer, not truncated, not a fragment), ours must
// decode it too, with the same addresses, ports, sequence number, flags
// and payload. Where gopacket fails, ours may do better (pre-standard
// QinQ, LINKTYPE_IPV4/IPV6, BSD DLT_RAW 14, PKTAP, TCP options gopacket
// refuses — docs/capture.md); that direction is not checked.

// gopacketSegment decodes a frame with gopacket; ok is false where
// gopacket does not yield a whole TCP segment.
func gopacketSegment(lt int, frame []byte) (s segment, ok bool) {
	p := gopacket.NewPacket(frame, layers.LinkType(lt), gopacket.DecodeOptions{NoCopy: true})
	if p.ErrorLayer() != nil || p.Metadata().Truncated {
		return s, false
	}
	tl, _ := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
	if tl == nil {
		return s, false
	}
	var src, dst netip.Addr
	// The innermost network layer: in a tunnel, the first is the outer.
	var network gopacket.Layer
	for _, l := range p.Layers() {
		switch ip := l.(type) {
		case *layers.IPv4:
			if ip.Version != 4 {
				return s, false // see below; the outer layers of a tunnel too
			}
		case *layers.IPv6:
			if ip.Version != 6 {
				return s, false
			}
		}
		if _, ok := l.(gopacket.NetworkLayer); ok {
			network = l
		}
	}
	switch ip := network.(type) {
	case *layers.IPv4:
		if ip.Version != 4 {
			// gopacket does not check the version nibble against the
			// ethertype or address family; we take such a packet for
			// corrupt (a documented difference).
			return s, false
		}
		src, _ = netip.AddrFromSlice(ip.SrcIP.To4())
		dst, _ = netip.AddrFromSlice(ip.DstIP.To4())
	case *layers.IPv6:
		if ip.Version != 6 {
			return s, false
		}
		src, _ = netip.AddrFromSlice(ip.SrcIP.To16())
		dst, _ = netip.AddrFromSlice(ip.DstIP.To16())
	default:
		return s, false
	}
	s.src = netip.AddrPortFrom(src, uint16(tl.SrcPort))
	s.dst = netip.AddrPortFrom(dst, uint16(tl.DstPort))
	s.seq, s.ack = tl.Seq, tl.Ack
	s.flags = tl.Contents[13]
	s.payload = tl.Payload
	return s, true
}

// agree checks one frame; it returns whether gopacket decoded it.
func agree(t testing.TB, lt int, frame []byte) bool {
	t.Helper()
	want, ok := gopacketSegment(lt, frame)
	if !ok {
		return false
	}
	var got segment
	r := decodePacket(lt, frame, len(frame), &got, &fragInfo{})
	if r != decTCP || got.src != want.src || got.dst != want.dst || got.seq != want.seq || got.ack != want.ack ||
		got.flags != want.flags || !bytes.Equal(got.payload, want.payload) || got.missing != 0 {
		t.Fatalf("link type %d frame %x:\nours     %v %v->%v seq %d ack %d flags %#x payload %q missing %d\ngopacket %v->%v seq %d ack %d flags %#x payload %q",
			lt, frame, r, got.src, got.dst, got.seq, got.ack, got.flags, got.payload, got.missing,
			want.src, want.dst, want.seq, want.ack, want.flags, want.payload)
	}
	return true
}

// frameGen builds random frames down to TCP: link types gopacket and we
// both decode, VLAN tags, IPv4 options, IPv6 extension headers, IPsec AH,
// TCP options, payload lengths, length fields right, zero (TSO) or
// wrong, padding, fragments; then, sometimes, a few bytes flipped or the
// frame cut short.
type frameGen struct{ r *rand.Rand }

var genLinks = []int{linkEthernet, linkSLL, linkSLL2, linkNull, linkLoop, linkRaw, linkRaw12, linkPPP}

func (g frameGen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

func (g frameGen) frame() (int, []byte) {
	r := g.r
	v6 := r.IntN(2) == 0
	// TCP: header with NOP/EOL-padded options, payload.
	tcp := g.bytes(20)
	optLen := 4 * r.IntN(4)
	tcp[12] = byte((20+optLen)/4) << 4
	for i := 0; i < optLen; i++ {
		tcp = append(tcp, 1) // NOP
	}
	if optLen > 0 && r.IntN(2) == 0 {
		// A real MSS option at the front.
		copy(tcp[20:], []byte{2, 4, 0x05, 0xb4})
	}
	tcp = append(tcp, g.bytes(r.IntN(300))...)
	var ip []byte
	if v6 {
		ip = make([]byte, 40)
		ip[0] = 0x60
		copy(ip[8:], g.bytes(32))
		ip[7] = 64
		var ext []byte
		next := byte(6)
		// Extension headers, built back to front.
		for range r.IntN(3) {
			kind := []byte{0, 60, 43, ipAH}[r.IntN(4)]
			if kind == 0 && len(ext) > 0 {
				kind = 60 // hop-by-hop only first
			}
			var h []byte
			switch kind {
			case 0, 60: // options: PadN filling 8n-2 bytes
				n := 8 * (1 + r.IntN(2))
				h = make([]byte, n)
				h[1] = byte(n/8 - 1)
				h[2], h[3] = 1, byte(n-4)
			case 43: // routing type 4 (segment routing) with no segments left
				h = make([]byte, 8)
				h[2] = 4
			case ipAH:
				h = make([]byte, 12+4*r.IntN(3))
				h[1] = byte(len(h)/4 - 2)
				copy(h[4:], g.bytes(len(h)-4))
			}
			h[0] = next
			next = kind
			ext = append(h, ext...)
		}
		ip[6] = next
		payload := append(ext, tcp...)
		plen := len(payload)
		switch r.IntN(10) {
		case 0:
			plen = r.IntN(plen + 20) // wrong
		}
		binary.BigEndian.PutUint16(ip[4:], uint16(plen))
		ip = append(ip, payload...)
	} else {
		ihl := 20 + 4*r.IntN(3)
		ip = make([]byte, ihl)
		ip[0] = 0x40 | byte(ihl/4)
		for i := 20; i < ihl; i++ {
			ip[i] = 1 // NOP options
		}
		copy(ip[12:20], g.bytes(8))
		ip[8] = 64
		ip[9] = 6
		if r.IntN(8) == 0 {
			ah := make([]byte, 12)
			ah[0], ah[1] = 6, 1
			ip[9] = ipAH
			tcp = append(ah, tcp...)
		}
		switch r.IntN(8) {
		case 0: // a fragment
			binary.BigEndian.PutUint16(ip[6:], uint16(r.IntN(0x4000)))
		case 1, 2:
			ip[6] = 0x40 // DF
		}
		total := ihl + len(tcp)
		switch r.IntN(10) {
		case 0:
			total = 0 // TSO
		case 1:
			total = r.IntN(total + 20) // wrong
		}
		binary.BigEndian.PutUint16(ip[2:], uint16(total))
		ip = append(ip, tcp...)
	}
	if r.IntN(4) == 0 {
		ip, v6 = g.tunnel(ip, v6)
	}
	lt := genLinks[r.IntN(len(genLinks))]
	var hdr []byte
	et := []byte{0x08, 0x00}
	af := uint32(2)
	if v6 {
		et = []byte{0x86, 0xdd}
		af = []uint32{10, 24, 28, 30}[r.IntN(4)]
	}
	if (lt == linkEthernet || lt == linkSLL || lt == linkSLL2) && r.IntN(8) == 0 {
		// An MPLS label stack of 1-3 labels (not explicit null, which
		// gopacket does not read as IP).
		n := 1 + r.IntN(3)
		var stack []byte
		for i := range n {
			w := uint32(16+r.IntN(1000))<<12 | 64
			if i == n-1 {
				w |= 0x100
			}
			stack = binary.BigEndian.AppendUint32(stack, w)
		}
		ip = append(stack, ip...)
		et = []byte{0x88, 0x47}
	}
	// 0-2 VLAN tags: the ethertype field and, after each tag's TCI, the
	// type of what follows.
	var tpids [][]byte
	for range r.IntN(3) {
		tpids = append(tpids, [][]byte{{0x81, 0x00}, {0x88, 0xa8}}[r.IntN(2)])
	}
	if lt == linkEthernet && r.IntN(6) == 0 {
		// PPPoE session: the PPP protocol follows its 6-byte header.
		proto := []byte{0x00, 0x21}
		if v6 {
			proto = []byte{0x00, 0x57}
		}
		if r.IntN(2) == 0 {
			proto = proto[1:] // protocol-field compression
		}
		pppoe := []byte{0x11, 0x00, byte(r.Uint32()), byte(r.Uint32()), 0, 0}
		binary.BigEndian.PutUint16(pppoe[4:], uint16(len(ip)+len(proto)))
		ip = append(append(pppoe, proto...), ip...)
		et = []byte{0x88, 0x64}
	}
	first := et // the protocol field of the link header
	var tagged []byte
	if len(tpids) > 0 {
		first = tpids[0]
		for i := range tpids {
			tagged = append(tagged, byte(r.IntN(16)), byte(r.Uint32()))
			if i+1 < len(tpids) {
				tagged = append(tagged, tpids[i+1]...)
			} else {
				tagged = append(tagged, et...)
			}
		}
	}
	switch lt {
	case linkEthernet:
		hdr = append(append(g.bytes(12), first...), tagged...)
	case linkSLL:
		// packet type, ARPHRD_ETHER, address length 6, address (8 bytes)
		hdr = append([]byte{0, byte(r.IntN(5)), 0, 1, 0, 6}, g.bytes(8)...)
		hdr = append(append(hdr, first...), tagged...)
	case linkSLL2:
		// protocol, reserved, interface index, ARPHRD_ETHER, packet type,
		// address length 6, address (8 bytes)
		hdr = append(append(slices2(first), 0, 0), g.bytes(4)...)
		hdr = append(hdr, 0, 1, byte(r.IntN(5)), 6)
		hdr = append(append(hdr, g.bytes(8)...), tagged...)
	case linkPPP:
		proto := []byte{0x00, 0x21}
		if v6 {
			proto = []byte{0x00, 0x57}
		}
		switch r.IntN(3) {
		case 0:
			hdr = append([]byte{0xff, 0x03}, proto...)
		case 1:
			hdr = proto
		default:
			hdr = proto[1:] // protocol-field compression
		}
	case linkNull, linkLoop:
		hdr = make([]byte, 4)
		if r.IntN(2) == 0 {
			binary.LittleEndian.PutUint32(hdr, af)
		} else {
			binary.BigEndian.PutUint32(hdr, af)
		}
	}
	frame := append(hdr, ip...)
	if r.IntN(4) == 0 {
		frame = append(frame, make([]byte, r.IntN(20))...) // link-layer padding
	}
	switch r.IntN(6) {
	case 0:
		for range 1 + r.IntN(3) {
			frame[r.IntN(len(frame))] ^= byte(1 << r.IntN(8))
		}
	case 1:
		frame = frame[:r.IntN(len(frame)+1)]
	}
	return lt, frame
}

// tunnel wraps an IP packet in a tunnel both decoders follow: GRE over
// IPv4 or IPv6 (with checksum, key and sequence fields at random), IP in
// IPv4, or VXLAN (UDP 4789) over IPv4 around an Ethernet frame. It
// returns the outer packet and whether it is IPv6.
func (g frameGen) tunnel(ip []byte, v6 bool) ([]byte, bool) {
	r := g.r
	et := uint16(etherIPv4)
	if v6 {
		et = etherIPv6
	}
	outer4 := func(proto byte, p []byte) []byte {
		h := []byte{0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, proto, 0, 0}
		h = append(h, g.bytes(8)...)
		binary.BigEndian.PutUint16(h[2:], uint16(20+len(p)))
		return append(h, p...)
	}
	gre := func() []byte {
		var flags uint16
		n := 0
		for _, f := range []uint16{greChecksum, greKey, greSeq} {
			if r.IntN(2) == 0 {
				flags |= f
				n++
			}
		}
		h := binary.BigEndian.AppendUint16(nil, flags)
		h = binary.BigEndian.AppendUint16(h, et)
		return append(append(h, make([]byte, 4*n)...), ip...)
	}
	switch r.IntN(4) {
	case 0:
		return outer4(47, gre()), false
	case 1:
		p := gre()
		h := make([]byte, 40)
		h[0], h[6], h[7] = 0x60, 47, 64
		copy(h[8:], g.bytes(32))
		binary.BigEndian.PutUint16(h[4:], uint16(len(p)))
		return append(h, p...), true
	case 2:
		if v6 {
			return outer4(41, ip), false
		}
		return outer4(4, ip), false
	}
	vx := []byte{0x08, 0, 0, 0, 0, 0, 1, 0}
	eth := append(g.bytes(12), byte(et>>8), byte(et))
	p := append(append(vx, eth...), ip...)
	u := make([]byte, 8)
	binary.BigEndian.PutUint16(u[0:], uint16(1024+r.IntN(60000)))
	binary.BigEndian.PutUint16(u[2:], portVXLAN)
	binary.BigEndian.PutUint16(u[4:], uint16(8+len(p)))
	return outer4(17, append(u, p...)), false
}

func slices2(b []byte) []byte { return append([]byte(nil), b...) }

// TestDecodeAgreesWithGopacket decodes 30 000 random frames with both
// decoders, and every packet of the real test captures.
func TestDecodeAgreesWithGopacket(t *testing.T) {
	g := frameGen{rand.New(rand.NewPCG(20, 26))}
	decoded := map[int]int{}
	tunnels := map[uint16]int{}
	for range 30000 {
		lt, frame := g.frame()
		if agree(t, lt, frame) {
			decoded[lt]++
			var s segment
			decodePacket(lt, frame, len(frame), &s, &fragInfo{})
			tunnels[s.tun]++
		}
	}
	for _, k := range []uint16{tunGRE, tunIPinIP, tunIPv6inIP, tunVXLAN, tunMPLS} {
		if tunnels[k] < 100 {
			t.Errorf("only %d random frames in tunnel %s decoded by both: the generator does not exercise it (%v)", tunnels[k], tunName(k), tunnels)
		}
	}
	for _, lt := range genLinks {
		if decoded[lt] < 500 {
			t.Errorf("gopacket decoded only %d random frames of link type %d: the generator does not exercise it", decoded[lt], lt)
		}
	}
	real := 0
	names := []string{"edge-eth.pcap.gz", "edge-sll.pcap", "edge-sll2.pcap", "edge-ipv6.pcapng", "retrans-tbf.pcap", "snaplen-120.pcap", "frag-ipv4.pcap", "odd-targets.pcap"}
	for _, tc := range tunnelCases() {
		names = append(names, filepath.Join("tunnels", tc.file))
	}
	for _, name := range names {
		for _, p := range readPackets(t, filepath.Join("testdata", name)) {
			if agree(t, p.lt, p.data) {
				real++
			}
		}
	}
	if real < 500 {
		t.Errorf("only %d real packets decoded by gopacket", real)
	}
	t.Logf("random frames decoded by gopacket, per link type: %v, per tunnel kind: %v; real packets: %d", decoded, tunnels, real)
}

// FuzzDecodeVsGopacket: the same property on frames the fuzzer makes.
func FuzzDecodeVsGopacket(f *testing.F) {
	g := frameGen{rand.New(rand.NewPCG(1, 2))}
	for range 64 {
		lt, frame := g.frame()
		f.Add(uint8(lt), frame)
	}
	f.Fuzz(func(t *testing.T, lt uint8, frame []byte) {
		if int(lt) == linkRaw14 || !supportedLink(int(lt)) {
			return // gopacket registers DLT_RAW 14 on OpenBSD only
		}
		agree(t, int(lt), frame)
	})
}

// benchFrames returns the Ethernet frames of two real captures (IPv4 and
// IPv6 loopback HTTP traffic with a large upload).
func benchFrames(b *testing.B) [][]byte {
	var frames [][]byte
	for _, name := range []string{"edge-eth.pcap.gz", "edge-ipv6.pcapng"} {
		for _, p := range readPackets(b, filepath.Join("testdata", name)) {
			if p.lt == linkEthernet {
				frames = append(frames, p.data)
			}
		}
	}
	return frames
}

// BenchmarkDecode compares decoding a frame down to the TCP payload: the
// hand-written decoder, gopacket's DecodingLayerParser (preallocated
// layers, no allocation per packet; IPv6 extension headers other than
// hop-by-hop are not DecodingLayers in gopacket v1.7.7, but these
// captures have none) and gopacket.NewPacket (a Packet per
// frame, the convenient API). One op is one frame.
func BenchmarkDecode(b *testing.B) {
	frames := benchFrames(b)
	var sink int
	b.Run("hand-written", func(b *testing.B) {
		var s segment
		var f fragInfo
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			fr := frames[i%len(frames)]
			if decodePacket(linkEthernet, fr, len(fr), &s, &f) == decTCP {
				sink += len(s.payload)
			}
		}
	})
	b.Run("gopacket-DecodingLayerParser", func(b *testing.B) {
		var (
			eth  layers.Ethernet
			vlan layers.Dot1Q
			ip4  layers.IPv4
			ip6  layers.IPv6
			tcp  layers.TCP
		)
		p := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &vlan, &ip4, &ip6, &tcp)
		p.IgnoreUnsupported = true
		decoded := make([]gopacket.LayerType, 0, 8)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := p.DecodeLayers(frames[i%len(frames)], &decoded); err == nil && len(decoded) > 0 && decoded[len(decoded)-1] == layers.LayerTypeTCP {
				sink += len(tcp.Payload)
			}
		}
	})
	b.Run("gopacket-NewPacket", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			p := gopacket.NewPacket(frames[i%len(frames)], layers.LinkTypeEthernet, gopacket.DecodeOptions{NoCopy: true, Lazy: true})
			if t, ok := p.Layer(layers.LayerTypeTCP).(*layers.TCP); ok {
				sink += len(t.Payload)
			}
		}
	})
	_ = sink
}
