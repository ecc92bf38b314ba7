package journal

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The two frequent kinds, client.request and upstream.request (nearly every
// line of a journal), are encoded and decoded here by hand, without
// reflection: encoding/json spent most of a 1 M-event analysis in
// Unmarshal and a few % of a 5,000/s replay in Marshal
// (docs/benchmarks.md). The encoders write exactly the bytes
// encoding/json writes for the same value (field order, omitempty, string
// escaping with HTML escaping off, float format), which a fuzz test checks,
// so the format is unchanged. The decoders take only lines in that form
// and leave anything else (unknown or reordered fields are fine; odd
// spellings, numbers json would refuse, escapes they cannot be sure of) to
// encoding/json, so a line decodes to the same value, or fails the same
// way, whichever path reads it.

// appendEventFast appends e's journal line, newline included; ok is false
// for payloads without a hand-written encoder (or values encoding/json
// refuses), which encodeEvent then writes with encoding/json.
func appendEventFast(b []byte, e Event) ([]byte, bool) {
	switch p := e.Payload.(type) {
	case *ClientRequest:
		if math.IsNaN(p.Fraction) || math.IsInf(p.Fraction, 0) {
			return b, false
		}
		b = appendHead(b, e.T, KindClientRequest)
		return append(appendClientRequest(b, p), "}\n"...), true
	case *UpstreamRequest:
		b = appendHead(b, e.T, KindUpstreamRequest)
		return append(appendUpstreamRequest(b, p), "}\n"...), true
	}
	return b, false
}

func appendHead(b []byte, t time.Duration, k Kind) []byte {
	b = append(b, `{"t":`...)
	b = strconv.AppendInt(b, int64(t), 10)
	b = append(b, `,"kind":`...)
	return appendString(b, string(k))
}

func appendClientRequest(b []byte, p *ClientRequest) []byte {
	b = appendUint(b, `,"seq":`, p.Seq)
	b = appendStr(b, `,"method":`, p.Method)
	b = appendStr(b, `,"route":`, p.Route)
	b = appendStrOmit(b, `,"upstream":`, p.Upstream)
	b = appendInt(b, `,"scheduled":`, int64(p.Scheduled))
	b = appendIntOmit(b, `,"sent":`, int64(p.Sent))
	b = appendIntOmit(b, `,"headers_at":`, int64(p.HeadersAt))
	b = appendIntOmit(b, `,"done":`, int64(p.Done))
	b = appendIntOmit(b, `,"latency_ns":`, int64(p.Latency))
	b = appendIntOmit(b, `,"service_ns":`, int64(p.Service))
	b = appendIntOmit(b, `,"status":`, int64(p.Status))
	b = appendIntOmit(b, `,"bytes":`, p.Bytes)
	b = appendIntOmit(b, `,"expected":`, p.Expected)
	if p.Fraction != 0 {
		b = append(b, `,"fraction":`...)
		b = appendFloat(b, p.Fraction)
	}
	b = appendIntOmit(b, `,"sse_events":`, int64(p.SSEEvents))
	b = appendStr(b, `,"outcome":`, string(p.Outcome))
	b = appendBoolOmit(b, `,"fast_fail":`, p.FastFail)
	b = appendStrOmit(b, `,"fast_fail_code":`, p.FastFailCode)
	b = appendBoolOmit(b, `,"late":`, p.Late)
	b = appendStrOmit(b, `,"error":`, p.Error)
	if len(p.Resent) > 0 {
		b = append(b, `,"resent":[`...)
		for i, d := range p.Resent {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		b = append(b, ']')
	}
	b = appendBoolOmit(b, `,"idempotency_key":`, p.IdempotencyKey)
	b = appendIntOmit(b, `,"deadline_ns":`, int64(p.Deadline))
	b = appendBoolOmit(b, `,"body_stamp":`, p.BodyStamp)
	if len(p.Headers) > 0 {
		// encoding/json writes a map's keys sorted.
		b = append(b, `,"headers":{`...)
		for i, k := range slices.Sorted(maps.Keys(p.Headers)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendString(b, k), ':')
			b = appendString(b, p.Headers[k])
		}
		b = append(b, '}')
	}
	b = appendBoolOmit(b, `,"warmup":`, p.Warmup)
	return b
}

func appendUpstreamRequest(b []byte, p *UpstreamRequest) []byte {
	b = appendStr(b, `,"upstream":`, p.Upstream)
	b = appendStr(b, `,"method":`, p.Method)
	b = appendStr(b, `,"path":`, p.Path)
	if p.Seq != nil {
		b = appendUint(b, `,"seq":`, *p.Seq)
	}
	b = appendStrOmit(b, `,"seq_from":`, p.SeqFrom)
	b = appendStrOmit(b, `,"remote":`, p.Remote)
	b = appendStrOmit(b, `,"user_agent":`, p.UserAgent)
	b = appendStrOmit(b, `,"probe_tag":`, p.ProbeTag)
	b = appendBoolOmit(b, `,"health_check":`, p.HealthCheck)
	b = appendStrOmit(b, `,"fault":`, p.Fault)
	b = appendStrOmit(b, `,"fault_type":`, p.FaultType)
	b = appendInt(b, `,"in_flight":`, int64(p.InFlight))
	b = appendIntOmit(b, `,"status":`, int64(p.Status))
	b = appendIntOmit(b, `,"retry_after_ns":`, int64(p.RetryAfter))
	b = appendIntOmit(b, `,"bytes":`, p.Bytes)
	b = appendIntOmit(b, `,"headers_at":`, int64(p.HeadersAt))
	b = appendIntOmit(b, `,"done":`, int64(p.Done))
	b = appendStr(b, `,"outcome":`, string(p.Outcome))
	b = appendBoolOmit(b, `,"delivered":`, p.Delivered)
	b = appendStrOmit(b, `,"idempotency_key":`, p.IdempotencyKey)
	b = appendIntOmit(b, `,"budget_ns":`, int64(p.Budget))
	b = appendIntOmit(b, `,"prompt_tokens":`, p.PromptTokens)
	b = appendIntOmit(b, `,"completion_tokens":`, p.CompletionTokens)
	return b
}

func appendUint(b []byte, key string, v uint64) []byte {
	return strconv.AppendUint(append(b, key...), v, 10)
}

func appendInt(b []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(b, key...), v, 10)
}

