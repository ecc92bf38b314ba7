package capture

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
)

// SOCKS (RFC 1928 and 1929 for SOCKS5; the SOCKS4 and SOCKS4a protocol
// notes) is how curl --socks*, ssh -D and many agents reach an HTTP
// server through a proxy: a short binary handshake, then the client's
// bytes are the origin's. The handshake is followed like a CONNECT: the
// client's side says the version, the command and the target; the
// server's reply says whether the tunnel opened (and how long the reply
// is, so that the responses inside the tunnel are followed too). The
// SOCKS4 user id and the SOCKS5 username and password are stepped over
// and never kept: nothing of them reaches a Request, a warning or the
// stats.

// socks handshake parse results.
const (
	socksMore = iota // more bytes are needed
	socksNot         // not a SOCKS handshake
	socksDone        // a whole handshake
)

// socksHello is the client's side of a SOCKS handshake.
type socksHello struct {
	version string // "SOCKS4", "SOCKS4a", "SOCKS5"
	cmd     byte   // 1 CONNECT, 2 BIND, 3 UDP ASSOCIATE
	target  string // host:port the client asked for
	auth    bool   // SOCKS5 username/password sub-negotiation sent
}

// socksCommand names a SOCKS command.
func socksCommand(cmd byte) string {
	switch cmd {
	case 1:
		return "CONNECT"
	case 2:
		return "BIND"
	case 3:
		return "UDP ASSOCIATE"
	}
	return "command " + strconv.Itoa(int(cmd))
}

// maxSOCKSField bounds the NUL-terminated SOCKS4 user id and SOCKS4a
// host name (each at most 255 bytes in practice; one length byte in
// SOCKS5).
const maxSOCKSField = 256

// parseSOCKSClient parses the client's side of a SOCKS handshake at the
// start of b: n is its length once whole (socksDone). A stream is taken
// for SOCKS only when every byte fits the protocol, so that other binary
// protocols are not: a SOCKS5 greeting offers 1 to 16 known methods and
// is followed, if by anything, by a username/password sub-negotiation or
// the request; a SOCKS4 request carries CONNECT or BIND and a printable
// user id.
func parseSOCKSClient(b []byte) (h socksHello, n int, res int) {
	if len(b) == 0 {
		return h, 0, socksMore
	}
	switch b[0] {
	case 4:
		return parseSOCKS4(b)
	case 5:
		return parseSOCKS5(b)
	}
	return h, 0, socksNot
}

func parseSOCKS4(b []byte) (h socksHello, n int, res int) {
	// VN=4 CD DSTPORT(2) DSTIP(4) USERID NUL [HOST NUL]
	if len(b) < 2 {
		return h, 0, socksMore
	}
	if b[1] != 1 && b[1] != 2 {
		return h, 0, socksNot
	}
	if len(b) < 9 {
		return h, 0, socksMore
	}
	port := binary.BigEndian.Uint16(b[2:4])
	ip := netip.AddrFrom4([4]byte(b[4:8]))
	end, res := socksString(b, 8)
	if res != socksDone {
		return h, 0, res
	}
	h.version, h.cmd = "SOCKS4", b[1]
	if v := ip.As4(); v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] != 0 {
		// SOCKS4a: the proxy resolves the name that follows.
		hend, res := socksString(b, end)
		if res != socksDone || hend-end < 2 {
			if res == socksMore {
				return h, 0, socksMore
			}
			return h, 0, socksNot
		}
		h.version = "SOCKS4a"
		h.target = net.JoinHostPort(string(b[end:hend-1]), strconv.Itoa(int(port)))
		return h, hend, socksDone
	}
	h.target = netip.AddrPortFrom(ip, port).String()
	return h, end, socksDone
}

// socksString finds the end (past the NUL) of a printable NUL-terminated
// string starting at b[i].
func socksString(b []byte, i int) (end, res int) {
	for j := i; j < len(b); j++ {
		switch c := b[j]; {
		case c == 0:
			return j + 1, socksDone
		case c < 0x20 || c >= 0x7f || j-i >= maxSOCKSField:
			return 0, socksNot
		}
	}
	return 0, socksMore
}

