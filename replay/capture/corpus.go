package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Corpus holds a capture's requests for replay in memory bounded by their
// bytes, compressed: a replay keeps every request for the whole run (it
// loops over them), and a million of them as *Request values with their
// strings and header slices took about 1.2 KB each. Requests are encoded
// one after the other (a few bytes of framing each) into blocks of about
// 64 KB, and each full block is compressed with zstd; traffic to one API
// repeats its header names, values and JSON keys, so a block shrinks
// several times. Each record is prefixed with its length, so that no
// per-request index is held: At skips the records before its own in the
// block (a few hundred nanoseconds). At returns a fresh *Request,
// decoding its block; the last
// few decoded blocks are cached, since a replay reads requests in order.
// A Corpus is safe for concurrent At and Len once filled; Append is not
// safe beside them.
type Corpus struct {
	blocks [][]byte // compressed, except the last one while it fills
	first  []int32  // index of the first request of each block
	cur    []byte   // the block being filled
	rec    []byte   // scratch for one record
	n      int
	bytes  int64 // encoded size of all requests
	arena  *blockArena

	mu    sync.Mutex
	cache [corpusCache]struct {
		block int
		data  []byte
	}
	clock int
}

const (
	corpusBlock = 64 << 10
	corpusCache = 8
)

// The zstd encoder and decoder are shared (EncodeAll and DecodeAll are
// safe for concurrent use), made on first use: a program that only
// streams captures does not pay for them.
var (
	zenc = sync.OnceValue(func() *zstd.Encoder {
		e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		return e
	})
	zdec = sync.OnceValue(func() *zstd.Decoder {
		d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
		return d
	})
)

// Len returns the number of requests.
func (c *Corpus) Len() int { return c.n }

// Size returns the memory the corpus holds for its requests: the
// compressed blocks, the block being filled and the index.
func (c *Corpus) Size() int64 {
	s := int64(len(c.cur) + 4*len(c.first))
	for _, b := range c.blocks {
		s += int64(cap(b))
	}
	return s
}

// EncodedBytes returns the size of the requests encoded, before
// compression.
func (c *Corpus) EncodedBytes() int64 { return c.bytes }

// Append adds a copy of r.
func (c *Corpus) Append(r *Request) {
	if len(c.cur) >= corpusBlock {
		c.seal()
	}
	if len(c.blocks) == 0 || c.cur == nil {
		c.blocks = append(c.blocks, nil)
		c.first = append(c.first, int32(c.n))
		c.cur = make([]byte, 0, corpusBlock+corpusBlock/4)
	}
	start := len(c.cur)
	c.rec = encodeRequest(c.rec[:0], r)
	c.cur = appendBytes(c.cur, c.rec)
	if cap(c.rec) > 1<<20 {
		c.rec = nil // do not keep a big body's buffer
	}
	c.bytes += int64(len(c.cur) - start)
	c.n++
}

// seal compresses the block being filled.
func (c *Corpus) seal() {
	if c.cur == nil {
		return
	}
	z := zenc().EncodeAll(c.cur, c.cur[len(c.cur):len(c.cur)])
	if len(z) > cap(c.cur)-len(c.cur) {
		z = zenc().EncodeAll(c.cur, nil) // did not fit after the block
	}
	b := c.arenaFor().alloc(len(z))
	copy(b, z)
	c.blocks[len(c.blocks)-1] = b
	c.cur = nil
}

// Done compresses the last block: call it once the corpus is filled.
func (c *Corpus) Done() { c.seal() }

// At returns request i (0 ≤ i < Len), decoded afresh: the caller may
// change it.
func (c *Corpus) At(i int) *Request {
	if i < 0 || i >= c.n {
		panic(fmt.Sprintf("capture: Corpus.At(%d) of %d requests", i, c.n))
	}
	b := c.blockOf(i)
	data, err := c.block(b)
	if err != nil {
		// The blocks are the corpus's own: this is a bug, not input.
		panic(fmt.Sprintf("capture: corpus block %d: %v", b, err))
	}
	d := &decoder{b: data}
	for range i - int(c.first[b]) {
		d.bytes()
	}
	rec := d.bytes()
	if d.err != nil {
		panic(fmt.Sprintf("capture: corpus request %d: %v", i, d.err))
	}
	r, err := decodeRequest(rec)
	if err != nil {
		panic(fmt.Sprintf("capture: corpus request %d: %v", i, err))
	}
	return r
}

