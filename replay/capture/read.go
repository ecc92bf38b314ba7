package capture

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/netip"
	"os"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/halfopen/rehearse"
)

// ReadFile reads the capture at path ("-" reads standard input) and
// returns its requests in capture order. On a fault in the file it returns
// the requests read before it together with the error.
func ReadFile(ctx context.Context, path string, opt Options) ([]*Request, *Stats, error) {
	var out []*Request
	st, err := ExtractFile(ctx, path, opt, func(req *Request) error {
		out = append(out, req)
		return nil
	})
	return out, st, err
}

// ExtractFile is Extract on the capture at path ("-" reads standard
// input).
func ExtractFile(ctx context.Context, path string, opt Options, fn func(*Request) error) (*Stats, error) {
	if path == "-" {
		return Extract(ctx, os.Stdin, opt, fn)
	}
	f, err := OpenFile(path)
	if err != nil {
		return newStats(), fmt.Errorf("capture: %w: %w", rehearse.ErrInvalid, err)
	}
	defer f.Close()
	return Extract(ctx, f, opt, fn)
}

// ReadAll reads a capture from r and returns its requests in capture
// order. On a fault in the capture it returns the requests read before it
// together with the error.
func ReadAll(ctx context.Context, r io.Reader, opt Options) ([]*Request, *Stats, error) {
	var out []*Request
	st, err := Extract(ctx, r, opt, func(req *Request) error {
		out = append(out, req)
		return nil
	})
	return out, st, err
}

// Extract streams the requests of a capture to fn, in capture order (by
// the packet carrying each request's first byte), in memory bounded by the
// open flows and the requests in progress. An error from fn stops the
// read and is returned as is. On a fault in the capture, the requests
// recovered before it (including incomplete ones in progress) are still
// passed to fn, and the error, an *Error wrapping rehearse.ErrInvalid, is
// returned with the stats.
func Extract(ctx context.Context, r io.Reader, opt Options, fn func(*Request) error) (*Stats, error) {
	x := &extractor{
		ctx:   ctx,
		opt:   opt.withDefaults(),
		st:    newStats(),
		fn:    fn,
		flows: map[flowKey]*conn{},
	}
	err := x.run(r)
	x.flushSkips()
	// Whatever happened, flush what the flows hold.
	if x.err == nil {
		x.flushFragments()
		for _, c := range x.flows {
			x.closeConn(c, "capture ended mid-request")
		}
		x.release(math.MaxInt64)
	}
	if x.err != nil {
		return x.st, x.err
	}
	return x.st, err
}

// extractor is the state of one read.
type extractor struct {
	ctx    context.Context
	opt    Options
	st     *Stats
	fn     func(*Request) error
	err    error // from fn or ctx: stop
	flows  map[flowKey]*conn
	pkt    int64     // number of the current packet, from 1
	now    time.Time // its timestamp
	done   reqHeap   // complete requests waiting for earlier ones
	defrag defragger
	seq    int64 // completion order, to keep the heap stable
	index  int
	sweep  time.Time
	// skips counts why packets did not reach TCP (skip.go).
	skips map[skipKey]int64
	// hrd and hbr are reused by every http.ReadRequest call.
	hrd bytes.Reader
	hbr *bufio.Reader
}

// readRequest runs http.ReadRequest over b, a whole message or header
// block, with a reader reused across calls.
func (x *extractor) readRequest(b []byte) (*http.Request, error) {
	x.hrd.Reset(b)
	if x.hbr == nil {
		x.hbr = bufio.NewReaderSize(&x.hrd, 4096)
	} else {
		x.hbr.Reset(&x.hrd)
	}
	return http.ReadRequest(x.hbr)
}

