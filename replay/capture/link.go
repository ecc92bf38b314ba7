package capture

import "encoding/binary"

// More link types: wireless monitor captures (802.11 behind radiotap,
// Prism, AVS or PPI headers), Linux's NFLOG, IP over InfiniBand, ARCNET,
// BSD's pflog and enc, Solaris ipnet, ATM LLC, PPPoE without Ethernet and
// a bare MPLS stack. Each header is read as its LINKTYPE page on
// tcpdump.org and Wireshark's dissector read it; docs/capture.md lists
// them.

const (
	linkARCNET        = 7
	linkPPPEther      = 51
	linkATMRFC1483    = 100
	linkIEEE80211     = 105
	linkEnc           = 109
	linkPFLog         = 117
	linkPrism         = 119
	linkRadiotap      = 127
	linkARCNETLinux   = 129
	linkAVS           = 163
	linkPPI           = 192
	linkMPLS          = 219
	linkIPNet         = 226
	linkNFLOG         = 239
	linkIPoIB         = 242
	arphrdNetlink     = 824
	arphrdIEEE80211   = 801
	arphrdPrism       = 802
	arphrdRadiotap    = 803
	sllProto8022      = 0x0004 // LINUX_SLL_P_802_2: an 802.2 LLC frame
	afInet, afInet6   = 2, 10
	nflogPayload      = 9 // NFULA_PAYLOAD
	arcnetIP1201      = 0xD4
	arcnetIP1051      = 0xF0
	arcnetIPv6        = 0xC4
	arcnetARP1051     = 0xF1
	arcnetDiagnose    = 0x80
	arcnetBACnet      = 0xCD
	radiotapFlagFCS   = 0x10
	radiotapFlagBadFC = 0x40
)

// decodeMoreLinks is decodeLink for the link types of this file.
func decodeMoreLinks(lt int, data []byte, s *segment) ([]byte, uint16, bool) {
	switch lt {
	case linkIEEE80211, linkRadiotap, linkPrism, linkAVS, linkPPI:
		return wifiLink(lt, data, s)
	case linkNFLOG:
		return nflog(data, s)
	case linkIPoIB:
		return ipoib(data)
	case linkARCNETLinux:
		return arcnet(data, true, s)
	case linkARCNET:
		return arcnet(data, false, s)
	case linkPPPEther:
		return untag(data, etherPPPoE)
	case linkATMRFC1483:
		return llc(data, s)
	case linkMPLS:
		return data, etherMPLS, true
	case linkEnc:
		// OpenBSD enc(4): address family (host order), SPI, flags.
		if len(data) < 12 {
			return nil, 0, false
		}
		return data[12:], 0, true
	case linkPFLog:
		// pflog: the header's length (padded to 4 bytes) comes first.
		if len(data) < 4 {
			return nil, 0, false
		}
		n := (int(data[0]) + 3) &^ 3
		if n < 4 || n > len(data) {
			return nil, 0, false
		}
		return data[n:], 0, true
	case linkIPNet:
		// Solaris ipnet: a 24-byte header; the IP version decides.
		if len(data) < 24 {
			return nil, 0, false
		}
		return data[24:], 0, true
	}
	s.why, s.arg = whyLinkType, uint32(lt)
	return nil, 0, false
}

// wifiLink strips the monitor-mode headers of the 802.11 link types.
func wifiLink(lt int, data []byte, s *segment) ([]byte, uint16, bool) {
	switch lt {
	case linkIEEE80211:
		return wifi(data, false, s)
	case linkRadiotap:
		return radiotap(data, s)
	case linkPrism:
		// A fixed 144-byte Prism monitor header (Wireshark reads the
		// length at offset 4, which is always 144).
		if len(data) < 8 {
			return nil, 0, false
		}
		n := int(binary.LittleEndian.Uint32(data[4:8]))
		if n < 8 || n > len(data) {
			return nil, 0, false
		}
		return wifi(data[n:], false, s)
	case linkAVS:
		// AVS: version, then the header length, both big-endian.
		if len(data) < 8 {
			return nil, 0, false
		}
		n := int(binary.BigEndian.Uint32(data[4:8]))
		if n < 8 || n > len(data) {
			return nil, 0, false
		}
		return wifi(data[n:], false, s)
	case linkPPI:
		// Per-Packet Information: version, flags, length and the link
		// type of what follows, little-endian.
		if len(data) < 8 {
			return nil, 0, false
		}
		n, inner := int(binary.LittleEndian.Uint16(data[2:4])), int(binary.LittleEndian.Uint32(data[4:8]))
		if n < 8 || n > len(data) {
			return nil, 0, false
		}
		switch inner {
		case linkIEEE80211:
			return wifi(data[n:], false, s)
		case linkEthernet:
			return decodeLink(linkEthernet, data[n:], s)
		}
		s.why, s.arg = whyLinkType, uint32(inner)
		return nil, 0, false
	}
	return wifi(data, false, s)
}