func appendIntOmit(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return appendInt(b, key, v)
}

func appendStr(b []byte, key, v string) []byte { return appendString(append(b, key...), v) }

func appendStrOmit(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendStr(b, key, v)
}

func appendBoolOmit(b []byte, key string, v bool) []byte {
	if !v {
		return b
	}
	return append(append(b, key...), "true"...)
}

// appendFloat formats f as encoding/json does: the shortest
// representation, in exponent form below 1e-6 and from 1e21, with a
// one-digit negative exponent written without its leading zero.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string the way encoding/json does with
// HTML escaping off: quote, backslash and control characters escaped
// (\b \f \n \r \t by name, the rest as \u00XX), U+2028 and U+2029 escaped,
// invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// interner shares the strings a decoder reads again and again (methods,
// routes, upstreams, outcomes, remotes) instead of allocating each. A
// journal's names are few and recur line after line, so a small table
// (sets of four, chosen by length and three bytes) answers most lookups
// with a comparison or two, before the map's hashing (which had been a
// tenth of decoding).
type interner struct {
	m      map[string]string
	recent [16][4]string
	victim [16]uint8 // the way of each set the next miss replaces
}

// internSet picks b's set in interner.recent (b not empty).
func internSet(b []byte) int {
	n := len(b)
	h := uint32(n)
	h = h*31 + uint32(b[0])
	h = h*31 + uint32(b[n/2])
	h = h*31 + uint32(b[n-1])
	h ^= h >> 7
	return int(h & 15)
}

func (in *interner) str(b []byte) string {
	if in == nil || len(b) == 0 {
		return string(b)
	}
	set := internSet(b)
	ways := &in.recent[set]
	for _, s := range ways {
		if s == string(b) { // no allocation for the comparison
			return s
		}
	}
	s, ok := in.m[string(b)] // nor for the lookup
	if !ok {
		if len(in.m) >= 4096 {
			return string(b) // a journal of unique values: stop growing
		}
		if in.m == nil {
			in.m = map[string]string{}
		}
		s = string(b)
		in.m[s] = s
	}
	v := in.victim[set]
	ways[v] = s
	in.victim[set] = (v + 1) & 3
	return s
}

// scanner reads one flat JSON object written in the journal's form. Any
// surprise sets bad; the caller then leaves the line to encoding/json.
type scanner struct {
	b   []byte
	i   int
	bad bool
	in  *interner
	tmp []byte // unescaped string bytes
	sl  *slab  // where payloads are allocated; nil: one allocation each
}

