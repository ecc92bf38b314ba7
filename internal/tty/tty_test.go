package tty

import (
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
)

func TestLogLinesGoAboveTheStatusLine(t *testing.T) {
	var out testutil.SyncBuffer
	d := NewWidth(&out, func() int { return 20 })
	d.every = time.Hour // only the redraws the writes make
	d.Write([]byte("before start\n"))
	d.Start(func() string { return "status that is longer than twenty columns" })
	d.Write([]byte("log one\nlog "))
	d.Write([]byte("two\n"))
	d.Stop()
	d.Write([]byte("after stop\n"))
	got := out.String()
	// Every log line starts on a cleared line, and the status line is
	// redrawn (clipped to 19 columns) after it.
	status := "status that is lon…"
	want := "before start\n" +
		"\r\x1b[K" + status +
		"\r\x1b[Klog one\n" + "\r\x1b[K" + status +
		"\r\x1b[Klog two\n" + "\r\x1b[K" + status
	if !strings.HasPrefix(got, want) {
		t.Fatalf("terminal output\n got %q\nwant prefix %q", got, want)
	}
	if !strings.HasSuffix(got, "\r\x1b[K"+status+"\nafter stop\n") {
		t.Errorf("Stop does not leave the last status line above what follows: %q", got)
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "log") && strings.Contains(l[strings.LastIndex(l, "\r")+1:], "status") {
			t.Errorf("a log line and the status share a line: %q", l)
		}
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"longer than ten", 10, "longer th…"},
		{"two\nlines", 20, "two lines"},
		{"résumé—ok", 6, "résum…"},
		{"x", 0, ""},
	} {
		if got := Clip(tc.in, tc.width); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}

// TestShrinkErasesTheReflowedLine: after the window narrows, the line on
// the screen (reflowed onto several rows) is erased from its first row.
func TestShrinkErasesTheReflowedLine(t *testing.T) {
	var out testutil.SyncBuffer
	width := 100
	d := NewWidth(&out, func() int { return width })
	d.every = time.Hour
	d.Start(func() string { return strings.Repeat("x", 95) })
	width = 40
	d.Write([]byte("log\n"))
	d.Stop()
	got := out.String()
	// 95 columns on a 40-column terminal: three rows, so up two.
	want := "\r\x1b[K" + strings.Repeat("x", 95) + "\r\x1b[2A\x1b[Jlog\n" + "\r\x1b[K" + strings.Repeat("x", 38) + "…"
	if !strings.HasPrefix(got, want) {
		t.Errorf("a log line right after the shrink\n got %q\nwant %q", got, want)
	}
}
