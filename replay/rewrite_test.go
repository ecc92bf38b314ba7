package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// TestRewriteOnTheWire replays requests to a raw listener and checks the
// bytes the gateway receives: target path and query, Host, hop-by-hop
// headers gone (including those named in Connection), stamps, body bytes
// with Content-Length (also for a body that was chunked).
func TestRewriteOnTheWire(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type received struct {
		req  *http.Request
		body []byte
	}
	got := make(chan received, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					got <- received{req, b}
					io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
				}
			}()
		}
	}()
	body := []byte("{\"q\":\"weather\"}\x00\xff binary")
	corpus := []*capture.Request{{
		Method: "POST", Target: "http://prod.example.com/v1/chat/completions?stream=true&x=%2F", Proto: "HTTP/1.1", Host: "prod.example.com",
		Header: []capture.HeaderField{
			{Name: "Host", Value: "prod.example.com"},
			{Name: "Connection", Value: "keep-alive, X-Hop"},
			{Name: "X-Hop", Value: "secret-hop"},
			{Name: "Keep-Alive", Value: "timeout=5"},
			{Name: "Transfer-Encoding", Value: "chunked"},
			{Name: "TE", Value: "trailers"},
			{Name: "Upgrade", Value: "h2c"},
			{Name: "Proxy-Authorization", Value: "Basic Zm9v"},
			{Name: "Expect", Value: "100-continue"},
			{Name: "Content-Type", Value: "application/json"},
			{Name: "x-custom", Value: "a"},
			{Name: "X-Custom", Value: "b"},
			{Name: "X-Rehearse-Seq", Value: "999"}, // a stale stamp is replaced
		},
		Body: body, Chunked: true,
	}, {
		Method: "GET", Target: "/tools/search", Proto: "HTTP/1.0",
		Header: []capture.HeaderField{{Name: "User-Agent", Value: "agent/1.0"}},
	}}
	target, _ := url.Parse("http://" + ln.Addr().String() + "/gw/")
	_, sum := replayed(t, corpus, Options{Target: target, Once: true, Rate: 50, RunID: "r-42", AllowWrites: true})
	if sum.Sent != 2 || sum.ByOutcome[journal.OutcomeOK] != 2 {
		t.Fatalf("summary %+v", sum)
	}
	// The two requests may travel on two connections: order by seq.
	rs := map[string]received{}
	for range 2 {
		x := <-got
		rs[x.req.Header.Get("X-Rehearse-Seq")] = x
	}
	req, b := rs["0"].req, rs["0"].body
	if req.Method != "POST" || req.RequestURI != "/gw/v1/chat/completions?stream=true&x=%2F" {
		t.Errorf("request line %s %s", req.Method, req.RequestURI)
	}
	if req.Host != ln.Addr().String() {
		t.Errorf("Host %q, want the target's", req.Host)
	}
	if !bytes.Equal(b, body) || req.ContentLength != int64(len(body)) || len(req.TransferEncoding) != 0 {
		t.Errorf("body %q length %d TE %v; want %q with Content-Length", b, req.ContentLength, req.TransferEncoding, body)
	}
	for _, h := range []string{"X-Hop", "Keep-Alive", "Te", "Upgrade", "Proxy-Authorization", "Expect", "Trailer"} {
		if v := req.Header.Values(h); len(v) > 0 {
			t.Errorf("hop-by-hop header %s: %q was replayed", h, v)
		}
	}
	if v := req.Header.Values("X-Custom"); strings.Join(v, ",") != "a,b" {
		t.Errorf("X-Custom %q, want both values in order", v)
	}
	if req.Header.Get("X-Rehearse-Seq") != "0" || req.Header.Get("X-Rehearse-Run") != "r-42" {
		t.Errorf("stamps seq=%q run=%q", req.Header.Get("X-Rehearse-Seq"), req.Header.Get("X-Rehearse-Run"))
	}
	if req.Header.Get("Content-Type") != "application/json" {
		t.Error("Content-Type lost")
	}
	req, b = rs["1"].req, rs["1"].body
	if req.Method != "GET" || req.RequestURI != "/gw/tools/search" || len(b) != 0 || req.ContentLength != 0 {
		t.Errorf("second request %s %s body %q", req.Method, req.RequestURI, b)
	}
	if req.Header.Get("User-Agent") != "agent/1.0" || req.Header.Get("X-Rehearse-Seq") != "1" {
		t.Errorf("second request headers %v", req.Header)
	}
}

