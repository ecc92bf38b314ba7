package inject

import (
	"io"
	"net"

	"github.com/halfopen/rehearse/journal"
)

// BlackholeParams are the params of the "blackhole" fault; it has none.
type BlackholeParams struct{}

// blackholeFault accepts the connection and reads everything sent on it,
// but never answers (HTTP) nor forwards (tcp), until the client hangs up or
// the server closes.
type blackholeFault struct{}

func newBlackhole(*BlackholeParams) (Fault, error) { return blackholeFault{}, nil }

func (blackholeFault) Describe() string { return "accept and read, never answer" }

func (blackholeFault) ServeConn(x *Exchange, conn net.Conn) {
	swallow(x.Context().Done(), conn)
	x.SetOutcome(journal.OutcomeUpstreamStalled)
}

func (blackholeFault) ServeTCP(l *Link) {
	swallow(l.Context().Done(), l.Client)
	l.SetOutcome(journal.OutcomeUpstreamStalled)
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