func parseSOCKS5(b []byte) (h socksHello, n int, res int) {
	// Greeting: VER=5 NMETHODS METHODS...
	if len(b) < 2 {
		return h, 0, socksMore
	}
	nm := int(b[1])
	if nm < 1 || nm > 16 {
		return h, 0, socksNot
	}
	if len(b) < 2+nm {
		return h, 0, socksMore
	}
	for _, m := range b[2 : 2+nm] {
		// IANA's methods (0-9) and the private range; not 0xFF.
		if m > 9 && (m < 0x80 || m == 0xff) {
			return h, 0, socksNot
		}
	}
	i := 2 + nm
	if i == len(b) {
		return h, 0, socksMore
	}
	if b[i] == 1 {
		// RFC 1929: VER=1 ULEN UNAME PLEN PASSWD, stepped over unread.
		if len(b) < i+2 {
			return h, 0, socksMore
		}
		ulen := int(b[i+1])
		if ulen == 0 {
			return h, 0, socksNot
		}
		if len(b) < i+2+ulen+1 {
			return h, 0, socksMore
		}
		plen := int(b[i+2+ulen])
		i += 3 + ulen + plen
		h.auth = true
		if len(b) <= i {
			return h, 0, socksMore
		}
	}
	// Request: VER=5 CMD RSV=0 ATYP DST.ADDR DST.PORT
	if b[i] != 5 {
		return h, 0, socksNot
	}
	if len(b) < i+5 {
		return h, 0, socksMore
	}
	cmd, rsv, atyp := b[i+1], b[i+2], b[i+3]
	if cmd < 1 || cmd > 3 || rsv != 0 {
		return h, 0, socksNot
	}
	host, alen, res := socksAddr(b[i+3:])
	if res != socksDone {
		return h, 0, res
	}
	end := i + 3 + alen + 2
	if len(b) < end {
		return h, 0, socksMore
	}
	_ = atyp
	h.version, h.cmd = "SOCKS5", cmd
	h.target = net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(b[end-2:end]))))
	return h, end, socksDone
}

// socksAddr reads a SOCKS5 address (ATYP and DST.ADDR) at the start of
// b: the host and the length of ATYP plus the address.
func socksAddr(b []byte) (host string, n int, res int) {
	switch b[0] {
	case 1:
		if len(b) < 5 {
			return "", 0, socksMore
		}
		return netip.AddrFrom4([4]byte(b[1:5])).String(), 5, socksDone
	case 4:
		if len(b) < 17 {
			return "", 0, socksMore
		}
		return netip.AddrFrom16([16]byte(b[1:17])).String(), 17, socksDone
	case 3:
		l := int(b[1])
		if l == 0 {
			return "", 0, socksNot
		}
		if len(b) < 2+l {
			return "", 0, socksMore
		}
		for _, c := range b[2 : 2+l] {
			if c <= 0x20 || c >= 0x7f {
				return "", 0, socksNot
			}
		}
		return string(b[2 : 2+l]), 2 + l, socksDone
	}
	return "", 0, socksNot
}

// socksReply is what the server's side of a handshake said.
type socksReply struct {
	n      int    // length of the server's handshake bytes
	failed string // why the tunnel did not open; "" when it did
}

// parseSOCKSReply parses the server's side of a handshake: the SOCKS4
// reply; or the SOCKS5 method selection, the username/password status
// when that method was chosen, and the reply.
func parseSOCKSReply(version int, b []byte) (r socksReply, res int) {
	if version != 5 {
		// VN=0 CD DSTPORT DSTIP (some servers answer VN=4).
		if len(b) < 8 {
			return r, socksMore
		}
		r.n = 8
		switch b[1] {
		case 90:
		case 91:
			r.failed = "request rejected or failed"
		case 92:
			r.failed = "rejected: the server cannot reach the client's identd"
		case 93:
			r.failed = "rejected: the user id does not match identd's"
		default:
			return r, socksNot
		}
		return r, socksDone
	}
	if len(b) < 2 {
		return r, socksMore
	}
	if b[0] != 5 {
		return r, socksNot
	}
	i := 2
	switch b[1] {
	case 0xff:
		r.n, r.failed = 2, "no acceptable authentication method"
		return r, socksDone
	case 2:
		if len(b) < 4 {
			return r, socksMore
		}
		if b[3] != 0 {
			r.n, r.failed = 4, "username/password authentication failed"
			return r, socksDone
		}
		i = 4
	}
	if len(b) < i+5 {
		return r, socksMore
	}
	if b[i] != 5 {
		return r, socksNot
	}
	rep := b[i+1]
	_, alen, res := socksAddr(b[i+3:])
	if res != socksDone {
		return r, res
	}
	if len(b) < i+3+alen+2 {
		return r, socksMore
	}
	r.n = i + 3 + alen + 2
	if rep != 0 {
		r.failed = socks5Reply(rep)
	}
	return r, socksDone
}

