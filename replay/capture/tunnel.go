package capture

import "encoding/binary"

// Tunnels. Captures taken on an underlay (a hypervisor's uplink, a
// mirror port fed by ERSPAN, a cloud's traffic mirroring over VXLAN, a
// mobile core's GTP-U interface) hold the HTTP traffic inside one or more
// encapsulations. Each one is peeled off here, wherever it carries IP or
// Ethernet, and the inner packet decoded as if it had been captured
// directly: the flows are those of the inner addresses. depth counts the
// layers and maxEncap bounds it, so that a crafted packet (GRE in GRE in
// GRE …) costs at most maxEncap headers and never recurses without end.

// maxEncap is the deepest nesting of tunnels followed. Real stacks rarely
// exceed three (ERSPAN over GRE carrying a VLAN-tagged frame with MPLS).
const maxEncap = 8

// Tunnel kinds, as bits of segment.tun (Stats.Tunnels keys in tunNames).
const (
	tunGRE uint16 = 1 << iota
	tunERSPAN
	tunVXLAN
	tunGeneve
	tunGTPU
	tunIPinIP
	tunIPv6inIP
	tunMPLS
	tunPPTP
	tunTeredo
	tunL2TP
	tunCount = iota
)

var tunNames = [tunCount]string{
	"GRE", "ERSPAN", "VXLAN", "Geneve", "GTP-U", "IPv4-in-IP (IPIP, 4in6)", "IPv6-in-IP (6in4, 6in6)", "MPLS", "PPTP (enhanced GRE)",
	"Teredo", "L2TP",
}

// UDP ports of tunnels (IANA), and Linux's default VXLAN port (8472,
// used when `ip link add … type vxlan` is given no dstport).
const (
	portVXLAN      = 4789
	portVXLANLinux = 8472
	portVXLANGPE   = 4790
	portGeneve     = 6081
	portGTPU       = 2152
	portGREUDP     = 4754 // GRE-in-UDP, RFC 8086
	portMPLSUDP    = 6635 // MPLS-in-UDP, RFC 7510
	portTeredo     = 3544 // IPv6 over UDP, RFC 4380
	portL2TP       = 1701 // L2TP version 2 (RFC 2661), PPP sessions
)

// tunnelProto reports whether an IP protocol number may carry a tunnel
// the decoder follows (UDP only on the ports above).
func tunnelProto(p uint8) bool {
	switch p {
	case 4, 41, 47, 17, 137:
		return true
	}
	return false
}

// ipTunnel reports whether an IP protocol is a tunnel at the IP level
// (no ports to look at): its fragments are reassembled like TCP's.
func ipTunnel(p uint8) bool {
	return p == 4 || p == 41 || p == 47 || p == 137
}

// udpTunnelFragment reports whether a fragment of a UDP datagram may be
// held for reassembly: the first (at offset 0, with the UDP header) when
// its ports are a tunnel's, a later one always (the extractor then takes
// it only if the first was held: fragInfo.ifHeld).
func udpTunnelFragment(off int, p []byte) bool {
	if off != 0 {
		return true
	}
	if len(p) < 4 {
		return false
	}
	return udpTunnelPort(binary.BigEndian.Uint16(p[0:2]), binary.BigEndian.Uint16(p[2:4]))
}

// udpTunnelPort reports whether a UDP datagram goes to a tunnel's port.
func udpTunnelPort(sport, dport uint16) bool {
	switch dport {
	case portVXLAN, portVXLANLinux, portVXLANGPE, portGeneve, portGTPU, portGREUDP, portMPLSUDP, portTeredo, portL2TP:
		return true
	}
	return sport == portGTPU || sport == portTeredo || sport == portL2TP
}

// decodeTunnel decodes the payload p of an IP packet of protocol proto
// that may be a tunnel.
func decodeTunnel(proto uint8, p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	if depth >= maxEncap {
		s.why = whyTooDeep
		return decNotTCP
	}
	switch proto {
	case 4: // IPv4 in IPv4 or IPv6 (RFC 2003, 2473)
		s.tun |= tunIPinIP
		return decodeNet(etherIPv4, p, cut, s, f, depth+1)
	case 41: // IPv6 in IPv4 (6in4, sit, RFC 4213) or IPv6 (RFC 2473)
		s.tun |= tunIPv6inIP
		return decodeNet(etherIPv6, p, cut, s, f, depth+1)
	case 47:
		return decodeGRE(p, cut, s, f, depth+1)
	case 137: // MPLS in IP (RFC 4023)
		return decodeMPLS(p, cut, s, f, depth+1)
	case 17:
		return decodeUDP(p, cut, s, f, depth)
	}
	s.why, s.arg = whyIPProto, uint32(proto)
	return decNotTCP
}

