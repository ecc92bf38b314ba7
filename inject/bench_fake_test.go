package inject

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// BenchmarkFakeUpstream measures what a fake upstream costs per request
// on its fast path and on the full path (net/http's server and
// fakeHandler, as before the fast path and as for a request a fault could
// target): one kept-alive gateway connection, sequential requests, for a
// JSON answer (512 bytes) and a chat-completions event stream (13 events,
// 1 ms apart). The client is a raw connection reading a known number of
// bytes per answer, so that what differs between the cases is the
// upstream. Reported: cpu-µs/op (the process's user + system time, client
// included), vcsw/op (voluntary context switches: a thread blocking,
// mostly a goroutine hand-off that parks one) and allocs/op (client
// included; it allocates nothing per request).
//
//	go test -run '^$' -bench 'FakeUpstream' -benchtime 3000x ./inject/
func BenchmarkFakeUpstream(b *testing.B) {
	cfg := UpstreamConfig{Name: "bench", Healthy: &HealthyConfig{SSE: &SSEConfig{Interval: rehearse.Duration(time.Millisecond)}}}
	reqs := []struct{ name, req string }{
		{"json", "GET /v1/tools/search?q=1 HTTP/1.1\r\nHost: up\r\nUser-Agent: gw/1\r\nX-Rehearse-Seq: 1\r\n\r\n"},
		{"sse", "POST /v1/chat/completions HTTP/1.1\r\nHost: up\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n{\"model\":\"m\",\"stream\":true}"},
	}
	for _, path := range []string{"fast", "full"} {
		for _, rq := range reqs {
			b.Run(path+"/"+rq.name, func(b *testing.B) {
				fakeFastPathOff = path == "full"
				s, err := New([]UpstreamConfig{cfg}, nil, WithClock(journal.NewClock(time.Now())), WithRecorder(journal.Discard), WithLogger(slog.New(slog.DiscardHandler)))
				fakeFastPathOff = false
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				c, err := net.Dial("tcp", s.Addr("bench"))
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				// The first answer tells its length; every answer has
				// the same (Date and "created" have fixed widths).
				n := answerLength(b, c, rq.req)
				buf := make([]byte, n)
				exchange := func() {
					if _, err := io.WriteString(c, rq.req); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(c, buf); err != nil {
						b.Fatal(err)
					}
				}
				for range 50 {
					exchange()
				}
				b.ReportAllocs()
				ru0 := rusage()
				b.ResetTimer()
				for b.Loop() {
					exchange()
				}
				b.StopTimer()
				ru1 := rusage()
				cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
				b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
				b.ReportMetric(float64(ru1.Nvcsw-ru0.Nvcsw)/float64(b.N), "vcsw/op")
			})
		}
	}
}

// answerLength sends req on c and returns the length of its answer, read
// whole (the connection is then between answers).
func answerLength(b *testing.B, c net.Conn, req string) int {
	if _, err := io.WriteString(c, req); err != nil {
		b.Fatal(err)
	}
	var raw countingReader
	raw.r = c
	br := bufio.NewReader(&raw)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	if br.Buffered() != 0 {
		b.Fatal("read beyond the answer") // the client sends one request at a time: nothing follows
	}
	return raw.n
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func rusage() syscall.Rusage {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru
}