// socks5Reply names a SOCKS5 reply code (RFC 1928 section 6).
func socks5Reply(rep byte) string {
	switch rep {
	case 1:
		return "general SOCKS server failure"
	case 2:
		return "connection not allowed by ruleset"
	case 3:
		return "network unreachable"
	case 4:
		return "host unreachable"
	case 5:
		return "connection refused"
	case 6:
		return "TTL expired"
	case 7:
		return "command not supported"
	case 8:
		return "address type not supported"
	}
	return "reply " + strconv.Itoa(int(rep))
}

// socksState is a connection's SOCKS handshake: the client's side, the
// server's reply as far as it was captured, and whether its outcome has
// been counted.
type socksState struct {
	version int // 4 or 5, from the first byte
	hello   socksHello
	// The server's side: its bytes so far (in order), the sequence
	// number of the next one, and whether the reply is parsed.
	srv       []byte
	srvNext   uint32
	srvKnown  bool
	replyDone bool
	counted   bool
}

// name is the protocol version as the stats say it.
func (s *socksState) name() string {
	if s.hello.version != "" {
		return s.hello.version
	}
	return "SOCKS" + strconv.Itoa(s.version)
}

// outcome counts what became of the handshake, once.
func (s *socksState) outcome(x *extractor, what string) {
	if s.counted {
		return
	}
	s.counted = true
	x.st.SOCKS[s.name()+": "+what]++
}

// socksClient parses the client's side of the handshake in the buffer;
// once whole, the stream after it is classified like a stream's start.
func (p *httpParser) socksClient() bool {
	h, n, res := parseSOCKSClient(p.buf)
	switch res {
	case socksMore:
		return false
	case socksNot:
		// The first bytes looked like a greeting, the rest is not.
		p.socks = nil
		p.x.st.OtherStreams++
		p.dead()
		return false
	}
	// The handshake bytes (a user id, a password) are stepped over
	// unread: never kept, never counted as skipped request bytes.
	p.socks.hello = h
	p.consume(n)
	if h.cmd != 1 {
		// BIND and UDP ASSOCIATE carry no HTTP client stream.
		p.socks.outcome(p.x, "unsupported command "+socksCommand(h.cmd))
		p.dead()
		return false
	}
	p.state = psStart
	return true
}

// maxSOCKSReply bounds the server's handshake bytes held (a SOCKS5
// method selection, authentication status and a reply with a 255-byte
// name fit).
const maxSOCKSReply = 300

// socksServer takes a segment of the server's direction of a connection
// whose client began with a SOCKS handshake: while the server's side of
// the handshake is in progress it is parsed (its outcome counted) and
// rest is nil; once it is over, rest is the part of the segment after
// it, from sequence number seq, for the response tracker.
func (x *extractor) socksServer(c *conn, d int, s *socksState, sg *segment) (rest []byte, seq uint32) {
	h := &c.h[d]
	seq, data := sg.seq, sg.payload
	if sg.flags&tcpSYN != 0 {
		seq++
	}
	if !s.srvKnown {
		s.srvKnown, s.srvNext = true, seq
		if h.syn {
			s.srvNext = h.isn + 1
		}
	}
	switch diff := seqDiff(s.srvNext, seq); {
	case diff > 0 || sg.missing > 0:
		// A hole in the server's handshake: its outcome is unknown;
		// the client's next bytes tell whether the tunnel opened.
		s.replyDone = true
		return nil, 0
	case diff < 0:
		if int(-diff) >= len(data) {
			return nil, 0 // retransmitted
		}
		data = data[-diff:]
		seq += uint32(-diff)
	}
	take := min(len(data), maxSOCKSReply-len(s.srv))
	s.srv = append(s.srv, data[:take]...)
	s.srvNext = seq + uint32(take)
	r, res := parseSOCKSReply(s.version, s.srv)
	switch res {
	case socksMore:
		if len(s.srv) < maxSOCKSReply {
			return nil, 0
		}
		fallthrough
	case socksNot:
		s.replyDone, s.srv = true, nil
		return nil, 0
	}
	s.replyDone = true
	if r.failed != "" {
		s.outcome(x, "handshake failed: "+r.failed)
	} else {
		s.outcome(x, "followed")
	}
	// The responses in the tunnel start right after the reply.
	after := seq + uint32(take) - uint32(len(s.srv)-r.n)
	c.resp = &respTracker{known: true, next: after}
	skip := take - (len(s.srv) - r.n)
	s.srv = nil
	return data[skip:], after
}