func (x *extractor) run(r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<20)
	magic, err := br.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) && len(magic) == 0 {
			return &Error{Err: fmt.Errorf("%w: the input is empty", ErrFormat)}
		}
		return &Error{Err: fmt.Errorf("%w: %d bytes is too short for a file header", ErrTruncated, len(magic))}
	}
	if magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return &Error{Err: fmt.Errorf("%w: gzip: %w", ErrFormat, err)}
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<20)
		if magic, err = br.Peek(4); err != nil {
			return &Error{Err: fmt.Errorf("%w: gzip-compressed input of %d bytes", ErrTruncated, len(magic))}
		}
		x.st.Format = "+gzip"
	}
	le := binary.LittleEndian.Uint32(magic)
	switch le {
	case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1:
		x.st.Format = "pcap" + x.st.Format
		var order binary.ByteOrder = binary.LittleEndian
		if le == 0xd4c3b2a1 || le == 0x4d3cb2a1 {
			order = binary.BigEndian
		}
		in, err := pcapHeader(br, order)
		if err != nil {
			return &Error{Err: err}
		}
		pr, err := pcapgo.NewReader(in)
		if err != nil {
			return &Error{Err: headerErr(err)}
		}
		lt := int(pr.LinkType())
		if !supportedLink(lt) {
			return &Error{Err: fmt.Errorf("%w: %s (%d); supported: %s", ErrLinkType, LinkTypeName(lt), lt, supportedLinks)}
		}
		return x.loop(func() ([]byte, int, int, time.Time, error) {
			data, ci, err := pr.ZeroCopyReadPacketData()
			return data, lt, ci.Length, ci.Timestamp, err
		})
	case 0x0a0d0d0a:
		x.st.Format = "pcapng" + x.st.Format
		in, err := pcapngHeader(br)
		if err != nil {
			return &Error{Err: err}
		}
		nr, err := pcapgo.NewNgReader(in, pcapgo.NgReaderOptions{WantMixedLinkType: true, SkipUnknownVersion: true})
		if err != nil {
			return &Error{Err: headerErr(err)}
		}
		return x.loop(func() ([]byte, int, int, time.Time, error) {
			data, ci, err := nr.ZeroCopyReadPacketData()
			lt := -1
			if err == nil && len(ci.AncillaryData) > 0 {
				if l, ok := ci.AncillaryData[0].(layers.LinkType); ok {
					lt = int(l)
				}
			}
			return data, lt, ci.Length, ci.Timestamp, err
		})
	case 0xa1b2cd34, 0x34cdb2a1:
		return &Error{Err: fmt.Errorf("%w: the modified (Kuznetzov) pcap format is not supported; convert it with `editcap -F pcap IN OUT`", ErrFormat)}
	}
	if what := otherFormat(br); what != "" {
		return &Error{Err: fmt.Errorf("%w: %s", ErrFormat, what)}
	}
	return &Error{Err: fmt.Errorf("%w: unknown magic number %#08x", ErrFormat, binary.BigEndian.Uint32(magic))}
}

// headerErr classifies an error from reading a file header.
func headerErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the file header is cut short", ErrTruncated)
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}

// loop reads packets until the end of the input.
func (x *extractor) loop(next func() ([]byte, int, int, time.Time, error)) error {
	var (
		s segment
		f fragInfo
	)
	for {
		data, lt, origLen, ts, err := next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return &Error{Packet: x.pkt + 1, Err: fmt.Errorf("%w: the record is cut short (the capture was probably copied while being written)", ErrTruncated)}
			}
			return &Error{Packet: x.pkt + 1, Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}
		}
		x.pkt++
		if x.pkt&4095 == 0 {
			if err := x.ctx.Err(); err != nil {
				x.err = err
				return err
			}
			x.housekeeping()
		}
		if x.err != nil {
			return x.err
		}
		x.now = ts
		x.st.Packets++
		x.st.Bytes += int64(len(data))
		if !supportedLink(lt) {
			x.st.UnknownLink++
			x.st.LinkTypes[LinkTypeName(lt)]++
			s.why, s.arg = whyLinkType, uint32(lt)
			x.countSkip(&s)
			continue
		}
		x.st.LinkTypes[LinkTypeName(lt)]++
		r := decodePacket(lt, data, origLen, &s, &f)
		if s.tun != 0 {
			x.countTunnels(s.tun)
		}
		if s.why != 0 && r != decTCP && r != decFragment {
			x.countSkip(&s)
		}
		switch r {
		case decTCP:
			x.st.Segments++
			x.segment(&s)
		case decNotIP:
			x.st.NotIP++
		case decNotTCP:
			x.st.NotTCP++
		case decFragment:
			if f.ifHeld && !x.defrag.holds(f.key) {
				// A later fragment of a UDP datagram whose first
				// fragment was not a tunnel's (or was not seen).
				x.st.NotTCP++
				s.why, s.arg = whyFragment, 17
				x.countSkip(&s)
				break
			}
			x.st.Fragments++
			x.reassembled(&f, &s)
		case decMalformed:
			x.st.Malformed++
		}
	}
}

