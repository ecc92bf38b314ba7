package replay

import (
	"net"
	"sync/atomic"
)

// heldConn is a connection of the replayer's own transport. A request
// dispatched early (leadFor) is handed to the transport at once, and when
// the transport gives it a connection (the GotConn hook), the sender arms
// the connection with the request's precise wait: the request's first
// write to the socket waits for the due time there, and is stamped
// immediately before it. So the work between the sender and the socket
// (the connection pool, the transport's hand-off to its writer goroutine,
// serialising the header) is done before the due time instead of after it,
// and the send is stamped one write(2) away from the wire.
type heldConn struct {
	net.Conn
	hold atomic.Pointer[sendHold]
}

// sendHold is one request's wait and stamp, run once by its first write.
type sendHold struct {
	// wait returns at the due time, or early with an error when the
	// replay is aborted (then nothing is written).
	wait  func() error
	stamp func()
}

// Write runs the armed sendHold, if any, before writing.
func (c *heldConn) Write(p []byte) (int, error) {
	if h := c.hold.Swap(nil); h != nil {
		if err := h.wait(); err != nil {
			return 0, err
		}
		h.stamp()
	}
	return c.Conn.Write(p)
}

// heldOf returns the replayer's connection under c (a TLS connection
// wraps it), or nil when c is not one (a transport given in Options).
func heldOf(c net.Conn) *heldConn {
	for c != nil {
		switch x := c.(type) {
		case *heldConn:
			return x
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil
		}
	}
	return nil
}
