package rehearsal

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestFrontKeepsResponsesWhole: the fleet front must deliver a complete
// response even when the client's request body is still arriving as the
// gateway starts answering. net/http's HTTP/1 server consumes and closes
// an unread request body when the handler writes its response header;
// the front's transport, still forwarding (or about to make its final
// check read of) that body, then fails the request write and closes the
// gateway connection under the response: a 200 cut after its header,
// with the gateway's complete answer lost (the truncated 200s of the
// fleet drill, where the race needs a loaded machine to open: the
// transport's check read comes after the gateway's answer). Here a
// gateway that answers before reading the body and a client that sends
// its last bytes one by one make the race certain: without full duplex
// every request is cut. The front runs in full duplex, as a load
// balancer does.
func TestFrontKeepsResponsesWhole(t *testing.T) {
	answer := bytes.Repeat([]byte("x"), 512)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex() // answer before the body is in
		w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		time.Sleep(150 * time.Millisecond) // the body comes after the client's last byte
		_, _ = w.Write(answer)
		_, _ = io.Copy(io.Discard, r.Body) // a full-duplex handler reads its body before it returns
	}))
	defer gw.Close()
	srv, url, err := startFront([]string{gw.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for i := range 3 {
		c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "POST /tools/vectors HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{\"q\":")
		// The gateway's answer header reaches the front while the body
		// is still coming: the rest arrives a byte at a time.
		time.Sleep(30 * time.Millisecond)
		for _, b := range []byte(`"ab"}`) {
			_, _ = c.Write([]byte{b})
			time.Sleep(5 * time.Millisecond)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		got, err := io.ReadAll(resp.Body)
		c.Close()
		if resp.StatusCode != http.StatusOK || err != nil || !bytes.Equal(got, answer) {
			t.Fatalf("request %d: status %d, %d of %d bytes, %v: the front cut a complete answer", i, resp.StatusCode, len(got), len(answer), err)
		}
	}
}
