package inject

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A real upstream may answer before it has read the whole request body (an
// early rejection, a streaming API). The full path must relay that answer
// and go on forwarding the body under it: without full duplex, net/http's
// HTTP/1 server closes the request body once the response begins, and the
// transport's final read of it (the check that nothing follows the
// declared length) then fails, closing the upstream connection under the
// answer still on its way (golang/go#40747). The body is over the fast
// path's buffer, so the full path (server + httputil.ReverseProxy) serves
// it; it is larger than what the socket buffers hold, so the transport is
// still sending it when the answer begins.
func TestProxyFullDuplexEarlyAnswer(t *testing.T) {
	const total = 7 << 20 // under maxWatchedBody: read ahead whole from the gateway
	const answerLen = 64 << 10
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	answer := bytes.Repeat([]byte("a"), answerLen)
	headSeen := make(chan struct{})
	upErr := make(chan error, 1)
	go func() {
		// A raw HTTP/1.1 upstream: it reads the request head, sends the
		// answer's head and first half, reads the body once the gateway has
		// that much of the answer, then sends the second half.
		upErr <- func() error {
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			defer c.Close()
			c.(*net.TCPConn).SetReadBuffer(32 << 10) // no autotuning: the body waits in the proxy
			c.SetDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(c)
			req, err := http.ReadRequest(br)
			if err != nil {
				return err
			}
			head := "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(answerLen) + "\r\n\r\n"
			if _, err := c.Write(append([]byte(head), answer[:answerLen/2]...)); err != nil {
				return err
			}
			select {
			case <-headSeen:
			case <-time.After(20 * time.Second):
				return errors.New("the gateway never got the answer's head")
			}
			n, err := io.Copy(io.Discard, req.Body)
			if err != nil || n != total {
				return errors.New("the upstream got " + strconv.FormatInt(n, 10) + " body bytes, want " + strconv.Itoa(total) + ": " + errString(err))
			}
			// The proxy's transport has now made its final read of the
			// body; it must not close the connection the answer is on.
			c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			if _, err := br.ReadByte(); !isTimeout(err) {
				return errors.New("the proxy closed the upstream connection under the answer: " + errString(err))
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			_, err = c.Write(answer[answerLen/2:])
			return err
		}()
	}()
	s, _ := startServer(t, []UpstreamConfig{{Name: "api", Mode: ModeProxy, Target: "http://" + ln.Addr().String()}}, nil)
	gw, err := net.Dial("tcp", strings.TrimPrefix(s.URL("api"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	go func() {
		io.WriteString(gw, "POST /upload HTTP/1.1\r\nHost: api\r\nContent-Length: "+strconv.Itoa(total)+"\r\n\r\n")
		gw.Write(bytes.Repeat([]byte("b"), total))
	}()
	gw.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(gw), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	close(headSeen)
	got, err := io.ReadAll(resp.Body)
	if uerr := <-upErr; uerr != nil {
		t.Error(uerr)
	}
	if err != nil || resp.StatusCode != 200 || len(got) != answerLen {
		t.Fatalf("the gateway got %d, %d of %d answer bytes: %v", resp.StatusCode, len(got), answerLen, err)
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
