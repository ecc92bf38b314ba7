// Command bench measures the harness against the tools people would use
// instead, side by side in one run, and prints each figure with min /
// median / max over paired, alternating rounds and the ratio of the pair:
//
//   - proxy: inject's HTTP proxy mode (with and without its poll for the
//     upstream's answer) and TCP mode, each as its own process, against
//     Toxiproxy passthrough and HAProxy in mode tcp (a relay written in C:
//     the floor of any process hop), in front of the same loopback
//     backend: p50/p99 added over direct (sequential keep-alive client),
//     wrk -t2 -c64 throughput, and CPU per request in both runs (from
//     /proc);
//   - pacing: the replayer against Vegeta (as a library) into the same sink,
//     send lateness at 10, 1,000 and 5,000/s, and the process's CPU; each
//     run is a child process of its own (this program again, -pace-child),
//     so that neither tool runs in the other's heap, goroutines and idle
//     connections, and the CPU is the tool's alone (the sink is here);
//   - capture: capture.ExtractFile against tshark on the same generated
//     capture (go test -bench BenchmarkExtract);
//   - analysis: a 953k-event journal analysed and rendered (report render)
//     on one core (go test -bench 'Analyze1M|Render1M' -cpu 1);
//   - drill: `rehearse run 503-storm --duration 2m`, its CPU share and the
//     replay's p99 send lateness, as built in (a) and with the gateway as a
//     process of its own (b); per-thread CPU and context switches mid-run
//     (the runtime's monitor thread apart); and in the same rounds the
//     floor (floor.go: the drill's exchanges in the simplest Go form, in
//     one process and split in two), with the drill's CPU as a ratio to
//     it. -only floor runs the floor alone.
//
// Each round runs the members of a pair back to back, the order swapped
// every round, so that machine load hits both alike. scripts/bench.sh
// (make bench) installs Toxiproxy, builds rehearse and runs this:
//
//	go run ./scripts/bench -rehearse bin/rehearse -toxiproxy /path/to/server -rounds 3
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/replay/capture"
)

var (
	rounds     = flag.Int("rounds", 3, "paired rounds per comparison")
	only       = flag.String("only", "proxy,pacing,capture,analysis,drill", "comma-separated sections to run (floor: the drill section's floor alone)")
	rehearse   = flag.String("rehearse", "bin/rehearse", "the rehearse binary")
	toxiproxy  = flag.String("toxiproxy", "", "the Toxiproxy server binary (proxy section)")
	captureMB  = flag.Int("capture-mb", 16, "size of the generated capture (capture section)")
	proxyCPUs  = flag.String("proxy-cpus", "", "run the proxy processes under taskset -c with this CPU list (proxy section; run the bench itself under taskset to pin the client and backend)")
	drillFor   = flag.Duration("drill-duration", 2*time.Minute, "length of the drill (drill section)")
	paceChild  = flag.String("pace-child", "", "internal: run one pacing measurement, TOOL,RATE,DURATION,TARGET, and print its figures")
	floorChild = flag.String("floor-child", "", "internal: run one process of the floor (floor.go)")
	floorFor   = flag.Duration("floor-window", 30*time.Second, "measured window of each floor run, after 5s of warm-up (drill and floor sections; 3 runs a round); 0: no floor")
	paceRates  = flag.String("pace-rates", "10,1000,5000", "comma-separated rates of the pacing section, requests per second")
	procs      = flag.Int("procs", 0, "GOMAXPROCS of the harness's processes under test (the replay pacing child, the drill's rehearse run and its re-render); 0: Go's default, what a user gets")
	tmp        string
	floorOnly  bool // the floor section: the drill section's floor runs alone
)

