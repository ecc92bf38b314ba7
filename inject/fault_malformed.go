package inject

import (
	"errors"
	"net"
	"strings"

	"github.com/halfopen/rehearse/journal"
)

// MalformedParams are the params of the "malformed" fault.
type MalformedParams struct {
	// StatusLine is the first line sent, without CRLF; "" means
	// "HTTP/1.1 ??? Bad Gateway" (a non-numeric status code).
	StatusLine string `yaml:"status_line,omitempty" json:"status_line,omitempty"`
}

// malformedFault answers with a status line no HTTP client accepts, then
// closes the connection.
type malformedFault struct{ line string }

func newMalformed(p *MalformedParams) (Fault, error) {
	l := p.StatusLine
	if l == "" {
		l = "HTTP/1.1 ??? Bad Gateway"
	}
	if strings.ContainsAny(l, "\r\n") {
		return nil, errors.New("status_line: must be one line, without CR or LF")
	}
	return &malformedFault{line: l}, nil
}

func (f *malformedFault) Describe() string { return "status line " + f.line }

func (f *malformedFault) ServeConn(x *Exchange, conn net.Conn) {
	conn.Write([]byte(f.line + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
	conn.Close()
	x.SetOutcome(journal.OutcomeUpstreamComplete)
}
