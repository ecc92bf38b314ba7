// Package tty keeps one status line at the bottom of a terminal while log
// lines scroll above it.
//
// A run's progress is one line redrawn in place ("\r", erase line, text).
// Anything else written to the terminal meanwhile, a log line above all,
// would land inside that line and every later redraw would leave a broken
// line behind; and a line longer than the terminal wraps, after which "\r"
// only returns to the start of its last row, so every redraw adds a row.
// Display owns both: log output is written through it (it erases the
// status line, writes the log lines, and draws the status line again
// below them), and the status line is clipped to the terminal's width,
// read again at every redraw so that a resized window is followed (a
// line a narrower window reflowed onto several rows is erased whole).
//
// Progress-bar libraries (schollz/progressbar, vbauerster/mpb) draw a bar
// and leave interleaving with a logger to the caller; the interleaving is
// the point here, and the line is text, not a bar, so this is written by
// hand on golang.org/x/term.
package tty

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// Every is how often the status line is redrawn.
const Every = 250 * time.Millisecond

// defaultWidth is used when the terminal's width cannot be read.
const defaultWidth = 80

// Display is a terminal with a status line at the bottom. Its Write method
// is for log output; it is safe for concurrent use.
type Display struct {
	mu     sync.Mutex
	w      io.Writer
	width  func() int
	status func() string
	shown  bool   // the status line is on the screen
	drawnW int    // the width the line on the screen was clipped to
	drawnN int    // its length in columns
	part   []byte // a log line not ended yet
	stop   chan struct{}
	done   chan struct{}
	every  time.Duration // redraw interval; 0 means Every
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// New returns a Display on w, which should be a terminal (IsTerminal); its
// width is read from w's file descriptor at every redraw.
func New(w io.Writer) *Display {
	d := &Display{w: w, width: func() int { return defaultWidth }}
	if f, ok := w.(*os.File); ok {
		fd := int(f.Fd())
		d.width = func() int {
			if cols, _, err := term.GetSize(fd); err == nil && cols > 0 {
				return cols
			}
			return defaultWidth
		}
	}
	return d
}

// NewWidth returns a Display on w whose width is given by width, for
// writers that are not a terminal's file (tests, a pty's other end).
func NewWidth(w io.Writer, width func() int) *Display {
	return &Display{w: w, width: width}
}

// Start shows the status line, status() redrawn every Every until Stop. A
// Display shows one status line at a time: Start while started replaces
// the line's source.
func (d *Display) Start(status func() string) {
	d.mu.Lock()
	d.status = status
	running := d.stop != nil
	if !running {
		d.stop, d.done = make(chan struct{}), make(chan struct{})
	}
	d.drawLocked()
	stop, done := d.stop, d.done
	d.mu.Unlock()
	if running {
		return
	}
	go func() {
		defer close(done)
		every := d.every
		if every <= 0 {
			every = Every
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				d.mu.Lock()
				d.drawLocked()
				d.mu.Unlock()
			}
		}
	}()
}

// Stop draws the status line a last time and ends it with a newline, so
// that it stays on the screen above what follows; later log lines are
// written as they come.
func (d *Display) Stop() {
	d.mu.Lock()
	stop, done := d.stop, d.done
	d.stop, d.done = nil, nil
	d.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-done
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drawLocked()
	if d.shown {
		_, _ = d.w.Write([]byte("\n"))
	}
	d.shown, d.status = false, nil
}

// Write writes log output above the status line: whole lines are written
// at once, after the status line is erased, and the status line is drawn
// again below them; a line not ended yet is held until it is.
func (d *Display) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.status == nil && len(d.part) == 0 {
		return d.w.Write(p)
	}
	d.part = append(d.part, p...)
	i := bytes.LastIndexByte(d.part, '\n')
	if i < 0 {
		return len(p), nil
	}
	var buf bytes.Buffer
	if d.shown {
		buf.WriteString(d.eraseLocked(d.width()))
	}
	buf.Write(d.part[:i+1])
	d.part = append(d.part[:0], d.part[i+1:]...)
	if _, err := d.w.Write(buf.Bytes()); err != nil {
		return 0, err
	}
	d.drawLocked()
	return len(p), nil
}

// drawLocked redraws the status line in place, clipped to the width.
func (d *Display) drawLocked() {
	if d.status == nil {
		return
	}
	width := d.width()
	line := Clip(d.status(), width-1)
	_, _ = io.WriteString(d.w, d.eraseLocked(width)+line)
	d.shown, d.drawnW, d.drawnN = true, width, utf8.RuneCountInString(line)
}

// eraseLocked returns what erases the status line on the screen, the
// terminal being width columns wide now, and marks it gone.
func (d *Display) eraseLocked(width int) string {
	if !d.shown {
		return "\r\x1b[K"
	}
	d.shown = false
	if width < d.drawnW && d.drawnN > width {
		// The window shrank under the line on the screen: a terminal
		// that reflows (tmux, Terminal.app, iTerm2, GNOME's) has
		// wrapped it onto several rows, and erasing the last one would
		// leave the others behind. Go up to its first row and erase
		// from there down.
		if up := (d.drawnN+width-1)/width - 1; up > 0 {
			return fmt.Sprintf("\r\x1b[%dA\x1b[J", up)
		}
	}
	return "\r\x1b[K"
}

// Clip cuts s to at most width columns (runes; the status line holds no
// wide characters), ending in "…" when it was cut. Control characters
// (a newline in a status) become spaces, so the line stays one row.
func Clip(s string, width int) string {
	if width < 1 {
		return ""
	}
	b := make([]rune, 0, len(s))
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			r = ' '
		}
		b = append(b, r)
	}
	if len(b) <= width {
		return string(b)
	}
	if width == 1 {
		return "…"
	}
	return string(b[:width-1]) + "…"
}