// slab hands out the frequent payloads from blocks of slabBlock, one
// allocation per block instead of one (or two, with an upstream call's
// sequence number) per event: a million-event journal was two million
// small allocations. A payload kept keeps its block alive, which is as
// much memory as the events that share it.
//
// A reusing slab (DecodeTransient's, one per chunk of lines) keeps its
// blocks and hands them out again after rewind: its payloads live only
// until their chunk's events have been delivered. Without it, a
// million-event analysis made a quarter of a gigabyte of payloads that
// were garbage as soon as the collector had copied them: most of its
// collections, and the page faults of the heap they let grow.
type slab struct {
	cr    block[ClientRequest]
	ur    block[UpstreamRequest]
	seqs  block[uint64]
	reuse bool
}

// rewind makes a reusing slab's blocks free again; every payload handed
// out before is then overwritten by later ones.
func (sl *slab) rewind() {
	sl.cr.n, sl.ur.n, sl.seqs.n = 0, 0, 0
}

const slabBlock = 64

// block is one kind's blocks: next hands out the next zero value of the
// block being filled (blocks[n-1]), moving on to a new block when it is
// full. Without reuse only that block is kept (a full one is left to the
// payloads that point into it); with reuse every block is kept for the
// next rewind.
type block[T any] struct {
	blocks [][]T
	n      int // blocks handed out from since the last rewind
}

func (b *block[T]) next(reuse bool) *T {
	if b.n == 0 || len(b.blocks[b.n-1]) == slabBlock {
		switch {
		case !reuse:
			b.blocks, b.n = append(b.blocks[:0], make([]T, 0, slabBlock)), 1
		case b.n < len(b.blocks):
			b.blocks[b.n] = b.blocks[b.n][:0]
			b.n++
		default:
			b.blocks = append(b.blocks, make([]T, 0, slabBlock))
			b.n++
		}
	}
	cur := &b.blocks[b.n-1]
	*cur = (*cur)[:len(*cur)+1]
	p := &(*cur)[len(*cur)-1]
	if reuse {
		var zero T
		*p = zero // a payload of an earlier chunk
	}
	return p
}

func (sl *slab) clientRequest() *ClientRequest {
	if sl == nil {
		return new(ClientRequest)
	}
	return sl.cr.next(sl.reuse)
}

func (sl *slab) upstreamRequest() *UpstreamRequest {
	if sl == nil {
		return new(UpstreamRequest)
	}
	return sl.ur.next(sl.reuse)
}

func (sl *slab) seq(v uint64) *uint64 {
	if sl == nil {
		p := new(uint64) // not &v: v would move to the heap on every call
		*p = v
		return p
	}
	p := sl.seqs.next(sl.reuse)
	*p = v
	return p
}

func (s *scanner) fail() { s.bad = true }

// expect consumes c or fails.
func (s *scanner) expect(c byte) {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return
	}
	s.fail()
}

// key reads `"name":` and returns name (pointing into the line; keys need
// no unescaping in the journal's form).
func (s *scanner) key() []byte {
	s.expect('"')
	start := s.i
	for s.i < len(s.b) && s.b[s.i] != '"' {
		if s.b[s.i] == '\\' || s.b[s.i] < 0x20 {
			s.fail()
			return nil
		}
		s.i++
	}
	k := s.b[start:s.i]
	s.expect('"')
	s.expect(':')
	return k
}

// rawString reads a string value and returns its content, unescaped.
func (s *scanner) rawString() []byte {
	s.expect('"')
	if s.bad {
		return nil
	}
	start := s.i
	ascii := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(v) {
				s.fail() // encoding/json would replace the bad bytes
			}
			return v
		case c == '\\':
			return s.escapedString(start)
		case c < 0x20:
			s.fail()
			return nil
		case c >= utf8.RuneSelf:
			ascii = false
		}
		s.i++
	}
	s.fail()
	return nil
}

// escapedString continues rawString at the first backslash.
func (s *scanner) escapedString(start int) []byte {
	out := append(s.tmp[:0], s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			s.tmp = out
			if !utf8.Valid(out) {
				s.fail()
			}
			return out
		case c < 0x20:
			s.fail()
			return nil
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			s.fail()
			return nil
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if s.i+4 > len(s.b) {
				s.fail()
				return nil
			}
			v, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 32)
			if err != nil || (v >= 0xd800 && v < 0xe000) {
				s.fail() // surrogates: leave pairing to encoding/json
				return nil
			}
			s.i += 4
			out = utf8.AppendRune(out, rune(v))
		default:
			s.fail()
			return nil
		}
	}
	s.fail()
	return nil
}