// bad marks a tunnel header too short or inconsistent to follow.
func bad(s *segment, kind uint16) decodeResult {
	s.why, s.arg = whyBadTunnel, uint32(kind)
	return decMalformed
}

// decodeUDP follows the UDP tunnels (by port); other UDP is not TCP.
func decodeUDP(p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	if len(p) < 8 {
		return decMalformed
	}
	sport, dport := binary.BigEndian.Uint16(p[0:2]), binary.BigEndian.Uint16(p[2:4])
	if n := int(binary.BigEndian.Uint16(p[4:6])); n >= 8 && n <= len(p) {
		p = p[:n]
	}
	p = p[8:]
	switch {
	case dport == portVXLAN || dport == portVXLANLinux:
		// RFC 7348: flags (I set), 24 reserved bits, VNI, 8 reserved.
		if len(p) < 8 || p[0]&0x08 == 0 {
			if dport == portVXLANLinux {
				break // not VXLAN after all: 8472 is not reserved for it
			}
			return bad(s, tunVXLAN)
		}
		s.tun |= tunVXLAN
		return decodeEther(p[8:], cut, s, f, depth+1)
	case dport == portVXLANGPE:
		// VXLAN-GPE: flags, reserved, next protocol in byte 3.
		if len(p) < 8 {
			return bad(s, tunVXLAN)
		}
		s.tun |= tunVXLAN
		switch p[3] {
		case 1:
			return decodeNet(etherIPv4, p[8:], cut, s, f, depth+1)
		case 2:
			return decodeNet(etherIPv6, p[8:], cut, s, f, depth+1)
		case 3:
			return decodeEther(p[8:], cut, s, f, depth+1)
		case 5:
			return decodeMPLS(p[8:], cut, s, f, depth+1)
		}
		s.why, s.arg = whyGPENext, uint32(p[3])
		return decNotIP
	case dport == portGeneve:
		// RFC 8926: version and option length (4-byte units), flags,
		// protocol type (an ethertype), VNI, options.
		if len(p) < 8 || p[0]>>6 != 0 {
			return bad(s, tunGeneve)
		}
		n := 8 + int(p[0]&0x3F)*4
		if len(p) < n {
			return bad(s, tunGeneve)
		}
		s.tun |= tunGeneve
		return decodeEtherPayload(binary.BigEndian.Uint16(p[2:4]), p[n:], cut, s, f, depth+1)
	case dport == portGTPU || sport == portGTPU:
		return decodeGTPU(p, cut, s, f, depth+1)
	case dport == portGREUDP:
		return decodeGRE(p, cut, s, f, depth+1)
	case dport == portMPLSUDP:
		return decodeMPLS(p, cut, s, f, depth+1)
	case dport == portTeredo || sport == portTeredo:
		return decodeTeredo(p, cut, s, f, depth+1)
	case dport == portL2TP || sport == portL2TP:
		return decodeL2TP(p, cut, s, f, depth+1)
	}
	s.why, s.arg = whyIPProto, 17
	return decNotTCP
}

// decodeTeredo decodes a Teredo packet (RFC 4380 section 5.1.1): an
// optional authentication header (indicator 0x0001, client ID and
// authentication value lengths, nonce, confirmation byte) and origin
// indication (0x0000, 8 bytes), then an IPv6 packet. Bubbles and other
// non-IPv6 payloads are not IP.
func decodeTeredo(p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	if len(p) >= 4 && p[0] == 0 && p[1] == 1 {
		n := 4 + int(p[2]) + int(p[3]) + 8 + 1
		if len(p) < n {
			return bad(s, tunTeredo)
		}
		p = p[n:]
	}
	if len(p) >= 8 && p[0] == 0 && p[1] == 0 {
		p = p[8:]
	}
	if len(p) == 0 || p[0]>>4 != 6 {
		s.why, s.arg = whyIPProto, 17 // a qualification or a bubble: plain UDP
		return decNotTCP
	}
	s.tun |= tunTeredo
	return decodeNet(etherIPv6, p, cut, s, f, depth)
}

