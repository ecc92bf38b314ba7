package capture

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Link-layer header types (LINKTYPE_* values of the pcap and pcapng
// formats; www.tcpdump.org/linktypes.html). 12 and 14 are the DLT_RAW
// values some BSDs write instead of 101.
const (
	linkNull     = 0
	linkEthernet = 1
	linkPPP      = 9
	linkPPPHDLC  = 50
	linkCHDLC    = 104
	linkRaw12    = 12
	linkRaw14    = 14
	linkRaw      = 101
	linkLoop     = 108
	linkSLL      = 113
	linkIPv4     = 228
	linkIPv6     = 229
	linkPKTAP    = 258
	linkSLL2     = 276
)

// LinkTypeName returns the libpcap name of a link type (as tcpdump -L
// prints it; linktypes.go), or "LINKTYPE_<n>" for a value libpcap does not
// name.
func LinkTypeName(lt int) string {
	if n, ok := linkTypeNames[lt]; ok {
		return n
	}
	return fmt.Sprintf("LINKTYPE_%d", lt)
}

// supportedLink reports whether the reader decodes the link type.
func supportedLink(lt int) bool {
	switch lt {
	case linkNull, linkEthernet, linkRaw, linkRaw12, linkRaw14, linkLoop, linkSLL, linkIPv4, linkIPv6, linkSLL2, linkPKTAP,
		linkPPP, linkPPPHDLC, linkCHDLC,
		linkARCNET, linkPPPEther, linkATMRFC1483, linkIEEE80211, linkEnc, linkPFLog, linkPrism, linkRadiotap, linkARCNETLinux,
		linkAVS, linkPPI, linkMPLS, linkIPNet, linkNFLOG, linkIPoIB:
		return true
	}
	return false
}

// supportedLinks is the list of link types the reader decodes, for the
// message refusing a file of another.
const supportedLinks = "EN10MB (with VLAN, PPPoE, MPLS), LINUX_SLL, LINUX_SLL2, NULL, LOOP, PKTAP, RAW, IPV4, IPV6, PPP, PPP_SERIAL, PPP_ETHER, C_HDLC, " +
	"IEEE802_11, IEEE802_11_RADIO, PRISM_HEADER, IEEE802_11_RADIO_AVS, PPI, NFLOG, IPOIB, ARCNET, ARCNET_LINUX, ATM_RFC1483, MPLS, ENC, PFLOG, IPNET"

// Ethertypes that matter here.
const (
	etherIPv4      = 0x0800
	etherIPv6      = 0x86DD
	etherVLAN      = 0x8100 // 802.1Q
	etherQinQ      = 0x88A8 // 802.1ad service tag
	etherQinQ2     = 0x9100 // pre-standard QinQ
	etherPPPoE     = 0x8864 // PPPoE session stage (RFC 2516)
	etherMPLS      = 0x8847
	etherMPLSMulti = 0x8848
)

// segment is one decoded TCP segment. Payload aliases the packet buffer,
// which the reader reuses: whoever keeps bytes copies them.
type segment struct {
	src, dst netip.AddrPort
	seq, ack uint32
	flags    uint8
	payload  []byte
	// missing is how many payload bytes the capture lacks at the end of
	// this segment (cut by the snap length).
	missing int
	// fragLoss: the missing bytes are fragments of the datagram that
	// never arrived (not a snap-length cut).
	fragLoss bool
	// why and arg say why a packet did not reach TCP (skip.go), when the
	// decoder knows more than its decodeResult; tun has a bit for each
	// kind of tunnel the packet was decapsulated from.
	why skipWhy
	arg uint32
	tun uint16
}

// TCP flags.
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpACK = 0x10
)

// decodeResult says what a packet turned out to be, for the stage counts.
type decodeResult int

const (
	decTCP decodeResult = iota
	decNotIP
	decNotTCP
	decFragment
	decMalformed
)

