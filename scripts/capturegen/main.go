// Command capturegen records real HTTP traffic on loopback with tcpdump
// (or dumpcap) into a capture file: the bundled agent-gateway capture that
// `make rehearse` replays, and the edge-case captures the capture package
// tests against tshark.
//
// It starts a small HTTP server on a free loopback port, starts the
// capture tool filtered to that port, waits until the tool says it is
// listening, sends the traffic, marks the end with one UDP datagram to the
// same port, waits until the marker is in the file, and stops the tool.
//
//	go run ./scripts/capturegen -o scenarios/captures/agent-gateway.pcapng -pcapng
//	go run ./scripts/capturegen -mode chat -n 60 -conns 2 -o scenarios/captures/ai-chat.pcapng -pcapng
//	go run ./scripts/capturegen -mode edge -iface any -o /tmp/edge-sll2.pcap
//
// It needs root (or CAP_NET_RAW) for the capture tool. -mode synth is the
// exception: it writes the gateway mix of -n requests straight to a pcap
// file (synth.go), for memory benchmarks on captures of a million
// requests that a real recording would take hours to make.
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	var (
		out     = flag.String("o", "", "output capture file (required)")
		mode    = flag.String("mode", "gateway", "traffic: gateway (agent-gateway mix), synth (the gateway mix written with pcapgo, no capture tool), chat (chat turns for an AI agent gateway: model openclaw, half streaming), edge (pipelining, chunked, 100-continue, absolute-form, OPTIONS *, HTTP/1.0, big body, TLS) or secrets (tool calls carrying the SecretsCaptured credentials)")
		n       = flag.Int("n", 200, "gateway mode: number of requests")
		conns   = flag.Int("conns", 4, "gateway mode: keep-alive connections")
		seed    = flag.Uint64("seed", 1, "gateway mode: random seed of the request mix")
		iface   = flag.String("iface", "lo", "interface to capture on (Linux: lo gives Ethernet, any gives LINUX_SLL2; macOS: lo0 gives NULL)")
		tool    = flag.String("tool", "tcpdump", "capture tool: tcpdump or dumpcap")
		extra   = flag.String("args", "", "extra capture-tool arguments, space separated (e.g. \"-y LINUX_SLL\" or \"--time-stamp-precision=nano\")")
		ipv6    = flag.Bool("6", false, "serve and connect on [::1] instead of 127.0.0.1")
		pcapng  = flag.Bool("pcapng", false, "convert the tcpdump capture to pcapng with editcap -F pcapng")
		snaplen = flag.Int("s", 0, "snap length (0: the tool's default, whole packets)")
		bigBody = flag.Int("big", 300_000, "edge mode: size of the large request body in bytes")
	)
	flag.Parse()
	if *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if *mode == "synth" {
		if err := synthGateway(*out, *n, *conns, *seed); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := run(*out, *mode, *n, *conns, *seed, *iface, *tool, *extra, *ipv6, *pcapng, *snaplen, *bigBody); err != nil {
		log.Fatal(err)
	}
}

