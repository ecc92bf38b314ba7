#!/usr/bin/python3
"""tunnelwrap.py encapsulates the packets of two real captures in the
tunnels and link layers the build machine's kernel cannot make (no GRE,
IPIP, SIT, ip6tnl, ERSPAN, GTP or MPLS modules; no wireless or
InfiniBand hardware), with scapy 2.5 (Debian's python3-scapy):

    python3 scripts/tunnelwrap.py DIR

reads DIR/plain4.pcap and DIR/plain6.pcap (made by tunnelcaptures.sh:
curl and a python3 server over a veth pair, recorded by tcpdump) and
writes the files below into DIR. Every inner IP packet is the captured
one byte for byte, with its timestamp; only the headers around it are
made here, alternating between the variants of each encapsulation so
that one flow crosses all of them. tshark reads every file (see
docs/capture.md for the decode options it needs).
"""
import sys

from scapy.all import (fragment, GRE, PPPoE, PPP, L2TP, IP, IPv6, UDP, Ether, Dot1Q, Dot1AD, Raw, LLC, SNAP,
                       RadioTap, Dot11, Dot11QoS, Dot11Beacon, Dot11Elt,
                       PcapWriter, rdpcap)
from scapy.contrib.erspan import ERSPAN_I, ERSPAN_II, ERSPAN_III, ERSPAN_PlatformSpecific
from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
from scapy.contrib.mpls import MPLS

d = sys.argv[1]
v4 = [(p.time, bytes(p[IP])) for p in rdpcap(d + "/plain4.pcap") if IP in p]
v6 = [(p.time, bytes(p[IPv6])) for p in rdpcap(d + "/plain6.pcap") if IPv6 in p]

MAC_A, MAC_B = "02:00:00:00:33:01", "02:00:00:00:33:02"
O4A, O4B = "10.99.0.1", "10.99.0.2"
O6A, O6B = "fd99::1", "fd99::2"


def inner(raw):
    return IP(raw) if raw[0] >> 4 == 4 else IPv6(raw)


def out4(i, proto_layer):
    # Underlay direction follows the inner packet's: even = as captured.
    return Ether(src=MAC_A, dst=MAC_B) / IP(src=O4A, dst=O4B, id=i, flags="DF") / proto_layer


def write(name, frames, linktype=1):
    w = PcapWriter(d + "/" + name, linktype=linktype, sync=True)
    for t, f in frames:
        p = Raw(bytes(f))
        p.time = t
        w.write(p)
    w.close()


# GRE over IPv4 carrying IPv4: key and sequence number on one packet in
# three, checksum on the next, neither on the third (RFC 2784/2890).
frames = []
for i, (t, raw) in enumerate(v4):
    g = [GRE(key_present=1, seqnum_present=1, key=7, seqence_number=i),
         GRE(chksum_present=1),
         GRE()][i % 3]
    g.proto = 0x0800
    frames.append((t, out4(i, g / Raw(raw))))
write("gre.pcap", frames)

# The same GRE packets with the outer IPv4 header fragmented (DF clear,
# 64-byte fragments), as a router in front of a small MTU cuts a tunnel's
# packets; the fragments of every other packet in reverse order.
frames = []
for i, (t, raw) in enumerate(v4):
    outer = IP(src=O4A, dst=O4B, id=1000 + i) / GRE(key_present=1, key=7, proto=0x0800) / Raw(raw)
    frags = fragment(outer, fragsize=64)
    if i % 2:
        frags.reverse()
    for fr in frags:
        frames.append((t, Ether(src=MAC_A, dst=MAC_B) / fr))
write("gre-frag.pcap", frames)

# Ethernet over GRE (gretap, 0x6558) over IPv6, the inner frame tagged
# 802.1Q, carrying IPv6.
frames = []
for i, (t, raw) in enumerate(v6):
    f = Ether(src=MAC_A, dst=MAC_B) / IPv6(src=O6A, dst=O6B, nh=47) / GRE(key_present=1, key=33, proto=0x6558) / \
        Ether(src="02:00:00:00:77:01", dst="02:00:00:00:77:02") / Dot1Q(vlan=77, type=0x86dd) / Raw(raw)
    frames.append((t, f))
write("gretap6.pcap", frames)

