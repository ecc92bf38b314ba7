//go:build unix

package inject

import (
	"net"
	"syscall"
)

// peerClosed reports whether the peer of an idle connection has closed it
// (or reset it): a non-blocking peek that finds end-of-file or an error.
// Bytes waiting (an unsolicited response) count as closed too: the
// connection cannot carry a new exchange. It is one recvfrom(2).
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	var b [1]byte
	rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n > 0 || (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN)
		return true // never wait
	})
	return closed
}