// decodeLink strips the link-layer header of a packet and returns the
// network-layer bytes and their ethertype (0 when the version nibble must
// decide). A frame that carries no network-layer packet (an 802.11
// beacon, an NFLOG record without one) is !ok with s.why saying why.
func decodeLink(lt int, data []byte, s *segment) (net []byte, ethertype uint16, ok bool) {
	switch lt {
	case linkEthernet:
		if len(data) < 14 {
			return nil, 0, false
		}
		et := binary.BigEndian.Uint16(data[12:14])
		data = data[14:]
		return untag(data, et)
	case linkSLL:
		// 16 bytes: packet type, ARPHRD, address length, 8 address bytes,
		// protocol (ethertype).
		if len(data) < 16 {
			return nil, 0, false
		}
		return cooked(binary.BigEndian.Uint16(data[2:4]), binary.BigEndian.Uint16(data[14:16]), data[16:], s)
	case linkSLL2:
		// 20 bytes, protocol first.
		if len(data) < 20 {
			return nil, 0, false
		}
		return cooked(binary.BigEndian.Uint16(data[8:10]), binary.BigEndian.Uint16(data[0:2]), data[20:], s)
	case linkNull, linkLoop:
		// 4-byte address family: host byte order of the capturing machine
		// for NULL, network order for LOOP — but writers disagree, so take
		// either order. AF_INET is 2 everywhere; AF_INET6 is 10 (Linux),
		// 24 (NetBSD, OpenBSD), 28 (FreeBSD, DragonFly), 30 (macOS).
		if len(data) < 4 {
			return nil, 0, false
		}
		af := binary.LittleEndian.Uint32(data[:4])
		if af > 0xFFFF {
			af = binary.BigEndian.Uint32(data[:4])
		}
		switch af {
		case 2:
			return data[4:], etherIPv4, true
		case 10, 23, 24, 28, 30: // 23: Windows (Npcap loopback)
			return data[4:], etherIPv6, true
		}
		return data[4:], 0, true // let the IP version decide
	case linkRaw, linkRaw12, linkRaw14, linkIPv4, linkIPv6:
		return data, 0, true
	case linkPPP:
		return ppp(data)
	case linkPPPHDLC:
		// PPP in HDLC-like framing (ff 03), or Cisco PPP with HDLC
		// framing (RFC 1547 4.3.1: address 0x0f or 0x8f, then an
		// ethertype), as LINKTYPE_PPP_HDLC allows both.
		if len(data) >= 4 && (data[0] == 0x0f || data[0] == 0x8f) {
			return untag(data[4:], binary.BigEndian.Uint16(data[2:4]))
		}
		return ppp(data)
	case linkCHDLC:
		// Cisco HDLC: address, control, then an ethertype.
		if len(data) < 4 {
			return nil, 0, false
		}
		return untag(data[4:], binary.BigEndian.Uint16(data[2:4]))
	case linkPKTAP:
		// Apple's packet tap (macOS `tcpdump -i any` / `-k`): a header
		// in host (little-endian) order whose own length comes first, and
		// the link type of the packet that follows at offset 8.
		if len(data) < 12 {
			return nil, 0, false
		}
		n := int(binary.LittleEndian.Uint32(data[0:4]))
		inner := int(binary.LittleEndian.Uint32(data[8:12]))
		if n < 12 || n > len(data) || binary.LittleEndian.Uint32(data[4:8]) != 1 || inner == linkPKTAP || !supportedLink(inner) {
			return nil, 0, false
		}
		return decodeLink(inner, data[n:], s)
	}
	return decodeMoreLinks(lt, data, s)
}

// untag strips 802.1Q and QinQ tags, at any depth (cooked captures keep
// them when the NIC does not strip them), a PPPoE session header, and an
// 802.2 LLC/SNAP header where the ethertype field is an 802.3 length.
func untag(data []byte, et uint16) ([]byte, uint16, bool) {
	for et == etherVLAN || et == etherQinQ || et == etherQinQ2 {
		if len(data) < 4 {
			return nil, 0, false
		}
		et = binary.BigEndian.Uint16(data[2:4])
		data = data[4:]
	}
	if et < 0x0600 {
		// An 802.3 length, not an ethertype: an 802.2 LLC header
		// follows, with SNAP when it carries an ethertype.
		if len(data) >= 8 && data[0] == 0xAA && data[1] == 0xAA && data[2] == 0x03 {
			return untag(data[8:], binary.BigEndian.Uint16(data[6:8]))
		}
		return data, etherLLCOther, true
	}
	if et == etherPPPoE {
		// Version/type, code, session id, length; then a PPP frame.
		if len(data) < 6 {
			return nil, 0, false
		}
		if n := int(binary.BigEndian.Uint16(data[4:6])); 6+n <= len(data) {
			data = data[:6+n] // the PPPoE length bounds the payload (Ethernet pads)
		}
		return ppp(data[6:])
	}
	return data, et, true
}

// ppp strips a PPP header (RFC 1661/1662): optional address and control
// bytes (ff 03), then the protocol, one byte when compressed (odd), else
// two. Protocols other than IP and MPLS get etherPPPOther (not IP).
func ppp(data []byte) ([]byte, uint16, bool) {
	if len(data) >= 2 && data[0] == 0xff && data[1] == 0x03 {
		data = data[2:]
	}
	if len(data) < 1 {
		return nil, 0, false
	}
	proto := uint16(data[0])
	if data[0]&1 == 0 {
		if len(data) < 2 {
			return nil, 0, false
		}
		proto, data = binary.BigEndian.Uint16(data[:2]), data[2:]
	} else {
		data = data[1:]
	}
	switch proto {
	case 0x21:
		return data, etherIPv4, true
	case 0x57:
		return data, etherIPv6, true
	case 0x281, 0x283: // MPLS unicast, multicast
		return data, etherMPLS, true
	}
	return data, etherPPPOther, true
}

