package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"testing"
)

// Frames for the variants of each encapsulation and link type that the
// real captures of testdata/tunnels do not hold, built here byte by byte
// from the specifications cited in tunnel.go and link.go: each must
// decode to the inner TCP segment, or be skipped with its cause.

var variantPayload = []byte("GET /variant HTTP/1.1\r\nHost: h\r\n\r\n")

// ip4TCP is an IPv4 packet 10.0.0.1:40000 -> 10.0.0.2:80 carrying
// variantPayload.
func ip4TCP() []byte {
	tcp := make([]byte, 20)
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], 80)
	binary.BigEndian.PutUint32(tcp[4:], 1000)
	tcp[12], tcp[13] = 5<<4, tcpACK|0x08
	return ip4(6, append(tcp, variantPayload...))
}

// ip4 wraps p in an IPv4 header of protocol proto.
func ip4(proto byte, p []byte) []byte {
	h := []byte{0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(p)))
	return append(h, p...)
}

// ip6 wraps p in an IPv6 header of next header nh.
func ip6(nh byte, p []byte) []byte {
	h := make([]byte, 40)
	h[0], h[6], h[7] = 0x60, nh, 64
	binary.BigEndian.PutUint16(h[4:], uint16(len(p)))
	h[23], h[39] = 1, 2
	return append(h, p...)
}

func udp(sport, dport uint16, p []byte) []byte {
	h := make([]byte, 8)
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint16(h[4:], uint16(8+len(p)))
	return append(h, p...)
}

func ether(et uint16, p []byte) []byte {
	h := make([]byte, 14)
	h[0], h[6] = 2, 2
	binary.BigEndian.PutUint16(h[12:], et)
	return append(h, p...)
}