func main() {
	log.SetFlags(0)
	flag.Parse()
	if *paceChild != "" {
		runPaceChild(*paceChild)
		return
	}
	if *floorChild != "" {
		runFloorChild(*floorChild)
		return
	}
	var err error
	if tmp, err = os.MkdirTemp("", "rehearse-bench-"); err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	fmt.Printf("# rehearse bench, %s UTC, %s/%s, %d CPUs, %s\n", time.Now().UTC().Format("2006-01-02 15:04"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel())
	if *procs > 0 {
		fmt.Printf("# the harness's processes under test run with GOMAXPROCS=%d (-procs)\n", *procs)
	}
	fmt.Printf("# load average at start: %s; %d rounds, figures are min / median / max\n", loadavg(), *rounds)
	sections := map[string]func(){
		"proxy": benchProxy, "pacing": benchPacing, "capture": benchCapture,
		"analysis": benchAnalysis, "drill": benchDrill,
		"floor": func() { floorOnly = true; benchDrill() },
	}
	for _, name := range strings.Split(*only, ",") {
		f, ok := sections[strings.TrimSpace(name)]
		if !ok {
			log.Fatalf("unknown section %q", name)
		}
		fmt.Printf("\n## %s (load %s)\n", name, loadavg())
		f()
	}
	fmt.Printf("\n# load average at end: %s\n", loadavg())
}

// series collects one figure over the rounds.
type series []float64

func (s series) String() string {
	if len(s) == 0 {
		return "n/a"
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return fmt.Sprintf("%s / %s / %s", num(c[0]), num(median(c)), num(c[len(c)-1]))
}

func median(c []float64) float64 {
	n := len(c)
	if n%2 == 1 {
		return c[n/2]
	}
	return (c[n/2-1] + c[n/2]) / 2
}

func num(v float64) string {
	switch a := max(v, -v); {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

func row(name string, s series, unit string) { fmt.Printf("  %-54s %-28s %s\n", name, s, unit) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			return strings.TrimSpace(l[strings.Index(l, ":")+1:])
		}
	}
	return "unknown CPU"
}

// rotate returns xs rotated by r, so that each round starts elsewhere.
func rotate[T any](xs []T, r int) []T {
	r %= len(xs)
	return append(slices.Clone(xs[r:]), xs[:r]...)
}

// ---- proxy ----

const backendBody = 512

func startBackend() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), backendBody)
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	return ln.Addr().String()
}

type proxyProc struct {
	name string
	addr string
	pid  int
}

func freePort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// proxyCommand is the command for a proxy process: under taskset when
// -proxy-cpus is given (the PID stays the proxy's: taskset execs it).
func proxyCommand(name string, args ...string) *exec.Cmd {
	if *proxyCPUs == "" {
		return exec.Command(name, args...)
	}
	return exec.Command("taskset", append([]string{"-c", *proxyCPUs, name}, args...)...)
}

// startInject runs `rehearse inject serve` with one upstream in mode in
// front of backend; name is its row, env is added to its environment.
func startInject(name, mode, backend string, env ...string) (proxyProc, func()) {
	target := backend
	if mode == "proxy" {
		target = "http://" + backend
	}
	cfg := filepath.Join(tmp, name+".yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "upstreams:\n  - {name: bench, mode: %s, target: %q}\n", mode, target), 0o644); err != nil {
		log.Fatal(err)
	}
	cmd := proxyCommand(*rehearse, "inject", "serve", "--config", cfg, "--control", "", "--log-level", "error")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatalf("starting %s: %v", *rehearse, err)
	}
	stop := func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 4 && f[0] == "upstream" && f[1] == "bench" {
			go io.Copy(io.Discard, out)
			return proxyProc{name: name, addr: strings.TrimPrefix(f[3], "http://"), pid: cmd.Process.Pid}, stop
		}
	}
	stop()
	log.Fatalf("rehearse inject serve printed no address")
	return proxyProc{}, nil
}

func startToxiproxy(backend string) (proxyProc, func()) {
	port := freePort()
	cmd := proxyCommand(*toxiproxy, "-host", "127.0.0.1", "-port", port)
	if err := cmd.Start(); err != nil {
		log.Fatalf("starting toxiproxy: %v", err)
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	api := "http://127.0.0.1:" + port
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get(api + "/version")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			log.Fatalf("toxiproxy did not come up: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Post(api+"/proxies", "application/json", strings.NewReader(fmt.Sprintf(`{"name":"bench","listen":"127.0.0.1:0","upstream":%q,"enabled":true}`, backend)))
	if err != nil {
		stop()
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ Listen string }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != 201 {
		stop()
		log.Fatalf("creating the toxiproxy proxy: %d %v", resp.StatusCode, err)
	}
	return proxyProc{name: "toxiproxy", addr: p.Listen, pid: cmd.Process.Pid}, stop
}

// startHAProxy runs HAProxy (the Debian package) in mode tcp in front of
// backend: a relay written in C, the floor of what any extra process hop
// costs on this machine. ok is false when haproxy is not installed.
func startHAProxy(backend string) (p proxyProc, stop func(), ok bool) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		return p, nil, false
	}
	addr := "127.0.0.1:" + freePort()
	cfg := filepath.Join(tmp, "haproxy.cfg")
	conf := "global\n  maxconn 4096\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n" +
		"frontend f\n  bind " + addr + "\n  default_backend b\nbackend b\n  server s1 " + backend + "\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		log.Fatal(err)
	}
	cmd := proxyCommand(bin, "-db", "-f", cfg) // -db: foreground, no daemon
	if err := cmd.Start(); err != nil {
		log.Fatalf("starting haproxy: %v", err)
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait() }
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			log.Fatalf("haproxy did not come up: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return proxyProc{name: "haproxy-tcp", addr: addr, pid: cmd.Process.Pid}, stop, true
}