// fragInfo is an IP fragment as decodePacket found it. data aliases the
// packet buffer.
type fragInfo struct {
	key  fragKey
	off  int  // offset of data in the datagram's payload, in bytes
	more bool // more fragments follow (MF / M flag)
	// next is the protocol of the reassembled payload: IPv4's protocol
	// field, or the next header of IPv6's fragment header.
	next uint8
	data []byte
	// cut is how many bytes of this fragment the capture lacks (snap
	// length).
	cut int
	// ifHeld: a later fragment of a UDP datagram, taken only when the
	// first fragment (which has the ports) showed a tunnel.
	ifHeld bool
}

// decodePacket decodes a whole captured packet down to TCP. origLen is the
// packet's length on the wire, to tell snap-length cuts from short packets.
// An IP fragment of a TCP datagram is returned as decFragment with f
// filled, for the defragmenter. Tunnels are decapsulated (tunnel.go); s.tun
// says which, s.why why a packet did not reach TCP when there is more to
// say than the result.
func decodePacket(lt int, data []byte, origLen int, s *segment, f *fragInfo) decodeResult {
	s.why, s.tun = 0, 0
	caplen := len(data)
	net, et, ok := decodeLink(lt, data, s)
	if !ok {
		if s.why != 0 {
			return decNotIP
		}
		return decMalformed
	}
	cut := origLen - caplen // bytes the capture lacks at the end
	if cut < 0 {
		cut = 0
	}
	return decodeNet(et, net, cut, s, f, 0)
}

// decodeNet decodes a network-layer packet of ethertype et (0: the version
// nibble decides) down to TCP; depth counts the tunnels around it.
func decodeNet(et uint16, net []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	if et == 0 && len(net) > 0 {
		switch net[0] >> 4 {
		case 4:
			et = etherIPv4
		case 6:
			et = etherIPv6
		}
	}
	switch et {
	case etherIPv4:
		if len(net) < 20 || net[0]>>4 != 4 {
			return decMalformed
		}
		ihl := int(net[0]&0x0F) * 4
		if ihl < 20 || len(net) < ihl {
			return decMalformed
		}
		proto := net[9]
		if proto != 6 && proto != ipAH && !tunnelProto(proto) {
			s.why, s.arg = whyIPProto, uint32(proto)
			return decNotTCP
		}
		total := int(binary.BigEndian.Uint16(net[2:4]))
		// Total length 0 comes from TSO/GSO captures: trust the capture.
		if total != 0 {
			if total < ihl {
				return decMalformed
			}
			if total <= len(net) {
				net = net[:total] // strip link-layer padding
				cut = 0
			} else {
				cut = total - len(net)
			}
		}
		if frag := binary.BigEndian.Uint16(net[6:8]); frag&0x3FFF != 0 { // MF set or non-zero offset
			return ipv4Fragment(net, ihl, frag, cut, s, f)
		}
		src := netip.AddrFrom4([4]byte(net[12:16]))
		dst := netip.AddrFrom4([4]byte(net[16:20]))
		s.src = netip.AddrPortFrom(src, 0)
		s.dst = netip.AddrPortFrom(dst, 0)
		switch proto {
		case 6:
			return decodeTCP(net[ihl:], cut, s)
		case ipAH:
			return decodeAH(net[ihl:], cut, s)
		}
		return decodeTunnel(proto, net[ihl:], cut, s, f, depth)
	case etherIPv6:
		if len(net) < 40 || net[0]>>4 != 6 {
			return decMalformed
		}
		plen := int(binary.BigEndian.Uint16(net[4:6]))
		src := netip.AddrFrom16([16]byte(net[8:24]))
		dst := netip.AddrFrom16([16]byte(net[24:40]))
		p := net[40:]
		if plen != 0 { // 0: jumbogram or TSO capture; trust the capture
			if plen <= len(p) {
				p = p[:plen]
				cut = 0
			} else {
				cut = plen - len(p)
			}
		}
		s.src = netip.AddrPortFrom(src, 0)
		s.dst = netip.AddrPortFrom(dst, 0)
		return decodeIPv6Payload(net[6], p, cut, s, f, depth)
	case etherMPLS, etherMPLSMulti:
		return decodeMPLS(net, cut, s, f, depth)
	}
	if s.why == 0 {
		s.why, s.arg = whyEthertype, uint32(et)
	}
	return decNotIP
}

