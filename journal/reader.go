package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// CorruptError reports a journal line that cannot be read (other than a
// torn last line, which the Reader tolerates).
type CorruptError struct {
	Line int
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("journal line %d: %v", e.Line, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Reader streams events from a journal, one line at a time, in constant
// memory.
type Reader struct {
	br   *bufio.Reader
	line int
	torn bool
	err  error
}

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next event. At the end it returns io.EOF. A last line
// without its newline that does not parse is a torn write (the run was
// killed mid-write): it is skipped, Torn reports it, and Next returns
// io.EOF. Any other unreadable line is a *CorruptError with its line number.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	for {
		raw, err := r.br.ReadBytes('\n')
		if len(raw) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				r.err = io.EOF
			} else {
				r.err = fmt.Errorf("journal: read: %w", err)
			}
			return Event{}, r.err
		}
		r.line++
		complete := err == nil
		line := bytes.TrimSpace(raw)
		if len(line) == 0 {
			if !complete {
				r.err = io.EOF
				return Event{}, r.err
			}
			continue
		}
		ev, perr := Unmarshal(line)
		if perr != nil {
			if !complete {
				r.torn = true
				r.err = io.EOF
				return Event{}, r.err
			}
			r.err = &CorruptError{Line: r.line, Err: perr}
			return Event{}, r.err
		}
		return ev, nil
	}
}

// Torn reports whether the journal ended with a torn (partially written)
// line that was skipped.
func (r *Reader) Torn() bool { return r.torn }

// Line returns the number of the last line read.
func (r *Reader) Line() int { return r.line }

// header is the part of every line read before the payload.
type header struct {
	T    *int64 `json:"t"`
	Kind *Kind  `json:"kind"`
}

// Unmarshal decodes one journal line. Unknown kinds decode to *Unknown.
func Unmarshal(line []byte) (Event, error) {
	if ev, ok := unmarshalFast(line); ok {
		return ev, nil
	}
	return unmarshalGeneral(line)
}

// unmarshalGeneral decodes any line: the header, then the payload.
func unmarshalGeneral(line []byte) (Event, error) {
	var h header
	if err := json.Unmarshal(line, &h); err != nil {
		return Event{}, err
	}
	if h.T == nil {
		return Event{}, errors.New(`missing "t"`)
	}
	if h.Kind == nil || *h.Kind == "" {
		return Event{}, errors.New(`missing "kind"`)
	}
	newPayload, ok := factories[*h.Kind]
	if !ok {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(line, &fields); err != nil {
			return Event{}, err
		}
		delete(fields, "t")
		delete(fields, "kind")
		raw, err := json.Marshal(fields)
		if err != nil {
			return Event{}, err
		}
		return Event{T: time.Duration(*h.T), Payload: &Unknown{KindName: *h.Kind, Raw: raw}}, nil
	}
	p := newPayload()
	if err := json.Unmarshal(line, p); err != nil {
		return Event{}, fmt.Errorf("%s: %w", *h.Kind, err)
	}
	return Event{T: time.Duration(*h.T), Payload: p}, nil
}

// ReadAll reads every event from r. It returns the events read before any
// corruption together with the error, so callers can still use them.
func ReadAll(r io.Reader) (events []Event, torn bool, err error) {
	jr := NewReader(r)
	for {
		ev, err := jr.Next()
		if errors.Is(err, io.EOF) {
			return events, jr.Torn(), nil
		}
		if err != nil {
			return events, jr.Torn(), err
		}
		events = append(events, ev)
	}
}

// ReadFile reads a whole journal file; see ReadAll.
func ReadFile(path string) (events []Event, torn bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	return ReadAll(f)
}
