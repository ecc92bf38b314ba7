package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/rehearsal"
)

// nginxTiming is the passive breaker every nginx drill runs with. nginx
// has no breaker of its own: an upstream server is "unavailable" for
// fail_timeout after max_fails unsuccessful attempts within fail_timeout,
// and what counts as unsuccessful is proxy_next_upstream's list. nginx
// ignores max_fails for a group of one server, so the group has a second,
// backup server: a responder (a server block of the same nginx) that
// answers 503 with X-Breaker-State: open, the fast-fail. After
// fail_timeout the next request is let through as the probe (live
// traffic, one at a time: nginx re-arms its timer when it picks the
// server); success clears the failures. nginx keeps time in whole
// seconds, so the cooldown is between fail_timeout and fail_timeout + 1 s.
type nginxTiming struct {
	MaxFails    int
	FailTimeout time.Duration // whole seconds
	ReadTimeout time.Duration // proxy_read_timeout
	// NonIdempotent lets nginx count (and pass on) failed POSTs; without
	// it a 503 to a POST is neither counted nor retried.
	NonIdempotent bool
}

var nginxDefault = nginxTiming{MaxFails: 3, FailTimeout: 2 * time.Second, ReadTimeout: time.Second, NonIdempotent: true}

// nginxGW is one running nginx.
type nginxGW struct {
	Front, Ready string // URLs
	App, Resp    string // host:port of the upstream server and the responder
	AccessLog    string
	Timing       nginxTiming
	Config       string
	p            *proc
}

// nginxConfig renders the configuration: one worker (nginx keeps a
// server's failure count per worker unless a zone is shared), the access
// log with $msec (the request's end, ms) and $request_time, the sequence
// header and every upstream attempt.
func nginxConfig(tm nginxTiming, dir, front, app, resp, resp2 string) string {
	next := "error timeout http_502 http_503 http_504 http_429"
	if tm.NonIdempotent {
		next += " non_idempotent"
	}
	return fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr notice;
events { worker_connections 512; }
http {
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    # One line per client request: its end ($msec) and length, the
    # sequence stamp, and each upstream attempt (address, status, time).
    log_format rehearse '$msec $request_time $status $request_method seq=$http_x_rehearse_seq addr="$upstream_addr" ustatus="$upstream_status" utime="$upstream_response_time"';
    access_log %[1]s/access.log rehearse;
    upstream app {
        server %[3]s max_fails=%[4]d fail_timeout=%[5]ds;
        # nginx ignores max_fails in a group of one: the responder is the
        # fast-fail while the server is unavailable. Its 503 is in
        # proxy_next_upstream too, so it is there twice: a request that
        # skipped the server tries the responder and then the responder
        # again (tries 2) and the client gets the responder's 503, never
        # nginx's own 502 "no live upstreams". max_fails=0: never counted.
        server %[6]s backup max_fails=0;
        server %[9]s backup max_fails=0;
    }
    server {
        listen %[2]s;
        location = /nginx-ready { return 200 "ready\n"; }
        location / {
            proxy_pass http://app;
            proxy_read_timeout %[7]dms;
            proxy_connect_timeout 1s;
            proxy_next_upstream %[8]s;
            proxy_next_upstream_tries 2;
        }
    }
    server {
        listen %[6]s;
        listen %[9]s;
        location / {
            default_type application/json;
            add_header X-Breaker-State open always;
            return 503 '{"error":{"code":"dependency_unavailable","dependency":"app","message":"upstream unavailable"}}';
        }
    }
}
`, dir, front, app, tm.MaxFails, int(tm.FailTimeout/time.Second), resp, tm.ReadTimeout.Milliseconds(), next, resp2)
}

// startNginx starts nginx in the foreground (daemon off, master_process
// off: the PID the test holds is the server) on free loopback ports.
func startNginx(t *testing.T, tm nginxTiming) *nginxGW {
	t.Helper()
	bin := needBinary(t, "nginx", "nginx", "/usr/sbin/nginx")
	dir := t.TempDir()
	g := &nginxGW{Timing: tm, App: testutil.FreeAddr(t), Resp: testutil.FreeAddr(t)}
	front := testutil.FreeAddr(t)
	g.Front, g.Ready = "http://"+front, "http://"+front+"/nginx-ready"
	g.AccessLog = filepath.Join(dir, "access.log")
	g.Config = nginxConfig(tm, dir, front, g.App, g.Resp, testutil.FreeAddr(t))
	cfg := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cfg, []byte(g.Config), 0o600); err != nil {
		t.Fatal(err)
	}
	// -e stderr: nginx opens its default error log before reading the
	// configuration; a test must not write outside its directory.
	args := []string{"-e", "stderr", "-p", dir, "-c", cfg}
	g.p = startProc(t, "nginx", bin, args, nil, func() string { return g.Config })
	waitHTTP(t, g.Ready, 10*time.Second, g.p)
	return g
}

// nginxLine is one access-log line, in run time.
type nginxLine struct {
	Start, End float64
	Status     int
	Method     string
	Seq        string
	Addrs      []string
	UStatus    []string
	UTimes     []float64
}

// Reached reports whether the request's first attempt went to the server
// (not straight to the responder: the server was unavailable).
func (l nginxLine) Reached(app string) bool { return len(l.Addrs) > 0 && l.Addrs[0] == app }

// AttemptEnd is when the first upstream attempt ended.
func (l nginxLine) AttemptEnd() float64 {
	if len(l.UTimes) == 0 {
		return l.End
	}
	return l.Start + l.UTimes[0]
}

// AttemptFailed reports whether the first attempt failed (a status nginx
// lists in proxy_next_upstream, a timeout, an error).
func (l nginxLine) AttemptFailed() bool {
	if len(l.UStatus) == 0 {
		return true
	}
	s, err := strconv.Atoi(l.UStatus[0])
	return err != nil || s >= 500 || s == 429
}

var nginxLogRE = regexp.MustCompile(`^(\d+\.\d+) (\d+\.\d+) (\d+) (\S+) seq=(\S*) addr="([^"]*)" ustatus="([^"]*)" utime="([^"]*)"`)

