//go:build unix

package capture

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

// TestOpenFileRefusesWhatIsNotAFile: a named pipe as capture blocked the
// open until a writer came, for ever and deaf to signals; a directory read
// as an empty file ("file truncated: 0 bytes"). Both are refused at once,
// saying what the path is.
func TestOpenFileRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "live.pcap")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, want string }{
		{fifo, "live.pcap is a named pipe (FIFO): want a regular pcap or pcapng file"},
		{dir, " is a directory: want a regular pcap or pcapng file"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ExtractFile(context.Background(), tt.path, Options{}, func(*Request) error { return nil })
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, rehearse.ErrInvalid) {
				t.Errorf("%s: %v, want invalid input with %q", tt.path, err, tt.want)
			}
		case <-time.After(10 * time.Second):
			// Unblock the open so that the test process can end.
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			t.Fatalf("%s: still opening after 10 s", tt.path)
		}
	}
	f, err := OpenFile(filepath.Join("testdata", firstTestdataFile(t)))
	if err != nil {
		t.Fatalf("regular file: %v", err)
	}
	f.Close()
}

func firstTestdataFile(t *testing.T) string {
	t.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			return e.Name()
		}
	}
	t.Fatal("no regular file in testdata")
	return ""
}
