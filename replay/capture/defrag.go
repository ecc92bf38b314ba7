package capture

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"net/netip"
	"slices"
	"time"
)

// IP defragmentation. An HTTP request whose IP packets were fragmented
// (a capture taken behind a link with a small MTU, a tunnel, a capture set
// made to test exactly that) is only visible once its fragments are put
// back together. The defragmenter holds the fragments of each datagram
// until it is whole, in memory bounded by Options.MaxFragmentBytes and in
// time by Options.FragmentTimeout (capture time), like a receiving
// kernel. Every fragment that never becomes part of a datagram is counted
// in Stats.FragmentsDropped with the reason.
//
// gopacket's ip4defrag is IPv4 only, works on decoded layers.IPv4 values
// (the decoder here is hand-written and allocation-free per packet), and
// bounds memory per datagram but not in total; this one covers IPv4 and
// IPv6 with one memory cap and one timeout.

// fragKey identifies a datagram being reassembled (RFC 791: source,
// destination, protocol, identification; RFC 8200: source, destination,
// identification). proto is IPv4's protocol (TCP, or an IP-level tunnel:
// 4, 41, 47, 137) and 44 for IPv6, so the two never collide.
type fragKey struct {
	src, dst netip.Addr
	id       uint32
	proto    uint8
}

// frag is one held fragment.
type frag struct {
	off  int
	data []byte
}

// datagram is a datagram whose fragments are being collected.
type datagram struct {
	key        fragKey
	first      time.Time // capture time of its first fragment
	firstPkt   int64
	frags      []frag // sorted by offset, never overlapping
	have       int    // payload bytes held
	total      int    // payload length, -1 until the last fragment arrives
	next       uint8  // protocol of the payload (from the first fragment for IPv6)
	held       int    // bytes charged against the memory cap
	prev, succ *datagram
}

// fragOverhead is what one held fragment costs beyond its bytes,
// charged against MaxFragmentBytes so that many tiny fragments are
// bounded too.
const fragOverhead = 64

// maxDatagram is the largest IP payload (the 16-bit length fields).
const maxDatagram = 65535

// Reasons a fragment is dropped (Stats.FragmentsDropped keys).
const (
	fragTimeout = "timed out before the datagram was complete"
	fragMemory  = "over the fragment memory limit"
	fragOverlap = "overlapping fragments (the datagram is discarded, as RFC 5722 and Linux do)"
	fragCut     = "fragment cut by the snap length"
	fragInvalid = "inconsistent fragment offsets or lengths"
	fragEnded   = "capture ended before the datagram was complete"
	fragNotTCP  = "reassembled datagram is not TCP or is malformed"
)

// defragger holds the datagrams in progress, oldest first in a list.
type defragger struct {
	m          map[fragKey]*datagram
	head, tail *datagram
	held       int
	buf        []byte // the last reassembled payload, reused
	// recent remembers the fragments of the last datagrams reassembled,
	// so that a late copy of one of them (a capture on both ports of a
	// bridge, a duplicated frame) is counted as a duplicate rather than
	// as the start of a datagram that never completes.
	recent [recentDatagrams]doneDatagram
	next   int
	seed   maphash.Seed
}

// recentDatagrams is how many reassembled datagrams are remembered.
const recentDatagrams = 64

// doneDatagram is a reassembled datagram: its key and, per fragment,
// offset, length and a hash of the bytes (IP identifications are reused,
// so the bytes must match too).
type doneDatagram struct {
	key   fragKey
	frags []fragSum
}

type fragSum struct {
	off, n int
	sum    uint64
}

// seen reports whether f is a copy of a fragment of a recently
// reassembled datagram.
func (d *defragger) seen(f *fragInfo) bool {
	for i := range d.recent {
		r := &d.recent[i]
		if r.key != f.key {
			continue
		}
		for _, s := range r.frags {
			if s.off == f.off && s.n == len(f.data) && s.sum == maphash.Bytes(d.seed, f.data) {
				return true
			}
		}
	}
	return false
}

// remember records a reassembled datagram in the ring.
func (d *defragger) remember(g *datagram) {
	r := &d.recent[d.next]
	d.next = (d.next + 1) % recentDatagrams
	r.key = g.key
	r.frags = r.frags[:0]
	for _, h := range g.frags {
		r.frags = append(r.frags, fragSum{h.off, len(h.data), maphash.Bytes(d.seed, h.data)})
	}
}

// holds reports whether a datagram is being reassembled under key.
func (d *defragger) holds(key fragKey) bool { return d.m[key] != nil }

func (d *defragger) unlink(g *datagram) {
	if g.prev != nil {
		g.prev.succ = g.succ
	} else {
		d.head = g.succ
	}
	if g.succ != nil {
		g.succ.prev = g.prev
	} else {
		d.tail = g.prev
	}
	g.prev, g.succ = nil, nil
	delete(d.m, g.key)
	d.held -= g.held
}

