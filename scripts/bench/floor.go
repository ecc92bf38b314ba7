package main

// The floor: the least a Go harness could spend on the 503 drill's
// exchanges on this machine. Its processes do what the drill's do, in
// the simplest Go form, and nothing else (no journal, no observers, no
// precise pacing):
//
//   - a client paced by time.Sleep at the drill's 10/s, writing raw
//     HTTP/1.1 requests on kept-alive connections (a small pool: the
//     streams overlap the next requests), reading each answer on the
//     sending goroutine;
//   - a net/http server answering as the drill's fake upstreams do:
//     512-byte JSON, and every fifth request (the bundled capture's share
//     of chat completions: 59 of 270) a server-sent-events stream of 13
//     events 50 ms apart (2,270 bytes), flushed per event;
//   - between them, in the variants with a gateway, Go's
//     httputil.ReverseProxy (what a Go gateway is built on), flushing
//     each event.
//
// Variants: "direct" (client and server, one process), "relay" (client,
// proxy and server in one process: beside the drill's (a)) and "split"
// (client and server in one process, the proxy in another: beside the
// drill's (b), whose harness process holds the replayer and the fake
// upstreams while the gateway runs on its own).

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

const (
	floorRate       = 10                    // requests per second, the 503 drill's
	floorAnswer     = 512                   // bytes of a plain answer, the fakes'
	floorStreamEach = 5                     // every fifth request is a stream
	floorEvents     = 13                    // events of a stream, the fakes' chat completions
	floorEventGap   = 50 * time.Millisecond // between events, the fakes' default
	floorStreamSize = 2270                  // bytes of a stream, the drill's
	floorWarm       = 5 * time.Second       // before the measured window
)

// floorServer answers like the drill's fake upstreams.
func floorServer() http.Handler {
	answer := bytes.Repeat([]byte("x"), floorAnswer)
	event := append(append([]byte("data: "), bytes.Repeat([]byte("y"), floorStreamSize/floorEvents-8)...), "\n\n"...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("Accept") != "text/event-stream" {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			w.Write(answer)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for i := range floorEvents {
			if i > 0 {
				time.Sleep(floorEventGap)
			}
			w.Write(event)
			f.Flush()
		}
	})
}

// floorRelay is the simplest Go gateway: a reverse proxy to upstream that
// flushes each write (the events stream through). It reads the request's
// body before forwarding it, as the drill's gateway does (to retry it).
func floorRelay(upstream string) http.Handler {
	u := &url.URL{Scheme: "http", Host: upstream}
	p := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 32},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.ServeHTTP(w, r)
	})
}

func serveOn(addr string, h http.Handler) string {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, h)
	return ln.Addr().String()
}

// floorClient sends the drill's requests to target until stop is closed
// and returns the send lateness (µs, stamped before the write) and the
// exchanges that failed.
func floorClient(target string, stop <-chan struct{}) (*hdrhistogram.Histogram, int) {
	type conn struct {
		net.Conn
		br *bufio.Reader
	}
	var (
		mu     sync.Mutex
		idle   []conn
		failed int
		wg     sync.WaitGroup
	)
	h := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
	body := strings.Repeat("z", 256)
	plain := fmt.Appendf(nil, "POST /tools/search HTTP/1.1\r\nHost: floor\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	stream := fmt.Appendf(nil, "POST /v1/chat/completions HTTP/1.1\r\nHost: floor\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	t0 := time.Now()
	exchange := func(due time.Time, req []byte) {
		defer wg.Done()
		mu.Lock()
		var c conn
		if n := len(idle); n > 0 {
			c, idle = idle[n-1], idle[:n-1]
		}
		mu.Unlock()
		if c.Conn == nil {
			nc, err := net.Dial("tcp", target)
			if err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
				return
			}
			c = conn{nc, bufio.NewReader(nc)}
		}
		late := time.Since(due)
		_, err := c.Write(req)
		var resp *http.Response
		if err == nil {
			resp, err = http.ReadResponse(c.br, nil)
		}
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		if err != nil {
			log.Printf("floor exchange due %s after start, %s late: %v", due.Sub(t0), late, err)
		}
		mu.Lock()
		defer mu.Unlock()
		h.RecordValue(max(late.Microseconds(), 0))
		if err != nil || resp.Close {
			failed += btoi(err != nil)
			c.Close()
			return
		}
		idle = append(idle, c)
	}
	for i := 0; ; i++ {
		due := t0.Add(time.Duration(i) * time.Second / floorRate)
		select {
		case <-stop:
			wg.Wait()
			return h, failed
		case <-time.After(time.Until(due)):
		}
		req := plain
		if i%floorStreamEach == floorStreamEach-1 {
			req = stream
		}
		wg.Add(1)
		go exchange(due, req)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runFloorChild is one floor process: spec is "client,LISTEN,TARGET"
// (the server on LISTEN and the client into TARGET, which is "self" for
// the server itself and "relay" for an in-process proxy in front of it)
// or "relay,LISTEN,UPSTREAM". It prints "ready" once listening; a client
// runs until its stdin closes and then prints its lateness (p50, p99,
// max in ms) and its failed exchanges; a relay runs until killed.
func runFloorChild(spec string) {
	f := strings.Split(spec, ",")
	if len(f) != 3 {
		log.Fatalf("-floor-child %q: want client,LISTEN,TARGET or relay,LISTEN,UPSTREAM", spec)
	}
	if f[0] == "relay" {
		serveOn(f[1], floorRelay(f[2]))
		fmt.Println("ready")
		select {}
	}
	server := serveOn(f[1], floorServer())
	target := f[2]
	switch target {
	case "self":
		target = server
	case "relay":
		target = serveOn("127.0.0.1:0", floorRelay(server))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", target)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			log.Fatalf("floor: %s does not answer: %v", target, err)
		}
	}
	stop := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
	fmt.Println("ready")
	h, failed := floorClient(target, stop)
	ms := func(v int64) float64 { return float64(v) / 1000 }
	fmt.Printf("%g %g %g %d\n", ms(h.ValueAtQuantile(50)), ms(h.ValueAtQuantile(99)), ms(h.Max()), failed)
}

// threadStat is one thread's counters.
type threadStat struct {
	run        time.Duration // on CPU (schedstat)
	vol, invol int64         // context switches
}

// procThreads returns a process's threads by TID (Linux /proc).
func procThreads(pid int) map[int]threadStat {
	dirs, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	out := make(map[int]threadStat, len(dirs))
	for _, d := range dirs {
		tid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		var t threadStat
		if b, err := os.ReadFile(d + "/schedstat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				t.run = time.Duration(ns)
			}
		}
		b, err := os.ReadFile(d + "/status")
		if err != nil {
			continue // exited
		}
		for _, l := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(l, ":")
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "voluntary_ctxt_switches":
				t.vol = n
			case "nonvoluntary_ctxt_switches":
				t.invol = n
			}
		}
		out[tid] = t
	}
	return out
}

