package reports

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

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// Decoding the journal's JSON is most of the analysis's cost. Lines are
// decoded by a few workers in parallel, in chunks delivered in order, and
// the two frequent kinds are decoded in one pass (journal.Unmarshal reads
// each line twice: header, then payload). The semantics are those of
// journal.Reader: a torn last line is skipped, any other unreadable line is
// a *journal.CorruptError with its line number.

type crLine struct {
	K string `json:"kind"`
	*journal.ClientRequest
}

type urLine struct {
	K string `json:"kind"`
	*journal.UpstreamRequest
}

// decodeLine decodes one journal line exactly as journal.Unmarshal does.
func decodeLine(line []byte) (journal.Event, error) {
	// The writer puts {"t":N,"kind":"K" first; sniff it without decoding.
	const pre = `{"t":`
	if !bytes.HasPrefix(line, []byte(pre)) {
		return journal.Unmarshal(line)
	}
	rest := line[len(pre):]
	i := bytes.IndexByte(rest, ',')
	if i <= 0 {
		return journal.Unmarshal(line)
	}
	t, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil {
		return journal.Unmarshal(line)
	}
	rest = rest[i:]
	const kpre = `,"kind":"`
	if !bytes.HasPrefix(rest, []byte(kpre)) {
		return journal.Unmarshal(line)
	}
	rest = rest[len(kpre):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 {
		return journal.Unmarshal(line)
	}
	switch journal.Kind(rest[:j]) {
	case journal.KindClientRequest:
		v := crLine{ClientRequest: new(journal.ClientRequest)}
		if err := json.Unmarshal(line, &v); err != nil || v.K != string(journal.KindClientRequest) {
			return journal.Unmarshal(line)
		}
		return journal.Event{T: time.Duration(t), Payload: v.ClientRequest}, nil
	case journal.KindUpstreamRequest:
		v := urLine{UpstreamRequest: new(journal.UpstreamRequest)}
		if err := json.Unmarshal(line, &v); err != nil || v.K != string(journal.KindUpstreamRequest) {
			return journal.Unmarshal(line)
		}
		return journal.Event{T: time.Duration(t), Payload: v.UpstreamRequest}, nil
	}
	return journal.Unmarshal(line)
}

const chunkLines = 512

type chunk struct {
	first int      // line number of lines[0]
	lines [][]byte // raw lines, newline included when present
	last  bool     // holds the journal's last line
	res   chan chunkResult
}

type chunkResult struct {
	events []journal.Event
	torn   bool
	err    error
}

// decodeChunk decodes a chunk's lines; a final line without its newline
// that does not parse is a torn write.
func decodeChunk(c *chunk) chunkResult {
	var r chunkResult
	r.events = make([]journal.Event, 0, len(c.lines))
	for i, raw := range c.lines {
		complete := len(raw) > 0 && raw[len(raw)-1] == '\n'
		line := bytes.TrimSpace(raw)
		if len(line) == 0 {
			continue
		}
		ev, err := decodeLine(line)
		if err != nil {
			if !complete && c.last && i == len(c.lines)-1 {
				r.torn = true
				return r
			}
			r.err = &journal.CorruptError{Line: c.first + i, Err: err}
			return r
		}
		r.events = append(r.events, ev)
	}
	return r
}

// readParallel streams r's events, in order, to add. It returns whether
// the last line was torn.
func readParallel(r io.Reader, add func(journal.Event)) (torn bool, err error) {
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	quit := make(chan struct{})
	defer close(quit)
	jobs := make(chan *chunk, workers)
	order := make(chan *chunk, 2*workers)
	readErr := make(chan error, 1)

	go func() { // reader
		defer close(jobs)
		defer close(order)
		br := bufio.NewReaderSize(r, 256<<10)
		line := 1
		c := &chunk{first: line, res: make(chan chunkResult, 1)}
		send := func() bool {
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
			raw, err := br.ReadBytes('\n')
			if len(raw) > 0 {
				c.lines = append(c.lines, raw)
				line++
			}
			if err != nil {
				c.last = true
				if !errors.Is(err, io.EOF) {
					readErr <- fmt.Errorf("%w: journal: read: %w", rehearse.ErrEnvironment, err)
				}
				send()
				return
			}
			if len(c.lines) == chunkLines {
				if !send() {
					return
				}
				c = &chunk{first: line, res: make(chan chunkResult, 1)}
			}
		}
	}()
	for w := 0; w < workers; w++ {
		go func() {
			for c := range jobs {
				c.res <- decodeChunk(c) // buffered: never blocks
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
			add(ev)
		}
		if res.err != nil {
			return false, res.err
		}
		if res.torn {
			torn = true
		}
	}
	select {
	case err := <-readErr:
		return torn, err
	default:
	}
	return torn, nil
}