// procCPU returns a process's CPU time (Linux /proc): the sum of its
// threads' run time in nanoseconds (schedstat), else user + system time in
// clock ticks (stat: 10 ms steps, too coarse for a 3,200-request run).
func procCPU(pid int) time.Duration {
	if tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid)); err == nil && len(tasks) > 0 {
		var sum time.Duration
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue // a thread that has just exited
			}
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				sum += time.Duration(ns)
			}
		}
		return sum
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// latency returns the p50 and p99 of n sequential keep-alive GETs.
func latency(addr string, n int) (p50, p99 float64) {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer c.CloseIdleConnections()
	get := func() {
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			log.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range 200 {
		get()
	}
	lat := make([]float64, n)
	for i := range lat {
		t0 := time.Now()
		get()
		lat[i] = float64(time.Since(t0).Nanoseconds()) / 1e3
	}
	slices.Sort(lat)
	return lat[n/2], lat[n*99/100]
}

var wrkReqs = regexp.MustCompile(`(\d+) requests in`)
var wrkRate = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)

// throughput runs wrk -t2 -c64 for d and returns requests per second and
// the requests made.
func throughput(addr string, d time.Duration) (float64, float64) {
	out, err := exec.Command("wrk", "-t2", "-c64", "-d"+strconv.Itoa(int(d.Seconds()))+"s", "http://"+addr+"/").CombinedOutput()
	if err != nil {
		log.Fatalf("wrk: %v\n%s", err, out)
	}
	rate := wrkRate.FindSubmatch(out)
	reqs := wrkReqs.FindSubmatch(out)
	if rate == nil || reqs == nil {
		log.Fatalf("wrk printed no rate:\n%s", out)
	}
	r, _ := strconv.ParseFloat(string(rate[1]), 64)
	n, _ := strconv.ParseFloat(string(reqs[1]), 64)
	return r, n
}

func benchProxy() {
	if _, err := exec.LookPath("wrk"); err != nil {
		fmt.Println("  skipped: wrk not found (apt-get install wrk)")
		return
	}
	backend := startBackend()
	procs := []proxyProc{{name: "direct", addr: backend}}
	p, stop := startInject("inject-proxy", "proxy", backend)
	defer stop()
	procs = append(procs, p)
	// The same, without the poll for the upstream's answer
	// (inject/fastpath_spin.go): what the poll saves, in the same run.
	p, stop1 := startInject("inject-proxy-nopoll", "proxy", backend, "REHEARSE_INJECT_POLL=off")
	defer stop1()
	procs = append(procs, p)
	p, stop2 := startInject("inject-tcp", "tcp", backend)
	defer stop2()
	procs = append(procs, p)
	if *toxiproxy != "" {
		p, stop3 := startToxiproxy(backend)
		defer stop3()
		procs = append(procs, p)
	} else {
		fmt.Println("  toxiproxy not given (-toxiproxy): its rows and the ratios are missing")
	}
	if p, stop4, ok := startHAProxy(backend); ok {
		defer stop4()
		procs = append(procs, p)
	} else {
		fmt.Println("  haproxy not found (apt-get install haproxy): the C relay's rows are missing")
	}
	fmt.Printf("  backend: net/http answering %d bytes; latency: 3,000 sequential keep-alive GETs; throughput: wrk -t2 -c64 -d5s\n", backendBody)
	p50 := map[string]series{}
	p99 := map[string]series{}
	added := map[string]series{}
	rps := map[string]series{}
	cpu := map[string]series{}
	cpuSeq := map[string]series{}
	ratioLat := map[string]series{}
	ratioRPS := map[string]series{}
	for r := range *rounds {
		got50 := map[string]float64{}
		gotRPS := map[string]float64{}
		for _, p := range rotate(procs, r) {
			c0 := procCPU(p.pid)
			a, b := latency(p.addr, 3000)
			if p.pid != 0 {
				cpuSeq[p.name] = append(cpuSeq[p.name], float64((procCPU(p.pid)-c0).Microseconds())/3200)
			}
			p50[p.name] = append(p50[p.name], a)
			p99[p.name] = append(p99[p.name], b)
			got50[p.name] = a
			c0 = procCPU(p.pid)
			rate, n := throughput(p.addr, 5*time.Second)
			if p.pid != 0 {
				cpu[p.name] = append(cpu[p.name], float64((procCPU(p.pid)-c0).Microseconds())/n)
			}
			rps[p.name] = append(rps[p.name], rate)
			gotRPS[p.name] = rate
		}
		for _, p := range procs[1:] {
			added[p.name] = append(added[p.name], got50[p.name]-got50["direct"])
		}
		if _, ok := got50["toxiproxy"]; ok {
			for _, name := range []string{"inject-proxy", "inject-proxy-nopoll", "inject-tcp", "haproxy-tcp"} {
				if _, ok := got50[name]; !ok {
					continue
				}
				ratioLat[name] = append(ratioLat[name], (got50[name]-got50["direct"])/(got50["toxiproxy"]-got50["direct"]))
				ratioRPS[name] = append(ratioRPS[name], gotRPS[name]/gotRPS["toxiproxy"])
			}
		}
	}
	for _, p := range procs {
		row(p.name+" p50", p50[p.name], "µs")
		row(p.name+" p99", p99[p.name], "µs")
		if p.name != "direct" {
			row(p.name+" added at p50 (vs direct, same round)", added[p.name], "µs")
		}
		if s, ok := cpuSeq[p.name]; ok {
			row(p.name+" CPU per request, sequential", s, "µs")
		}
		row(p.name+" throughput", rps[p.name], "req/s")
		if s, ok := cpu[p.name]; ok {
			row(p.name+" CPU per request (wrk)", s, "µs")
		}
	}
	for _, name := range []string{"inject-proxy", "inject-proxy-nopoll", "inject-tcp", "haproxy-tcp"} {
		if s, ok := ratioRPS[name]; ok {
			row(name+" ÷ toxiproxy: added p50", ratioLat[name], "ratio (<1: less added)")
			row(name+" ÷ toxiproxy: throughput", s, "ratio (>1: more)")
		}
	}
}

