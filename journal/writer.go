package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// Recorder is what components write events to. *Writer and *Memory
// implement it; components take a Recorder so tests can read back what they
// recorded without a file.
type Recorder interface {
	// Record stamps p with the current run time and records it.
	Record(p Payload)
	// RecordAt records p with an explicit run time, for events whose
	// moment was measured before they could be written (a request's
	// arrival, recorded when it completes).
	RecordAt(t time.Duration, p Payload)
}

// Discard is a Recorder that keeps nothing.
var Discard Recorder = discard{}

type discard struct{}

func (discard) Record(Payload)                  {}
func (discard) RecordAt(time.Duration, Payload) {}

// DefaultFlushInterval is how often a Writer flushes buffered events when it
// is given no other interval. It bounds what a crash can lose.
const DefaultFlushInterval = 500 * time.Millisecond

// Writer appends events to a JSON Lines stream. It is safe for concurrent
// use: events are encoded outside the lock and appended whole, so lines from
// different goroutines never interleave. Write errors are sticky: the first
// one is kept, later events are dropped, and Err and Close report it.
type Writer struct {
	clock *Clock

	mu     sync.Mutex
	bw     *bufio.Writer
	closer io.Closer
	syncer interface{ Sync() error }
	err    error
	count  int64
	closed bool

	stop chan struct{}
	done chan struct{}
}

// WriterOption configures a Writer.
type WriterOption func(*writerConfig)

type writerConfig struct {
	flushEvery time.Duration
}

// WithFlushInterval sets how often buffered events are flushed; zero or
// negative disables the periodic flush (only Flush and Close write then).
func WithFlushInterval(d time.Duration) WriterOption {
	return func(c *writerConfig) { c.flushEvery = d }
}

// NewWriter returns a Writer that stamps events with clock and writes them
// to w. If w is an io.Closer, Close closes it; if it has a Sync method
// (an *os.File), Close syncs it first.
func NewWriter(w io.Writer, clock *Clock, opts ...WriterOption) *Writer {
	cfg := writerConfig{flushEvery: DefaultFlushInterval}
	for _, o := range opts {
		o(&cfg)
	}
	jw := &Writer{
		clock: clock,
		bw:    bufio.NewWriterSize(w, 64<<10),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	if c, ok := w.(io.Closer); ok {
		jw.closer = c
	}
	if s, ok := w.(interface{ Sync() error }); ok {
		jw.syncer = s
	}
	if cfg.flushEvery > 0 {
		go jw.flushLoop(cfg.flushEvery)
	} else {
		close(jw.done)
	}
	return jw
}

// Create creates (or truncates) the journal file at path and returns a
// Writer on it. A symbolic link at path is refused, never followed: a
// dangling journal.jsonl link left in a run directory made the journal,
// and everything the run recorded, land wherever it pointed.
func Create(path string, clock *Clock, opts ...WriterOption) (*Writer, error) {
	isLink := func() bool {
		fi, err := os.Lstat(path)
		return err == nil && fi.Mode()&os.ModeSymlink != 0
	}
	// The Lstat says why; O_NOFOLLOW (on Unix) closes the race between
	// the two.
	if isLink() {
		return nil, fmt.Errorf("journal: %s is a symbolic link: a journal is never written through one (remove it)", path)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND|noFollow, 0o644)
	if err != nil {
		if isLink() {
			return nil, fmt.Errorf("journal: %s is a symbolic link: a journal is never written through one (remove it)", path)
		}
		return nil, fmt.Errorf("journal: %w", err)
	}
	return NewWriter(f, clock, opts...), nil
}

// Clock returns the clock the writer stamps events with.
func (w *Writer) Clock() *Clock { return w.clock }

func (w *Writer) flushLoop(every time.Duration) {
	defer close(w.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			if !w.closed && w.err == nil && w.bw.Buffered() > 0 {
				w.err = w.bw.Flush()
			}
			w.mu.Unlock()
		}
	}
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Record stamps p with the clock's current reading and appends it.
func (w *Writer) Record(p Payload) { w.RecordAt(w.clock.Now(), p) }

// RecordAt appends p with run time t.
func (w *Writer) RecordAt(t time.Duration, p Payload) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	err := encodeEvent(buf, Event{T: t, Payload: p})
	w.mu.Lock()
	switch {
	case w.closed:
		// Late events after Close (a straggling goroutine) are dropped
		// rather than written to a closed file.
	case w.err != nil:
	case err != nil:
		w.err = err
	default:
		_, w.err = w.bw.Write(buf.Bytes())
		w.count++
	}
	w.mu.Unlock()
	if buf.Cap() <= 64<<10 {
		bufPool.Put(buf)
	}
}

// Count returns the number of events appended so far.
func (w *Writer) Count() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// Flush writes buffered events to the underlying writer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil && !w.closed {
		w.err = w.bw.Flush()
	}
	return w.err
}

// Err returns the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes, syncs and closes the journal. It is safe to call twice;
// events recorded after Close are dropped.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done

	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
	if err == nil {
		err = w.bw.Flush()
	}
	if w.syncer != nil {
		if serr := w.syncer.Sync(); serr != nil && err == nil && !errors.Is(serr, os.ErrInvalid) {
			err = serr
		}
	}
	if w.closer != nil {
		if cerr := w.closer.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil {
		w.err = fmt.Errorf("journal: %w", err)
	}
	return w.err
}

// Marshal encodes one event as a journal line, newline included.
func Marshal(e Event) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeEvent(&buf, e); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeEvent writes {"t":N,"kind":"k",<payload fields>}\n, secrets
// redacted (redactPayload). The frequent kinds have hand-written encoders
// (codec.go); any other payload is encoded with encoding/json and its opening brace replaced, so the fields
// sit flat beside t and kind.
func encodeEvent(buf *bytes.Buffer, e Event) error {
	if e.Payload == nil {
		return errors.New("journal: event without payload")
	}
	// Nothing is written with a secret in it, whoever recorded it.
	e.Payload = redactPayload(e.Payload)
	if b, ok := appendEventFast(buf.AvailableBuffer(), e); ok {
		buf.Write(b) // no copy when it fitted the buffer's spare room
		return nil
	}
	return encodeEventJSON(buf, e)
}

// encodeEventJSON is encodeEvent through encoding/json, for every kind.
func encodeEventJSON(buf *bytes.Buffer, e Event) error {
	start := buf.Len()
	var scratch [24]byte
	buf.WriteString(`{"t":`)
	buf.Write(strconv.AppendInt(scratch[:0], int64(e.T), 10))
	buf.WriteString(`,"kind":`)
	kind, _ := json.Marshal(string(e.Payload.Kind()))
	buf.Write(kind)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	payStart := buf.Len()
	if err := enc.Encode(e.Payload); err != nil {
		buf.Truncate(start)
		return fmt.Errorf("journal: encode %s: %w", e.Payload.Kind(), err)
	}
	pay := buf.Bytes()[payStart:]
	if len(pay) < 3 || pay[0] != '{' {
		buf.Truncate(start)
		return fmt.Errorf("journal: payload of %s is not a JSON object", e.Payload.Kind())
	}
	if string(pay) == "{}\n" {
		// No fields: close the object after kind.
		buf.Truncate(payStart)
		buf.WriteString("}\n")
		return nil
	}
	pay[0] = ','
	return nil
}
