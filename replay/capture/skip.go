package capture

import (
	"fmt"
	"math/bits"
)

// Why packets did not reach TCP, in words. The decoder leaves a cause and
// an argument in the segment (an ethertype, a protocol number, a link
// type); the extractor counts them by (cause, argument) and turns them
// into words once, at the end, so that a capture of a million UDP packets
// formats one string, not a million. Stats.Skipped holds the words.

// skipWhy is a cause; 0 is none.
type skipWhy uint8

const (
	whyNone           skipWhy = iota
	whyLinkType               // arg: the link type
	whyEthertype              // arg: the ethertype
	whyIPProto                // arg: the IP protocol
	whyFragment               // arg: the IP protocol of the fragment
	whyTooDeep                // more than maxEncap encapsulations
	whyBadTunnel              // arg: tunnel kind bit
	whyGREProto               // arg: GRE protocol type
	whyGREVersion             // arg: GRE version
	whyGPENext                // arg: VXLAN-GPE next protocol
	whyERSPANFrame            // arg: ERSPAN III frame type
	whyGTPMessage             // arg: GTP-U message type
	whyMPLSPayload            // the bottom of an MPLS stack holds neither IP nor a pseudowire
	whyWiFiNoData             // 802.11 management, control and null-function frames
	whyWiFiProtected          // 802.11 encrypted data
	whyWiFiBadFCS             // radiotap says the FCS check failed
	whyWiFiAMSDU              // A-MSDU aggregates
	whyLLC                    // arg: SNAP ethertype or LLC DSAP<<8 (not IP)
	whyNFLOGNoPayload         // NFLOG record without a packet
	whyCooked                 // arg: ARPHRD<<16 | protocol of a cooked packet that is not IP
	whyARCNET                 // arg: ARCNET protocol ID
	whyL2TP                   // arg: 0 for a control message, else the L2TP version
)

// skipKey is a cause with its argument.
type skipKey struct {
	why skipWhy
	arg uint32
}

// words says a cause in words, as Stats.Skipped keys.
func (k skipKey) words() string {
	a := k.arg
	switch k.why {
	case whyLinkType:
		return fmt.Sprintf("link type %s (%d) not decoded", LinkTypeName(int(a)), a)
	case whyEthertype:
		switch a {
		case etherPPPOther:
			return "PPP frames not carrying IP (link control, compression, authentication)"
		case etherLLCOther:
			return "802.3 frames with an 802.2 LLC header not carrying IP (STP, CDP, …)"
		case 0:
			return "not IP: no protocol field, and the first byte is not an IPv4 or IPv6 header's"
		}
		if n := etherNames[uint16(a)]; n != "" {
			return fmt.Sprintf("not IP: %s (ethertype %#04x)", n, a)
		}
		return fmt.Sprintf("not IP: ethertype %#04x", a)
	case whyIPProto:
		if n := ipProtoNames[uint8(a)]; n != "" {
			return fmt.Sprintf("not TCP: %s (IP protocol %d)", n, a)
		}
		return fmt.Sprintf("not TCP: IP protocol %d", a)
	case whyFragment:
		if a == 17 {
			return "IP fragments of UDP datagrams not to a tunnel's port (only TCP and tunnels are reassembled)"
		}
		if n := ipProtoNames[uint8(a)]; n != "" {
			return fmt.Sprintf("IP fragments of %s packets (only TCP and tunnels are reassembled)", n)
		}
		return fmt.Sprintf("IP fragments of IP protocol %d (only TCP and tunnels are reassembled)", a)
	case whyTooDeep:
		return fmt.Sprintf("tunnels nested more than %d deep (not followed)", maxEncap)
	case whyBadTunnel:
		return fmt.Sprintf("%s header malformed or cut short", tunName(uint16(a)))
	case whyGREProto:
		if n := etherNames[uint16(a)]; n != "" {
			return fmt.Sprintf("GRE carrying %s (protocol type %#04x), not followed", n, a)
		}
		return fmt.Sprintf("GRE carrying protocol type %#04x, not followed", a)
	case whyGREVersion:
		return fmt.Sprintf("GRE version %d, not followed", a)
	case whyGPENext:
		return fmt.Sprintf("VXLAN-GPE carrying next protocol %d, not followed", a)
	case whyERSPANFrame:
		return fmt.Sprintf("ERSPAN type III frame type %d, not followed", a)
	case whyGTPMessage:
		return fmt.Sprintf("GTP-U signalling (message type %d: echo, error indication, end marker), not user data", a)
	case whyMPLSPayload:
		return "MPLS carrying neither IP nor an Ethernet pseudowire with control word"
	case whyWiFiNoData:
		return "802.11 frames without data (management, control, null function)"
	case whyWiFiProtected:
		return "802.11 encrypted data frames (WEP/WPA: not decrypted)"
	case whyWiFiBadFCS:
		return "802.11 frames that failed the FCS check (radiotap flag)"
	case whyWiFiAMSDU:
		return "802.11 A-MSDU aggregates (not read)"
	case whyLLC:
		if a>>16 == 0xAA {
			return fmt.Sprintf("802.2 LLC/SNAP not carrying IP (ethertype %#04x)", a&0xFFFF)
		}
		return fmt.Sprintf("802.2 LLC not carrying IP (DSAP %#02x)", a>>16)
	case whyNFLOGNoPayload:
		return "NFLOG records without a packet"
	case whyCooked:
		hatype, proto := a>>16, a&0xFFFF
		switch hatype {
		case 824:
			return "netlink messages (cooked capture of a netlink socket)"
		}
		if n := sllProtoNames[uint16(proto)]; n != "" {
			return fmt.Sprintf("cooked capture (LINUX_SLL) protocol %s (%#04x), not IP", n, proto)
		}
		return fmt.Sprintf("cooked capture (LINUX_SLL) of ARPHRD %d, protocol %#04x, not IP", hatype, proto)
	case whyL2TP:
		if a == 0 {
			return "L2TP control messages, not user data"
		}
		return fmt.Sprintf("L2TP version %d on UDP 1701, not followed (version 2 is)", a)
	case whyARCNET:
		return fmt.Sprintf("ARCNET protocol ID %#02x, not IP", a)
	}
	return fmt.Sprintf("cause %d (%d)", k.why, a)
}