func cat(parts ...[]byte) []byte { return slices.Concat(parts...) }

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func TestDecodeVariants(t *testing.T) {
	in := ip4TCP()
	snap := cat([]byte{0xAA, 0xAA, 0x03, 0, 0, 0}, be16(etherIPv4))
	wifiData := func(fc0, fc1 byte, extra int) []byte {
		h := make([]byte, 24+extra)
		h[0], h[1] = fc0, fc1
		return h
	}
	gre := func(flags, proto uint16, fields int, p []byte) []byte {
		return cat(be16(flags), be16(proto), make([]byte, 4*fields), p)
	}
	mpls := func(label uint32, bottom bool) []byte {
		w := label << 12
		if bottom {
			w |= 0x100
		}
		return binary.BigEndian.AppendUint32(nil, w|64)
	}
	nest := in
	for range maxEncap + 2 {
		nest = ip4(47, gre(0, etherIPv4, 0, nest))
	}
	tests := []struct {
		name  string
		lt    int
		frame []byte
		why   skipWhy // 0: must decode to the segment
		tun   uint16
	}{
		{"GRE RFC 1701 routing", linkRaw, ip4(47, cat(be16(greRouting), be16(etherIPv4), make([]byte, 4), []byte{0, 2, 0, 4, 1, 2, 3, 4}, make([]byte, 4), in)), 0, tunGRE},
		{"GRE version 1 (PPTP) with PPP", linkRaw, ip4(47, cat(be16(greKey|greSeq|greAckPresent|1), be16(etherPPP), make([]byte, 12), []byte{0xff, 0x03, 0, 0x21}, in)), 0, tunPPTP},
		{"GRE version 2", linkRaw, ip4(47, gre(2, etherIPv4, 0, in)), whyGREVersion, 0},
		{"GRE carrying NSH", linkRaw, ip4(47, gre(0, 0x894F, 0, in)), whyGREProto, tunGRE},
		{"GRE WCCPv2", linkRaw, ip4(47, gre(0, etherWCCP, 0, cat([]byte{0, 0, 0, 0}, in))), 0, tunGRE},
		{"GRE cut short", linkRaw, ip4(47, []byte{0x20, 0, 8, 0, 1}), whyBadTunnel, 0},
		{"ERSPAN III IP frame", linkRaw, ip4(47, gre(greSeq, etherERSPAN3, 1, cat([]byte{0x20, 0, 0, 1}, make([]byte, 6), be16(2<<10), in))), 0, tunGRE | tunERSPAN},
		{"ERSPAN III frame type 5", linkRaw, ip4(47, gre(greSeq, etherERSPAN3, 1, cat([]byte{0x20, 0, 0, 1}, make([]byte, 6), be16(5<<10), in))), whyERSPANFrame, tunGRE | tunERSPAN},
		{"VXLAN-GPE IPv4", linkRaw, ip4(17, udp(1, portVXLANGPE, cat([]byte{0x0c, 0, 0, 1, 0, 0, 1, 0}, in))), 0, tunVXLAN},
		{"Geneve with options", linkRaw, ip4(17, udp(1, portGeneve, cat([]byte{2, 0}, be16(etherTEB), make([]byte, 4), make([]byte, 8), ether(etherIPv4, in)))), 0, tunGeneve},
		{"VXLAN flags without I", linkRaw, ip4(17, udp(1, portVXLAN, cat(make([]byte, 8), ether(etherIPv4, in)))), whyBadTunnel, 0},
		{"UDP 8472 that is not VXLAN", linkRaw, ip4(17, udp(1, portVXLANLinux, make([]byte, 20))), whyIPProto, 0},
		{"GRE-in-UDP", linkRaw, ip4(17, udp(1, portGREUDP, gre(0, etherIPv4, 0, in))), 0, tunGRE},
		{"MPLS-in-UDP", linkRaw, ip4(17, udp(1, portMPLSUDP, cat(mpls(16, true), in))), 0, tunMPLS},
		{"MPLS-in-IP", linkRaw, ip4(137, cat(mpls(16, false), mpls(17, true), in)), 0, tunMPLS},
		{"MPLS Ethernet pseudowire with control word", linkEthernet, ether(etherMPLS, cat(mpls(16, true), make([]byte, 4), ether(etherIPv4, in))), 0, tunMPLS},
		{"MPLS IPv6 explicit null", linkEthernet, ether(etherMPLS, cat(mpls(2, true), ip6(4, in))), 0, tunMPLS | tunIPinIP},
		{"MPLS carrying something else", linkEthernet, ether(etherMPLS, cat(mpls(16, true), []byte{0x90, 1, 2, 3})), whyMPLSPayload, tunMPLS},
		{"GTP-U echo request", linkRaw, ip4(17, udp(2152, 2152, []byte{0x32, 1, 0, 4, 0, 0, 0, 0, 0, 1, 0, 0})), whyGTPMessage, tunGTPU},
		{"GTP-U two extension headers", linkRaw, ip4(17, udp(2152, 2152, cat([]byte{0x34, 0xff}, be16(uint16(4+8+4+len(in))), []byte{0, 0, 0, 1, 0, 0, 0, 0x85, 2, 0, 9, 0, 0, 0, 0, 0xC0, 1, 0, 0, 0}, in))), 0, tunGTPU},
		{"GTP-U extension of length 0", linkRaw, ip4(17, udp(2152, 2152, cat([]byte{0x34, 0xff, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0x85, 0, 0, 0, 0}, in))), whyBadTunnel, tunGTPU},
		{"Teredo with authentication and origin indication", linkRaw, ip4(17, udp(3544, 40000, cat([]byte{0, 1, 2, 3, 'i', 'd', 'a', 'u', 'v'}, make([]byte, 9), []byte{0, 0, 0x12, 0x34, 1, 2, 3, 4}, ip6(4, in)))), 0, tunTeredo | tunIPinIP},
		{"Teredo bubble", linkRaw, ip4(17, udp(40000, 3544, ip6(59, nil))[:8+40]), whyIPProto, tunTeredo},
		{"Teredo router solicitation over IPv4 (not IPv6)", linkRaw, ip4(17, udp(40000, 3544, []byte{0x45, 0, 0, 0})), whyIPProto, 0},
		{"L2TP data with length, sequence and offset", linkRaw, ip4(17, udp(1701, 1701, cat(be16(0x4a02), be16(uint16(20+len(in))), []byte{0, 1, 0, 2, 0, 0, 0, 0}, be16(2), []byte{0, 0}, []byte{0xff, 3, 0, 0x21}, in))), 0, tunL2TP},
		{"L2TP control message", linkRaw, ip4(17, udp(1701, 1701, cat(be16(0xc802), be16(12), []byte{0, 1, 0, 0, 0, 0, 0, 0}))), whyL2TP, tunL2TP},
		{"L2TPv3 over UDP", linkRaw, ip4(17, udp(1701, 1701, cat(be16(0x0003), make([]byte, 10)))), whyL2TP, 0},
		{"Aruba GRE (802.11 to the controller)", linkRaw, ip4(47, gre(0, etherAruba, 0, cat(wifiData(0x08, 0x01, 0), snap, in))), 0, tunGRE},
		{"IPv6 in IPv6 behind a destination options header", linkRaw, ip6(60, cat([]byte{41, 0, 1, 4, 0, 0, 0, 0}, ip6(4, in))), 0, tunIPv6inIP | tunIPinIP},
		{"tunnels nested too deep", linkRaw, nest, whyTooDeep, tunGRE},
		{"first fragment of a UDP datagram not to a tunnel's port", linkRaw, func() []byte { p := ip4(17, udp(1, 53, in)); p[6] = 0x20; return p }(), whyFragment, 0},
		{"PPP_HDLC Cisco framing", linkPPPHDLC, cat([]byte{0x0f, 0}, be16(etherIPv4), in), 0, 0},
		{"PPP carrying MPLS", linkPPP, cat([]byte{0xff, 3, 2, 0x81}, mpls(16, true), in), 0, tunMPLS},
		{"PPP LCP", linkPPP, []byte{0xff, 3, 0xc0, 0x21, 1, 1, 0, 4}, whyEthertype, 0},
		{"PPP_ETHER", linkPPPEther, cat([]byte{0x11, 0, 0, 1}, be16(uint16(2+len(in))), []byte{0, 0x21}, in), 0, 0},
		{"802.3 with LLC/SNAP", linkEthernet, ether(uint16(len(snap)+len(in)), cat(snap, in)), 0, 0},
		{"802.3 spanning tree", linkEthernet, ether(38, cat([]byte{0x42, 0x42, 3}, make([]byte, 35))), whyEthertype, 0},
		{"802.11 four addresses, QoS, HT control", linkIEEE80211, cat(wifiData(0x88, 0x83, 6+2+4), snap, in), 0, 0},
		{"802.11 A-MSDU", linkIEEE80211, cat(wifiData(0x88, 0x01, 0), []byte{0x80, 0}, snap, in), whyWiFiAMSDU, 0},
		{"802.11 null function", linkIEEE80211, wifiData(0x48, 0x01, 0), whyWiFiNoData, 0},
		{"802.11 SNAP carrying ARP", linkIEEE80211, cat(wifiData(0x08, 0x01, 0), []byte{0xAA, 0xAA, 3, 0, 0, 0, 8, 6}, make([]byte, 28)), whyEthertype, 0},
		{"radiotap TSFT before Flags, extended presence", linkRadiotap, cat([]byte{0, 0}, le16(32), le32(0x80000003), le32(0), make([]byte, 4), make([]byte, 8), []byte{radiotapFlagFCS}, make([]byte, 7), wifiData(0x08, 0x01, 0), snap, in, []byte{1, 2, 3, 4}), 0, 0},
		{"radiotap bad FCS", linkRadiotap, cat([]byte{0, 0}, le16(9), le32(0x2), []byte{radiotapFlagBadFC}, wifiData(0x08, 0x01, 0), snap, in), whyWiFiBadFCS, 0},
		{"Prism", linkPrism, cat(le32(0x41), le32(144), make([]byte, 136), wifiData(0x08, 0x01, 0), snap, in), 0, 0},
		{"AVS", linkAVS, cat(be16(0x8021), be16(1), binary.BigEndian.AppendUint32(nil, 64), make([]byte, 56), wifiData(0x08, 0x02, 0), snap, in), 0, 0},
		{"PPI around 802.11", linkPPI, cat([]byte{0, 0}, le16(8), le32(linkIEEE80211), wifiData(0x08, 0x01, 0), snap, in), 0, 0},
		{"PPI around USB", linkPPI, cat([]byte{0, 0}, le16(8), le32(189), in), whyLinkType, 0},
		{"NFLOG big-endian TLVs", linkNFLOG, cat([]byte{2, 0, 0, 33}, be16(8), be16(1), []byte{8, 0, 0, 0}, be16(uint16(4+len(in))), be16(nflogPayload), in), 0, 0},
		{"NFLOG without payload", linkNFLOG, cat([]byte{2, 0, 0, 33}, le16(8), le16(1), []byte{8, 0, 0, 0}), whyNFLOGNoPayload, 0},
		{"IPoIB bare header", linkIPoIB, cat(be16(etherIPv4), []byte{0, 0}, in), 0, 0},
		{"IPoIB Linux (20-byte address first)", linkIPoIB, cat([]byte{0, 0, 0, 0x48}, make([]byte, 16), be16(etherIPv4), []byte{0, 0}, in), 0, 0},
		{"cooked netlink", linkSLL, cat([]byte{0, 4}, be16(arphrdNetlink), make([]byte, 10), be16(0), make([]byte, 16)), whyCooked, 0},
		{"cooked CAN", linkSLL2, cat(be16(0x000C), make([]byte, 6), be16(280), make([]byte, 10), make([]byte, 16)), whyCooked, 0},
		{"cooked protocol 0 (the IP version decides)", linkSLL, cat([]byte{0, 0}, be16(65534), make([]byte, 10), be16(0), in), 0, 0},
		{"cooked 802.2 SNAP", linkSLL, cat([]byte{0, 0}, be16(1), make([]byte, 10), be16(sllProto8022), snap, in), 0, 0},
		{"cooked radiotap (-i any on a monitor interface)", linkSLL2, cat(be16(3), make([]byte, 6), be16(arphrdRadiotap), make([]byte, 10), []byte{0, 0}, le16(8), le32(0), wifiData(0x08, 0x01, 0), snap, in), 0, 0},
		{"ARCNET_LINUX RFC 1201", linkARCNETLinux, cat([]byte{1, 2, 0, 0, arcnetIP1201, 0, 0, 1}, in), 0, 0},
		{"ARCNET BSD RFC 1051", linkARCNET, cat([]byte{1, 2, arcnetIP1051}, in), 0, 0},
		{"ARCNET BSD exception frame", linkARCNET, cat([]byte{1, 2, arcnetIP1201, 0xff, 0xff, 0xff, arcnetIP1201, 0, 0, 1}, in), 0, 0},
		{"ARCNET IPX", linkARCNETLinux, cat([]byte{1, 2, 0, 0, 0xFA, 0, 0, 1}, make([]byte, 30)), whyARCNET, 0},
		{"PFLOG", linkPFLog, cat([]byte{61, 2}, make([]byte, 62), in), 0, 0},
		{"ENC", linkEnc, cat(le32(2), make([]byte, 8), in), 0, 0},
		{"IPNET", linkIPNet, cat([]byte{2, 2}, make([]byte, 22), in), 0, 0},
		{"ATM RFC 1483", linkATMRFC1483, cat(snap, in), 0, 0},
		{"MPLS link type", linkMPLS, cat(mpls(3, true), in), 0, tunMPLS},
		{"unknown link type", 189, in, whyLinkType, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s segment
			r := decodePacket(tc.lt, tc.frame, len(tc.frame), &s, &fragInfo{})
			if s.tun != tc.tun {
				t.Errorf("tunnels %b, want %b", s.tun, tc.tun)
			}
			if tc.why != 0 {
				if r == decTCP || s.why != tc.why {
					t.Fatalf("result %d, cause %d (%s); want cause %d", r, s.why, skipKey{s.why, s.arg}.words(), tc.why)
				}
				return
			}
			if r != decTCP || !bytes.Equal(s.payload, variantPayload) || s.src.Port() != 40000 || s.dst.Port() != 80 {
				t.Fatalf("result %d (cause %s), segment %v -> %v %q", r, skipKey{s.why, s.arg}.words(), s.src, s.dst, s.payload)
			}
			// Every cut of the frame decodes without panicking.
			for n := range tc.frame {
				var s2 segment
				decodePacket(tc.lt, tc.frame[:n], len(tc.frame), &s2, &fragInfo{})
			}
		})
	}
}

