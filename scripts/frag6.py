#!/usr/bin/python3
"""frag6.py IN OUT: fragment the IPv6 packets of a real capture with scapy.

Every IPv6 packet whose payload exceeds 1232 bytes is cut with scapy's
fragment6() into fragments that fit an IPv6 minimum-MTU link (1280 bytes),
as a source host on such a path does (IPv6 routers never fragment); the
fragments keep the packet's Ethernet header and timestamp. Everything else
is copied as it is. Needs python3-scapy (Debian).
"""
import sys

from scapy.all import IPv6, IPv6ExtHdrFragment, Ether, PcapReader, PcapWriter, fragment6

src, dst = sys.argv[1], sys.argv[2]
out = PcapWriter(dst, linktype=1, sync=True)
ident = 0x5000
for pkt in PcapReader(src):
    if IPv6 in pkt and len(pkt[IPv6].payload) > 1232:
        ident += 1
        orig = pkt[IPv6]
        # The fragment header goes right after the IPv6 header (there are
        # no extension headers in these captures); scapy fills in the
        # next-header and length fields.
        ip = IPv6(src=orig.src, dst=orig.dst, tc=orig.tc, fl=orig.fl, hlim=orig.hlim) / IPv6ExtHdrFragment(id=ident) / orig.payload
        for frag in fragment6(ip, 1280):
            f = Ether(src=pkt[Ether].src, dst=pkt[Ether].dst) / frag
            f.time = pkt.time
            out.write(f)
        continue
    out.write(pkt)
out.close()
