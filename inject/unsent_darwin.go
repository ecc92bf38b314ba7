//go:build darwin

package inject

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// unsentBytes returns the bytes of rc's send queue not yet acknowledged by
// the peer (SO_NWRITE).
func unsentBytes(rc syscall.RawConn) (int, error) {
	var n int
	var gerr error
	err := rc.Control(func(fd uintptr) { n, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_NWRITE) })
	if err != nil {
		return 0, err
	}
	return n, gerr
}
