package capture

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// FuzzSOCKSHandshake: the SOCKS handshake parsers never panic nor read
// past the bytes they have, and a whole handshake stays whole, with the
// same result, whatever follows it (the tunnel's bytes).
func FuzzSOCKSHandshake(f *testing.F) {
	for _, s := range []string{
		"\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01\x1f\x90GET / HTTP/1.1\r\n\r\n",
		"\x05\x03\x00\x01\x02\x01\x05alice\x11s3cret-socks-pass\x05\x01\x00\x03\x09localhost\x1f\x90",
		"\x05\x01\x00\x05\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x1f\x90",
		"\x05\x01\x00\x05\x02\x00\x01\x7f\x00\x00\x01\x1f\x90",
		"\x04\x01\x1f\x90\x7f\x00\x00\x01someuser\x00",
		"\x04\x01\x1f\x90\x00\x00\x00\x01\x00localhost\x00",
		"\x04\x02\x00",
		"\x05\xff",
	} {
		f.Add([]byte(s), []byte("\x05\x00\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00"))
	}
	f.Add([]byte("\x04\x01\x00\x50\x0a\x00\x00\x01\x00"), []byte("\x00\x5a\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("\x05\x01\x02"), []byte("\x05\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, client, server []byte) {
		h, n, res := parseSOCKSClient(client)
		if n < 0 || n > len(client) || (res != socksDone && n != 0) {
			t.Fatalf("n %d of %d bytes, result %d", n, len(client), res)
		}
		if res == socksDone {
			if h.version == "" || h.target == "" || h.cmd < 1 || h.cmd > 3 {
				t.Fatalf("whole handshake %+v", h)
			}
			more := append(bytes.Clone(client), "GET / HTTP/1.1\r\n"...)
			if h2, n2, res2 := parseSOCKSClient(more); res2 != socksDone || n2 != n || h2 != h {
				t.Fatalf("the tunnel's bytes changed the handshake: %+v %d %d, was %+v %d", h2, n2, res2, h, n)
			}
			if strings.Contains(h.target, "s3cret") && !strings.Contains(string(client[n-len(h.target):n]), "s3cret") {
				t.Fatalf("target %q holds password bytes", h.target)
			}
		}
		for _, v := range []int{4, 5} {
			r, res := parseSOCKSReply(v, server)
			if r.n < 0 || r.n > len(server) || (res == socksDone && r.n == 0) {
				t.Fatalf("reply length %d of %d bytes, result %d", r.n, len(server), res)
			}
			if res == socksDone {
				more := append(bytes.Clone(server), "HTTP/1.1 200 OK\r\n"...)
				if r2, res2 := parseSOCKSReply(v, more); res2 != socksDone || r2 != r {
					t.Fatalf("the tunnel's bytes changed the reply: %+v, was %+v", r2, r)
				}
			}
		}
	})
}

// FuzzRequestLine: a request line Go's net/http server takes (HTTP/1.x,
// a method of fewer than maxMethod bytes, a target) is taken by the tolerant
// scanner too, and whatever the scanner takes splits into a token method,
// a target and the version, and is never reported malformed.
func FuzzRequestLine(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1", "GET  /two HTTP/1.1", "GET /minor HTTP/1.10", "GET /t HTTP/1.1  ", "get /lower HTTP/1.1",
		"GET /v HTTP/1.0.8", "G@T /m HTTP/1.1", "GET HTTP/1.1", "OPTIONS * HTTP/1.1", "CONNECT h:443 HTTP/1.1",
		"GET /a b HTTP/1.1", "GET /\x01 HTTP/1.1", "GET /x HTTP/1.9", "GET /x HTTP/2.0", "GET /r\rx HTTP/1.1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n") {
			return
		}
		b := []byte(line + "\r\nHost: h\r\n\r\n")
		l, ok, more, what := scanRequestLine(b)
		if more {
			t.Fatalf("%q: more bytes asked for a whole line", line)
		}
		if ok {
			if what != "" {
				t.Fatalf("%q taken and malformed (%s)", line, what)
			}
			method, target, proto, split := splitRequestLine(b)
			if !split || method != string(b[:l.methodEnd]) || target == "" || target != string(b[l.targetStart:l.tgtEnd]) || proto != string(b[l.versionStart:l.verEnd]) {
				t.Fatalf("%q: scanned %+v, split %q %q %q %v", line, l, method, target, proto, split)
			}
			for i := range len(method) {
				if !isTchar(method[i]) {
					t.Fatalf("%q: method %q", line, method)
				}
			}
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
		// ReadRequest takes "CONNECT  HTTP/1.0" (two spaces) with an
		// empty target; a line without a target is reported malformed.
		if err == nil && req.ProtoMajor == 1 && len(req.Method) < maxMethod && req.RequestURI != "" && !ok {
			t.Fatalf("%q: net/http takes it (%s %q %s), the scanner does not (malformed: %q)", line, req.Method, req.RequestURI, req.Proto, what)
		}
	})
}