// reassembled passes a fragment to the defragmenter and, when it
// completes a datagram, the datagram's TCP segment to the reassembly.
func (x *extractor) reassembled(f *fragInfo, s *segment) {
	payload, next, n := x.fragment(f)
	if n == 0 {
		return
	}
	s.src = netip.AddrPortFrom(f.key.src, 0)
	s.dst = netip.AddrPortFrom(f.key.dst, 0)
	r := decodeDatagram(f.key, next, payload, s)
	if s.tun != 0 {
		x.countTunnels(s.tun)
	}
	if r != decTCP {
		x.dropFragments(int64(n), fragNotTCP)
		return
	}
	x.st.Segments++
	x.segment(s)
}

// housekeeping flushes idle flows and releases requests no longer waiting
// for earlier ones.
func (x *extractor) housekeeping() {
	x.expireFragments()
	if x.now.Sub(x.sweep) > x.opt.IdleTimeout/4 {
		x.sweep = x.now
		x.sweepIdle()
	}
	w := int64(math.MaxInt64)
	for _, c := range x.flows {
		for d := range c.h {
			if p := c.h[d].parser; p != nil {
				w = min(w, p.pending())
			}
		}
	}
	x.release(w)
}

// maxHeld bounds the requests held back for ordering; beyond it they are
// released even if an earlier request is still in progress.
const maxHeld = 1 << 14

// complete queues a finished (or incomplete) request for delivery.
func (x *extractor) complete(r *Request) {
	x.seq++
	heap.Push(&x.done, held{r, x.seq})
	if len(x.done) > maxHeld {
		x.release(x.done[0].r.pkt + 1)
	}
}

// release delivers the held requests that started before packet w.
func (x *extractor) release(w int64) {
	for len(x.done) > 0 && x.done[0].r.pkt < w && x.err == nil {
		r := heap.Pop(&x.done).(held).r
		x.deliverRequest(r)
	}
}

// deliverRequest counts, filters, rewrites, redacts and hands over.
func (x *extractor) deliverRequest(r *Request) {
	st := x.st
	st.Requests++
	if r.Incomplete {
		st.Incomplete++
		x.warnAt(r.pkt, r.Flow, fmt.Sprintf("incomplete request %s %s: %s", r.Method, r.Target, r.Problem))
		if x.opt.SkipIncomplete {
			return
		}
	}
	if !x.opt.Filter.Match(r) {
		st.Filtered++
		return
	}
	// r is the extractor's own: change it in place. Redaction hides what
	// the capture carried and comes first: the rewrite is what the user
	// asked to send (a test token in rewrite.set), so it is applied to the
	// redacted request and sent as written. Whatever writes a request
	// down redacts it there (the journal never records headers).
	if !x.opt.KeepSecrets {
		redactRequest(r, x.opt.RedactHeaders)
	}
	if !x.opt.Rewrite.IsZero() {
		x.opt.Rewrite.apply(r)
	}
	r.Index = x.index
	x.index++
	st.Delivered++
	st.Methods[r.Method]++
	if r.TargetError != "" {
		st.RawTargets++
	}
	if err := x.fn(r); err != nil {
		x.err = err
	}
}

func (x *extractor) warn(f Flow, msg string) { x.warnAt(x.pkt, f, msg) }

func (x *extractor) warnAt(pkt int64, f Flow, msg string) {
	w := Warning{Packet: pkt, Msg: msg}
	if f.Src.IsValid() {
		w.Flow = f.String()
	}
	x.st.warn(x.opt.MaxWarnings, w)
}

// held is a complete request waiting for delivery.
type held struct {
	r   *Request
	seq int64
}

// reqHeap orders held requests by first packet, then completion.
type reqHeap []held

func (h reqHeap) Len() int { return len(h) }
func (h reqHeap) Less(i, j int) bool {
	if h[i].r.pkt != h[j].r.pkt {
		return h[i].r.pkt < h[j].r.pkt
	}
	return h[i].seq < h[j].seq
}
func (h reqHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *reqHeap) Push(v any)   { *h = append(*h, v.(held)) }
func (h *reqHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	old[len(old)-1] = held{}
	*h = old[:len(old)-1]
	return v
}