// cooked decodes the payload of a Linux cooked capture (LINUX_SLL and
// LINUX_SLL2) by its ARPHRD type and protocol: mostly an ethertype, but an
// 802.2 LLC frame, a netlink message, or an 802.11 frame on a monitor
// interface captured with `-i any` are not.
func cooked(hatype, proto uint16, data []byte, s *segment) ([]byte, uint16, bool) {
	switch hatype {
	case arphrdRadiotap:
		return radiotap(data, s)
	case arphrdIEEE80211:
		return wifi(data, false, s)
	case arphrdPrism:
		return decodeMoreLinks(linkPrism, data, s)
	case arphrdNetlink:
		s.why, s.arg = whyCooked, uint32(hatype)<<16|uint32(proto)
		return nil, 0, false
	}
	if proto < 0x0600 { // not an ethertype: a Linux ETH_P_* value below 1536
		if proto == 0 {
			return data, 0, true // unknown: let the IP version decide, as before
		}
		if proto == sllProto8022 {
			return llc(data, s)
		}
		s.why, s.arg = whyCooked, uint32(hatype)<<16|uint32(proto)
		return nil, 0, false
	}
	return untag(data, proto)
}

// llc decodes an 802.2 LLC header: SNAP (AA AA 03, OUI, ethertype) or
// the IP SAP (06).
func llc(data []byte, s *segment) ([]byte, uint16, bool) {
	if len(data) < 3 {
		return nil, 0, false
	}
	switch {
	case data[0] == 0xAA && data[1] == 0xAA && data[2] == 0x03:
		if len(data) < 8 {
			return nil, 0, false
		}
		et := binary.BigEndian.Uint16(data[6:8])
		return untag(data[8:], et)
	case data[0] == 0x06 && data[1] == 0x06:
		return data[3:], etherIPv4, true
	}
	s.why, s.arg = whyLLC, uint32(data[0])<<16
	return nil, 0, false
}

// radiotap strips a radiotap header (its length at offset 2,
// little-endian) and reads its Flags field: the frame ends in an FCS, or
// failed the FCS check.
func radiotap(data []byte, s *segment) ([]byte, uint16, bool) {
	if len(data) < 8 || data[0] != 0 {
		return nil, 0, false
	}
	n := int(binary.LittleEndian.Uint16(data[2:4]))
	if n < 8 || n > len(data) {
		return nil, 0, false
	}
	present := binary.LittleEndian.Uint32(data[4:8])
	fcs := false
	if present&0x2 != 0 { // Flags
		// Fields start after the presence words (bit 31: another word
		// follows); TSFT (bit 0) comes first, 8 bytes aligned to 8.
		off := 8
		for w := present; w&0x80000000 != 0; off += 4 {
			if off+4 > n {
				return nil, 0, false
			}
			w = binary.LittleEndian.Uint32(data[off : off+4])
		}
		if present&0x1 != 0 {
			off = (off+7)&^7 + 8
		}
		if off >= n {
			return nil, 0, false
		}
		flags := data[off]
		if flags&radiotapFlagBadFC != 0 {
			s.why = whyWiFiBadFCS
			return nil, 0, false
		}
		fcs = flags&radiotapFlagFCS != 0
	}
	return wifi(data[n:], fcs, s)
}