func TestPreserveHostAndNoGoUserAgent(t *testing.T) {
	hosts := make(chan [2]string, 1)
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts <- [2]string{r.Host, r.Header.Get("User-Agent")}
	}))
	req := getReq("/x")
	r, err := New([]*capture.Request{req}, Options{Target: u, Once: true, PreserveHost: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h := <-hosts; h[0] != "prod.example.com" || h[1] != "" {
		t.Errorf("host %q user-agent %q; want the captured host and no Go user agent", h[0], h[1])
	}
}

func TestSplitTarget(t *testing.T) {
	for _, tc := range []struct{ in, path, query string }{
		{"/a/b?c=d", "/a/b", "c=d"},
		{"http://h/a?x", "/a", "x"},
		{"http://h", "/", ""},
		{"http://h?q=1", "/", "q=1"},
		{"*", "/", ""},
		{"example.com:443", "/", ""},
		{"/p#frag", "/p", ""},
		{"", "/", ""},
	} {
		p, q := splitTarget(tc.in)
		if p != tc.path || q != tc.query {
			t.Errorf("splitTarget(%q) = %q, %q; want %q, %q", tc.in, p, q, tc.path, tc.query)
		}
	}
}

func TestFastFailRule(t *testing.T) {
	h := http.Header{"X-Breaker-State": {"half_open"}}
	for _, tc := range []struct {
		name   string
		rule   FastFailRule
		status int
		h      http.Header
		body   string
		want   bool
		code   string
	}{
		{"default header", DefaultFastFail, 503, h, "", true, ""},
		{"default header on 200", DefaultFastFail, 200, h, "", false, ""},
		{"default json", DefaultFastFail, 503, nil, `{"error":{"code":"dependency_unavailable"}}`, true, "dependency_unavailable"},
		{"default other code", DefaultFastFail, 503, nil, `{"error":{"code":"upstream_error"}}`, false, "upstream_error"},
		{"default not json", DefaultFastFail, 503, nil, `<html>`, false, ""},
		{"default array", DefaultFastFail, 503, nil, `[1]`, false, ""},
		{"header value", FastFailRule{Header: "X-Breaker-State=open"}, 503, h, "", false, ""},
		{"header value match", FastFailRule{Header: "X-Breaker-State=HALF_OPEN"}, 503, h, "", true, ""},
		{"status only", FastFailRule{Statuses: []int{503}}, 503, nil, "", true, ""},
		{"status only other", FastFailRule{Statuses: []int{503}}, 502, nil, "", false, ""},
		{"json any value", FastFailRule{JSONField: "error.type"}, 429, nil, `{"error":{"type":"rate_limit"}}`, true, "rate_limit"},
		{"json number", FastFailRule{JSONField: "code", JSONValue: "42"}, 500, nil, `{"code":42}`, true, "42"},
		{"disabled", FastFailRule{Disabled: true}, 503, h, "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, code := tc.rule.match(tc.status, tc.h, []byte(tc.body))
			if got != tc.want || code != tc.code {
				t.Errorf("match = %v, %q; want %v, %q", got, code, tc.want, tc.code)
			}
		})
	}
}

func TestSSECounter(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"data: a\n\ndata: b\n\n", 2},
		{"data: a\r\n\r\ndata: b\r\rdata: c\n", 2},
		{": keepalive\n\nevent: ping\n\n", 0},
		{"data\n\n", 1},
		{"database: x\n\n", 0},
		{"id: 1\ndata: {\"x\":1}\ndata: more\n\n", 1},
		{"data: [DONE]\n\n", 1},
	} {
		// Byte by byte and whole: framing must not depend on reads.
		c1, c2 := &sseCounter{}, &sseCounter{}
		c1.Write([]byte(tc.in))
		for i := range len(tc.in) {
			c2.Write([]byte{tc.in[i]})
		}
		if c1.events != tc.want || c2.events != tc.want {
			t.Errorf("%q: %d / %d events, want %d", tc.in, c1.events, c2.events, tc.want)
		}
	}
}

func FuzzPrepare(f *testing.F) {
	f.Add("GET", "/a?b=c", "X-A", "1", []byte(nil))
	f.Add("POST", "http://h:1/p%20q?x#y", "Connection", "X-A, , close", []byte("body"))
	f.Add("OPTIONS", "*", "Host", "h", []byte{})
	target, _ := url.Parse("http://127.0.0.1:9/base")
	o, err := Options{Target: target}.withDefaults()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, tgt, hname, hval string, body []byte) {
		if method == "" || strings.ContainsAny(method, " \r\n\t") {
			return
		}
		req := &capture.Request{Method: method, Target: tgt, Header: []capture.HeaderField{{Name: hname, Value: hval}}, Body: body}
		tp, why := prepare(req, &o)
		if why != "" {
			return // counted as unsendable by New
		}
		hr := tp.build(&o, 7)
		if hr.URL.Host != "127.0.0.1:9" || !strings.HasPrefix(hr.URL.Path, "/base/") || !strings.HasPrefix(hr.URL.RequestURI(), "/base/") {
			t.Fatalf("URL %v escapes the target", hr.URL)
		}
		if hr.Header.Get("X-Rehearse-Seq") != "7" {
			t.Fatalf("seq stamp %q", hr.Header.Get("X-Rehearse-Seq"))
		}
		if hr.ContentLength != int64(len(body)) {
			t.Fatalf("content length %d for %d bytes", hr.ContentLength, len(body))
		}
		for _, h := range hopByHop {
			if len(hr.Header.Values(h)) > 0 {
				t.Fatalf("hop-by-hop %s kept", h)
			}
		}
		var buf bytes.Buffer
		hr.Write(&buf) // must not panic
	})
}

