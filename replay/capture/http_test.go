package capture

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func extractBytes(t testing.TB, b []byte, opt Options) ([]*Request, *Stats) {
	t.Helper()
	reqs, st, err := ReadAll(context.Background(), bytes.NewReader(b), opt)
	if err != nil {
		t.Fatal(err)
	}
	return reqs, st
}

func TestStreams(t *testing.T) {
	big := strings.Repeat("x", 200_000)
	tests := []struct {
		name   string
		stream string
		cuts   []int
		opt    Options
		want   []string // "METHOD target body_len [incomplete]"
		check  func(t *testing.T, reqs []*Request, st *Stats)
	}{
		{name: "keep-alive", stream: "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n",
			want: []string{"GET /a 0", "GET /b 0"}},
		{name: "pipelined, body end and next request line in one segment",
			stream: "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: h\r\n\r\n",
			cuts:   []int{30, 52}, want: []string{"POST /a 5", "GET /b 0"}},
		{name: "chunked with extensions and trailers, split everywhere",
			stream: "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Sum: 9\r\nX-Other: y\r\n\r\nGET /n HTTP/1.1\r\nHost: h\r\n\r\n",
			cuts:   []int{50, 60, 61, 62, 70, 80, 90}, want: []string{"POST /c 5", "GET /n 0"},
			check: func(t *testing.T, reqs []*Request, _ *Stats) {
				if string(reqs[0].Body) != "abcde" || !reqs[0].Chunked || len(reqs[0].Trailer) != 2 || reqs[0].Trailer[0] != (HeaderField{"X-Sum", "9"}) {
					t.Errorf("body %q chunked %v trailer %v", reqs[0].Body, reqs[0].Chunked, reqs[0].Trailer)
				}
			}},
		{name: "header order and case kept", stream: "GET / HTTP/1.1\r\nhost: h\r\nX-B: 1\r\nx-a: 2\r\nX-B: 3\r\n\r\n",
			want: []string{"GET / 0"}, check: func(t *testing.T, reqs []*Request, _ *Stats) {
				want := []HeaderField{{"host", "h"}, {"X-B", "1"}, {"x-a", "2"}, {"X-B", "3"}}
				if !slices.Equal(reqs[0].Header, want) {
					t.Errorf("header %v", reqs[0].Header)
				}
			}},
		{name: "HTTP/1.0 without Host, OPTIONS *, absolute-form",
			stream: "GET / HTTP/1.0\r\n\r\nOPTIONS * HTTP/1.1\r\nHost: h\r\n\r\nGET http://other:81/p?q=1 HTTP/1.1\r\nHost: h\r\n\r\n",
			want:   []string{"GET / 0", "OPTIONS * 0", "GET http://other:81/p?q=1 0"},
			check: func(t *testing.T, reqs []*Request, _ *Stats) {
				if reqs[0].Host != "" || reqs[0].Proto != "HTTP/1.0" || reqs[2].Host != "other:81" || reqs[2].Path() != "/p" {
					t.Errorf("hosts %q %q, path %q", reqs[0].Host, reqs[2].Host, reqs[2].Path())
				}
			}},
		{name: "Expect 100-continue answered with a final status: body never sent",
			stream: "POST /u HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 9\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\n\r\n",
			cuts:   []int{77}, want: []string{"POST /u 0 incomplete", "GET /next 0"}},
		{name: "big body in 1000-byte segments", stream: "POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: 200000\r\n\r\n" + big,
			cuts: func() []int {
				var c []int
				for i := 1000; i < 200_100; i += 1000 {
					c = append(c, i)
				}
				return c
			}(), want: []string{"POST /big 200000"}},
		{name: "body over the per-flow limit", opt: Options{MaxFlowBuffer: 50_000},
			stream: "POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: 200000\r\n\r\n" + big + "GET /after HTTP/1.1\r\nHost: h\r\n\r\n",
			cuts:   []int{10_000, 60_000, 120_000, 180_000}, want: []string{"POST /big 0 incomplete", "GET /after 0"},
			check: func(t *testing.T, reqs []*Request, _ *Stats) {
				if !strings.Contains(reqs[0].Problem, "exceeds the per-flow buffer limit") {
					t.Errorf("problem %q", reqs[0].Problem)
				}
			}},
		{name: "malformed request skipped, next one recovered",
			stream: "GET /bad HTTP/1.1\r\nHost: h\r\nBad Header\r\n\r\nGET /good HTTP/1.1\r\nHost: h\r\n\r\n",
			want:   []string{"GET /bad 0 incomplete", "GET /good 0"}, check: func(t *testing.T, reqs []*Request, st *Stats) {
				if !slices.ContainsFunc(st.Warnings, func(w Warning) bool { return strings.Contains(w.Msg, "malformed request") && w.Packet == 4 }) {
					t.Errorf("warnings %v", st.Warnings)
				}
				if st.RequestsRefused["malformed MIME header: missing colon"] != 1 || !strings.HasPrefix(reqs[0].Problem, "malformed request: net/http refuses it") || reqs[0].Host != "h" {
					t.Errorf("refused %v, problem %q, host %q", st.RequestsRefused, reqs[0].Problem, reqs[0].Host)
				}
			}},
		{name: "targets Go's URL parser refuses are kept as written",
			stream: "GET /% HTTP/1.1\r\nHost: h\r\n\r\n" +
				"POST /up%zz HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" +
				"GET http://other:81/%5?a=1 HTTP/1.1\r\nHost: h\r\n\r\n" +
				"PUT /x%2 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi" +
				"GET /ok%20 HTTP/1.1\r\nHost: h\r\n\r\n" +
				"GET /a\x01b\tc HTTP/1.1\r\nHost: h\r\n\r\n",
			cuts: []int{3, 30, 70, 120},
			want: []string{"GET /% 0", "POST /up%zz 3", "GET http://other:81/%5?a=1 0", "PUT /x%2 2", "GET /ok%20 0", "GET /a\x01b\tc 0"},
			check: func(t *testing.T, reqs []*Request, st *Stats) {
				for i, r := range reqs[:4] {
					if !strings.HasPrefix(r.TargetError, "invalid URL escape") || r.Incomplete {
						t.Errorf("request %d: target error %q, incomplete %v", i, r.TargetError, r.Incomplete)
					}
				}
				if !strings.Contains(reqs[5].TargetError, "invalid control character") {
					t.Errorf("control bytes: target error %q", reqs[5].TargetError)
				}
				if reqs[4].TargetError != "" || st.RawTargets != 5 || reqs[2].Host != "other:81" || string(reqs[1].Body) != "abc" {
					t.Errorf("target error %q, raw targets %d, host %q, body %q", reqs[4].TargetError, st.RawTargets, reqs[2].Host, reqs[1].Body)
				}
			}},
		{name: "capture ends mid-request", stream: "POST /cut HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nonly this",
			want: []string{"POST /cut 9 incomplete"}},
		{name: "TLS", stream: "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03GET / HTTP/1.1\r\n\r\n", check: func(t *testing.T, reqs []*Request, st *Stats) {
			if len(reqs) != 0 || st.TLSStreams != 1 || !strings.Contains(st.String(), "0 HTTP requests; 1 TLS stream (capture in front of TLS termination") {
				t.Errorf("%d requests, %s", len(reqs), st)
			}
		}},
		{name: "HTTP/2 prior knowledge", stream: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04", check: func(t *testing.T, reqs []*Request, st *Stats) {
			if len(reqs) != 0 || st.HTTP2Streams != 1 || !strings.Contains(st.Hint(), "HTTP/2") {
				t.Errorf("%d requests, %s", len(reqs), st)
			}
		}},
		{name: "not HTTP (Redis)", stream: "*1\r\n$4\r\nPING\r\n", check: func(t *testing.T, reqs []*Request, st *Stats) {
			if len(reqs) != 0 || st.OtherStreams != 1 || !strings.Contains(st.String(), "not HTTP/1.x") {
				t.Errorf("%d requests, %s", len(reqs), st)
			}
		}},
		{name: "CONNECT: the tunnel after it is not parsed", stream: "CONNECT api.example:443 HTTP/1.1\r\nHost: api.example:443\r\n\r\n\x16\x03\x01\x00\x10GET /not-a-request HTTP/1.1\r\n\r\n",
			want: []string{"CONNECT api.example:443 0"}},
		{name: "a target with spaces is kept as written",
			stream: "GET /uri afterspace HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n", cuts: []int{10},
			want: []string{"GET /uri afterspace 0", "GET /b 0"}, check: func(t *testing.T, reqs []*Request, _ *Stats) {
				if reqs[0].TargetError != "target contains spaces" || reqs[0].Proto != "HTTP/1.1" || reqs[0].Host != "h" {
					t.Errorf("target error %q, proto %q, host %q", reqs[0].TargetError, reqs[0].Proto, reqs[0].Host)
				}
			}},
		{name: "CONNECT then plain HTTP through the tunnel",
			stream: "CONNECT abc:443 HTTP/1.1\r\nUser-Agent: x\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nUser-Agent: x\r\n\r\n",
			want:   []string{"CONNECT abc:443 0", "GET / 0"}},
		{name: "request line without a version: reported, then the next request",
			stream: "GET /gen.php?a=1\r\nHost: h\r\n\r\nGET /ok HTTP/1.1\r\nHost: h\r\n\r\n", cuts: []int{4, 20},
			want: []string{"GET /gen.php?a=1 0 incomplete", "GET /ok 0"}, check: func(t *testing.T, reqs []*Request, st *Stats) {
				if st.RequestsRefused["request line has no HTTP version"] != 1 || st.OtherStreams != 0 {
					t.Errorf("refused %v, host %q, other %d", st.RequestsRefused, reqs[0].Host, st.OtherStreams)
				}
			}},
		{name: "obsolete line folding joined", stream: "GET / HTTP/1.1\r\nHost: h\r\nX-Long: a\r\n  b\r\n\r\n", want: []string{"GET / 0"},
			check: func(t *testing.T, reqs []*Request, _ *Stats) {
				if v := reqs[0].Get("X-Long"); v != "a b" {
					t.Errorf("X-Long %q", v)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reqs, st := extractBytes(t, streamCapture(t, []byte(tc.stream), tc.cuts...), tc.opt)
			var got []string
			for _, r := range reqs {
				s := fmt.Sprintf("%s %s %d", r.Method, r.Target, len(r.Body))
				if r.Incomplete {
					s += " incomplete"
				}
				got = append(got, s)
			}
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q (%s)", got, tc.want, st)
			}
			if tc.check != nil {
				tc.check(t, reqs, st)
			}
		})
	}
}