// ---- pacing ----

type paced struct{ p50, p99, max, cpu float64 }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sink() *url.URL {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true}`)
	}))
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

func runReplay(target *url.URL, rate float64, d time.Duration) paced {
	req := &capture.Request{Method: "GET", Target: "/tools/search?q=bench", Proto: "HTTP/1.1", Host: "bench",
		Header: []capture.HeaderField{{Name: "Host", Value: "bench"}}}
	r, err := replay.New([]*capture.Request{req}, replay.Options{Target: target, Rate: rate, Duration: d, Deadline: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	c0, t0 := cpuTime(), time.Now()
	sum, err := r.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	return paced{sum.Lateness.P50, sum.Lateness.P99, sum.Lateness.Max, float64(cpuTime()-c0) / float64(time.Since(t0))}
}

func runVegeta(target *url.URL, rate float64, d time.Duration) paced {
	tr := vegeta.NewStaticTargeter(vegeta.Target{Method: "GET", URL: target.String() + "/tools/search?q=bench"})
	atk := vegeta.NewAttacker(vegeta.Timeout(5 * time.Second))
	h := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
	c0, began := cpuTime(), time.Now()
	for res := range atk.Attack(tr, vegeta.Rate{Freq: int(rate), Per: time.Second}, d, "bench") {
		// Vegeta's constant pacer makes hit i due at (i+1)/rate; it
		// stamps a hit before building it.
		due := began.Add(time.Duration(float64(res.Seq+1) * float64(time.Second) / rate))
		h.RecordValue(max(int64(res.Timestamp.Sub(due)/time.Microsecond), 0))
	}
	ms := func(v int64) float64 { return float64(v) / 1000 }
	return paced{ms(h.ValueAtQuantile(50)), ms(h.ValueAtQuantile(99)), ms(h.Max()), float64(cpuTime()-c0) / float64(time.Since(began))}
}

// paceWarmup is the unmeasured run each pacing child makes first, at the
// same rate: heap and stack growth, the spin calibration and the first
// connection's dial are then not in the measured run.
const paceWarmup = time.Second

// runPaceChild is a pacing child process: one warm-up and one measured run
// of one tool, its figures printed on one line for pace to read.
func runPaceChild(spec string) {
	f := strings.Split(spec, ",")
	if len(f) != 4 {
		log.Fatalf("-pace-child %q: want TOOL,RATE,DURATION,TARGET", spec)
	}
	rate, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		log.Fatal(err)
	}
	d, err := time.ParseDuration(f[2])
	if err != nil {
		log.Fatal(err)
	}
	target, err := url.Parse(f[3])
	if err != nil {
		log.Fatal(err)
	}
	run := runReplay
	if f[0] == "vegeta" {
		run = runVegeta
	}
	run(target, rate, paceWarmup)
	p := run(target, rate, d)
	fmt.Printf("%g %g %g %g\n", p.p50, p.p99, p.max, p.cpu)
}

// harnessEnv is the environment of a harness process under test: this
// one's, with GOMAXPROCS set when -procs asks for a processor count.
func harnessEnv() []string {
	env := os.Environ()
	if *procs > 0 {
		env = append(env, fmt.Sprintf("GOMAXPROCS=%d", *procs))
	}
	return env
}

// pace runs one measurement of tool in a child process.
func pace(tool string, target *url.URL, rate float64, d time.Duration) paced {
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(self, "-pace-child", fmt.Sprintf("%s,%g,%s,%s", tool, rate, d, target))
	if tool == "replay" {
		cmd.Env = harnessEnv()
	}
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("pacing child %s at %g/s: %v", tool, rate, err)
	}
	var p paced
	if _, err := fmt.Sscan(string(out), &p.p50, &p.p99, &p.max, &p.cpu); err != nil {
		log.Fatalf("pacing child %s printed %q: %v", tool, out, err)
	}
	return p
}

func benchPacing() {
	target := sink()
	fmt.Printf("  send lateness (ms) into one loopback sink (this process); each run a child process of its own after a %s unmeasured warm-up at the rate; the replayer stamps at the write, Vegeta before building; CPU is the tool's process alone\n", paceWarmup)
	var rates []float64
	for _, f := range strings.Split(*paceRates, ",") {
		rate, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || rate <= 0 {
			log.Fatalf("-pace-rates: %q is not a positive rate", f)
		}
		rates = append(rates, rate)
	}
	for _, rate := range rates {
		d := 2 * time.Second
		if rate <= 100 {
			d = 10 * time.Second // 100 requests: the p99 is the worst but one
		}
		res := map[string][]paced{}
		var ratio series
		for r := range *rounds {
			got := map[string]paced{}
			for _, tool := range rotate([]string{"replay", "vegeta"}, r) {
				got[tool] = pace(tool, target, rate, d)
				res[tool] = append(res[tool], got[tool])
			}
			if got["vegeta"].p99 > 0 {
				ratio = append(ratio, got["replay"].p99/got["vegeta"].p99)
			}
		}
		fmt.Printf("  %g/s for %s per run:\n", rate, d)
		for _, tool := range []string{"replay", "vegeta"} {
			var p50, p99, mx, cpu series
			for _, p := range res[tool] {
				p50, p99, mx, cpu = append(p50, p.p50), append(p99, p.p99), append(mx, p.max), append(cpu, 100*p.cpu)
			}
			row("    "+tool+" lateness p50", p50, "ms")
			row("    "+tool+" lateness p99", p99, "ms")
			row("    "+tool+" lateness max", mx, "ms")
			row("    "+tool+" process CPU", cpu, "% of a core")
		}
		row("    replay ÷ vegeta: p99", ratio, "ratio (≤1: replay at least as punctual)")
	}
}

// ---- go test benchmarks ----

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// goBench runs go test with args (env added) and returns each benchmark's
// metrics by unit.
func goBench(env []string, args ...string) map[string]map[string]float64 {
	cmd := exec.Command("go", append([]string{"test", "-run", "^$"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		log.Fatalf("go test %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	res := map[string]map[string]float64{}
	for _, l := range strings.Split(string(out), "\n") {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		metrics := map[string]float64{}
		for i := 0; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				metrics[f[i+1]] = v
			}
		}
		res[m[1]] = metrics
	}
	return res
}

func benchCapture() {
	if _, err := exec.LookPath("tshark"); err != nil {
		fmt.Println("  skipped: tshark not found (apt-get install tshark)")
		return
	}
	fmt.Printf("  a generated %d MB capture (replay/capture/bench_test.go), rehearse's capture.ExtractFile vs tshark -Y http.request, each a child process\n", *captureMB)
	env := []string{"REHEARSE_BENCH_MB=" + strconv.Itoa(*captureMB)}
	mbps := map[string]series{}
	rss := map[string]series{}
	reqs := map[string]series{}
	var ratio, rssRatio series
	for r := range *rounds {
		got := map[string]map[string]float64{}
		for _, tool := range rotate([]string{"rehearse", "tshark"}, r) {
			res := goBench(env, "-bench", "^BenchmarkExtract$/^"+tool+"$", "-benchtime", "1x", "./replay/capture/")
			m := res["BenchmarkExtract/"+tool]
			got[tool] = m
			mbps[tool] = append(mbps[tool], m["MB/cpu-s"])
			rss[tool] = append(rss[tool], m["peak-RSS-MB"])
			reqs[tool] = append(reqs[tool], m["req/s"])
		}
		if t := got["tshark"]["MB/cpu-s"]; t > 0 {
			ratio = append(ratio, got["rehearse"]["MB/cpu-s"]/t)
			rssRatio = append(rssRatio, got["rehearse"]["peak-RSS-MB"]/got["tshark"]["peak-RSS-MB"])
		}
	}
	for _, tool := range []string{"rehearse", "tshark"} {
		row(tool+" MB per CPU-second", mbps[tool], "MB/s")
		row(tool+" requests per second (wall)", reqs[tool], "req/s")
		row(tool+" peak RSS", rss[tool], "MB")
	}
	row("rehearse ÷ tshark: MB per CPU-second", ratio, "ratio (>1: faster)")
	row("rehearse ÷ tshark: peak RSS", rssRatio, "ratio (<1: less memory)")
}

func benchAnalysis() {
	fmt.Println("  a generated 953,473-event journal (reports/bench_test.go), GOMAXPROCS=1: reports.Analyze, and RenderDir (= rehearse report render: the analysis and every report file)")
	var cpuPerM, wallPerM, renderPerM series
	for range *rounds {
		res := goBench(nil, "-bench", "^Benchmark(Analyze|Render)1M$", "-benchtime", "1x", "-cpu", "1", "./reports/")
		m := res["BenchmarkAnalyze1M"]
		const events = 953473
		cpuPerM = append(cpuPerM, m["cpu-s/op"]*1e6/events)
		wallPerM = append(wallPerM, m["ns/op"]/1e9*1e6/events)
		renderPerM = append(renderPerM, res["BenchmarkRender1M"]["cpu-s/1M-events"])
	}
	row("analysis: CPU per 1 M events, one core", cpuPerM, "s")
	row("analysis: wall per 1 M events, one core", wallPerM, "s (the load average inflates it)")
	row("report render: CPU per 1 M events, one core", renderPerM, "s")
}

// findKey returns the first value of key anywhere in v.
func findKey(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		if val, ok := x[key]; ok {
			return val
		}
		for _, val := range x {
			if f := findKey(val, key); f != nil {
				return f
			}
		}
	case []any:
		for _, val := range x {
			if f := findKey(val, key); f != nil {
				return f
			}
		}
	}
	return nil
}

// drillRun is one drill's figures.
type drillRun struct {
	cpu, noReport float64 // % of a core over the run; the same less the report step's CPU
	render        float64 // CPU-s of rendering its report again (rehearse report render)
	p50, p99      float64 // send lateness, ms
	gateway       float64 // % of a core used by the gateway process (-1: in the same process)
	mid, midGW    window  // the harness's and the gateway's process mid-run (drillWindow)
}

// drillWindow is the mid-run stretch of a drill whose threads are
// measured: from 10 s in to 10 s before the end (5 s for drills of 30 s
// or less), so that start-up, the last requests' streams and the report
// step are left out and the figures compare with the floor's.
func drillWindow() (from, to time.Duration) {
	edge := 10 * time.Second
	if *drillFor <= 30*time.Second {
		edge = 5 * time.Second
	}
	return edge, *drillFor - edge
}

// runDrill runs rehearse run with args into out and returns its figures;
// gatewayPID, when not 0, is a gateway process whose CPU over the run is
// taken.
func runDrill(out string, gatewayPID int, args ...string) drillRun {
	cmd := exec.Command(*rehearse, append(append([]string{"run"}, args...), "-q", "-o", out)...)
	cmd.Env = harnessEnv()
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	g0 := procCPU(gatewayPID)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		log.Fatalf("drill: %v", err)
	}
	d := drillRun{gateway: -1}
	from, to := drillWindow()
	time.Sleep(from)
	a, ga, ta := procThreads(cmd.Process.Pid), procThreads(gatewayPID), time.Now()
	time.Sleep(time.Until(t0.Add(to)))
	b, gb, tb := procThreads(cmd.Process.Pid), procThreads(gatewayPID), time.Now()
	d.mid = measure(a, b, ta, tb)
	if gatewayPID != 0 {
		d.midGW = measure(ga, gb, ta, tb)
	}
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 { // 1: an expectation failed, still a run
			log.Fatalf("drill: %v\n%s", err, buf.Bytes())
		}
	}
	wall := time.Since(t0)
	if gatewayPID != 0 {
		d.gateway = 100 * float64(procCPU(gatewayPID)-g0) / float64(wall)
	}
	d.cpu = 100 * float64(cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()) / float64(wall)
	// The report step's share: the same report rendered again from the
	// run directory, as its own process.
	rr := exec.Command(*rehearse, "report", "render", out)
	rr.Env = harnessEnv()
	if b, err := rr.CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			log.Fatalf("report render: %v\n%s", err, b)
		}
	}
	d.render = (rr.ProcessState.UserTime() + rr.ProcessState.SystemTime()).Seconds()
	d.noReport = d.cpu - 100*d.render/wall.Seconds()
	rj, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		log.Fatal(err)
	}
	var v any
	json.Unmarshal(rj, &v)
	if l, ok := findKey(v, "lateness_ms").(map[string]any); ok {
		d.p50, _ = l["p50"].(float64)
		d.p99, _ = l["p99"].(float64)
	}
	return d
}

// separateDrill writes the 503 drill with the reference gateway as its
// own process (rehearse gateway) on free ports, starts that process and
// returns the scenario file, the gateway's PID and how to stop it.
func separateDrill(round int) (string, int, func()) {
	ups := []string{"search", "weather", "vectors", "llm-primary", "llm-fallback"}
	gw := "127.0.0.1:" + freePort()
	var gcfg, scfg strings.Builder
	fmt.Fprintf(&gcfg, "listen: %s\nprimary: llm-primary\nfallback: llm-fallback\nupstreams:\n", gw)
	fmt.Fprintf(&scfg, "version: 1\nname: 503-storm-separate\ngateway:\n  url: http://%s\n  metrics: {url: http://%s/metrics, preset: reference}\n  health: {url: http://%s/healthz}\n  ready: {url: http://%s/healthz, timeout: 15s}\nupstreams:\n", gw, gw, gw, gw)
	for _, u := range ups {
		addr := "127.0.0.1:" + freePort()
		kind := ""
		if strings.HasPrefix(u, "llm-") {
			kind = ", kind: model"
		}
		fmt.Fprintf(&gcfg, "  %s: {url: http://%s%s}\n", u, addr, kind)
		fmt.Fprintf(&scfg, "  - {name: %s, listen: %q}\n", u, addr)
	}
	// The built-in 503-storm drill's replay, fault and expectations.
	fmt.Fprintf(&scfg, "replay: {rate: 10, duration: %s}\nfaults:\n  - {name: search-503, type: status, upstream: search, at: 20s, for: 60s, params: {code: 503}}\nexpectations: {upstreams: [search], opens_within: 30s, max_probes_in_flight: 1, probe_spacing_min: 200ms, closes_within: 45s, healthy_unaffected: [weather, vectors]}\n", *drillFor)
	gfile := filepath.Join(tmp, fmt.Sprintf("gateway-%d.yaml", round))
	sfile := filepath.Join(tmp, fmt.Sprintf("drill-separate-%d.yaml", round))
	if err := os.WriteFile(gfile, []byte(gcfg.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(sfile, []byte(scfg.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(*rehearse, "gateway", "--config", gfile, "--log-level", "error")
	if err := cmd.Start(); err != nil {
		log.Fatalf("starting the gateway: %v", err)
	}
	return sfile, cmd.Process.Pid, func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }
}

func benchDrill() {
	from, to := drillWindow()
	if !floorOnly {
		fmt.Printf("  rehearse run 503-storm --duration %s: (a) as built in, the reference gateway and the upstreams in one process; (b) the same drill with the gateway as its own process (rehearse gateway), so that (b)'s CPU is the harness's alone; report step = CPU of rehearse report render of the run directory afterwards; mid-run = from %s to %s, per-thread counters from /proc (sysmon: the runtime's monitor thread)\n", *drillFor, from, to)
	}
	variants := []string{"in-process", "separate"}
	if floorOnly {
		variants = nil
	}
	if *floorFor > 0 {
		fmt.Printf("  floor (floor.go): the drill's exchanges in the simplest Go form, %s measured after %s: direct = client and server in one process; relay = client, httputil.ReverseProxy and server in one process (beside (a)); split = the proxy in a process of its own (beside (b))\n", *floorFor, floorWarm)
		variants = append(variants, "floor-direct", "floor-relay", "floor-split")
	}
	var cpu, cpuNoReport, p50, p99, render, sepCPU, sepNoReport, sepGateway, sepP99 series
	mids := map[string][]window{}
	floors := map[string][]floorRun{}
	var ratioA, ratioB, ratioGW series
	for r := range *rounds {
		got := map[string]float64{}
		for _, variant := range rotate(variants, r) {
			out := filepath.Join(tmp, fmt.Sprintf("drill-%s-%d", variant, r))
			switch variant {
			case "in-process":
				d := runDrill(out, 0, "503-storm", "--duration", drillFor.String())
				cpu, p50, p99, render = append(cpu, d.cpu), append(p50, d.p50), append(p99, d.p99), append(render, d.render)
				cpuNoReport = append(cpuNoReport, d.noReport)
				mids["(a)"] = append(mids["(a)"], d.mid)
				got["(a)"] = d.mid.cpu
			case "separate":
				sfile, pid, stop := separateDrill(r)
				d := runDrill(out, pid, sfile)
				stop()
				sepCPU, sepGateway, sepP99 = append(sepCPU, d.cpu), append(sepGateway, d.gateway), append(sepP99, d.p99)
				sepNoReport = append(sepNoReport, d.noReport)
				mids["(b) harness"] = append(mids["(b) harness"], d.mid)
				mids["(b) gateway"] = append(mids["(b) gateway"], d.midGW)
				got["(b)"], got["(b) gateway"] = d.mid.cpu, d.midGW.cpu
			default:
				f := runFloor(strings.TrimPrefix(variant, "floor-"), *floorFor)
				floors[variant] = append(floors[variant], f)
				got[variant], got[variant+" proxy"] = f.client.cpu, f.relay.cpu
			}
		}
		if f := got["floor-relay"]; f > 0 && got["(a)"] > 0 {
			ratioA = append(ratioA, got["(a)"]/f)
		}
		if f := got["floor-split"]; f > 0 && got["(b)"] > 0 {
			ratioB = append(ratioB, got["(b)"]/f)
			ratioGW = append(ratioGW, got["(b) gateway"]/got["floor-split proxy"])
		}
	}
	if !floorOnly {
		row("(a) process CPU over the run", cpu, "% of a core")
		row("(a) the same without the report step", cpuNoReport, "% of a core (run CPU less the re-render's, over the run's length)")
		row("(a) report step (re-render)", render, "CPU-s")
		row("(a) replay send lateness p50", p50, "ms")
		row("(a) replay send lateness p99", p99, "ms")
		windowRows("(a) mid-run", mids["(a)"])
		row("(b) harness process CPU", sepCPU, "% of a core")
		row("(b) harness without the report step", sepNoReport, "% of a core")
		row("(b) gateway process CPU", sepGateway, "% of a core")
		row("(b) replay send lateness p99", sepP99, "ms")
		windowRows("(b) harness mid-run", mids["(b) harness"])
		windowRows("(b) gateway mid-run", mids["(b) gateway"])
	}
	for _, v := range variants {
		if !strings.HasPrefix(v, "floor-") {
			continue
		}
		var cl, rl []window
		var p99, mx series
		for _, f := range floors[v] {
			cl, rl = append(cl, f.client), append(rl, f.relay)
			p99, mx = append(p99, f.p99), append(mx, f.max)
			if f.failed > 0 {
				fmt.Printf("  %s: %d exchanges failed\n", v, f.failed)
			}
		}
		name := v
		if v == "floor-split" {
			name += " client+server"
		}
		windowRows(name, cl)
		if v == "floor-split" {
			windowRows(v+" proxy", rl)
		}
		row(v+" send lateness p99 (time.Sleep)", p99, "ms")
		row(v+" send lateness max", mx, "ms")
	}
	if *floorFor > 0 && !floorOnly {
		row("(a) mid-run ÷ floor-relay: CPU", ratioA, "ratio (1: as cheap as the simplest Go form)")
		row("(b) harness mid-run ÷ floor-split client+server: CPU", ratioB, "ratio")
		row("(b) gateway mid-run ÷ floor-split proxy: CPU", ratioGW, "ratio (the reference gateway against httputil.ReverseProxy)")
	}
}

// windowRows prints what a process spent in its measured windows.
func windowRows(name string, ws []window) {
	var cpu, sysmonCPU, vol, sysmon, invol series
	for _, w := range ws {
		cpu, vol, sysmon, invol = append(cpu, w.cpu), append(vol, w.vol), append(sysmon, w.sysmon), append(invol, w.invol)
		sysmonCPU = append(sysmonCPU, w.sysmonCPU)
	}
	row(name+" CPU", cpu, "% of a core")
	row(name+" … on sysmon's thread", sysmonCPU, "% of a core")
	row(name+" voluntary switches", vol, "per request")
	row(name+" … by sysmon", sysmon, "per request")
	row(name+" involuntary switches", invol, "per request")
}
