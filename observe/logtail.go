package observe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// LogObserver tails a gateway's log file during a run and records the
// lines its patterns recognise as journal.MetricsSample events with Origin
// journal.OriginLog: a state change as a BreakerState (so the reports'
// breaker lane and metrics_lag_max read it like a scrape), every
// recognised line as one series "log_<pattern>". Each event is stamped
// with its line's own time on the run clock, not when it was read.
//
// Only lines written during the run are read: an existing file is read
// from its end at Run's start, a file created later from its beginning.
// A file truncated in place is read again from its beginning; a file
// renamed away (rotation) is read to its end and the new file at the path
// from its beginning. The file is polled every LogConfig.Poll: a stat and
// a read of what was added, so an idle log costs one stat per poll.
type LogObserver struct {
	c      *logCompiled
	o      options
	res    resolver
	source string

	// Run's goroutine only:
	f       *os.File
	fi      os.FileInfo
	off     int64
	partial []byte
	buf     []byte // one read's chunk, reused
	// skipping is set while the rest of an over-long line is dropped.
	skipping bool
	state    map[string]string
	pending  map[string]time.Time
	lastT    time.Duration
	stats    LogStats
}

// LogStats counts what a LogObserver read, for the end-of-run log line
// and tests.
type LogStats struct {
	// Lines read, recognised lines recorded.
	Lines, Recorded int
	// BadTime counts recognised lines whose time could not be read;
	// BeforeStart those stamped before the run began; TooLong lines over
	// MaxLogLineBytes; Undecodable JSON lines that did not decode.
	BadTime, BeforeStart, TooLong, Undecodable int
	// Truncations and Rotations seen.
	Truncations, Rotations int
}

// NewLogObserver checks cfg and returns a LogObserver. Errors wrap
// rehearse.ErrInvalid and name the offending field.
func NewLogObserver(cfg LogConfig, opts ...Option) (*LogObserver, error) {
	c, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	l := &LogObserver{c: c, o: buildOptions(opts, nil), source: c.cfg.Path,
		state: map[string]string{}, pending: map[string]time.Time{}}
	l.res = resolver{depMap: c.cfg.DependencyMap, upstreams: l.o.upstreams}
	return l, nil
}

// Config returns the configuration with defaults filled in.
func (l *LogObserver) Config() LogConfig { return l.c.cfg }

// Stats returns the counts; call it after Run has returned.
func (l *LogObserver) Stats() LogStats { return l.stats }

// Run tails the file until ctx is done, reads what was written up to that
// moment, and returns nil. A missing or unreadable file is not an error:
// the observer waits for it, as a scraper records failed scrapes.
func (l *LogObserver) Run(ctx context.Context) error {
	l.start()
	tick, stop := l.o.newTicker(l.c.cfg.Poll.D())
	defer stop()
	defer l.close()
	for {
		select {
		case <-ctx.Done():
			l.poll()
			l.expire(l.o.now())
			l.o.logger.Debug("log observer stopped", "source", l.source, "stats", l.stats)
			return nil
		case <-tick:
			l.poll()
			// A window's end is recorded once no line stamped before
			// it can still be on its way (OpenClaw queues its file
			// writes); a line read later would be held to it.
			l.expire(l.o.now().Add(-l.grace()))
		}
	}
}

// start opens the file if it exists and skips what it already holds.
func (l *LogObserver) start() {
	f, err := os.Open(l.source)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			l.o.logger.Warn("gateway log not readable yet; retrying every poll", "source", l.source, "err", err)
		}
		return
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return
	}
	l.f, l.fi, l.off = f, fi, fi.Size()
}

func (l *LogObserver) close() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// poll reads what was added, following truncation and rotation.
func (l *LogObserver) poll() {
	if l.f == nil {
		f, err := os.Open(l.source)
		if err != nil {
			return
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return
		}
		// Created during the run: all of it is the run's.
		l.f, l.fi, l.off = f, fi, 0
	}
	if cur, err := l.f.Stat(); err == nil && cur.Size() < l.off {
		l.stats.Truncations++
		l.off, l.partial, l.skipping = 0, l.partial[:0], false
	}
	l.readToEnd()
	pathFi, err := os.Stat(l.source)
	if err == nil && os.SameFile(pathFi, l.fi) {
		return
	}
	// Renamed or removed: the old file has been read to its end above;
	// the file now at the path (if any) is new and read from its start.
	l.stats.Rotations++
	l.flushPartial()
	l.close()
	if err == nil {
		l.poll()
	}
}