// ipv4Fragment fills f for an IPv4 fragment of a TCP or tunnel datagram
// (net is the packet, ihl its header length, frag its flags and offset).
func ipv4Fragment(net []byte, ihl int, frag uint16, cut int, s *segment, f *fragInfo) decodeResult {
	proto := net[9]
	ifHeld := false
	if proto != 6 && !ipTunnel(proto) {
		// Fragments of AH-protected datagrams are not reassembled, nor
		// those of UDP datagrams but tunnels'.
		if proto != 17 || !udpTunnelFragment(int(frag&0x1FFF)*8, net[ihl:]) {
			s.why, s.arg = whyFragment, uint32(proto)
			return decNotTCP
		}
		ifHeld = frag&0x1FFF != 0
	}
	if f == nil {
		return decMalformed // a fragment inside a reassembled datagram
	}
	*f = fragInfo{
		key:    fragKey{src: netip.AddrFrom4([4]byte(net[12:16])), dst: netip.AddrFrom4([4]byte(net[16:20])), id: uint32(binary.BigEndian.Uint16(net[4:6])), proto: proto},
		off:    int(frag&0x1FFF) * 8,
		more:   frag&0x2000 != 0,
		next:   proto,
		data:   net[ihl:],
		cut:    cut,
		ifHeld: ifHeld,
	}
	return decFragment
}

// decodeIPv6Payload walks IPv6 extension headers from next to TCP. A
// fragment header of a datagram that is not atomic fills f (only when f
// is non-nil: a reassembled payload holds no second fragment header).
func decodeIPv6Payload(next uint8, p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	for next != 6 {
		switch next {
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if len(p) < 8 {
				return decMalformed
			}
			n := (int(p[1]) + 1) * 8
			if len(p) < n {
				return decMalformed
			}
			next, p = p[0], p[n:]
		case ipAH: // IPsec authentication header (RFC 4302): length in 4-byte units, minus 2
			if len(p) < 8 {
				return decMalformed
			}
			n := (int(p[1]) + 2) * 4
			if len(p) < n {
				return decMalformed
			}
			next, p = p[0], p[n:]
		case 44: // fragment
			if len(p) < 8 {
				return decMalformed
			}
			off := binary.BigEndian.Uint16(p[2:4])
			if off&0xFFF9 == 0 { // atomic fragment (RFC 6946): no offset, no M flag
				next, p = p[0], p[8:]
				continue
			}
			if f == nil {
				return decMalformed
			}
			ifHeld := false
			switch p[0] {
			case 0, 43, 60, 6, 4, 41, 47, 137: // TCP or an IP-level tunnel, possibly behind more extension headers
			case 17:
				if !udpTunnelFragment(int(off&^7), p[8:]) {
					s.why, s.arg = whyFragment, 17
					return decNotTCP
				}
				ifHeld = off&^7 != 0
			default:
				s.why, s.arg = whyFragment, uint32(p[0])
				return decNotTCP
			}
			*f = fragInfo{
				key:    fragKey{src: s.src.Addr(), dst: s.dst.Addr(), id: binary.BigEndian.Uint32(p[4:8]), proto: 44},
				off:    int(off &^ 7),
				more:   off&1 != 0,
				next:   p[0],
				data:   p[8:],
				cut:    cut,
				ifHeld: ifHeld,
			}
			return decFragment
		default:
			if tunnelProto(next) {
				return decodeTunnel(next, p, cut, s, f, depth)
			}
			s.why, s.arg = whyIPProto, uint32(next)
			return decNotTCP
		}
	}
	return decodeTCP(p, cut, s)
}

// ipAH is the protocol number of IPsec's authentication header, which
// leaves what it protects in the clear (ESP does not).
const ipAH = 51

// decodeAH skips an IPv4 authentication header to the TCP segment.
func decodeAH(p []byte, cut int, s *segment) decodeResult {
	if len(p) < 8 {
		return decMalformed
	}
	n := (int(p[1]) + 2) * 4
	if len(p) < n {
		return decMalformed
	}
	if p[0] != 6 {
		return decNotTCP
	}
	return decodeTCP(p[n:], cut, s)
}

// decodeTCP decodes a TCP header; s.src and s.dst hold the addresses.
func decodeTCP(tcp []byte, cut int, s *segment) decodeResult {
	if len(tcp) < 20 {
		return decMalformed
	}
	off := int(tcp[12]>>4) * 4
	if off < 20 || len(tcp) < off {
		return decMalformed
	}
	s.src = netip.AddrPortFrom(s.src.Addr(), binary.BigEndian.Uint16(tcp[0:2]))
	s.dst = netip.AddrPortFrom(s.dst.Addr(), binary.BigEndian.Uint16(tcp[2:4]))
	s.seq = binary.BigEndian.Uint32(tcp[4:8])
	s.ack = binary.BigEndian.Uint32(tcp[8:12])
	s.flags = tcp[13]
	s.payload = tcp[off:]
	s.missing = cut
	s.fragLoss = false
	return decTCP
}