// decodeL2TP decodes an L2TP version 2 data message (RFC 2661 section
// 3.1: flags and version, optional length, tunnel and session IDs,
// optional sequence numbers and offset) and the PPP frame it carries.
// Control messages are not user data.
func decodeL2TP(p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	if len(p) < 6 {
		return bad(s, tunL2TP)
	}
	flags := binary.BigEndian.Uint16(p[0:2])
	if flags&0x000F != 2 {
		s.why, s.arg = whyL2TP, uint32(flags&0x000F)
		return decNotIP
	}
	s.tun |= tunL2TP
	if flags&0x8000 != 0 { // T: control message
		s.why, s.arg = whyL2TP, 0
		return decNotIP
	}
	n := 2
	if flags&0x4000 != 0 { // L: length
		if l := int(binary.BigEndian.Uint16(p[2:4])); l >= 6 && l <= len(p) {
			p = p[:l]
		}
		n += 2
	}
	n += 4                 // tunnel and session IDs
	if flags&0x0800 != 0 { // S: Ns, Nr
		n += 4
	}
	if flags&0x0200 != 0 { // O: offset size, then that many bytes of padding
		if len(p) < n+2 {
			return bad(s, tunL2TP)
		}
		n += 2 + int(binary.BigEndian.Uint16(p[n:n+2]))
	}
	if len(p) < n {
		return bad(s, tunL2TP)
	}
	net, et, ok := ppp(p[n:])
	if !ok {
		return bad(s, tunL2TP)
	}
	return decodeNet(et, net, cut, s, f, depth)
}

// decodeEther decodes an Ethernet frame inside a tunnel.
func decodeEther(p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	if len(p) < 14 {
		return decMalformed
	}
	return decodeEtherPayload(binary.BigEndian.Uint16(p[12:14]), p[14:], cut, s, f, depth)
}

// decodeEtherPayload decodes what follows an ethertype: VLAN tags,
// PPPoE, IP, MPLS, or (0x6558, transparent Ethernet bridging) a frame.
func decodeEtherPayload(et uint16, p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	if et == etherTEB {
		if depth >= maxEncap {
			s.why = whyTooDeep
			return decNotTCP
		}
		return decodeEther(p, cut, s, f, depth+1)
	}
	net, et, ok := untag(p, et)
	if !ok {
		return decMalformed
	}
	return decodeNet(et, net, cut, s, f, depth)
}

// GRE protocol types beyond the ethertypes of IP and MPLS.
const (
	etherTEB      = 0x6558 // transparent Ethernet bridging (gretap)
	etherERSPAN2  = 0x88BE // ERSPAN type I and II
	etherERSPAN3  = 0x22EB // ERSPAN type III
	etherPPP      = 0x880B // PPP (PPTP's enhanced GRE)
	etherWCCP     = 0x883E // Cisco WCCP redirection
	etherAruba    = 0x8200 // Aruba access point to controller: 802.11
	etherAruba2   = 0x8210
	greChecksum   = 0x8000
	greRouting    = 0x4000
	greKey        = 0x2000
	greSeq        = 0x1000
	greAckPresent = 0x0080 // enhanced GRE (version 1)
)

// decodeGRE decodes a GRE header (RFC 2784 with the key and sequence
// number of RFC 2890, RFC 1701's routing, version 1 as PPTP uses it) and
// what it carries.
func decodeGRE(p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	if len(p) < 4 {
		return bad(s, tunGRE)
	}
	flags, proto := binary.BigEndian.Uint16(p[0:2]), binary.BigEndian.Uint16(p[2:4])
	n, kind := 4, tunGRE
	switch flags & 7 {
	case 0:
		if flags&(greChecksum|greRouting) != 0 {
			n += 4 // checksum and offset
		}
		if flags&greKey != 0 {
			n += 4
		}
		if flags&greSeq != 0 {
			n += 4
		}
		if flags&greRouting != 0 {
			// Source route entries (RFC 1701) up to a null one: address
			// family, offset, length.
			for {
				if len(p) < n+4 {
					return bad(s, tunGRE)
				}
				af, l := binary.BigEndian.Uint16(p[n:n+2]), int(p[n+3])
				n += 4 + l
				if af == 0 && l == 0 {
					break
				}
			}
		}
	case 1: // enhanced GRE (RFC 2637): key always, sequence, acknowledgement
		n += 4
		if flags&greSeq != 0 {
			n += 4
		}
		if flags&greAckPresent != 0 {
			n += 4
		}
		kind = tunPPTP
	default:
		s.why, s.arg = whyGREVersion, uint32(flags&7)
		return decNotIP
	}
	if len(p) < n {
		return bad(s, kind)
	}
	s.tun |= kind
	return greNext(proto, flags, p[n:], cut, s, f, depth)
}

