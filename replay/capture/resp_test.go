package capture

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestResponsesAgainstTshark counts the final responses, their status
// classes and the server-sent-event streams of real captures, and
// compares them with tshark's.
func TestResponsesAgainstTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed: cannot compare with it (apt-get install tshark)")
	}
	for _, path := range []string{
		filepath.Join("testdata", "edge-eth.pcap.gz"),
		filepath.Join("testdata", "retrans-tbf.pcap"),
		filepath.Join("testdata", "snaplen-120.pcap"),
		filepath.Join("testdata", "frag-ipv4.pcap"),
		filepath.Join("..", "..", "scenarios", "captures", "agent-gateway.pcapng"),
	} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			reqs, st, err := ReadFile(context.Background(), path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"-r", path, "-n", "-Y", "http.response.code >= 200", "-T", "fields", "-e", "http.response.code", "-e", "http.content_type"}
			ports := map[uint16]bool{}
			for _, r := range reqs {
				if !ports[r.Flow.Dst.Port()] {
					ports[r.Flow.Dst.Port()] = true
					args = append(args, "-d", fmt.Sprintf("tcp.port==%d,http", r.Flow.Dst.Port()))
				}
			}
			out, err := exec.Command("tshark", args...).Output()
			if err != nil {
				t.Fatal(err)
			}
			classes := map[string]int64{}
			var n, sse int64
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				code, ct, _ := strings.Cut(line, "\t")
				n++
				classes[code[:1]+"xx"]++
				if strings.HasPrefix(ct, "text/event-stream") {
					sse++
				}
			}
			if st.Responses != n || fmt.Sprint(st.ResponseStatus) != fmt.Sprint(classes) || st.StreamingResponses["text/event-stream"] != sse {
				t.Errorf("responses %d %v, event streams %d; tshark %d %v, %d", st.Responses, st.ResponseStatus, st.StreamingResponses["text/event-stream"], n, classes, sse)
			}
			t.Logf("%d responses %v, streaming %v, chunked %d, lost %d", st.Responses, st.ResponseStatus, st.StreamingResponses, st.ChunkedResponses, st.ResponsesLost)
		})
	}
}

// TestResponseFraming: HEAD, interim and bodiless responses, chunked and
// length-framed bodies split anywhere, close-delimited bodies, a
// protocol switch, and a hole in the server's stream.
func TestResponseFraming(t *testing.T) {
	cases := []struct {
		name      string
		reqs      []string
		resp      string
		cuts      []int
		hole      bool // drop a server segment
		want      string
		streaming int64
	}{
		{name: "HEAD, 100, 204, 304, chunked, length", reqs: []string{"HEAD /", "POST /", "DELETE /x", "GET /c", "GET /e", "GET /l"},
			resp: "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" +
				"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok" +
				"HTTP/1.1 204 No Content\r\n\r\n" +
				"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-ndjson\r\n\r\n5;x=1\r\n{}\n{}\r\n0\r\nT: 1\r\n\r\n" +
				"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n" +
				"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy",
			cuts: []int{5, 40, 41, 120, 200, 230, 231, 260}, want: "6 map[2xx:4 3xx:1 5xx:1] lost 0", streaming: 1},
		{name: "close-delimited SSE", reqs: []string{"GET /events"},
			resp: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\r\ndata: 1\n\ndata: HTTP/1.1 200 OK\r\n\r\n", cuts: []int{70},
			want: "1 map[2xx:1] lost 0", streaming: 1},
		{name: "upgrade", reqs: []string{"GET /ws"}, resp: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05HTTP/1.1 200 OK\r\n\r\n",
			want: "0 map[] lost 0"},
		{name: "hole in a body: resynchronised on the next status line", reqs: []string{"GET /a", "GET /b", "GET /c"},
			resp: "HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n0123456789" + "0123456789" + "0123456789" + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" + "HTTP/1.1 404 No\r\nContent-Length: 0\r\n\r\n",
			cuts: []int{48, 58, 69, 107}, hole: true, want: "3 map[2xx:2 4xx:1] lost 0"},
		{name: "hole over a header: lost, resynchronised on the next status line", reqs: []string{"GET /a", "GET /b", "GET /c"},
			resp: "HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n0123456789" + "0123456789" + "0123456789" + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" + "HTTP/1.1 404 No\r\nContent-Length: 0\r\n\r\n",
			cuts: []int{69, 80, 107}, hole: true, want: "2 map[2xx:1 4xx:1] lost 1"},
		{name: "hole in a chunked body", reqs: []string{"GET /a", "GET /b"},
			resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n" + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
			cuts: []int{50, 55, 74}, hole: true, want: "2 map[2xx:2] lost 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			var w bytes.Buffer
			s := newSynth(t, &w)
			c := s.conn("10.0.0.1:40000", "10.0.0.2:8080").handshake()
			for _, r := range tc.reqs {
				c.send([]byte(r + " HTTP/1.1\r\nHost: h\r\n\r\n"))
			}
			last := 0
			for i, cut := range append(tc.cuts, len(tc.resp)) {
				seg := []byte(tc.resp[last:cut])
				if tc.hole && i == 1 {
					c.sseq += uint32(len(seg)) // never captured
				} else {
					c.reply(seg)
				}
				last = cut
			}
			c.close()
			_, st := extractBytes(t, w.Bytes(), Options{})
			fmt.Fprintf(&b, "%d %v lost %d", st.Responses, st.ResponseStatus, st.ResponsesLost)
			var streaming int64
			for _, n := range st.StreamingResponses {
				streaming += n
			}
			if b.String() != tc.want || streaming != tc.streaming {
				t.Errorf("got %s, %d streaming; want %s, %d", b.String(), streaming, tc.want, tc.streaming)
			}
		})
	}
}
