package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/scenarios"
)

// proc is a third-party gateway process the test started in the foreground
// and stops by its PID when the test ends. What it prints is kept, stamped
// with the moment the test read it.
type proc struct {
	name  string
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []logLine
}

// startProc starts bin with args in the foreground, keeps its output and
// stops it (SIGTERM, then SIGKILL after 5 s) when the test ends. describe
// is logged on failure (the configuration).
func startProc(t *testing.T, name, bin string, args, env []string, describe func() string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return startCmd(t, name, cmd, describe)
}

// startCmd is startProc for a command the caller prepared (open listeners
// passed as ExtraFiles, for one).
func startCmd(t *testing.T, name string, cmd *exec.Cmd, describe func() string) *proc {
	t.Helper()
	p := &proc{name: name}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p.cmd = cmd
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, logLine{At: time.Now(), Text: sc.Text()})
			p.mu.Unlock()
		}
		io.Copy(io.Discard, pr)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscallTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		<-readDone
		if t.Failed() {
			t.Logf("%s configuration:\n%s\n%s output:\n%s", name, describe(), name, p.Log())
		}
	})
	return p
}

// Log returns everything the process printed so far.
func (p *proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		fmt.Fprintf(&b, "%s %s\n", l.At.Format("15:04:05.000"), l.Text)
	}
	return b.String()
}

// Lines returns a copy of what the process printed so far.
func (p *proc) Lines() []logLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]logLine(nil), p.lines...)
}

// needBinary skips the test when the gateway's binary is absent or tests
// are short, with a message that says how to get it.
func needBinary(t *testing.T, name, pkg string, paths ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("starts a real %s and runs timed rehearsals; skipped with -short", name)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	if bin, err := exec.LookPath(name); err == nil {
		return bin
	}
	t.Skipf("%s not installed: install the Debian package %s (.ci/run does) to run the %s end-to-end tests", name, pkg, name)
	return ""
}

// waitHTTP waits until url answers 2xx, or fails the test after timeout.
func waitHTTP(t *testing.T, url string, timeout time.Duration, p *proc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := httpClient.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer %s within %s (last error %v)\n%s", p.name, url, timeout, err, p.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// singleDrill is one rehearsal of a gateway in front of one upstream, app,
// to which every route goes (replay.routes: [{prefix: /, upstream: app}]).
type singleDrill struct {
	Name     string
	Rate     float64
	Duration time.Duration
	// Healthy is the upstream's healthy block (YAML flow mapping), "" for
	// the defaults.
	Healthy string
	Faults  string // YAML list items, indented by two spaces
	Expect  string // YAML expectations block body, indented by two spaces
	// Gateway is extra YAML under gateway: (metrics, health), indented
	// by two spaces.
	Gateway string
}

// The single-upstream drills (nginx, Caddy) fault app from faultAt into the
// replay for faultFor, at 20 req/s of the bundled capture.
const (
	faultAt  = 3 * time.Second
	faultFor = 5 * time.Second
)

// appDrill is a single-upstream drill of the given length whose one fault
// on app is of the given type and params (YAML flow-mapping entries after
// upstream, at and for; "" for none).
func appDrill(name string, length time.Duration, fault string) singleDrill {
	if fault != "" {
		fault = ", " + fault
	}
	return singleDrill{
		Name: name, Rate: 20, Duration: length,
		Faults: fmt.Sprintf("  - {name: app-%s, upstream: app, at: %s, for: %s%s}\n", name, faultAt, faultFor, fault),
	}
}

// withHealthy is d with app's healthy block (a YAML flow mapping).
func withHealthy(d singleDrill, healthy string) singleDrill {
	d.Healthy = healthy
	return d
}

// The faults every single-upstream gateway is rehearsed against; each
// gateway's table says what it must do under them.
const (
	storm503    = "type: status, params: {code: 503}"
	retryAfter5 = "type: retry_after, params: {after: 5s}"
	slow2s      = "type: latency, params: {fixed: 2s}"
	resetEarly  = "type: reset"
	cutAt40     = "type: stream_cut, params: {after_percent: 40, then: rst}"
)

// singleScenario renders a drill against a gateway at front whose
// readiness URL is ready and whose upstream app listens at appAddr.
func singleScenario(prefix, front, ready, appAddr string, d singleDrill) string {
	var b strings.Builder
	fmt.Fprintf(&b, `version: 1
name: %s-%s
gateway:
  url: %s
  fast_fail: {statuses: [503], header: X-Breaker-State=open}
  ready: {url: %s, require_2xx: true, timeout: 10s}
%sreplay:
  rate: %g
  duration: %s
  deadline: 5s
  routes: [{prefix: /, upstream: app}]
upstreams:
`, prefix, d.Name, front, ready, d.Gateway, d.Rate, d.Duration)
	if d.Healthy != "" {
		fmt.Fprintf(&b, "  - {name: app, listen: %q, healthy: %s}\n", appAddr, d.Healthy)
	} else {
		fmt.Fprintf(&b, "  - {name: app, listen: %q}\n", appAddr)
	}
	b.WriteString("faults:\n" + d.Faults)
	if d.Expect != "" {
		b.WriteString("expectations:\n" + d.Expect)
	}
	return b.String()
}

// runScenario runs a scenario's source through rehearsal.Run and returns
// the result; a failed expectation is returned for the caller to judge.
func runScenario(t *testing.T, name, src string, length time.Duration, p *proc) (*rehearsal.Result, error) {
	t.Helper()
	sc, err := scenarios.Parse(filepath.Join(t.TempDir(), name+".yaml"), []byte(src))
	if err != nil {
		t.Fatalf("scenario:\n%s\n%v", src, err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if keep := os.Getenv("REHEARSE_E2E_OUT"); keep != "" {
		dir = filepath.Join(keep, fmt.Sprintf("%s-%d", name, time.Now().UnixNano()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*length+30*time.Second)
	defer cancel()
	res, err := rehearsal.Run(ctx, sc, rehearsal.Options{OutDir: dir})
	if err != nil && !errors.Is(err, rehearse.ErrExpectations) {
		t.Fatalf("run: %v\n%s output:\n%s", err, p.name, p.Log())
	}
	if res == nil || res.Analysis == nil {
		t.Fatalf("run left no analysis (err %v)", err)
	}
	t.Logf("run directory: %s", dir)
	if os.Getenv("REHEARSE_E2E_OUT") != "" {
		// Kept runs keep the gateway's own log beside the journal, to
		// read one against the other afterwards.
		_ = os.WriteFile(filepath.Join(dir, p.name+".log"), []byte(p.Log()), 0o644)
	}
	return res, err
}