// wifi decodes an 802.11 frame down to its LLC payload: data frames only
// (management and control frames carry no IP), QoS data with its
// control field (and HT control when Order is set), four-address frames,
// the FCS stripped when the radiotap flags say there is one. Encrypted
// frames cannot be read.
func wifi(data []byte, fcs bool, s *segment) ([]byte, uint16, bool) {
	if fcs {
		if len(data) < 4 {
			return nil, 0, false
		}
		data = data[:len(data)-4]
	}
	if len(data) < 24 {
		return nil, 0, false
	}
	fc0, fc1 := data[0], data[1]
	typ, sub := (fc0>>2)&3, fc0>>4
	if typ != 2 || sub&0x4 != 0 { // not data, or a null-function (no payload) subtype
		s.why = whyWiFiNoData
		return nil, 0, false
	}
	n := 24
	if fc1&0x03 == 0x03 { // to and from DS: a fourth address
		n += 6
	}
	if sub&0x8 != 0 { // QoS data
		if len(data) < n+2 {
			return nil, 0, false
		}
		if data[n]&0x80 != 0 {
			s.why = whyWiFiAMSDU
			return nil, 0, false
		}
		n += 2
		if fc1&0x80 != 0 { // Order: an HT control field
			n += 4
		}
	}
	if fc1&0x40 != 0 {
		s.why = whyWiFiProtected
		return nil, 0, false
	}
	if len(data) < n {
		return nil, 0, false
	}
	return llc(data[n:], s)
}

// nflog decodes a Linux NFLOG record: family, version, resource ID, then
// TLVs (length and type in the capturing host's byte order, padded to 4
// bytes); the payload TLV holds the packet from its network header.
func nflog(data []byte, s *segment) ([]byte, uint16, bool) {
	if len(data) < 4 || data[1] != 0 {
		return nil, 0, false
	}
	var et uint16
	switch data[0] {
	case afInet:
		et = etherIPv4
	case afInet6:
		et = etherIPv6
	}
	p := data[4:]
	for len(p) >= 4 {
		// The type is small (< 256): its byte order tells the host's.
		var l, t int
		if binary.LittleEndian.Uint16(p[2:4]) < 0x100 {
			l, t = int(binary.LittleEndian.Uint16(p[0:2])), int(binary.LittleEndian.Uint16(p[2:4]))
		} else {
			l, t = int(binary.BigEndian.Uint16(p[0:2])), int(binary.BigEndian.Uint16(p[2:4]))
		}
		if l < 4 || l > len(p) {
			return nil, 0, false
		}
		if t&0x7FFF == nflogPayload {
			return p[4:l], et, true
		}
		p = p[min((l+3)&^3, len(p)):]
	}
	s.why = whyNFLOGNoPayload
	return nil, 0, false
}

// ipoib decodes IP over InfiniBand (RFC 4391: a 4-byte type and reserved
// header). Linux puts the 20-byte destination address before it, and
// Wireshark reads LINKTYPE_IPOIB with a 40-byte pseudo-header (GRH or
// zeros, destination address): the header is taken at the first of the
// offsets 0, 20 and 40 where an IP type, zero reserved bytes and a
// matching IP version line up.
func ipoib(data []byte) ([]byte, uint16, bool) {
	for _, off := range [...]int{0, 20, 40} {
		if len(data) < off+5 {
			break
		}
		et := binary.BigEndian.Uint16(data[off : off+2])
		v := data[off+4] >> 4
		if data[off+2] == 0 && data[off+3] == 0 && (et == etherIPv4 && v == 4 || et == etherIPv6 && v == 6) {
			return data[off+4:], et, true
		}
	}
	return nil, 0, false
}

// arcnet decodes an ARCNET frame (Linux: source, destination, 2-byte
// offset; BSD: no offset, maybe an exception header), then the protocol
// ID and, for RFC 1201 protocols, the split flag and sequence number.
func arcnet(data []byte, linux bool, s *segment) ([]byte, uint16, bool) {
	n := 2
	if linux {
		n = 4
	}
	if len(data) < n+1 {
		return nil, 0, false
	}
	id := data[n]
	n++
	switch id {
	case arcnetIP1051, arcnetARP1051, arcnetDiagnose, arcnetBACnet:
	default:
		if !linux && len(data) > n && data[n] == 0xFF {
			n += 4 // exception frame: flag, padding, protocol ID again
		}
		n += 3 // split flag, sequence number
	}
	if len(data) < n {
		return nil, 0, false
	}
	switch id {
	case arcnetIP1201, arcnetIP1051:
		return data[n:], etherIPv4, true
	case arcnetIPv6:
		return data[n:], etherIPv6, true
	}
	s.why, s.arg = whyARCNET, uint32(id)
	return nil, 0, false
}