// greNext decodes what a GRE header of protocol type proto carries.
func greNext(proto, flags uint16, p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	switch proto {
	case etherIPv4, etherIPv6:
		return decodeNet(proto, p, cut, s, f, depth)
	case etherMPLS, etherMPLSMulti:
		return decodeMPLS(p, cut, s, f, depth)
	case etherTEB:
		return decodeEther(p, cut, s, f, depth)
	case etherERSPAN2:
		// Type II has an 8-byte header of version 1 and a sequence
		// number in GRE; type I has neither.
		s.tun |= tunERSPAN
		if flags&greSeq != 0 && len(p) >= 8 && p[0]>>4 == 1 {
			p = p[8:]
		}
		return decodeEther(p, cut, s, f, depth)
	case etherERSPAN3:
		return decodeERSPAN3(p, cut, s, f, depth)
	case etherPPP:
		net, et, ok := ppp(p)
		if !ok {
			return bad(s, tunPPTP)
		}
		return decodeNet(et, net, cut, s, f, depth)
	case etherAruba, etherAruba2:
		// Aruba access points send the 802.11 frames of their clients to
		// the controller in GRE.
		net, et, ok := wifi(p, false, s)
		if !ok {
			if s.why != 0 {
				return decNotIP
			}
			return decMalformed
		}
		return decodeNet(et, net, cut, s, f, depth)
	case etherWCCP:
		// WCCPv2 puts a 4-byte redirect header before the IP packet;
		// WCCPv1 does not.
		if len(p) > 0 && p[0]>>4 != 4 && len(p) >= 4 {
			p = p[4:]
		}
		return decodeNet(0, p, cut, s, f, depth)
	}
	s.why, s.arg = whyGREProto, uint32(proto)
	return decNotIP
}

// decodeERSPAN3 decodes an ERSPAN type III header: 12 bytes, then an
// 8-byte platform-specific subheader when the O flag is set; the frame
// type says whether an Ethernet frame (0) or an IP packet (2) follows.
func decodeERSPAN3(p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	s.tun |= tunERSPAN
	if len(p) < 12 || p[0]>>4 != 2 {
		return bad(s, tunERSPAN)
	}
	w := binary.BigEndian.Uint16(p[10:12])
	n := 12
	if w&1 != 0 {
		n += 8
	}
	if len(p) < n {
		return bad(s, tunERSPAN)
	}
	switch ft := (w >> 10) & 0x1F; ft {
	case 0:
		return decodeEther(p[n:], cut, s, f, depth)
	case 2:
		return decodeNet(0, p[n:], cut, s, f, depth)
	default:
		s.why, s.arg = whyERSPANFrame, uint32(ft)
		return decNotIP
	}
}

// decodeGTPU decodes a GTP-U header (3GPP TS 29.281): version 1,
// protocol type GTP, a G-PDU (message type 255) carrying the user's IP
// packet, behind the optional sequence number, N-PDU number and chain of
// extension headers.
func decodeGTPU(p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	if len(p) < 8 || p[0]>>5 != 1 || p[0]&0x10 == 0 {
		return bad(s, tunGTPU)
	}
	s.tun |= tunGTPU
	if p[1] != 0xFF {
		s.why, s.arg = whyGTPMessage, uint32(p[1])
		return decNotIP
	}
	if l := int(binary.BigEndian.Uint16(p[2:4])); 8+l <= len(p) {
		p = p[:8+l]
	}
	n := 8
	if p[0]&0x07 != 0 {
		if len(p) < 12 {
			return bad(s, tunGTPU)
		}
		n = 12
		// Extension headers: length in 4-byte units (never 0), the last
		// byte the type of the next one (0: none).
		for next := p[11]; next != 0; {
			if len(p) < n+1 || p[n] == 0 || len(p) < n+int(p[n])*4 {
				return bad(s, tunGTPU)
			}
			l := int(p[n]) * 4
			next = p[n+l-1]
			n += l
		}
	}
	return decodeNet(0, p[n:], cut, s, f, depth)
}

// decodeMPLS decodes an MPLS label stack (RFC 3032) and what its bottom
// carries: IP (explicit-null labels 0 and 2 say which; otherwise the
// version nibble), or an Ethernet pseudowire behind a control word
// (RFC 4448: first nibble 0).
func decodeMPLS(p []byte, cut int, s *segment, f *fragInfo, depth int) decodeResult {
	s.tun |= tunMPLS
	var label uint32
	for {
		if len(p) < 4 {
			return bad(s, tunMPLS)
		}
		w := binary.BigEndian.Uint32(p)
		label, p = w>>12, p[4:]
		if w&0x100 != 0 { // bottom of stack
			break
		}
	}
	switch {
	case label == 0:
		return decodeNet(etherIPv4, p, cut, s, f, depth)
	case label == 2:
		return decodeNet(etherIPv6, p, cut, s, f, depth)
	case len(p) == 0:
		return bad(s, tunMPLS)
	}
	switch p[0] >> 4 {
	case 4, 6:
		return decodeNet(0, p, cut, s, f, depth)
	case 0:
		if len(p) < 4 {
			return bad(s, tunMPLS)
		}
		if depth >= maxEncap {
			s.why = whyTooDeep
			return decNotTCP
		}
		return decodeEther(p[4:], cut, s, f, depth+1)
	}
	s.why = whyMPLSPayload
	return decNotIP
}