# ERSPAN type I (GRE without sequence number, no ERSPAN header), II and
# III (with and without the platform-specific subheader), mirroring
# Ethernet frames with IPv4.
frames = []
for i, (t, raw) in enumerate(v4):
    eth = Ether(src="02:00:00:00:88:01", dst="02:00:00:00:88:02", type=0x0800) / Raw(raw)
    k = i % 4
    if k == 0:
        e = GRE(proto=0x88be) / ERSPAN_I() / eth
    elif k == 1:
        e = GRE(seqnum_present=1, seqence_number=i, proto=0x88be) / ERSPAN_II(ver=1, session_id=5) / eth
    elif k == 2:
        e = GRE(seqnum_present=1, seqence_number=i, proto=0x22eb) / ERSPAN_III(session_id=6, o=0) / eth
    else:
        e = GRE(seqnum_present=1, seqence_number=i, proto=0x22eb) / ERSPAN_III(session_id=6, o=1) / ERSPAN_PlatformSpecific(platf_id=3) / eth
    frames.append((t, out4(i, e)))
write("erspan.pcap", frames)

# IPv4 in IPv4 (IPIP) and in IPv6 (4in6), alternately.
frames = []
for i, (t, raw) in enumerate(v4):
    if i % 2 == 0:
        f = Ether(src=MAC_A, dst=MAC_B) / IP(src=O4A, dst=O4B, proto=4) / Raw(raw)
    else:
        f = Ether(src=MAC_A, dst=MAC_B, type=0x86dd) / IPv6(src=O6A, dst=O6B, nh=4) / Raw(raw)
    frames.append((t, f))
write("ipip.pcap", frames)

# IPv6 in IPv4 (6in4, sit) and in IPv6 (ip6ip6), alternately.
frames = []
for i, (t, raw) in enumerate(v6):
    if i % 2 == 0:
        f = Ether(src=MAC_A, dst=MAC_B) / IP(src=O4A, dst=O4B, proto=41) / Raw(raw)
    else:
        f = Ether(src=MAC_A, dst=MAC_B, type=0x86dd) / IPv6(src=O6A, dst=O6B, nh=41) / Raw(raw)
    frames.append((t, f))
write("sit.pcap", frames)

# GTP-U (UDP 2152) carrying IPv4: plain, with a sequence number, and with
# a PDU session container extension header (5G N3), in turn.
frames = []
for i, (t, raw) in enumerate(v4):
    k = i % 3
    if k == 0:
        g = GTP_U_Header(teid=0x3301, gtp_type=255)
    elif k == 1:
        g = GTP_U_Header(teid=0x3301, gtp_type=255, S=1, seq=i)
    else:
        g = GTP_U_Header(teid=0x3301, gtp_type=255, E=1, next_ex=0x85) / GTPPDUSessionContainer(type=0, QFI=9)
    frames.append((t, out4(i, UDP(sport=2152, dport=2152) / g / Raw(raw))))
write("gtpu.pcap", frames)

# MPLS: two labels over Ethernet; the same under QinQ (802.1ad + 802.1Q);
# and an IPv4 explicit-null label alone, in turn.
frames = []
for i, (t, raw) in enumerate(v4):
    k = i % 3
    if k == 0:
        f = Ether(src=MAC_A, dst=MAC_B, type=0x8847) / MPLS(label=1001, s=0, ttl=64) / MPLS(label=2002, s=1, ttl=64) / Raw(raw)
    elif k == 1:
        f = Ether(src=MAC_A, dst=MAC_B) / Dot1AD(vlan=100) / Dot1Q(vlan=200, type=0x8847) / \
            MPLS(label=1001, s=0, ttl=64) / MPLS(label=2002, s=1, ttl=64) / Raw(raw)
    else:
        f = Ether(src=MAC_A, dst=MAC_B, type=0x8847) / MPLS(label=0, s=1, ttl=64) / Raw(raw)
    frames.append((t, f))
write("mpls.pcap", frames)

# The same GTP-U packets (plain G-PDUs) with the outer IPv4 header
# fragmented into 64-byte fragments, in order, as a router on an N3/S1-U
# path with a small MTU cuts them.
frames = []
for i, (t, raw) in enumerate(v4):
    outer = IP(src=O4A, dst=O4B, id=2000 + i) / UDP(sport=2152, dport=2152) / GTP_U_Header(teid=0x3301, gtp_type=255) / Raw(raw)
    for fr in fragment(outer, fragsize=64):
        frames.append((t, Ether(src=MAC_A, dst=MAC_B) / fr))
write("gtpu-frag.pcap", frames)

# Teredo (IPv6 over UDP 3544, RFC 4380) carrying the IPv6 exchange, an
# origin indication header on every other packet.
frames = []
for i, (t, raw) in enumerate(v6):
    head = b"\x00\x00\x0d\xd8\xf5\x77\xff\xfe" if i % 2 else b""
    frames.append((t, out4(i, UDP(sport=3544, dport=3544) / Raw(head + raw))))
write("teredo.pcap", frames)

