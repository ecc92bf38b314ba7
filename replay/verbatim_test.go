package replay

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/halfopen/rehearse/replay/capture"
)

// rawLines is a loopback listener that reads requests as bytes (no HTTP
// parser between the wire and the test: net/http's server would refuse
// exactly the targets under test) and records each request line.
type rawLines struct {
	ln    net.Listener
	mu    sync.Mutex
	lines []string
	wg    sync.WaitGroup
}

func newRawLines(t *testing.T) *rawLines {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawLines{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					s.mu.Lock()
					s.lines = append(s.lines, line)
					s.mu.Unlock()
					// Skip the header block; the replayer sends no body
					// for these GETs.
					for {
						h, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if h == "\r\n" {
							break
						}
					}
					io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

// TestVerbatimTargets replays the requests of a real capture whose
// targets Go's URL parser refuses (testdata/odd-targets.pcap: "GET /%",
// "GET /%5", raw UTF-8, a broken escape in a path with a query) and
// checks that the gateway receives each request line byte for byte.
func TestVerbatimTargets(t *testing.T) {
	corpus, st, err := capture.ReadFile(context.Background(), filepath.Join("capture", "testdata", "odd-targets.pcap"), capture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.RawTargets < 4 {
		t.Fatalf("%d raw targets in the capture (%s)", st.RawTargets, st)
	}
	srv := newRawLines(t)
	u, _ := url.Parse("http://" + srv.ln.Addr().String())
	_, sum := replayed(t, corpus, Options{Target: u, Once: true, Rate: 50})
	if sum.SkippedUnsendable != nil || sum.SkippedIncomplete != 0 {
		t.Errorf("skipped %v / %d", sum.SkippedUnsendable, sum.SkippedIncomplete)
	}
	var want []string
	for _, q := range corpus {
		want = append(want, q.Method+" "+q.Target+" HTTP/1.1\r\n")
	}
	srv.mu.Lock()
	got := slices.Clone(srv.lines)
	srv.mu.Unlock()
	slices.Sort(got) // concurrent connections may reorder arrivals
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("request lines on the wire:\n%q\nwant:\n%q", got, want)
	}
	for _, l := range []string{"GET /% HTTP/1.1\r\n", "GET /%5 HTTP/1.1\r\n", "GET /caf\xc3\xa9 HTTP/1.1\r\n"} {
		if !slices.Contains(got, l) {
			t.Errorf("%q not sent", l)
		}
	}
}

// TestVerbatimTargetsUnderBasePath: a target with a base path keeps the
// odd bytes after it; one net/http cannot write verbatim is skipped and
// counted with the reason, never sent altered.
func TestVerbatimTargetsUnderBasePath(t *testing.T) {
	srv := newRawLines(t)
	u, _ := url.Parse("http://" + srv.ln.Addr().String() + "/gw")
	corpus := []*capture.Request{
		{Method: "GET", Target: "/%", Proto: "HTTP/1.1", TargetError: `invalid URL escape "%"`},
		{Method: "GET", Target: "http://h/a%zz?x=%4", Proto: "HTTP/1.1", TargetError: `invalid URL escape "%zz"`},
		{Method: "GET", Target: "//%", Proto: "HTTP/1.1", TargetError: `invalid URL escape "%"`},
		{Method: "GET", Target: "/a\x01b", Proto: "HTTP/1.1", TargetError: `net/url: invalid control character in URL`},
		{Method: "GET", Target: "/uri afterspace?q=a b", Proto: "HTTP/1.1", TargetError: "target contains spaces"},
	}
	r, sum := replayed(t, corpus, Options{Target: u, Once: true, Rate: 50})
	srv.mu.Lock()
	got := strings.Join(srv.lines, "")
	srv.mu.Unlock()
	for _, l := range []string{"GET /gw/% HTTP/1.1\r\n", "GET /gw/a%zz?x=%4 HTTP/1.1\r\n", "GET /gw//% HTTP/1.1\r\n", "GET /gw/uri afterspace?q=a b HTTP/1.1\r\n"} {
		if !strings.Contains(got, l) {
			t.Errorf("%q not sent; got %q", l, got)
		}
	}
	if n := sum.SkippedUnsendable["target has control characters: net/http refuses to write them"]; n != 1 || len(sum.SkippedUnsendable) != 1 {
		t.Errorf("skipped %v", sum.SkippedUnsendable)
	}

	// Without a base path "//%" cannot be written as it is.
	u.Path = ""
	r, sum = replayed(t, corpus, Options{Target: u, Once: true, Rate: 50})
	if n := sum.SkippedUnsendable["target starts with // and is not a valid URL path: net/http cannot send it verbatim"]; n != 1 || r.Corpus() != 3 {
		t.Errorf("skipped %v, corpus %d", sum.SkippedUnsendable, r.Corpus())
	}
	var text strings.Builder
	sum.WriteText(&text)
	if !strings.Contains(text.String(), "skipped    0 incomplete in the capture; 1 target has control characters: net/http refuses to write them; 1 target starts with //") {
		t.Errorf("summary text:\n%s", text.String())
	}
	// A captured Host net/http will not write is skipped with
	// --preserve-host, not sent to fail on the wire.
	_, sum = replayed(t, []*capture.Request{{Method: "GET", Target: "/a", Proto: "HTTP/1.1", Host: "a b"}, {Method: "GET", Target: "/b", Proto: "HTTP/1.1", Host: "ok"}},
		Options{Target: u, Once: true, Rate: 50, PreserveHost: true})
	if n := sum.SkippedUnsendable["captured Host header net/http refuses to send (--preserve-host)"]; n != 1 || sum.Sent != 1 || sum.Completed != 1 {
		t.Errorf("skipped %v, sent %d, completed %d", sum.SkippedUnsendable, sum.Sent, sum.Completed)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, l := range srv.lines {
		if bytes.Contains([]byte(l), []byte("%25")) {
			t.Errorf("an odd target was re-escaped: %q", l)
		}
	}
}
