package capture

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// OpenFile opens the capture file at path for reading. It must be a
// regular file: a named pipe would block the open until a writer came (in
// open(2), where SIGTERM and Ctrl-C cannot stop it: validate hung for
// good), and a directory reads as an empty file ("file truncated: 0
// bytes"). The open itself does not block (O_NONBLOCK, which changes
// nothing for a regular file), and what was opened is checked, so that a
// file replaced after a Stat is still refused. Standard input ("-") is for
// pipes; callers handle it before calling OpenFile.
func OpenFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = NotRegular(fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// NotRegular says why a capture file of this kind cannot be read, or
// returns nil for a regular file.
func NotRegular(fi fs.FileInfo) error {
	m := fi.Mode()
	var what string
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	default:
		what = "not a regular file"
	}
	return fmt.Errorf("%s is %s: want a regular pcap or pcapng file (write or copy the capture to a file first)", fi.Name(), what)
}