// A connection seen mid-way: the partial request before the first request
// line is skipped and counted, the next requests are recovered.
func TestMidStream(t *testing.T) {
	var b bytes.Buffer
	s := newSynth(t, &b)
	c := s.conn("10.0.0.1:40000", "10.0.0.2:8080")
	c.reply([]byte("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nGET "))
	c.send([]byte("tail of a body\r\nmore\r\n"))
	c.send([]byte("GET /x HTTP/1.1\r\nHost: h\r\n\r\n"))
	c.reply([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	c.send([]byte("POST /y HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok"))
	reqs, st := extractBytes(t, b.Bytes(), Options{})
	if len(reqs) != 2 || reqs[0].Target != "/x" || reqs[1].Target != "/y" || st.MidStream != 1 || st.SkippedBytes != 22 {
		t.Fatalf("%d requests, stats %+v", len(reqs), st)
	}
	if reqs[0].Flow.String() != "10.0.0.1:40000->10.0.0.2:8080" {
		t.Errorf("flow %s", reqs[0].Flow)
	}
}

// TCP Fast Open: the first request rides on the SYN.
func TestTCPFastOpen(t *testing.T) {
	var b bytes.Buffer
	s := newSynth(t, &b)
	c := s.conn("10.0.0.1:40000", "10.0.0.2:8080")
	first := []byte("GET /tfo HTTP/1.1\r\nHost: h\r\n\r\n")
	s.frame(c.cli, c.srv, c.cseq-1, 0, tcpSYN, first)
	c.cseq += uint32(len(first))
	s.frame(c.srv, c.cli, c.sseq-1, c.cseq, tcpSYN|tcpACK, nil)
	c.send([]byte("GET /next HTTP/1.1\r\nHost: h\r\n\r\n"))
	reqs, st := extractBytes(t, b.Bytes(), Options{})
	if len(reqs) != 2 || reqs[0].Target != "/tfo" || reqs[1].Target != "/next" || st.MidStream != 0 {
		t.Fatalf("%v, %s", reqs, st)
	}
}

// Requests come out in the order of their first byte, across flows, even
// when a later-started request completes first.
func TestCaptureOrder(t *testing.T) {
	var b bytes.Buffer
	s := newSynth(t, &b)
	a := s.conn("10.0.0.1:40000", "10.0.0.2:8080").handshake()
	c := s.conn("10.0.0.1:40001", "10.0.0.2:8080").handshake()
	a.send([]byte("POST /slow HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nab"))
	c.send([]byte("GET /fast HTTP/1.1\r\nHost: h\r\n\r\n"))
	a.send([]byte("cd"))
	reqs, _ := extractBytes(t, b.Bytes(), Options{})
	if len(reqs) != 2 || reqs[0].Target != "/slow" || reqs[1].Target != "/fast" || !reqs[0].Time.Before(reqs[1].Time) {
		t.Fatalf("order: %v", reqs)
	}
}

func TestFilterRewriteRedact(t *testing.T) {
	stream := "GET /tools/weather?city=Oslo&api_key=k1 HTTP/1.1\r\nHost: gw:8080\r\nAuthorization: Bearer s\r\nX-Api-Key: k\r\nX-Auth-Token: t\r\nCookie: c\r\nIdempotency-Key: keep\r\nX-Custom-Secret-Name: n\r\n\r\n" +
		"POST /v1/chat/completions HTTP/1.1\r\nHost: gw:8080\r\nContent-Length: 2\r\n\r\n{}"
	capt := streamCapture(t, []byte(stream))

	reqs, st := extractBytes(t, capt, Options{Filter: Filter{Methods: []string{"get"}, Path: regexp.MustCompile(`^/tools/`), Host: "GW", Port: 8080}})
	if len(reqs) != 1 || st.Filtered != 1 || st.Delivered != 1 || reqs[0].Index != 0 {
		t.Fatalf("%d requests, %s", len(reqs), st)
	}
	r := reqs[0]
	for _, h := range []string{"Authorization", "X-Api-Key", "X-Auth-Token", "Cookie"} {
		if r.Get(h) != Redacted {
			t.Errorf("%s = %q, want redacted", h, r.Get(h))
		}
	}
	if r.Get("Idempotency-Key") != "keep" || r.Target != "/tools/weather?city=Oslo&api_key=REDACTED" {
		t.Errorf("Idempotency-Key %q target %q", r.Get("Idempotency-Key"), r.Target)
	}
	if got := Redact(r, "x-custom-secret-name").Get("X-Custom-Secret-Name"); got != Redacted {
		t.Errorf("extra name not redacted: %q", got)
	}

	reqs, _ = extractBytes(t, capt, Options{KeepSecrets: true, Filter: Filter{Port: 9999}})
	if len(reqs) != 0 {
		t.Errorf("port filter kept %d", len(reqs))
	}
	reqs, _ = extractBytes(t, capt, Options{KeepSecrets: true, Rewrite: Rewrite{Host: "127.0.0.1:9000", Set: []HeaderField{{"x-api-key", "new"}, {"X-Rehearse", "1"}}, Drop: []string{"cookie"}}})
	r = reqs[0]
	if r.Host != "127.0.0.1:9000" || r.Get("Host") != "127.0.0.1:9000" || r.Get("X-Api-Key") != "new" || r.Get("Cookie") != "" ||
		r.Get("X-Rehearse") != "1" || r.Get("Authorization") != "Bearer s" || r.Header[2].Name != "X-Api-Key" {
		t.Errorf("rewrite: host %q header %v", r.Host, r.Header)
	}
	// Redaction hides what the capture carried; the rewrite is what the
	// user asked to send (a test token), applied after it and kept as
	// written (issue 28: it was sent as REDACTED).
	reqs, _ = extractBytes(t, capt, Options{Rewrite: Rewrite{Set: []HeaderField{{"Authorization", "Bearer test-token"}, {"X-Api-Key", "test-key"}}}})
	r = reqs[0]
	if r.Get("Authorization") != "Bearer test-token" || r.Get("X-Api-Key") != "test-key" || r.Get("Cookie") != Redacted || r.Get("X-Auth-Token") != Redacted {
		t.Errorf("rewrite over redaction: %v", r.Header)
	}
	// A target in absolute form (to a proxy) loses its password.
	absCapt := streamCapture(t, []byte("GET http://agent:pw-5ecret@gw:8080/x?token=t HTTP/1.1\r\nHost: gw:8080\r\n\r\n"))
	if reqs, _ = extractBytes(t, absCapt, Options{}); len(reqs) != 1 || reqs[0].Target != "http://agent:REDACTED@gw:8080/x?token=REDACTED" {
		t.Errorf("absolute-form target: %v", reqs)
	}
	// Apply and Redact copy: the original is untouched.
	reqs, _ = extractBytes(t, capt, Options{KeepSecrets: true})
	orig := reqs[1]
	_ = Rewrite{Host: "x", Drop: []string{"Host"}}.Apply(orig)
	_ = Redact(orig)
	if orig.Host != "gw:8080" || orig.Get("Host") != "gw:8080" {
		t.Errorf("original modified: %v", orig.Header)
	}
	abs := &Request{Target: "http://old:1/p?q", Host: "old:1", Proto: "HTTP/1.1"}
	if got := (Rewrite{Host: "new:2"}).Apply(abs); got.Target != "http://new:2/p?q" {
		t.Errorf("absolute-form target %q", got.Target)
	}
}

func ExampleRedact() {
	r := &Request{Method: "GET", Target: "/search?q=go&token=abc", Header: []HeaderField{
		{"Host", "gw"}, {"authorization", "Bearer sk-123"}, {"X-Api-Key", "k"}, {"Accept", "*/*"},
	}}
	red := Redact(r)
	fmt.Println(red.Target)
	for _, f := range red.Header {
		fmt.Printf("%s: %s\n", f.Name, f.Value)
	}
	// Output:
	// /search?q=go&token=REDACTED
	// Host: gw
	// authorization: REDACTED
	// X-Api-Key: REDACTED
	// Accept: */*
}

func ExampleFilter_Match() {
	f := Filter{Methods: []string{"POST"}, Path: regexp.MustCompile(`^/tools/`)}
	fmt.Println(f.Match(&Request{Method: "POST", Target: "/tools/search"}))
	fmt.Println(f.Match(&Request{Method: "GET", Target: "/tools/search"}))
	fmt.Println(f.Match(&Request{Method: "POST", Target: "http://gw/v1/chat/completions"}))
	// Output:
	// true
	// false
	// false
}

// A flow idle for longer than IdleTimeout (capture time) is flushed: its
// request in progress is reported incomplete, with the reason.
func TestIdleFlush(t *testing.T) {
	var b bytes.Buffer
	s := newSynth(t, &b)
	a := s.conn("10.0.0.1:40000", "10.0.0.2:8080").handshake()
	a.send([]byte("POST /stalled HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc"))
	s.ts = s.ts.Add(10 * time.Minute)
	c := s.conn("10.0.0.1:40001", "10.0.0.2:8080").handshake()
	for range 5000 { // housekeeping runs every 4096 packets
		c.send([]byte("GET /busy HTTP/1.1\r\nHost: h\r\n\r\n"))
	}
	reqs, st := extractBytes(t, b.Bytes(), Options{IdleTimeout: time.Minute})
	if st.FlushedIdle != 1 || len(reqs) != 5001 || !reqs[0].Incomplete || !strings.Contains(reqs[0].Problem, "idle") {
		t.Fatalf("flushed %d, %d requests, first %+v", st.FlushedIdle, len(reqs), reqs[0])
	}
}

// Over MaxFlows, the least recently active flows are flushed.
func TestMaxFlows(t *testing.T) {
	var b bytes.Buffer
	s := newSynth(t, &b)
	for i := range 40 {
		c := s.conn(fmt.Sprintf("10.0.0.1:%d", 40000+i), "10.0.0.2:8080").handshake()
		c.send([]byte("POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nab"))
	}
	reqs, st := extractBytes(t, b.Bytes(), Options{MaxFlows: 16})
	flushed := 0
	for _, r := range reqs {
		if strings.Contains(r.Problem, "flow limit") {
			flushed++
		}
	}
	if len(reqs) != 40 || st.FlushedLimit != 24 || flushed != 24 || st.Incomplete != 40 {
		t.Fatalf("%d requests, %d flushed for the limit (%d in problems), %d incomplete", len(reqs), st.FlushedLimit, flushed, st.Incomplete)
	}
}

// The server acknowledging bytes past a hole proves they were sent: the
// gap is declared at that packet, and the next request is recovered at
// once (not at the end of the capture).
func TestGapDeclaredByPeerACK(t *testing.T) {
	var b bytes.Buffer
	s := newSynth(t, &b)
	c := s.conn("10.0.0.1:40000", "10.0.0.2:8080").handshake()
	first := []byte("POST /lost HTTP/1.1\r\nHost: h\r\nContent-Length: 20\r\n\r\n")
	c.cseq += uint32(len(first)) // the header segment is not in the capture
	c.send([]byte("01234567890123456789"))
	c.s.frame(c.srv, c.cli, c.sseq, c.cseq, tcpACK, nil) // packet 5: ACK past the hole
	c.send([]byte("GET /next HTTP/1.1\r\nHost: h\r\n\r\n"))
	reqs, st := extractBytes(t, b.Bytes(), Options{})
	if st.Gaps != 1 || st.GapBytes != int64(len(first)) || len(reqs) != 1 || reqs[0].Target != "/next" {
		t.Fatalf("%s; %v", st, reqs)
	}
	if w := st.Warnings[0]; w.Packet != 5 || !strings.Contains(w.Msg, "bytes missing") {
		t.Errorf("warning %v", w)
	}
}

func TestGuessProtocol(t *testing.T) {
	for _, tc := range []struct {
		first string
		want  string
	}{
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", "Redis"},
		{"*1\r\n$4\r\nPING\r\n", "Redis"},
		{"\x00\x00\x00\x4f\x00\x03\x00\x00user\x00postgres\x00", "PostgreSQL"},
		{"*3\r\nnot resp", ""},
		{"SSH-2.0-OpenSSH_9.2\r\n", ""},
	} {
		if got := guessProtocol([]byte(tc.first)); got != tc.want {
			t.Errorf("guessProtocol(%q) = %q, want %q", tc.first, got, tc.want)
		}
	}
}