func FuzzSSECounter(f *testing.F) {
	f.Add([]byte("data: a\n\ndata: b\r\n\r\n"), 3)
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n\ndata: [DONE]\n\n"), 20)
	f.Add([]byte("event: message_start\ndata: {}\n\nevent: error\ndata: {\"type\":\"error\"}\n\n"), 30)
	f.Fuzz(func(t *testing.T, b []byte, split int) {
		whole := &sseCounter{}
		whole.Write(b)
		parts := &sseCounter{}
		k := int(uint(split) % uint(len(b)+1))
		parts.Write(b[:k])
		parts.Write(b[k:])
		if whole.events != parts.events || whole.terminal != parts.terminal || whole.dialect != parts.dialect ||
			!bytes.Equal(whole.errEvent, parts.errEvent) {
			t.Fatalf("%q: %d events whole, %d split at %d (or the verdict differs)", b, whole.events, parts.events, k)
		}
		if whole.events > bytes.Count(b, []byte("data"))+0 {
			t.Fatalf("%q: %d events from fewer data fields", b, whole.events)
		}
	})
}

func FuzzFastFailRule(f *testing.F) {
	f.Add(503, "X-Breaker-State", "open", []byte(`{"error":{"code":"dependency_unavailable"}}`))
	f.Add(429, "", "", []byte(`{"error":{"code":7}}`))
	f.Add(500, "X", "", []byte(`{"error":"x"}`))
	f.Fuzz(func(t *testing.T, status int, hname, hval string, body []byte) {
		h := http.Header{}
		if hname != "" {
			h.Add(hname, hval)
		}
		rule := DefaultFastFail
		ff, code := rule.match(status, h, body)
		if ff && status < 400 {
			t.Fatalf("fast-fail on status %d", status)
		}
		// The code comes only from a valid JSON object body.
		if code != "" && (!json.Valid(body) || bytes.TrimSpace(body)[0] != '{') {
			t.Fatalf("code %q from %q", code, body)
		}
	})
}

// TestIdempotencyKeysStamped: about the configured share of writes get a
// key of their own (unique per request, the same when rebuilt), reads and
// writes carrying a key get none, and the deadline is announced.
func TestIdempotencyKeysStamped(t *testing.T) {
	target, _ := url.Parse("http://127.0.0.1:9")
	o, err := Options{Target: target, RunID: "r1", IdempotencyKeys: IdempotencyKeys{Share: 0.5},
		DeadlineHeader: "X-Request-Timeout-Ms", Deadline: 2500 * time.Millisecond}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	post, _ := prepare(&capture.Request{Method: "POST", Target: "/tools/search", Body: []byte("{}")}, &o)
	keyed, _ := prepare(&capture.Request{Method: "POST", Target: "/tools/search", Header: []capture.HeaderField{{Name: "Idempotency-Key", Value: "mine"}}}, &o)
	get, _ := prepare(&capture.Request{Method: "GET", Target: "/tools/weather"}, &o)
	stamped := 0
	keys := map[string]bool{}
	for seq := range uint64(1000) {
		k := post.build(&o, seq).Header.Get("Idempotency-Key")
		if k != post.build(&o, seq).Header.Get("Idempotency-Key") {
			t.Fatal("key not stable for one request")
		}
		if k != "" {
			stamped++
			if keys[k] || k != fmt.Sprintf("rehearse-r1-%d", seq) {
				t.Fatalf("key %q for seq %d", k, seq)
			}
			keys[k] = true
		}
		if get.build(&o, seq).Header.Get("Idempotency-Key") != "" || keyed.build(&o, seq).Header.Get("Idempotency-Key") != "mine" {
			t.Fatal("a read got a key, or a captured key was replaced")
		}
	}
	if stamped < 430 || stamped > 570 {
		t.Errorf("%d of 1000 writes stamped at share 0.5", stamped)
	}
	if got := get.build(&o, 1).Header.Get("X-Request-Timeout-Ms"); got != "2500" {
		t.Errorf("deadline header %q", got)
	}
	if _, err := (Options{Target: target, IdempotencyKeys: IdempotencyKeys{Share: 2}}).withDefaults(); err == nil {
		t.Error("share 2 accepted")
	}
}