// readToEnd reads from the offset to the end in bounded chunks and
// handles each complete line.
func (l *LogObserver) readToEnd() {
	if l.buf == nil {
		l.buf = make([]byte, 64<<10)
	}
	for {
		n, err := l.f.ReadAt(l.buf, l.off)
		if n > 0 {
			l.off += int64(n)
			l.feed(l.buf[:n])
		}
		if err != nil || n == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				l.o.logger.Debug("gateway log read failed", "source", l.source, "err", err)
			}
			return
		}
	}
}

// feed splits data into lines; the last, unterminated part waits for the
// next read. A line longer than MaxLogLineBytes is dropped, never held.
func (l *LogObserver) feed(data []byte) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if !l.skipping {
				l.partial = append(l.partial, data...)
				if len(l.partial) > MaxLogLineBytes {
					l.stats.TooLong++
					l.partial, l.skipping = l.partial[:0], true
				}
			}
			return
		}
		if l.skipping {
			l.skipping = false
		} else if len(l.partial)+i > MaxLogLineBytes {
			l.stats.TooLong++
			l.partial = l.partial[:0]
		} else {
			line := append(l.partial, data[:i]...)
			l.handle(line)
			l.partial = line[:0]
		}
		data = data[i+1:]
	}
}

// flushPartial handles an unterminated last line of a file that was
// rotated away: its writer has finished with it.
func (l *LogObserver) flushPartial() {
	if len(l.partial) > 0 && !l.skipping {
		l.handle(l.partial)
	}
	l.partial, l.skipping = l.partial[:0], false
}

// handle records one line if a pattern recognises it.
func (l *LogObserver) handle(line []byte) {
	l.stats.Lines++
	m, ok, err := l.c.parseLine(line)
	switch {
	case errors.Is(err, errLogTime):
		l.stats.BadTime++
		if l.stats.BadTime == 1 {
			l.o.logger.Warn("gateway log line matched but its time is not readable; such lines are skipped", "source", l.source, "err", err)
		}
		return
	case err != nil:
		l.stats.Undecodable++
		return
	case !ok:
		return
	}
	l.record(m)
}

// record writes m's events: first any window that ended before it, then
// its state change (when the state differs from the last one recorded for
// its dependency) and its series, in one sample.
func (l *LogObserver) record(m logMatch) {
	l.expire(m.t)
	t := l.o.clock.At(m.t)
	if t < 0 {
		l.stats.BeforeStart++
		return
	}
	s := &journal.MetricsSample{Source: l.source, Origin: journal.OriginLog,
		Series: []journal.Series{{Name: "log_" + m.rule.Name, Labels: m.labels, Value: m.value}}}
	if st := m.rule.State; st != "" && m.dep != "" {
		delete(l.pending, m.dep)
		if st == journal.StateOpen && !m.until.IsZero() && m.until.After(m.t) {
			l.pending[m.dep] = m.until
		}
		if l.state[m.dep] != st {
			l.state[m.dep] = st
			s.States = []journal.BreakerState{{Dependency: m.dep, Upstream: l.res.upstream(m.dep, nil), State: st}}
		}
	}
	l.emit(t, s)
}

// expire records half_open for every open window that ended at or before
// now, in the order they ended.
func (l *LogObserver) expire(now time.Time) {
	var due []string
	for dep, u := range l.pending {
		if !u.After(now) {
			due = append(due, dep)
		}
	}
	slices.SortFunc(due, func(a, b string) int { return l.pending[a].Compare(l.pending[b]) })
	for _, dep := range due {
		u := l.pending[dep]
		delete(l.pending, dep)
		l.state[dep] = journal.StateHalfOpen
		t := l.o.clock.At(u)
		if t < 0 {
			continue
		}
		l.emit(t, &journal.MetricsSample{Source: l.source, Origin: journal.OriginLog,
			States: []journal.BreakerState{{Dependency: dep, Upstream: l.res.upstream(dep, nil), State: journal.StateHalfOpen}}})
	}
}

// grace is how long after a window's end its half_open waits for lines
// stamped before it.
func (l *LogObserver) grace() time.Duration { return max(2*l.c.cfg.Poll.D(), time.Second) }

// emit records at t, never before an event already recorded: the reports
// read a dependency's states in journal order, and lines of one log can
// be a few milliseconds out of order (OpenClaw queues its file writes).
func (l *LogObserver) emit(t time.Duration, s *journal.MetricsSample) {
	t = max(t, l.lastT)
	l.lastT = t
	l.stats.Recorded++
	l.o.recorder.RecordAt(t, s)
}