// fragment takes one fragment. When it completes its datagram, it returns
// the datagram's payload (valid until the next call), its protocol and
// the number of fragments it was made of (0 while incomplete).
func (x *extractor) fragment(f *fragInfo) ([]byte, uint8, int) {
	d := &x.defrag
	if d.m == nil {
		d.m = map[fragKey]*datagram{}
		d.seed = maphash.MakeSeed()
	}
	x.expireFragments()
	g := d.m[f.key]
	if g == nil && d.seen(f) {
		x.st.FragmentDuplicates++
		return nil, 0, 0
	}
	end := f.off + len(f.data) + f.cut
	if n := len(f.data) + f.cut; end > maxDatagram || (f.more && (n%8 != 0 || n == 0)) {
		x.dropFragments(1, fragInvalid)
		if g != nil {
			x.dropDatagram(g, fragInvalid)
		}
		return nil, 0, 0
	}
	if g == nil {
		g = &datagram{key: f.key, first: x.now, firstPkt: x.pkt, total: -1}
		d.m[f.key] = g
		if d.tail == nil {
			d.head, d.tail = g, g
		} else {
			g.prev, d.tail.succ, d.tail = d.tail, g, g
		}
	}
	if f.off == 0 || g.next == 0 {
		g.next = f.next
	}
	if !f.more {
		if (g.total >= 0 && g.total != end) || end < g.have {
			x.dropFragments(1, fragInvalid)
			x.dropDatagram(g, fragInvalid)
			return nil, 0, 0
		}
		g.total = end
	}
	if g.total >= 0 && end > g.total {
		x.dropFragments(1, fragInvalid)
		x.dropDatagram(g, fragInvalid)
		return nil, 0, 0
	}
	i, found := slices.BinarySearchFunc(g.frags, f.off, func(h frag, off int) int { return h.off - off })
	if found && bytes.Equal(g.frags[i].data, f.data) {
		// The same fragment again (a capture of both a bridge's ports,
		// say): nothing new.
		x.st.FragmentDuplicates++
		return nil, 0, 0
	}
	if found || (i > 0 && g.frags[i-1].off+len(g.frags[i-1].data) > f.off) || (i < len(g.frags) && g.frags[i].off < end) {
		x.dropFragments(1, fragOverlap)
		x.dropDatagram(g, fragOverlap)
		return nil, 0, 0
	}
	g.frags = slices.Insert(g.frags, i, frag{off: f.off, data: bytes.Clone(f.data)})
	g.have += len(f.data)
	g.held += len(f.data) + fragOverhead
	d.held += len(f.data) + fragOverhead
	x.st.FragmentBytesPeak = max(x.st.FragmentBytesPeak, int64(d.held))
	if f.cut > 0 {
		// The capture lacks the end of this fragment: the datagram can
		// never be rebuilt whole; what it has before the cut is salvaged.
		x.dropDatagram(g, fragCut)
		return nil, 0, 0
	}
	for d.held > x.opt.MaxFragmentBytes && d.head != nil {
		// Over the cap: give up the oldest datagrams, as a kernel does
		// under fragment memory pressure.
		x.dropDatagram(d.head, fragMemory)
		if d.m[f.key] != g {
			return nil, 0, 0
		}
	}
	if g.total < 0 || g.have != g.total {
		return nil, 0, 0
	}
	// Whole: no overlaps and have == total mean the fragments tile
	// [0, total).
	d.buf = d.buf[:0]
	for _, h := range g.frags {
		d.buf = append(d.buf, h.data...)
	}
	x.st.Reassembled++
	next, n := g.next, len(g.frags)
	d.remember(g)
	d.unlink(g)
	return d.buf, next, n
}

// expireFragments gives up the datagrams older than the timeout, oldest
// first.
func (x *extractor) expireFragments() {
	d := &x.defrag
	for g := d.head; g != nil && x.now.Sub(g.first) > x.opt.FragmentTimeout; g = d.head {
		x.dropDatagram(g, fragTimeout)
	}
}

// dropDatagram gives up a datagram in progress, counting its fragments.
// When it holds the start of a TCP segment, the bytes up to the first
// missing fragment are passed on with the rest marked missing, so that
// the request they belong to is reported incomplete rather than lost
// without a trace.
func (x *extractor) dropDatagram(g *datagram, why string) {
	x.defrag.unlink(g)
	x.dropFragments(int64(len(g.frags)), why)
	if len(g.frags) == 0 || g.frags[0].off != 0 {
		return
	}
	var prefix []byte
	for _, h := range g.frags {
		if h.off != len(prefix) {
			break
		}
		prefix = append(prefix, h.data...)
	}
	var s segment
	s.src = netip.AddrPortFrom(g.key.src, 0)
	s.dst = netip.AddrPortFrom(g.key.dst, 0)
	if decodeDatagram(g.key, g.next, prefix, &s) != decTCP {
		return
	}
	switch {
	case s.tun != 0:
		// In a tunnel, the inner IP header already said how much of
		// the segment is missing.
		x.countTunnels(s.tun)
	case g.total > len(prefix):
		s.missing = g.total - len(prefix)
	}
	s.fragLoss = true
	x.st.Segments++
	x.segment(&s)
}

// decodeDatagram decodes a reassembled IP payload: TCP, an IPv6 payload
// behind the fragment header (next says what follows it), or an IP-level
// tunnel (the key's protocol).
func decodeDatagram(key fragKey, next uint8, p []byte, s *segment) decodeResult {
	s.why, s.tun = 0, 0
	switch key.proto {
	case 6:
		return decodeTCP(p, 0, s)
	case 44:
		return decodeIPv6Payload(next, p, 0, s, nil, 0)
	}
	return decodeTunnel(key.proto, p, 0, s, nil, 0)
}

func (x *extractor) dropFragments(n int64, why string) {
	if n == 0 {
		return
	}
	if x.st.FragmentsDropped[why] == 0 {
		x.warn(Flow{}, fmt.Sprintf("IP fragments dropped: %s (further ones counted in the stats)", why))
	}
	x.st.FragmentsDropped[why] += n
}

// flushFragments gives up every datagram still in progress at the end of
// the capture.
func (x *extractor) flushFragments() {
	for x.defrag.head != nil {
		x.dropDatagram(x.defrag.head, fragEnded)
	}
}