// stringMap reads an object of strings into *m (a new map, as
// encoding/json makes for a nil one; a repeated key's last value wins, as
// there). A null value fails: encoding/json's handling of it is its call.
func (s *scanner) stringMap(m *map[string]string) {
	s.expect('{')
	if *m == nil {
		*m = map[string]string{}
	}
	for first := true; !s.bad && s.i < len(s.b) && s.b[s.i] != '}'; first = false {
		if !first {
			s.expect(',')
		}
		k := s.internStr()
		s.expect(':')
		if s.bad {
			return
		}
		(*m)[k] = s.internStr()
	}
	s.expect('}')
}

func (s *scanner) str() string {
	v := s.rawString()
	if s.bad {
		return ""
	}
	return string(v)
}

func (s *scanner) internStr() string {
	v := s.rawString()
	if s.bad {
		return ""
	}
	return s.in.str(v)
}

// number returns the next number token if it is a plain integer (what the
// journal writes for integer fields); anything else fails.
func (s *scanner) intToken() []byte {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == digits || (s.b[digits] == '0' && s.i-digits > 1) {
		s.fail()
		return nil
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.fail() // json refuses these for integer fields: let it say so
		return nil
	}
	return s.b[start:s.i]
}

// digits returns the value of an unsigned decimal token; false on
// overflow. By hand: strconv's error values keep the string, so a
// conversion there allocates for every number.
func digits(t []byte) (uint64, bool) {
	var v uint64
	for _, c := range t {
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// plainDigits reads an unsigned integer token of at most 19 digits (which
// cannot overflow) in one pass; ok is false, with nothing consumed, for
// anything else (longer, a leading zero, a fraction or exponent next),
// which the careful path (intToken, digits) then reads or refuses.
func (s *scanner) plainDigits() (v uint64, ok bool) {
	start, i := s.i, s.i
	for i < len(s.b) && i-start < 19 {
		d := s.b[i] - '0'
		if d > 9 {
			break
		}
		v = v*10 + uint64(d)
		i++
	}
	if n := i - start; n == 0 || (n > 1 && s.b[start] == '0') {
		return 0, false
	}
	if i < len(s.b) {
		if c := s.b[i]; c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	s.i = i
	return v, true
}

func (s *scanner) int64() int64 {
	start := s.i
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	if v, ok := s.plainDigits(); ok {
		switch {
		case !neg && v > math.MaxInt64, neg && v > 1<<63:
			s.fail()
			return 0
		case neg:
			return -int64(v)
		}
		return int64(v)
	}
	s.i = start
	t := s.intToken()
	if s.bad {
		return 0
	}
	neg = t[0] == '-'
	if neg {
		t = t[1:]
	}
	v, ok := digits(t)
	switch {
	case !ok, !neg && v > math.MaxInt64, neg && v > 1<<63:
		s.fail()
		return 0
	case neg:
		return -int64(v)
	}
	return int64(v)
}

func (s *scanner) int() int {
	v := s.int64()
	if v != int64(int(v)) {
		s.fail()
	}
	return int(v)
}

func (s *scanner) uint64() uint64 {
	if v, ok := s.plainDigits(); ok {
		return v
	}
	t := s.intToken()
	if s.bad {
		return 0
	}
	v, ok := digits(t)
	if !ok || t[0] == '-' {
		s.fail()
	}
	return v
}

func (s *scanner) float() float64 {
	start := s.i
	for s.i < len(s.b) && bytes.IndexByte([]byte("+-.0123456789eE"), s.b[s.i]) >= 0 {
		s.i++
	}
	tok := s.b[start:s.i]
	if !json.Valid(tok) {
		s.fail()
		return 0
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		s.fail()
	}
	return v
}

func (s *scanner) bool() bool {
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false
	}
	s.fail()
	return false
}

// null consumes a null if one is next.
func (s *scanner) null() bool {
	if s.i < len(s.b) && s.b[s.i] == 'n' && bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// keySet is one kind's keys, in the order the Writer writes them, and
// each as the bytes before its value (`,"name":`).
type keySet struct {
	names    []string
	prefixes []string
}

func newKeySet(names ...string) keySet {
	ks := keySet{names: names}
	for _, n := range names {
		ks.prefixes = append(ks.prefixes, `,"`+n+`":`)
	}
	return ks
}

// index returns k's position in names, or -1.
func (ks *keySet) index(k []byte) int {
	for i, n := range ks.names {
		if n == string(k) {
			return i
		}
	}
	return -1
}

// fields calls field with the position in ks of each key after the head,
// until the closing brace; field returns false for a value it cannot
// read. A line the Writer wrote has its keys in ks's order (some left
// out), so the next key is first looked for by its bytes from where the
// last one was found: one short comparison or a few per key, where
// reading the key and looking its name up had been a sixth of decoding.
// Keys in any other order, or repeated, are found by name.
func (s *scanner) fields(ks *keySet, field func(i int) bool) {
	next := 0
	for !s.bad {
		if s.i >= len(s.b) {
			s.fail()
			return
		}
		switch s.b[s.i] {
		case '}':
			s.i++
			if s.i != len(s.b) {
				s.fail() // trailing bytes: json's error, not ours
			}
			return
		case ',':
		default:
			s.fail()
			return
		}
		i := -1
		rest := s.b[s.i:]
		for j := next; j < len(ks.prefixes); j++ {
			if p := ks.prefixes[j]; len(rest) > len(p) && rest[2] == p[2] && string(rest[:len(p)]) == p {
				i = j
				s.i += len(p)
				break
			}
		}
		if i < 0 {
			s.i++ // the comma
			k := s.key()
			if s.bad {
				return
			}
			if i = ks.index(k); i < 0 {
				s.fail() // a key json may match without regard to case: its call
				return
			}
		}
		next = i + 1
		if !field(i) {
			s.fail()
			return
		}
	}
}

// client.request's keys, in the Writer's order (appendClientRequest).
const (
	crSeq = iota
	crMethod
	crRoute
	crUpstream
	crScheduled
	crSent
	crHeadersAt
	crDone
	crLatency
	crService
	crStatus
	crBytes
	crExpected
	crFraction
	crSSEEvents
	crOutcome
	crFastFail
	crFastFailCode
	crLate
	crError
	crResent
	crIdempotencyKey
	crDeadline
	crBodyStamp
	crHeaders
	crWarmup
)

var crKeys = newKeySet("seq", "method", "route", "upstream", "scheduled", "sent", "headers_at", "done", "latency_ns",
	"service_ns", "status", "bytes", "expected", "fraction", "sse_events", "outcome", "fast_fail", "fast_fail_code",
	"late", "error", "resent", "idempotency_key", "deadline_ns", "body_stamp", "headers", "warmup")

// decodeClientRequest decodes the fields after `{"t":N,"kind":"…"`.
func decodeClientRequest(s *scanner) *ClientRequest {
	p := s.sl.clientRequest()
	s.fields(&crKeys, func(i int) bool {
		if s.null() {
			return true // json leaves the field as it is
		}
		switch i {
		case crSeq:
			p.Seq = s.uint64()
		case crMethod:
			p.Method = s.internStr()
		case crRoute:
			p.Route = s.internStr()
		case crUpstream:
			p.Upstream = s.internStr()
		case crScheduled:
			p.Scheduled = time.Duration(s.int64())
		case crSent:
			p.Sent = time.Duration(s.int64())
		case crHeadersAt:
			p.HeadersAt = time.Duration(s.int64())
		case crDone:
			p.Done = time.Duration(s.int64())
		case crLatency:
			p.Latency = time.Duration(s.int64())
		case crService:
			p.Service = time.Duration(s.int64())
		case crStatus:
			p.Status = s.int()
		case crBytes:
			p.Bytes = s.int64()
		case crExpected:
			p.Expected = s.int64()
		case crFraction:
			p.Fraction = s.float()
		case crSSEEvents:
			p.SSEEvents = s.int()
		case crOutcome:
			p.Outcome = Outcome(s.internStr())
		case crFastFail:
			p.FastFail = s.bool()
		case crFastFailCode:
			p.FastFailCode = s.internStr()
		case crLate:
			p.Late = s.bool()
		case crError:
			p.Error = s.internStr()
		case crResent:
			s.expect('[')
			p.Resent = []time.Duration{}
			for !s.bad && s.i < len(s.b) && s.b[s.i] != ']' {
				if len(p.Resent) > 0 {
					s.expect(',')
				}
				p.Resent = append(p.Resent, time.Duration(s.int64()))
			}
			s.expect(']')
		case crIdempotencyKey:
			p.IdempotencyKey = s.bool()
		case crDeadline:
			p.Deadline = time.Duration(s.int64())
		case crBodyStamp:
			p.BodyStamp = s.bool()
		case crHeaders:
			s.stringMap(&p.Headers)
		case crWarmup:
			p.Warmup = s.bool()
		default:
			return false
		}
		return true
	})
	return p
}

// upstream.request's keys, in the Writer's order (appendUpstreamRequest).
const (
	urUpstream = iota
	urMethod
	urPath
	urSeq
	urRemote
	urUserAgent
	urProbeTag
	urHealthCheck
	urFault
	urFaultType
	urInFlight
	urStatus
	urRetryAfter
	urBytes
	urDone
	urOutcome
	urDelivered
	urIdempotencyKey
	urBudget
	urPromptTokens
	urCompletionTokens
	urHeadersAt
	urSeqFrom
)

var urKeys = newKeySet("upstream", "method", "path", "seq", "remote", "user_agent", "probe_tag", "health_check",
	"fault", "fault_type", "in_flight", "status", "retry_after_ns", "bytes", "done", "outcome", "delivered", "idempotency_key",
	"budget_ns", "prompt_tokens", "completion_tokens", "headers_at", "seq_from")

// decodeUpstreamRequest decodes the fields after `{"t":N,"kind":"…"`.
func decodeUpstreamRequest(s *scanner) *UpstreamRequest {
	p := s.sl.upstreamRequest()
	s.fields(&urKeys, func(i int) bool {
		if s.null() {
			if i == urSeq {
				p.Seq = nil
			}
			return true
		}
		switch i {
		case urUpstream:
			p.Upstream = s.internStr()
		case urMethod:
			p.Method = s.internStr()
		case urPath:
			p.Path = s.internStr()
		case urSeq:
			p.Seq = s.sl.seq(s.uint64())
		case urSeqFrom:
			p.SeqFrom = s.internStr()
		case urRemote:
			p.Remote = s.internStr()
		case urUserAgent:
			p.UserAgent = s.internStr()
		case urProbeTag:
			p.ProbeTag = s.internStr()
		case urHealthCheck:
			p.HealthCheck = s.bool()
		case urFault:
			p.Fault = s.internStr()
		case urFaultType:
			p.FaultType = s.internStr()
		case urInFlight:
			p.InFlight = s.int()
		case urStatus:
			p.Status = s.int()
		case urRetryAfter:
			p.RetryAfter = time.Duration(s.int64())
		case urBytes:
			p.Bytes = s.int64()
		case urDone:
			p.Done = time.Duration(s.int64())
		case urHeadersAt:
			p.HeadersAt = time.Duration(s.int64())
		case urOutcome:
			p.Outcome = Outcome(s.internStr())
		case urDelivered:
			p.Delivered = s.bool()
		case urIdempotencyKey:
			p.IdempotencyKey = s.internStr()
		case urBudget:
			p.Budget = time.Duration(s.int64())
		case urPromptTokens:
			p.PromptTokens = s.int64()
		case urCompletionTokens:
			p.CompletionTokens = s.int64()
		default:
			return false
		}
		return true
	})
	return p
}

// decodeFast decodes a client.request or upstream.request line written in
// the journal's form ({"t":N,"kind":"K",…} with no spaces) without
// reflection; ok is false for any other line, which Unmarshal then decodes
// with encoding/json. in, when not nil, shares repeated strings.
func decodeFast(line []byte, in *interner) (Event, bool) { return decodeFastIn(line, in, nil) }

// decodeFastIn is decodeFast allocating the payload from sl (nil: new).
func decodeFastIn(line []byte, in *interner, sl *slab) (Event, bool) {
	const pre = `{"t":`
	if !bytes.HasPrefix(line, []byte(pre)) {
		return Event{}, false
	}
	s := scanner{b: line, i: len(pre), in: in, sl: sl}
	t := s.int64()
	if s.bad || !bytes.HasPrefix(line[s.i:], []byte(`,"kind":"`)) {
		return Event{}, false
	}
	s.i += len(`,"kind":"`)
	end := bytes.IndexByte(line[s.i:], '"')
	if end < 0 {
		return Event{}, false
	}
	kind := line[s.i : s.i+end]
	s.i += end + 1
	var p Payload
	switch string(kind) {
	case string(KindClientRequest):
		p = decodeClientRequest(&s)
	case string(KindUpstreamRequest):
		p = decodeUpstreamRequest(&s)
	default:
		return Event{}, false
	}
	if s.bad {
		return Event{}, false
	}
	return Event{T: time.Duration(t), Payload: p}, true
}
