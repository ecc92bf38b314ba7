package replay

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
)

// BenchmarkTransport is one exchange of each of the replayer's transports
// (a GET and an 11-byte answer on a kept-alive loopback connection to a
// minimal raw server in this process), back to back and 1 ms apart (the
// threads idle between exchanges, as at a drill's rate), and a POST of a
// 1 KiB body (written inline by the direct transport) back to back. cpu-µs/op and
// vcsw/op are the process's (the server's included), from getrusage:
//
//	go test -run '^$' -bench Transport -benchtime 2000x ./replay/
func BenchmarkTransport(b *testing.B) {
	addr := testutil.ServeTCP(b, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			var length int64
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if len(line) <= 2 {
					break
				}
				if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
					length, _ = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
				}
			}
			if _, err := io.CopyN(io.Discard, br, length); err != nil {
				return
			}
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"ok\":true}"); err != nil {
				return
			}
		}
	})
	o, err := Options{Target: mustURL("http://" + addr)}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	for _, ex := range []struct {
		name string
		gap  time.Duration
		body int // a POST's, when not 0
	}{{"back-to-back", 0, 0}, {"1ms-apart", time.Millisecond, 0}, {"post-1KiB-back-to-back", 0, 1 << 10}} {
		for _, tr := range []struct {
			name string
			rt   ownTransport
		}{{"direct", newDirectTransport(&o)}, {"net-http", newTransport(&o)}} {
			gap := ex.gap
			b.Run(tr.name+"/"+ex.name, func(b *testing.B) {
				defer tr.rt.CloseIdleConnections()
				req, err := http.NewRequest("GET", "http://"+addr+"/tools/search", nil)
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("X-Rehearse-Seq", "1")
				body := bytes.Repeat([]byte("x"), ex.body)
				exchange := func() {
					if ex.body > 0 {
						// As the replayer builds its requests.
						req.Method = "POST"
						req.ContentLength = int64(len(body))
						req.Body = io.NopCloser(bytes.NewReader(body))
					}
					resp, err := tr.rt.RoundTrip(req)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := io.Copy(io.Discard, resp.Body); err != nil {
						b.Fatal(err)
					}
					resp.Body.Close()
				}
				exchange() // the dial, unmeasured
				var r0, r1 syscall.Rusage
				b.ReportAllocs()
				syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
				b.ResetTimer()
				for range b.N {
					if gap > 0 {
						time.Sleep(gap)
					}
					exchange()
				}
				b.StopTimer()
				syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
				cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
				b.ReportMetric(float64(r1.Nvcsw-r0.Nvcsw)/float64(b.N), "vcsw/op")
			})
		}
	}
}
