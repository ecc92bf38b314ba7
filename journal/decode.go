package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"time"
)

// Decoding a journal's JSON is most of an analysis's cost. Decode reads
// lines in chunks, decodes them on a few goroutines and delivers the events
// in order; Unmarshal decodes the two frequent kinds in one pass (the
// general path reads each line twice: header, then payload). The semantics
// are those of Reader: a torn last line is skipped, any other unreadable
// line is a *CorruptError with its line number.

type crLine struct {
	K string `json:"kind"`
	*ClientRequest
}

type urLine struct {
	K string `json:"kind"`
	*UpstreamRequest
}

// unmarshalFast decodes a client.request or upstream.request line written
// by the Writer ({"t":N,"kind":"K" first) in one pass; ok is false for any
// other line, which Unmarshal then decodes the general way.
func unmarshalFast(line []byte) (ev Event, ok bool) {
	if ev, ok := decodeFast(line, nil); ok {
		return ev, true
	}
	const pre = `{"t":`
	if !bytes.HasPrefix(line, []byte(pre)) {
		return Event{}, false
	}
	rest := line[len(pre):]
	i := bytes.IndexByte(rest, ',')
	if i <= 0 {
		return Event{}, false
	}
	t, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil {
		return Event{}, false
	}
	rest = rest[i:]
	const kpre = `,"kind":"`
	if !bytes.HasPrefix(rest, []byte(kpre)) {
		return Event{}, false
	}
	rest = rest[len(kpre):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 {
		return Event{}, false
	}
	switch Kind(rest[:j]) {
	case KindClientRequest:
		v := crLine{ClientRequest: new(ClientRequest)}
		if err := json.Unmarshal(line, &v); err != nil || v.K != string(KindClientRequest) {
			return Event{}, false
		}
		return Event{T: time.Duration(t), Payload: v.ClientRequest}, true
	case KindUpstreamRequest:
		v := urLine{UpstreamRequest: new(UpstreamRequest)}
		if err := json.Unmarshal(line, &v); err != nil || v.K != string(KindUpstreamRequest) {
			return Event{}, false
		}
		return Event{T: time.Duration(t), Payload: v.UpstreamRequest}, true
	}
	return Event{}, false
}

const chunkLines = 512

type chunk struct {
	first int      // line number of lines[0]
	lines [][]byte // raw lines, newline included when present (in data)
	data  []byte   // the chunk's bytes: one allocation for its lines, not one each
	ends  []int    // where each line ends in data
	last  bool     // holds the journal's last line
	// events is the decoded events' slice of the chunk's previous use,
	// for reuse.
	events []Event
	// sl holds the chunk's payloads when they are transient
	// (DecodeTransient), rewound when the chunk is used again.
	sl  slab
	res chan chunkResult
}

// seal points lines into data.
func (c *chunk) seal() {
	if cap(c.lines) < len(c.ends) {
		c.lines = make([][]byte, len(c.ends))
	}
	c.lines = c.lines[:len(c.ends)]
	start := 0
	for i, end := range c.ends {
		c.lines[i] = c.data[start:end:end]
		start = end
	}
}

type chunkResult struct {
	events []Event
	torn   bool
	err    error
}

// decodeChunk decodes a chunk's lines; a final line without its newline
// that does not parse is a torn write.
func decodeChunk(c *chunk, in *interner, sl *slab) chunkResult {
	var r chunkResult
	r.events = c.events[:0]
	if cap(r.events) < len(c.lines) {
		r.events = make([]Event, 0, len(c.lines))
	}
	for i, raw := range c.lines {
		complete := len(raw) > 0 && raw[len(raw)-1] == '\n'
		line := bytes.TrimSpace(raw)
		if len(line) == 0 {
			continue
		}
		ev, ok := decodeFastIn(line, in, sl)
		var err error
		if !ok {
			ev, err = Unmarshal(line)
		}
		if err != nil {
			if !complete && c.last && i == len(c.lines)-1 {
				r.torn = true
				return r
			}
			r.err = &CorruptError{Line: c.first + i, Err: err}
			return r
		}
		r.events = append(r.events, ev)
	}
	return r
}

// Decode streams r's events, in journal order, to each, decoding lines on
// up to 8 goroutines; memory stays bounded by a few chunks of lines. It
// returns whether the last line was torn (skipped, as Reader does). An
// unreadable line is a *CorruptError with its line number; a failed read
// is an error from r. each runs on the caller's goroutine, and may keep
// the events it is given.
func Decode(r io.Reader, each func(Event)) (torn bool, err error) {
	return decode(r, each, false)
}

// DecodeTransient is Decode for a consumer that copies what it needs out
// of each event: the *ClientRequest and *UpstreamRequest payloads each is
// given (and the Seq and Resent they point to) are valid only until each
// returns, their memory then being reused for later lines. Every other
// payload may be kept. A consumer that keeps nothing of the two frequent
// kinds makes no garbage of them: for the analysis of a large journal,
// fewer collections and a heap that does not grow with the lines read.
func DecodeTransient(r io.Reader, each func(Event)) (torn bool, err error) {
	return decode(r, each, true)
}

func decode(r io.Reader, each func(Event), reuse bool) (torn bool, err error) {
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	quit := make(chan struct{})
	defer close(quit)
	jobs := make(chan *chunk, workers)
	order := make(chan *chunk, 2*workers)
	readErr := make(chan error, 1)
	// Chunks whose events each has had go back to the reader: a journal
	// of 220 MB was as many MB of garbage, a good part of the analysis's
	// CPU in page faults and collection. Decoding copies every string
	// out of a line, so no event refers to a chunk's bytes.
	free := make(chan *chunk, 3*workers+1)

	go func() { // reader
		defer close(jobs)
		defer close(order)
		br := bufio.NewReaderSize(r, 256<<10)
		line := 1
		newChunk := func() *chunk {
			select {
			case c := <-free:
				c.first, c.data, c.ends = line, c.data[:0], c.ends[:0]
				c.sl.rewind() // its events have all been delivered
				return c
			default:
				return &chunk{first: line, data: make([]byte, 0, 160<<10), ends: make([]int, 0, chunkLines), sl: slab{reuse: true}, res: make(chan chunkResult, 1)}
			}
		}
		c := newChunk()
		send := func() bool {
			c.seal()
			select {
			case order <- c:
			case <-quit:
				return false
			}
			select {
			case jobs <- c:
			case <-quit:
				return false
			}
			return true
		}
		for {
			start := len(c.data)
			raw, err := br.ReadSlice('\n')
			for errors.Is(err, bufio.ErrBufferFull) { // a line longer than the buffer
				c.data = append(c.data, raw...)
				raw, err = br.ReadSlice('\n')
			}
			c.data = append(c.data, raw...)
			if len(c.data) > start {
				c.ends = append(c.ends, len(c.data))
				line++
			}
			if err != nil {
				c.last = true
				if !errors.Is(err, io.EOF) {
					readErr <- fmt.Errorf("journal: read: %w", err)
				}
				send()
				return
			}
			if len(c.ends) == chunkLines {
				if !send() {
					return
				}
				c = newChunk()
			}
		}
	}()
	for w := 0; w < workers; w++ {
		go func() {
			in := &interner{} // one per worker: no locking
			sl := &slab{}
			for c := range jobs {
				csl := sl
				if reuse {
					csl = &c.sl
				}
				c.res <- decodeChunk(c, in, csl) // buffered: never blocks
			}
		}()
	}
	for c := range order {
		var res chunkResult
		select {
		case res = <-c.res:
		case <-quit:
			return false, nil
		}
		for _, ev := range res.events {
			each(ev)
		}
		if res.err != nil {
			return false, res.err
		}
		if res.torn {
			torn = true
		}
		clear(res.events) // no payload kept alive by a recycled chunk
		c.events = res.events[:0]
		select {
		case free <- c:
		default:
		}
	}
	select {
	case err := <-readErr:
		return torn, err
	default:
	}
	return torn, nil
}
