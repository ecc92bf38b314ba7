//go:build !unix

package inject

import (
	"net"
	"syscall"
)

// pollRead cannot poll here: the read that follows blocks as usual.
func pollRead(net.Conn, syscall.RawConn, []byte) (int, error, bool) { return 0, nil, false }
