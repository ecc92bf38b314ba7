package capture

import (
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// flowKey identifies a connection regardless of direction: a is the
// smaller endpoint.
type flowKey struct{ a, b netip.AddrPort }

func keyOf(src, dst netip.AddrPort) (flowKey, int) {
	if c := src.Addr().Compare(dst.Addr()); c < 0 || (c == 0 && src.Port() < dst.Port()) {
		return flowKey{src, dst}, 0
	}
	return flowKey{dst, src}, 1
}

// pend is a segment that arrived ahead of a hole.
type pend struct {
	seq  uint32
	data []byte
}

// half is one direction of a connection: its sequence space and, for the
// client's direction, the HTTP parser.
type half struct {
	src, dst netip.AddrPort
	started  bool // the sequence space is known
	syn      bool
	isn      uint32
	next     uint32 // next expected sequence number
	first    uint32 // sequence number of the first byte seen
	pending  []pend // sorted by seq
	pendLen  int
	fin      bool
	finSeq   uint32 // sequence number of the FIN
	parser   *httpParser
}

// done reports that a direction has ended and every byte before its FIN
// has been seen (a direction whose bytes are not tracked only needs the
// FIN).
func (h *half) done() bool {
	if !h.fin {
		return false
	}
	if h.parser == nil || h.parser.state == psDead || h.parser.state == psServer {
		return true
	}
	return len(h.pending) == 0 && h.next == h.finSeq
}

// conn is one TCP connection.
type conn struct {
	key      flowKey
	h        [2]half
	client   int // index of the client's half, -1 while unknown
	lastSeen time.Time
	mid      bool // counted as a mid-stream start
	requests int
	resp     *respTracker // the server's direction, once known to be HTTP
}

// seqDiff is b-a in sequence space (RFC 1982 serial arithmetic).
func seqDiff(a, b uint32) int32 { return int32(b - a) }

func (x *extractor) newConn(k flowKey) *conn {
	if len(x.flows) >= x.opt.MaxFlows {
		x.evict()
	}
	c := &conn{key: k, client: -1}
	c.h[0].src, c.h[0].dst = k.a, k.b
	c.h[1].src, c.h[1].dst = k.b, k.a
	x.flows[k] = c
	x.st.Streams++
	return c
}

// evict flushes the least recently active sixteenth of the flows.
func (x *extractor) evict() {
	all := make([]*conn, 0, len(x.flows))
	for _, c := range x.flows {
		all = append(all, c)
	}
	slices.SortFunc(all, func(a, b *conn) int { return a.lastSeen.Compare(b.lastSeen) })
	n := max(1, len(all)/16)
	for _, c := range all[:n] {
		x.st.FlushedLimit++
		x.closeConn(c, "flow flushed to stay under the flow limit mid-request")
	}
}

// sweep flushes flows idle for longer than the idle timeout.
func (x *extractor) sweepIdle() {
	for _, c := range x.flows {
		if x.now.Sub(c.lastSeen) > x.opt.IdleTimeout {
			x.st.FlushedIdle++
			x.closeConn(c, fmt.Sprintf("flow idle for more than %s mid-request", x.opt.IdleTimeout))
		}
	}
}

// segment handles one TCP segment.
func (x *extractor) segment(s *segment) {
	x.st.PayloadBytes += int64(len(s.payload))
	k, d := keyOf(s.src, s.dst)
	c := x.flows[k]
	if c == nil {
		if s.flags&tcpSYN == 0 && len(s.payload) == 0 {
			return // an ACK, FIN or RST of a connection already closed
		}
		c = x.newConn(k)
	}
	h := &c.h[d]
	if s.flags&tcpSYN != 0 {
		if h.started && !h.syn && seqDiff(s.seq+1, h.first) >= 0 && seqDiff(s.seq+1, h.first) < 1<<20 {
			// The SYN was captured after the first data (multi-queue
			// capture timestamps, or editing): same connection.
			h.syn, h.isn = true, s.seq
			if c.mid && !c.h[1-d].started {
				c.mid = false
				x.st.MidStream--
			}
		}
		if h.started && (!h.syn || h.isn != s.seq) {
			// The ports were reused for a new connection.
			x.closeConn(c, "connection replaced mid-request")
			c = x.newConn(k)
			h = &c.h[d]
		}
		if !h.started {
			h.started, h.syn, h.isn, h.next = true, true, s.seq, s.seq+1
		}
		if s.flags&tcpACK == 0 {
			c.client = d
		} else if c.client < 0 {
			c.client = 1 - d
		}
	}
	c.lastSeen = x.now
	// The peer acknowledging bytes past a hole proves they were sent and
	// received, so the capture will never hold them.
	if s.flags&tcpACK != 0 {
		o := &c.h[1-d]
		if len(o.pending) > 0 && seqDiff(o.next, s.ack) > 0 && seqDiff(o.pending[0].seq, s.ack) > 0 {
			x.fillHole(c, 1-d)
		}
	}
	if len(s.payload) > 0 || s.missing > 0 {
		x.data(c, d, s)
	}
	if s.flags&tcpFIN != 0 && !h.fin {
		h.fin, h.finSeq = true, s.seq+uint32(len(s.payload))
	}
	if s.flags&tcpRST != 0 {
		x.closeConn(c, "connection reset mid-request")
		return
	}
	if c.h[0].done() && c.h[1].done() {
		x.closeConn(c, "connection closed mid-request")
	}
}

// parserFor returns the parser of a direction, creating it on its first
// data; nil for the server's direction.
func (x *extractor) parserFor(c *conn, d int) *httpParser {
	h := &c.h[d]
	if c.client >= 0 && c.client != d {
		return nil
	}
	if h.parser == nil {
		mid := !h.syn
		if mid && !c.mid {
			c.mid = true
			x.st.MidStream++
		}
		h.parser = newParser(x, Flow{Src: h.src, Dst: h.dst}, mid)
	}
	return h.parser
}

func (x *extractor) data(c *conn, d int, s *segment) {
	h := &c.h[d]
	p := x.parserFor(c, d)
	if p == nil || p.state == psServer {
		x.serverData(c, d, s) // responses are followed, not kept
		return
	}
	if p.state == psDead {
		return // non-HTTP bytes are not kept
	}
	if !h.started {
		h.started, h.next, h.first = true, s.seq, s.seq
	}
	seq, data := s.seq, s.payload
	if s.flags&tcpSYN != 0 {
		seq++ // data on a SYN (TCP Fast Open) follows the SYN's own number
	}
	diff := seqDiff(h.next, seq)
	if diff > 0 {
		// Ahead of a hole: keep a copy until the hole is filled.
		x.st.OutOfOrder++
		i, found := slices.BinarySearchFunc(h.pending, seq, func(p pend, s uint32) int { return int(seqDiff(s, p.seq)) })
		if found {
			if len(h.pending[i].data) >= len(data) {
				x.st.Retransmitted++
				return
			}
			h.pendLen -= len(h.pending[i].data)
			h.pending[i].data = append(h.pending[i].data[:0], data...)
		} else {
			h.pending = slices.Insert(h.pending, i, pend{seq: seq, data: append([]byte(nil), data...)})
		}
		h.pendLen += len(data)
		if s.missing > 0 {
			x.cutWarning(c, s)
		}
		if h.pendLen > x.opt.MaxFlowBuffer {
			x.fillHole(c, d)
		}
		return
	}
	if diff < 0 {
		skip := int(-diff)
		if skip >= len(data) {
			x.st.Retransmitted++
			return
		}
		x.st.Overlapping++
		data = data[skip:]
	}
	x.deliver(c, d, data)
	if s.missing > 0 {
		x.cutWarning(c, s)
		x.hole(c, d, int64(s.missing))
	}
	x.drain(c, d)
}

func (x *extractor) cutWarning(c *conn, s *segment) {
	if s.fragLoss {
		return // the lost fragments were counted and warned about
	}
	x.st.Cut++
	x.warn(Flow{Src: s.src, Dst: s.dst}, fmt.Sprintf("packet cut by the snap length: %d payload bytes not captured", s.missing))
}

// deliver passes in-order bytes to the parser.
func (x *extractor) deliver(c *conn, d int, data []byte) {
	h := &c.h[d]
	h.next += uint32(len(data))
	p := h.parser
	if p == nil {
		return
	}
	switch p.feed(data) {
	case evRequest:
		if c.client < 0 {
			c.client = d
			x.dropHalf(c, 1-d)
		}
		c.requests++
		if c.requests == 1 {
			x.st.HTTPStreams++
		}
	case evServer:
		if c.client < 0 {
			c.client = 1 - d
		}
	}
}

// dropHalf forgets what a direction holds once it is known to be the
// server's.
func (x *extractor) dropHalf(c *conn, d int) {
	h := &c.h[d]
	if h.parser != nil {
		h.parser.dead()
		h.parser.state = psServer
	}
	h.pending, h.pendLen = nil, 0
}

// drain delivers pending segments the stream has caught up with.
func (x *extractor) drain(c *conn, d int) {
	h := &c.h[d]
	for len(h.pending) > 0 {
		p := h.pending[0]
		diff := seqDiff(h.next, p.seq)
		if diff > 0 {
			return
		}
		h.pending = h.pending[1:]
		h.pendLen -= len(p.data)
		skip := int(-diff)
		if skip >= len(p.data) {
			x.st.Retransmitted++
			continue
		}
		if skip > 0 {
			x.st.Overlapping++
		}
		x.deliver(c, d, p.data[skip:])
	}
	if len(h.pending) == 0 {
		h.pending = nil
	}
}

// fillHole gives up waiting for the bytes before the first pending
// segment: they are a gap.
func (x *extractor) fillHole(c *conn, d int) {
	h := &c.h[d]
	if len(h.pending) == 0 {
		return
	}
	n := int64(seqDiff(h.next, h.pending[0].seq))
	if n > 0 {
		x.hole(c, d, n)
	}
	x.drain(c, d)
}

// hole records n missing bytes at the current position of a direction.
func (x *extractor) hole(c *conn, d int, n int64) {
	h := &c.h[d]
	h.next += uint32(n)
	x.st.Gaps++
	x.st.GapBytes += n
	if h.parser != nil && h.parser.state != psDead && h.parser.state != psServer {
		x.warn(Flow{Src: h.src, Dst: h.dst}, fmt.Sprintf("%d bytes missing from the capture; resynchronising on the next request", n))
		h.parser.gap(n)
	}
}

// closeConn ends a connection: holes are given up, a request in progress
// is reported incomplete with why.
func (x *extractor) closeConn(c *conn, why string) {
	for d := range c.h {
		h := &c.h[d]
		for len(h.pending) > 0 {
			x.fillHole(c, d)
		}
		if h.parser != nil {
			h.parser.finish(why)
		}
	}
	delete(x.flows, c.key)
}