// TestSkipWords: every cause reads as words, with its argument named.
func TestSkipWords(t *testing.T) {
	for _, c := range []struct {
		k    skipKey
		want string
	}{
		{skipKey{whyLinkType, 129}, "link type ARCNET_LINUX (129) not decoded"},
		{skipKey{whyLinkType, 4000}, "link type LINKTYPE_4000 (4000) not decoded"},
		{skipKey{whyEthertype, 0x0806}, "not IP: ARP (ethertype 0x0806)"},
		{skipKey{whyIPProto, 50}, "not TCP: IPsec ESP (encrypted) (IP protocol 50)"},
		{skipKey{whyGREProto, 0x894F}, "GRE carrying NSH (protocol type 0x894f), not followed"},
		{skipKey{whyBadTunnel, uint32(tunGTPU)}, "GTP-U header malformed or cut short"},
		{skipKey{whyTooDeep, 0}, "tunnels nested more than 8 deep (not followed)"},
		{skipKey{whyCooked, arphrdNetlink << 16}, "netlink messages (cooked capture of a netlink socket)"},
	} {
		if got := c.k.words(); got != c.want {
			t.Errorf("%v: %q, want %q", c.k, got, c.want)
		}
	}
}

// TestTunnelFragments: a GRE packet whose outer IPv6 header is
// fragmented (fragment header, two fragments, the second first), and
// one whose outer IPv4 is, are reassembled and the request inside read.
func TestTunnelFragments(t *testing.T) {
	g := cat(be16(0), be16(etherIPv4), ip4TCP())
	cut := 48
	frag6 := func(off int, more bool, p []byte) []byte {
		o := uint16(off)
		if more {
			o |= 1
		}
		return ip6(44, cat([]byte{47, 0}, be16(o), []byte{0, 0, 0, 9}, p))
	}
	frag4 := func(off int, more bool, p []byte) []byte {
		b := ip4(47, p)
		v := uint16(off / 8)
		if more {
			v |= 0x2000
		}
		binary.BigEndian.PutUint16(b[6:], v)
		return b
	}
	// GTP-U over UDP, outer IPv4 fragmented: the first fragment (with
	// the ports) first, as senders send them; then a DNS datagram
	// fragmented the same way, not held.
	gtp := udp(2152, 2152, cat([]byte{0x30, 0xff}, be16(uint16(len(ip4TCP()))), []byte{0, 0, 0, 1}, ip4TCP()))
	dns := udp(53, 53, make([]byte, 100))
	frag4u := func(off int, more bool, p []byte) []byte {
		b := frag4(off, more, p)
		b[9] = 17
		return b
	}
	pk := []pkt{
		{lt: linkRaw, data: frag6(cut, false, g[cut:])},
		{lt: linkRaw, data: frag6(0, true, g[:cut])},
		{lt: linkRaw, data: frag4(0, true, g[:cut])},
		{lt: linkRaw, data: frag4(cut, false, g[cut:])},
		{lt: linkRaw, data: frag4u(0, true, gtp[:cut])},
		{lt: linkRaw, data: frag4u(cut, false, gtp[cut:])},
		{lt: linkRaw, data: frag4u(0, true, dns[:cut])},
		{lt: linkRaw, data: frag4u(cut, false, dns[cut:])},
	}
	for i := range pk {
		pk[i].orig = len(pk[i].data)
	}
	var b bytes.Buffer
	writePcapTo(t, &b, binary.LittleEndian, false, linkRaw, pk)
	reqs, st, err := ReadAll(context.Background(), &b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || reqs[0].Target != "/variant" || st.Reassembled != 3 || st.Tunnels["GRE"] != 2 || st.Tunnels["GTP-U"] != 1 {
		t.Fatalf("%d requests, %d reassembled, tunnels %v; want 1 (the others are retransmissions), 3, GRE 2, GTP-U 1", len(reqs), st.Reassembled, st.Tunnels)
	}
	if st.Fragments != 6 || st.Skipped["IP fragments of UDP datagrams not to a tunnel's port (only TCP and tunnels are reassembled)"] != 2 {
		t.Errorf("%d fragments held, skipped %v; want 6, and the 2 DNS fragments skipped", st.Fragments, st.Skipped)
	}
}
