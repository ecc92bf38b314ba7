//go:build unix

package scenarios

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCaptureMustBeARegularFile: validate (and so run, which loads the
// same way) refuses a capture that is a named pipe or a directory at the
// replay.capture key, without opening it: the open of a pipe blocked for
// good.
func TestCaptureMustBeARegularFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "live.pcap"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "caps.pcap"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ capture, want string }{
		{"live.pcap", "s.yaml:3:12: replay.capture: capture live.pcap is a named pipe (FIFO): want a regular pcap or pcapng file (write or copy the capture to a file first)"},
		{"caps.pcap", "s.yaml:3:12: replay.capture: capture caps.pcap is a directory: want a regular pcap or pcapng file (write or copy the capture to a file first)"},
	} {
		path := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(path, []byte("version: 1\nreplay:\n  capture: "+tt.capture+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil {
			t.Fatalf("%s: loaded", tt.capture)
		}
		if got := err.Error(); got != filepath.Join(dir, tt.want) {
			t.Errorf("%s:\n got %s\nwant %s", tt.capture, got, filepath.Join(dir, tt.want))
		}
	}
}