// window is what a process spent between two snapshots of its threads.
type window struct {
	cpu        float64 // % of a core
	sysmonCPU  float64 // … of it on the runtime's monitor thread
	vol        float64 // voluntary switches per request
	sysmon     float64 // … of them by the runtime's monitor thread
	invol      float64 // involuntary switches per request
	threads    int
	requestsIn float64
}

// measure returns what pid spent between the snapshots a (at ta) and b
// (at tb), per request at the drill's rate. The runtime's monitor thread
// (sysmon) is the process's second thread: runtime.main starts it before
// any other thread (go1.26 runtime/proc.go), and Linux hands out thread
// IDs in increasing order.
func measure(a, b map[int]threadStat, ta, tb time.Time) window {
	d := tb.Sub(ta)
	reqs := d.Seconds() * floorRate
	tids := make([]int, 0, len(b))
	for tid := range b {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	var w window
	var run time.Duration
	for i, tid := range tids {
		x := b[tid]
		x.run -= a[tid].run
		x.vol -= a[tid].vol
		x.invol -= a[tid].invol
		run += x.run
		w.vol += float64(x.vol)
		w.invol += float64(x.invol)
		if i == 1 {
			w.sysmon = float64(x.vol)
			w.sysmonCPU = 100 * float64(x.run) / float64(d)
		}
	}
	w.cpu = 100 * float64(run) / float64(d)
	w.vol /= reqs
	w.invol /= reqs
	w.sysmon /= reqs
	w.threads = len(tids)
	w.requestsIn = reqs
	return w
}

// floorRun is one floor measurement: the client's process, and the
// proxy's in the split variant.
type floorRun struct {
	client, relay window
	p50, p99, max float64
	failed        int
}

// runFloor runs one variant of the floor for a window of length d after
// floorWarm of warm-up.
func runFloor(variant string, d time.Duration) floorRun {
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	var relay *exec.Cmd
	target := "self"
	listen := "127.0.0.1:0"
	switch variant {
	case "relay":
		target = "relay"
	case "split":
		listen = "127.0.0.1:" + freePort()
		target = "127.0.0.1:" + freePort()
		relay = exec.Command(self, "-floor-child", "relay,"+target+","+listen)
		relay.Stderr = os.Stderr
		out, err := relay.StdoutPipe()
		if err != nil {
			log.Fatal(err)
		}
		if err := relay.Start(); err != nil {
			log.Fatal(err)
		}
		defer func() { relay.Process.Kill(); relay.Wait() }()
		if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
			log.Fatalf("floor relay: %q", l)
		}
	}
	cmd := exec.Command(self, "-floor-child", "client,"+listen+","+target)
	in, err := cmd.StdinPipe()
	if err != nil {
		log.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	cmd.Env = harnessEnv()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	br := bufio.NewReader(out)
	if l, _ := br.ReadString('\n'); l != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		log.Fatalf("floor client: %q", l)
	}
	time.Sleep(floorWarm)
	relayPID := 0
	if relay != nil {
		relayPID = relay.Process.Pid
	}
	a, ra, ta := procThreads(cmd.Process.Pid), procThreads(relayPID), time.Now()
	time.Sleep(d)
	b, rb, tb := procThreads(cmd.Process.Pid), procThreads(relayPID), time.Now()
	in.Close()
	var r floorRun
	l, _ := br.ReadString('\n')
	if _, err := fmt.Sscan(l, &r.p50, &r.p99, &r.max, &r.failed); err != nil {
		log.Fatalf("floor client printed %q: %v", l, err)
	}
	if err := cmd.Wait(); err != nil {
		log.Fatalf("floor client: %v", err)
	}
	r.client = measure(a, b, ta, tb)
	if relay != nil {
		r.relay = measure(ra, rb, ta, tb)
	}
	return r
}