func run(out, mode string, n, conns int, seed uint64, iface, tool, extra string, ipv6, pcapng bool, snaplen, bigBody int) error {
	host := "127.0.0.1"
	if ipv6 {
		host = "::1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler()}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	filter := fmt.Sprintf("port %d", port)

	var tlsLn net.Listener
	if mode == "edge" {
		tlsLn, err = tlsListener(host)
		if err != nil {
			return err
		}
		tsrv := &http.Server{Handler: handler()}
		go tsrv.Serve(tlsLn)
		defer tsrv.Close()
		filter += fmt.Sprintf(" or port %d", tlsLn.Addr().(*net.TCPAddr).Port)
	}

	raw := out
	if pcapng && tool == "tcpdump" {
		raw = out + ".tmp.pcap"
		defer os.Remove(raw)
	}
	var args []string
	ready := ""
	switch tool {
	case "tcpdump":
		args = []string{"-i", iface, "-U", "-w", raw}
		if snaplen > 0 {
			args = append(args, "-s", strconv.Itoa(snaplen))
		}
		ready = "listening on"
	case "dumpcap":
		args = []string{"-i", iface, "-w", raw, "-q"}
		if snaplen > 0 {
			args = append(args, "-s", strconv.Itoa(snaplen))
		}
		ready = "Capturing on"
	default:
		return fmt.Errorf("unknown -tool %q", tool)
	}
	args = append(args, strings.Fields(extra)...)
	if tool == "tcpdump" {
		args = append(args, filter)
	} else {
		args = append(args, "-f", filter)
	}
	cmd := exec.Command(tool, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	log.Printf("%s %s", tool, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log.Printf("%s: %s", tool, sc.Text())
		if strings.Contains(sc.Text(), ready) {
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	// Tools say they are listening a moment before they capture: wait
	// until a first UDP marker is in the file.
	if err := mark(raw, host, port, "capturegen-start"); err != nil {
		return err
	}

	base := "http://" + net.JoinHostPort(host, strconv.Itoa(port))
	switch mode {
	case "gateway":
		err = gatewayTraffic(base, n, conns, seed)
	case "chat":
		err = chatTraffic(base, n, conns, seed)
	case "edge":
		err = edgeTraffic(base, ln.Addr().String(), tlsLn.Addr().String(), bigBody)
	case "secrets":
		err = secretsTraffic(base)
	default:
		err = fmt.Errorf("unknown -mode %q", mode)
	}
	if err != nil {
		return err
	}

	// Mark the end and wait until the tool has written the marker.
	if err := mark(raw, host, port, "capturegen-end"); err != nil {
		return err
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if raw != out {
		if b, err := exec.Command("editcap", "-F", "pcapng", raw, out).CombinedOutput(); err != nil {
			return fmt.Errorf("editcap: %v: %s", err, b)
		}
	}
	log.Printf("wrote %s", out)
	return nil
}

// mark sends UDP datagrams holding a unique marker to the captured port
// until the capture file contains it.
func mark(file, host string, port int, what string) error {
	marker := fmt.Sprintf("%s-%d", what, time.Now().UnixNano())
	u, err := net.Dial("udp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer u.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		u.Write([]byte(marker))
		time.Sleep(100 * time.Millisecond)
		if b, _ := os.ReadFile(file); bytes.Contains(b, []byte(marker)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the capture tool did not write the %s marker within 15s", what)
		}
	}
}

// handler answers like the reference gateway: tool calls, chat
// completions (SSE when "stream": true), health.
func handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/tools/{name}", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"tool":%q,"ok":true,"result":{"items":3}}`, r.PathValue("name"))
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}]}`, req.Model)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, tok := range []string{"Hel", "lo", "."} {
			fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", tok)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "ok %s %s\n", r.Method, r.URL.Path)
	})
	return mux
}

var (
	cities  = []string{"Oslo", "Lisbon", "Nairobi", "Osaka", "Lima", "Quebec", "Tromsø"}
	queries = []string{"circuit breaker half-open", "retry budget", "429 retry-after", "p99 latency", "idempotency keys", "token cost per task"}
)

// gatewayTraffic sends n requests over conns keep-alive connections.
func gatewayTraffic(base string, n, conns int, seed uint64) error {
	rng := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	kinds := gatewayKinds(n, rng)
	var reqs []*http.Request
	for i, kind := range kinds {
		method, path, body := gatewayRequest(rng, i, kind)
		var rb io.Reader
		if body != "" {
			rb = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, base+path, rb)
		if err != nil {
			return err
		}
		for _, h := range gatewayHeaders(rng, i, body != "") {
			req.Header.Set(h[0], h[1])
		}
		reqs = append(reqs, req)
	}
	return sendAll(reqs, conns, rng)
}

// gatewayKinds is the shuffled mix of n request kinds: 35 % search, 20 %
// weather, 15 % vectors, 10 % GET weather, 20 % chat completions (half
// streaming).
func gatewayKinds(n int, rng *mrand.Rand) []int {
	kinds := make([]int, 0, n)
	for k, share := range []int{35, 20, 15, 10, 10, 10} {
		for range n * share / 100 {
			kinds = append(kinds, k)
		}
	}
	for len(kinds) < n {
		kinds = append(kinds, 0)
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	return kinds
}

// gatewayRequest is request i of the gateway mix, of the given kind.
func gatewayRequest(rng *mrand.Rand, i, kind int) (method, path, body string) {
	switch kind {
	case 0:
		method, path = "POST", "/tools/search"
		body = fmt.Sprintf(`{"tool_call_id":"call_%04d","name":"search","arguments":{"query":%q,"top_k":%d}}`, i, queries[rng.IntN(len(queries))], 3+rng.IntN(8))
	case 1:
		method, path = "POST", "/tools/weather"
		body = fmt.Sprintf(`{"tool_call_id":"call_%04d","name":"weather","arguments":{"city":%q,"units":"metric"}}`, i, cities[rng.IntN(len(cities))])
	case 2:
		method, path = "POST", "/tools/vectors"
		body = fmt.Sprintf(`{"tool_call_id":"call_%04d","name":"vectors","arguments":{"collection":"runbooks","vector":[%.3f,%.3f,%.3f,%.3f],"k":5}}`, i, rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64())
	case 3:
		method, path = "GET", "/tools/weather?city="+strings.ReplaceAll(cities[rng.IntN(len(cities))], "ø", "%C3%B8")
	default:
		method, path = "POST", "/v1/chat/completions"
		body = fmt.Sprintf(`{"model":"gpt-4o-mini","stream":%t,"messages":[{"role":"system","content":"You are an on-call assistant."},{"role":"user","content":"Summarise incident %d and suggest a next step."}],"tools":[{"type":"function","function":{"name":"search"}}]}`, kind == 5, 1000+i)
	}
	return method, path, body
}

// gatewayHeaders are the header fields of request i of the gateway mix
// (besides Host and Content-Length), in the order Go's client writes
// them.
func gatewayHeaders(rng *mrand.Rand, i int, body bool) [][2]string {
	h := [][2]string{{"User-Agent", "openclaw-agent/0.9"}, {"Accept", "application/json"}}
	if body {
		h = append(h, [2]string{"Content-Type", "application/json"})
	}
	h = append(h, [2]string{"X-Request-Id", fmt.Sprintf("req-%06d", i)})
	switch rng.IntN(3) {
	case 0:
		h = append(h, [2]string{"Authorization", fmt.Sprintf("Bearer sk-fake-%08x", rng.Uint32())})
	case 1:
		h = append(h, [2]string{"X-Api-Key", fmt.Sprintf("fake-key-%08x", rng.Uint32())})
	}
	return h
}

// sendAll sends reqs over conns keep-alive connections, spread in time.
func sendAll(reqs []*http.Request, conns int, rng *mrand.Rand) error {
	ch := make(chan *http.Request)
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for range conns {
		// One transport per worker: one keep-alive connection each.
		client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, DisableCompression: true}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for req := range ch {
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	for _, r := range reqs {
		ch <- r
		time.Sleep(time.Duration(5+rng.IntN(10)) * time.Millisecond) // spread in time like real traffic
	}
	close(ch)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	return nil
}

// chatTraffic sends n chat turns on an AI agent gateway's OpenAI-compatible
// endpoint over conns keep-alive connections: what a client of OpenClaw
// sends. The model is "openclaw" (OpenClaw refuses any other name than
// openclaw or openclaw/<agentId>: the gateway picks the provider), every
// other turn asks for a stream, and no client tools are sent (an agent
// runtime answers those itself). Each turn carries a fake bearer token,
// which the replay redacts and a scenario replaces with rewrite.set.
func chatTraffic(base string, n, conns int, seed uint64) error {
	rng := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	topics := []string{"the checkout latency spike", "the 429s from the model provider", "the failed deploy", "the queue backlog", "the certificate expiry", "the cache stampede"}
	var reqs []*http.Request
	for i := range n {
		body := fmt.Sprintf(`{"model":"openclaw","stream":%t,"messages":[{"role":"user","content":"Summarise incident %d (%s) in two sentences."}]}`,
			i%2 == 1, 2000+i, topics[rng.IntN(len(topics))])
		req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "rehearse-chat-client/1")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", fmt.Sprintf("Bearer oc-fake-%08x", rng.Uint32()))
		reqs = append(reqs, req)
	}
	return sendAll(reqs, conns, rng)
}

// SecretsCaptured are the credentials -mode secrets puts on the wire, in
// an Authorization header, a Cookie, an X-Api-Key and api_key/access_token
// query parameters, then (on a second connection, as a client of a proxy
// writes them) the password of an absolute-form target's user info, a
// Proxy-Authorization header, and the user info of a target Go's URL
// parser refuses (so that its error quotes it): the redaction tests grep
// a run directory, inspect's output and what a replay sends for each.
var SecretsCaptured = []string{"sk-captured-bearer-5ecret", "captured-cookie-5ecret", "captured-xkey-5ecret", "captured-query-5ecret", "captured-access-5ecret",
	"captured-userinfo-5ecret", "captured-proxy-5ecret", "captured-rawurl-5ecret"}

// secretsTraffic sends a few tool calls that carry SecretsCaptured on one
// keep-alive connection.
func secretsTraffic(base string) error {
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, DisableCompression: true}}
	for i := range 12 {
		var req *http.Request
		var err error
		if i%2 == 0 {
			req, err = http.NewRequest("GET", base+"/tools/weather?city=Oslo&api_key="+SecretsCaptured[3]+"&units=metric", nil)
		} else {
			body := fmt.Sprintf(`{"tool_call_id":"call_%04d","name":"search","arguments":{"query":"retry budget"}}`, i)
			req, err = http.NewRequest("POST", base+"/tools/search?access_token="+SecretsCaptured[4], strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
		}
		if err != nil {
			return err
		}
		req.Header.Set("User-Agent", "openclaw-agent/0.9")
		req.Header.Set("Authorization", "Bearer "+SecretsCaptured[0])
		req.Header.Set("Cookie", "session="+SecretsCaptured[1])
		req.Header.Set("X-Api-Key", SecretsCaptured[2])
		req.Header.Set("X-Request-Id", fmt.Sprintf("req-%06d", i))
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(5 * time.Millisecond)
	}
	return proxyFormSecrets(strings.TrimPrefix(base, "http://"))
}

// proxyFormSecrets writes, on one connection, two requests in absolute
// form with user info (as a client configured with a proxy URL sends
// them), the first with a Proxy-Authorization header, the second with a
// target Go's URL parser refuses (the server answers 400 and closes).
func proxyFormSecrets(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	req := "GET http://agent:" + SecretsCaptured[5] + "@" + addr + "/tools/weather?city=Bergen HTTP/1.1\r\n" +
		"Host: " + addr + "\r\nProxy-Authorization: Bearer " + SecretsCaptured[6] + "\r\nUser-Agent: openclaw-agent/0.9\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	req = "GET http://agent:" + SecretsCaptured[7] + "@" + addr + "/tools/%zz HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, br) // 400, then the server closes
	return nil
}

// edgeTraffic sends the cases the extractor must get right, mostly as raw
// bytes so that the wire holds exactly what the test expects.
func edgeTraffic(base, addr, tlsAddr string, bigBody int) error {
	hostHdr := addr
	raw := func(parts ...string) error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		c.(*net.TCPConn).SetNoDelay(true)
		for _, p := range parts {
			if _, err := io.WriteString(c, p); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond) // separate segments
		}
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, c)
		return nil
	}
	// 1. Keep-alive with Go's client.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, ExpectContinueTimeout: 5 * time.Second}}
	for _, city := range []string{"Oslo", "Lima"} {
		resp, err := client.Get(base + "/tools/weather?city=" + city)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// 2. Expect: 100-continue (the client waits for 100 before the body).
	req, _ := http.NewRequest("POST", base+"/tools/search", strings.NewReader(`{"query":"expect continue"}`))
	req.Header.Set("Expect", "100-continue")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// 3. A large body (-big bytes) in many segments.
	big := `{"documents":["` + strings.Repeat("lorem ipsum dolor sit amet ", max(1, bigBody/27)) + `"]}`
	resp, err = client.Post(base+"/tools/vectors", "application/json", strings.NewReader(big))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()

	// 4. Pipelining: three requests in one write, the second's body and
	// the third's request line in the same segment.
	if err := raw("GET /tools/weather?city=Osaka HTTP/1.1\r\nHost: " + hostHdr + "\r\n\r\n" +
		"POST /tools/search HTTP/1.1\r\nHost: " + hostHdr + "\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"query\":\"pipe\"}\n" +
		"GET /healthz HTTP/1.1\r\nHost: " + hostHdr + "\r\nConnection: close\r\n\r\n"); err != nil {
		return err
	}
	// 5. Chunked with a trailer, in several segments.
	if err := raw("POST /tools/search HTTP/1.1\r\nHost: "+hostHdr+"\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\nTrailer: X-Checksum\r\n\r\n",
		chunk(`{"query":`), chunk(`"chunked body"}`), "0\r\nX-Checksum: sha256-abc\r\n\r\n"); err != nil {
		return err
	}
	// 6. Absolute-form, OPTIONS *, HTTP/1.0 without Host, lower-case
	// header names with secrets, on one connection.
	if err := raw("GET http://"+hostHdr+"/tools/search?q=absolute HTTP/1.1\r\nHost: "+hostHdr+"\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: "+hostHdr+"\r\n\r\n",
		"POST /tools/weather HTTP/1.1\r\nhost: "+hostHdr+"\r\ncontent-type: application/json\r\nauthorization: Bearer sk-edge-secret\r\nx-api-key: edge-key\r\ncookie: session=edge\r\ncontent-length: 16\r\n\r\n{\"city\":\"Lima\"}\n",
		"GET /healthz HTTP/1.0\r\nUser-Agent: legacy/1.0\r\n\r\n"); err != nil {
		return err
	}
	// 7. Two TLS connections, which cannot be replayed.
	for range 2 {
		tc, err := tls.Dial("tcp", tlsAddr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		fmt.Fprintf(tc, "GET /secret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		io.Copy(io.Discard, tc)
		tc.Close()
	}
	return nil
}

// chunk frames s as one chunk of a chunked body.
func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

// tlsListener serves TLS with a throw-away self-signed certificate.
func tlsListener(host string) (net.Listener, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "capturegen"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return tls.Listen("tcp", net.JoinHostPort(host, "0"), &tls.Config{Certificates: []tls.Certificate{cert}})
}
