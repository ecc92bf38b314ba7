//go:build unix

package replay

import "syscall"

// peekAlive reports whether an idle connection's socket has nothing to
// read and no end of stream pending: a peek that does not wait and takes
// nothing. Data or EOF on an idle connection means the peer closed it or
// answered something unasked (a 408 before closing); either way it cannot
// carry another request.
func peekAlive(rc syscall.RawConn) bool {
	alive := false
	var b [1]byte
	err := rc.Read(func(fd uintptr) bool {
		for {
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if err == syscall.EINTR {
				continue
			}
			alive = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
			return true // done: never wait for readiness
		}
	})
	return err == nil && alive
}
