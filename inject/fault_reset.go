package inject

import (
	"net"

	"github.com/halfopen/rehearse/journal"
)

// ResetParams are the params of the "reset" fault; it has none.
type ResetParams struct{}

// newReset answers a request (HTTP) or a connection (tcp) with a TCP RST
// before any response byte: the client sees ECONNRESET.
func newReset(*ResetParams) (Fault, error) {
	return connFault{
		what:    "TCP reset before any byte",
		act:     func(_ <-chan struct{}, c net.Conn) { resetConn(c) },
		outcome: journal.OutcomeUpstreamReset,
	}, nil
}

// connFault does one thing to the client's connection, the same to an
// HTTP request's connection as to a tcp link, and records one outcome: the
// reset and blackhole faults. act returns when it is done with the
// connection; done closes when the request or the server ends.
type connFault struct {
	what    string
	act     func(done <-chan struct{}, c net.Conn)
	outcome journal.Outcome
}

func (f connFault) Describe() string { return f.what }

func (f connFault) ServeConn(x *Exchange, conn net.Conn) {
	f.act(x.Context().Done(), conn)
	x.SetOutcome(f.outcome)
}

func (f connFault) ServeTCP(l *Link) {
	f.act(l.Context().Done(), l.Client)
	l.SetOutcome(f.outcome)
}
