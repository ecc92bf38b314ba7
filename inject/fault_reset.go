package inject

import (
	"net"

	"github.com/halfopen/rehearse/journal"
)

// ResetParams are the params of the "reset" fault; it has none.
type ResetParams struct{}

// resetFault answers a request (HTTP) or a connection (tcp) with a TCP RST
// before any response byte: the client sees ECONNRESET.
type resetFault struct{}

func newReset(*ResetParams) (Fault, error) { return resetFault{}, nil }

func (resetFault) Describe() string { return "TCP reset before any byte" }

func (resetFault) ServeConn(x *Exchange, conn net.Conn) {
	resetConn(conn)
	x.SetOutcome(journal.OutcomeUpstreamReset)
}

func (resetFault) ServeTCP(l *Link) {
	resetConn(l.Client)
	l.SetOutcome(journal.OutcomeUpstreamReset)
}
