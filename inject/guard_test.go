package inject

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// servedControl serves s's control API with ServeControl on a loopback
// port.
func servedControl(t *testing.T, s *Server) (addr string, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- s.ServeControl(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String(), ln.Addr().(*net.TCPAddr).Port
}

// guardedControl serves s's control API behind a guard with a token on a
// loopback port.
func guardedControl(t *testing.T, s *Server, token string) (addr string, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: NewControlGuard(ln.Addr(), ln.Addr().String(), token).Wrap(s.ControlHandler())}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), ln.Addr().(*net.TCPAddr).Port
}

// call sends one request to addr with the given Host and headers, as a
// browser (or curl) would write it.
func call(t *testing.T, addr, method, path, host string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const faultJSON = `{"name":"evil","type":"status","upstream":"search","params":{"code":503}}`

// TestControlRefusesCrossSite reproduces what a web page open on the same
// machine can send the control API (issue 32): a form or text/plain POST
// (no CORS preflight needed), a request from another origin, a DNS
// rebinding page (Host: evil.example). Each is refused with a clear
// status and adds no fault; the requests curl and scripts send still
// work.
func TestControlRefusesCrossSite(t *testing.T) {
	s, _ := startServer(t, []UpstreamConfig{{Name: "search"}}, nil)
	addr, port := servedControl(t, s)
	own := "http://" + addr
	evilHost := "evil.example:" + strconv.Itoa(port)
	for _, tc := range []struct {
		name, method, path, host string
		hdr                      map[string]string
		body                     string
		want                     int
		says                     string
	}{
		{"the issue's POST: foreign Host, Origin, text/plain", "POST", "/faults", "evil.example",
			map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}, faultJSON, 403, "Host"},
		{"DNS rebinding: foreign name, right port", "POST", "/faults", evilHost,
			map[string]string{"Content-Type": "application/json"}, faultJSON, 403, "Host"},
		{"DNS rebinding read", "GET", "/faults", evilHost, nil, "", 403, "DNS rebinding"},
		{"loopback name, another port", "GET", "/faults", "localhost:1", nil, "", 403, "Host"},
		{"cross-origin page", "POST", "/faults", "",
			map[string]string{"Origin": "http://evil.example", "Content-Type": "application/json"}, faultJSON, 403, "Origin"},
		{"another local origin", "POST", "/faults", "",
			map[string]string{"Origin": "http://localhost:3000", "Content-Type": "application/json"}, faultJSON, 403, "Origin"},
		{"opaque origin", "POST", "/faults", "",
			map[string]string{"Origin": "null", "Content-Type": "application/json"}, faultJSON, 403, "Origin"},
		{"Sec-Fetch-Site cross-site", "GET", "/faults", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, "", 403, "Sec-Fetch-Site"},
		{"Sec-Fetch-Site same-site", "DELETE", "/faults", "", map[string]string{"Sec-Fetch-Site": "same-site"}, "", 403, "Sec-Fetch-Site"},
		{"text/plain POST", "POST", "/faults", "", map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, faultJSON, 415, "application/json"},
		{"form POST", "POST", "/faults", "", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, faultJSON, 415, "Content-Type"},
		{"multipart POST", "POST", "/faults", "", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, "--x--", 415, "Content-Type"},
		{"POST without a type", "POST", "/faults", "", nil, faultJSON, 415, "Content-Type"},
		{"text/plain DELETE", "DELETE", "/faults", "", map[string]string{"Content-Type": "text/plain"}, "x", 415, "Content-Type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, addr, tc.method, tc.path, tc.host, tc.hdr, tc.body)
			if code != tc.want || !strings.Contains(body, tc.says) || !strings.Contains(body, `"error"`) {
				t.Errorf("%d %s; want %d saying %q", code, body, tc.want, tc.says)
			}
		})
	}
	if n := len(s.Faults()); n != 0 {
		t.Fatalf("refused requests added %d faults", n)
	}

	// What curl and scripts send goes through.
	for _, tc := range []struct {
		name, method, path, host string
		hdr                      map[string]string
		body                     string
		want                     int
	}{
		{"curl -H 'Content-Type: application/json' -d", "POST", "/faults", "", map[string]string{"Content-Type": "application/json", "User-Agent": "curl/8.5.0"}, faultJSON, 201},
		{"curl --json", "POST", "/faults", "localhost:" + strconv.Itoa(port),
			map[string]string{"Content-Type": "application/json", "Accept": "application/json"}, strings.Replace(faultJSON, "evil", "two", 1), 201},
		{"YAML", "POST", "/faults", "", map[string]string{"Content-Type": "application/yaml"}, "name: three\ntype: latency\nupstream: search\nat: 1h\nparams: {fixed: 1s}\n", 201},
		{"GET by localhost", "GET", "/faults", "localhost:" + strconv.Itoa(port), nil, "", 200},
		{"GET by [::1]", "GET", "/upstreams", "[::1]:" + strconv.Itoa(port), nil, "", 200},
		{"typed in the address bar", "GET", "/faults", "", map[string]string{"Sec-Fetch-Site": "none"}, "", 200},
		{"same origin", "GET", "/fault-types", "", map[string]string{"Origin": own, "Sec-Fetch-Site": "same-origin"}, "", 200},
		{"curl -X DELETE", "DELETE", "/faults/evil", "", nil, "", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := call(t, addr, tc.method, tc.path, tc.host, tc.hdr, tc.body); code != tc.want {
				t.Errorf("%d %s; want %d", code, body, tc.want)
			}
		})
	}
	if n := len(s.Faults()); n != 2 {
		t.Errorf("%d faults after two adds that stay and one delete, want 2", n)
	}
}

// TestControlToken: with a token, a request without it or with another
// is refused with 401; with it, it works.
func TestControlToken(t *testing.T) {
	s, _ := startServer(t, []UpstreamConfig{{Name: "search"}}, nil)
	addr, _ := guardedControl(t, s, "t0ken-of-the-drill")
	json := map[string]string{"Content-Type": "application/json"}
	for name, auth := range map[string]string{"none": "", "wrong": "Bearer t0ken-of-another", "no scheme": "t0ken-of-the-drill"} {
		hdr := map[string]string{"Content-Type": "application/json"}
		if auth != "" {
			hdr["Authorization"] = auth
		}
		if code, body := call(t, addr, "POST", "/faults", "", hdr, faultJSON); code != 401 || !strings.Contains(body, "token") {
			t.Errorf("%s: %d %s; want 401", name, code, body)
		}
	}
	json["Authorization"] = "Bearer t0ken-of-the-drill"
	if code, body := call(t, addr, "POST", "/faults", "", json, faultJSON); code != 201 {
		t.Errorf("with the token: %d %s", code, body)
	}
	// The browser checks come first: a page cannot use a leaked token
	// through a form either.
	json["Content-Type"] = "text/plain"
	if code, _ := call(t, addr, "POST", "/faults", "", json, faultJSON); code != 415 {
		t.Errorf("text/plain with the token: %d, want 415", code)
	}
}