// readNginxLog reads the access log, with times converted to run time.
func readNginxLog(t *testing.T, path string, wallStart time.Time) []nginxLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base := float64(wallStart.UnixNano()) / 1e9
	var out []nginxLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := nginxLogRE.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("access log line not understood: %q", sc.Text())
		}
		end, _ := strconv.ParseFloat(m[1], 64)
		took, _ := strconv.ParseFloat(m[2], 64)
		st, _ := strconv.Atoi(m[3])
		l := nginxLine{Start: end - took - base, End: end - base, Status: st, Method: m[4], Seq: m[5]}
		split := func(s string) []string {
			if s == "" || s == "-" {
				return nil
			}
			return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
		}
		l.Addrs = split(m[6])
		l.UStatus = split(m[7])
		for _, u := range split(m[8]) {
			v, err := strconv.ParseFloat(u, 64)
			if err != nil {
				v = took
			}
			l.UTimes = append(l.UTimes, v)
		}
		if len(l.Addrs) == 0 {
			// The responder's own requests and the readiness URL: no
			// upstream attempt, not the gateway's traffic.
			continue
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// nginxTruth reads nginx's breaker from its access log, by nginx's
// documented rules: the server is unavailable from the end of the
// attempt that failed last before the first request that skipped it (that
// request went straight to the responder); while unavailable, a request
// that reached the server is the probe; the server is available again
// when the request after a probe's end reaches it (the probe succeeded,
// or nginx did not count its failure), from that probe's end. Failed
// counts the failed attempts from the fault's start to the open.
func nginxTruth(lines []nginxLine, app string, from float64) []truthCycle {
	var out []truthCycle
	open := false
	// Log times are rounded to the millisecond, twice (end and length).
	const slop = 0.003
	lastClose := from - slop
	for i, l := range lines {
		if l.Start < from-slop {
			continue
		}
		if !open {
			if l.Reached(app) || l.Start <= lastClose+slop {
				// Reached, or skipped while the closing probe was
				// finishing (within the log's rounding).
				continue
			}
			tc := truthCycle{OpenAt: l.Start}
			best := -1.0
			for _, p := range lines[:i] {
				if p.Reached(app) && p.AttemptFailed() && p.AttemptEnd() <= l.Start+slop && p.AttemptEnd() > best {
					best = p.AttemptEnd()
				}
			}
			if best >= 0 {
				tc.OpenAt = best
			}
			// Failed calls before the open, as the analysis defines
			// them: the failed attempts that began before it.
			// The log's times are rounded to the millisecond: a call
			// that began within slop of the open may be either side.
			for _, p := range lines {
				if p.Start >= lastClose && p.Reached(app) && p.AttemptFailed() {
					if p.Start < tc.OpenAt-slop {
						tc.Failed++
					}
					if p.Start < tc.OpenAt+slop {
						tc.FailedMax++
					}
				}
			}
			out = append(out, tc)
			open = true
			continue
		}
		if !l.Reached(app) {
			continue
		}
		cur := &out[len(out)-1]
		cur.Probes = append(cur.Probes, truthProbe{At: l.Start, End: l.AttemptEnd(), OK: !l.AttemptFailed()})
		for _, n := range lines[i+1:] {
			if n.Start <= l.AttemptEnd()+slop {
				continue
			}
			if n.Reached(app) {
				e := l.AttemptEnd()
				cur.CloseAt = &e
				lastClose = e
				open = false
			}
			break
		}
	}
	return out
}

// dumpNginx prints the access log's lines from..to (run time), for a
// failure message.
func dumpNginx(lines []nginxLine, app string, from, to float64) string {
	var b strings.Builder
	for _, l := range lines {
		if l.Start >= from && l.Start <= to {
			fmt.Fprintf(&b, "start %.3f end %.3f attempt-end %.3f reached %v failed %v %s seq=%s addrs %v ustatus %v\n", l.Start, l.End, l.AttemptEnd(), l.Reached(app), l.AttemptFailed(), l.Method, l.Seq, l.Addrs, l.UStatus)
		}
	}
	return b.String()
}

// nginxDrill rehearses one drill against a fresh nginx and returns the
// result with nginx's record of it.
func nginxDrill(t *testing.T, tm nginxTiming, d singleDrill) (*nginxGW, *rehearsal.Result, []nginxLine) {
	t.Helper()
	g := startNginx(t, tm)
	src := singleScenario("nginx", g.Front, g.Ready, g.App, d)
	res, _ := runScenario(t, "nginx-"+d.Name, src, d.Duration, g.p)
	lines := readNginxLog(t, g.AccessLog, res.Analysis.Run.WallStart)
	if len(lines) == 0 {
		t.Fatal("nginx logged no request")
	}
	return g, res, lines
}