# L2TP version 2 (UDP 1701) data messages carrying PPP IPv4: plain, and
# with the length and sequence number fields, in turn (an LNS's view of
# a broadband subscriber's session).
frames = []
for i, (t, raw) in enumerate(v4):
    l2 = L2TP(tunnel_id=33, session_id=7) if i % 2 == 0 else L2TP(hdr="length+sequence", tunnel_id=33, session_id=7, ns=i, nr=0)
    frames.append((t, out4(i, UDP(sport=1701, dport=1701) / l2 / Raw(b"\xff\x03\x00\x21" + raw))))
write("l2tp.pcap", frames)

# PPPoE sessions over Ethernet (0x8864) carrying PPP IPv4 and IPv6: the
# IPv4 exchange, then the IPv6 one.
frames = []
for t, raw in v4 + v6:
    proto = 0x0021 if raw[0] >> 4 == 4 else 0x0057
    frames.append((t, Ether(src=MAC_A, dst=MAC_B) / PPPoE(sessionid=0x33) / PPP(proto=proto) / Raw(raw)))
write("pppoe.pcap", frames)

# LINKTYPE_PPP_HDLC (50): HDLC-like framing (ff 03, protocol) and Cisco
# PPP with HDLC framing (0f 00, ethertype; RFC 1547), in turn.
frames = []
for i, (t, raw) in enumerate(v4):
    if i % 2:
        frames.append((t, b"\x0f\x00\x08\x00" + raw))
    else:
        frames.append((t, b"\xff\x03\x00\x21" + raw))
write("ppp-hdlc.pcap", frames, linktype=50)

# 802.11 monitor capture (LINKTYPE_IEEE802_11_RADIO, 127): data frames
# with LLC/SNAP, QoS data on odd packets, the FCS present (radiotap flag)
# on every third, and a beacon and an encrypted data frame between them
# (both skipped: no readable IP).
frames = []
bssid, sta, ap = "02:00:00:00:aa:00", "02:00:00:00:aa:01", "02:00:00:00:aa:02"
for i, (t, raw) in enumerate(v4):
    fcs = i % 3 == 0
    rt = RadioTap(present="Flags+Rate", Flags="FCS" if fcs else 0, Rate=108)
    if i % 2:
        w = Dot11(type=2, subtype=8, FCfield="to-DS", addr1=bssid, addr2=sta, addr3=ap) / Dot11QoS(TID=5)
    else:
        w = Dot11(type=2, subtype=0, FCfield="to-DS", addr1=bssid, addr2=sta, addr3=ap)
    f = bytes(rt / w / LLC(dsap=0xaa, ssap=0xaa, ctrl=3) / SNAP(code=0x0800) / Raw(raw))
    if fcs:
        f += b"\x00\x00\x00\x00"  # an FCS the reader must strip (not checked)
    frames.append((t, f))
    if i % 5 == 0:
        frames.append((t, RadioTap() / Dot11(type=0, subtype=8, addr1="ff:ff:ff:ff:ff:ff", addr2=bssid, addr3=bssid) /
                       Dot11Beacon() / Dot11Elt(ID="SSID", info=b"rehearse")))
        frames.append((t, RadioTap() / Dot11(type=2, subtype=0, FCfield="to-DS+protected", addr1=bssid, addr2=sta, addr3=ap) /
                       Raw(b"\x00" * 8 + b"encrypted-payload")))
write("radiotap.pcap", frames, linktype=127)

# IP over InfiniBand (LINKTYPE_IPOIB, 242) as Wireshark reads it: a
# 40-byte pseudo-header (20 zero bytes where no GRH was received, then
# the destination QPN and GID), the 4-byte type and reserved header.
frames = []
dgid = bytes.fromhex("fe800000000000000002c90300001234")
for t, raw in v4:
    frames.append((t, b"\x00" * 20 + b"\x00\x00\x00\x48" + dgid + b"\x08\x00\x00\x00" + raw))
write("ipoib.pcap", frames, linktype=242)

# Nested: VXLAN over IPv4 carrying an Ethernet frame whose IPv4 packet is
# GRE (with a key) carrying the captured IPv4 packet.
frames = []
for i, (t, raw) in enumerate(v4):
    f = out4(i, UDP(sport=40000 + i % 7, dport=4789) / Raw(b"\x08\x00\x00\x00\x00\x00\x4d\x00") /
             Ether(src="02:00:00:00:44:01", dst="02:00:00:00:44:02", type=0x0800) /
             IP(src="172.31.0.1", dst="172.31.0.2", proto=47) / GRE(key_present=1, key=99, proto=0x0800) / Raw(raw))
    frames.append((t, f))
write("nested.pcap", frames)
