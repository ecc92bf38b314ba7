//go:build linux

package inject

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// unsentBytes returns the bytes of rc's send queue the peer has not yet
// acknowledged (SIOCOUTQ).
func unsentBytes(rc syscall.RawConn) (int, error) {
	var n int
	var ierr error
	err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) })
	if err != nil {
		return 0, err
	}
	return n, ierr
}
