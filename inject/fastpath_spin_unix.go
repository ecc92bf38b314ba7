//go:build unix

package inject

import (
	"io"
	"net"
	"os"
	"syscall"
)

// pollRead makes one non-blocking read of c into p; done is false when
// nothing was there to read (or the poll cannot tell: the blocking read
// that follows then answers). Its results are those c.Read would return.
func pollRead(c net.Conn, rc syscall.RawConn, p []byte) (n int, err error, done bool) {
	var errno error
	if rc.Read(func(fd uintptr) bool {
		n, errno = syscall.Read(int(fd), p)
		return true // never wait: the poll is the caller's loop
	}) != nil {
		return 0, nil, false
	}
	switch {
	case errno == syscall.EAGAIN || errno == syscall.EINTR:
		return 0, nil, false
	case errno != nil:
		// As net.Conn.Read reports it: a reset stays a reset (the kernel
		// reports it once, so the blocking read would see end-of-file).
		return 0, &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", errno)}, true
	case n == 0 && len(p) > 0:
		return 0, io.EOF, true
	}
	return n, nil, true
}
