package inject

import (
	"io"
	"net"

	"github.com/halfopen/rehearse/journal"
)

// BlackholeParams are the params of the "blackhole" fault; it has none.
type BlackholeParams struct{}

// newBlackhole accepts the connection and reads everything sent on it, but
// never answers (HTTP) nor forwards (tcp), until the client hangs up or the
// server closes.
func newBlackhole(*BlackholeParams) (Fault, error) {
	return connFault{what: "accept and read, never answer", act: swallow, outcome: journal.OutcomeUpstreamStalled}, nil
}

// swallow reads and discards from conn until it ends or done closes, then
// closes it.
func swallow(done <-chan struct{}, conn net.Conn) {
	stop := make(chan struct{})
	go func() {
		select {
		case <-done:
			conn.Close()
		case <-stop:
		}
	}()
	io.Copy(io.Discard, conn)
	close(stop)
	conn.Close()
}