// blockOf returns the block holding request i.
func (c *Corpus) blockOf(i int) int {
	lo, hi := 0, len(c.first)
	for hi-lo > 1 {
		m := (lo + hi) / 2
		if int(c.first[m]) <= i {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// block returns block b decompressed.
func (c *Corpus) block(b int) ([]byte, error) {
	if b == len(c.blocks)-1 && c.cur != nil {
		return c.cur, nil
	}
	c.mu.Lock()
	for _, e := range c.cache {
		if e.data != nil && e.block == b {
			c.mu.Unlock()
			return e.data, nil
		}
	}
	c.mu.Unlock()
	data, err := zdec().DecodeAll(c.blocks[b], make([]byte, 0, corpusBlock+corpusBlock/4))
	// The block is in the arena, which c's cleanup unmaps once c is
	// unreachable: c must stay reachable until the block is read.
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.cache[c.clock%corpusCache].block, c.cache[c.clock%corpusCache].data = b, data
	c.clock++
	c.mu.Unlock()
	return data, nil
}

// Request encoding: the fields in order, integers as varints, strings
// and byte slices length-prefixed, the flow as two netip.AddrPort
// binaries.
func encodeRequest(b []byte, r *Request) []byte {
	b = binary.AppendVarint(b, int64(r.Index))
	b = binary.AppendVarint(b, r.Time.UnixNano())
	b = appendBytes(b, mustBinary(r.Flow.Src))
	b = appendBytes(b, mustBinary(r.Flow.Dst))
	for _, s := range []string{r.Method, r.Target, r.Proto, r.Host, r.Problem, r.TargetError} {
		b = appendBytes(b, []byte(s))
	}
	var flags byte
	if r.Chunked {
		flags |= 1
	}
	if r.Incomplete {
		flags |= 2
	}
	if r.Body == nil {
		flags |= 4
	}
	if r.Time.IsZero() {
		flags |= 8
	}
	b = append(b, flags)
	for _, fs := range [][]HeaderField{r.Header, r.Trailer} {
		b = binary.AppendUvarint(b, uint64(len(fs)))
		for _, f := range fs {
			b = appendBytes(b, []byte(f.Name))
			b = appendBytes(b, []byte(f.Value))
		}
	}
	return appendBytes(b, r.Body)
}

func mustBinary(a netip.AddrPort) []byte {
	m, _ := a.MarshalBinary() // never fails
	return m
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errCorpus = errors.New("corrupt corpus record")

// decoder reads a record.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err, d.b = errCorpus, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	l, n := binary.Uvarint(d.b)
	if n <= 0 || uint64(len(d.b)-n) < l {
		d.err, d.b = errCorpus, nil
		return nil
	}
	s := d.b[n : n+int(l)]
	d.b = d.b[n+int(l):]
	return s
}

func (d *decoder) fields() []HeaderField {
	l, n := binary.Uvarint(d.b)
	if n <= 0 || l > uint64(len(d.b)) {
		d.err, d.b = errCorpus, nil
		return nil
	}
	d.b = d.b[n:]
	if l == 0 {
		return nil
	}
	out := make([]HeaderField, l)
	for i := range out {
		out[i] = HeaderField{Name: string(d.bytes()), Value: string(d.bytes())}
	}
	return out
}

func decodeRequest(b []byte) (*Request, error) {
	d := &decoder{b: b}
	r := &Request{Index: int(d.varint())}
	ts := d.varint()
	if err := r.Flow.Src.UnmarshalBinary(d.bytes()); err != nil && d.err == nil {
		d.err = err
	}
	if err := r.Flow.Dst.UnmarshalBinary(d.bytes()); err != nil && d.err == nil {
		d.err = err
	}
	for _, s := range []*string{&r.Method, &r.Target, &r.Proto, &r.Host, &r.Problem, &r.TargetError} {
		*s = string(d.bytes())
	}
	if len(d.b) == 0 {
		return nil, errCorpus
	}
	flags := d.b[0]
	d.b = d.b[1:]
	r.Chunked, r.Incomplete = flags&1 != 0, flags&2 != 0
	if flags&8 == 0 {
		r.Time = time.Unix(0, ts) // as the capture reader makes it
	}
	r.Header = d.fields()
	r.Trailer = d.fields()
	if body := d.bytes(); flags&4 == 0 {
		r.Body = append(make([]byte, 0, len(body)), body...)
	}
	return r, d.err
}