// tunName names one tunnel kind bit.
func tunName(bit uint16) string {
	if bit == 0 {
		return "tunnel"
	}
	return tunNames[bits.TrailingZeros16(bit)]
}

// etherPPPOther is the ethertype ppp returns for PPP protocols that are not
// IP or MPLS; etherLLCOther the one untag returns for 802.3 frames whose
// LLC header is not SNAP.
const (
	etherPPPOther = 0xFFFF
	etherLLCOther = 0xFFFE
)

// etherNames names the ethertypes common in captures beside IP.
var etherNames = map[uint16]string{
	0x0806: "ARP", 0x8035: "RARP", 0x88CC: "LLDP", 0x888E: "802.1X (EAPOL)", 0x8137: "IPX", 0x9000: "Ethernet loopback",
	0x8863: "PPPoE discovery", 0x88E5: "MACsec", 0x88F7: "PTP", 0x8809: "slow protocols (LACP)", 0x0842: "Wake-on-LAN",
	0x22F0: "AVTP", 0x8892: "PROFINET", 0x88A4: "EtherCAT", 0x8906: "FCoE", 0x8914: "FCoE initialization", 0x88E1: "HomePlug AV",
	0x893A: "IEEE 1905.1", 0x88B5: "local experimental", 0x88B6: "local experimental", 0x9003: "SAS", 0x8100: "802.1Q",
	0x88BE: "ERSPAN", 0x22EB: "ERSPAN III", 0x880B: "PPP", 0x6558: "Ethernet", 0x894F: "NSH", 0x8847: "MPLS",
}

// ipProtoNames names the IP protocols common in captures beside TCP.
var ipProtoNames = map[uint8]string{
	1: "ICMP", 2: "IGMP", 4: "IPv4-in-IP", 17: "UDP", 41: "IPv6-in-IP", 47: "GRE", 50: "IPsec ESP (encrypted)", 51: "IPsec AH",
	58: "ICMPv6", 59: "IPv6 no next header", 89: "OSPF", 103: "PIM", 112: "VRRP", 132: "SCTP", 136: "UDP-Lite", 137: "MPLS-in-IP",
	6: "TCP", 33: "DCCP", 88: "EIGRP", 115: "L2TP",
}

// sllProtoNames names the protocol values of cooked captures that are not
// ethertypes (linux/if_ether.h).
var sllProtoNames = map[uint16]string{
	0x0001: "802.3 without LLC (Novell)", 0x0004: "802.2 LLC", 0x000C: "CAN", 0x000D: "CAN FD", 0x000E: "CAN XL",
	0x0019: "IEEE 802.15.4", 0x001A: "ISI (Nokia phonet)", 0x00F5: "phonet", 0x00F6: "IEEE 802.15.4 (monitor)",
}

// countSkip and countTunnels fold one packet's cause and tunnels into the
// extractor's counts; flushSkips writes them into the stats as words.
func (x *extractor) countSkip(s *segment) {
	if x.skips == nil {
		x.skips = map[skipKey]int64{}
	}
	x.skips[skipKey{s.why, s.arg}]++
}

func (x *extractor) countTunnels(t uint16) {
	for t != 0 {
		b := bits.TrailingZeros16(t)
		x.st.Tunnels[tunNames[b]]++
		t &^= 1 << b
	}
}

func (x *extractor) flushSkips() {
	for k, n := range x.skips {
		x.st.Skipped[k.words()] += n
	}
	x.skips = nil
}
