//go:build unix

package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

// TestCtrlCMidRun runs the real binary on a fleet scenario (so that it has
// a child process, redis-server), interrupts it with SIGINT mid-replay, and
// checks the contract: exit code 130, a complete journal marked
// interrupted, a partial report, and no child process left behind.
func TestCtrlCMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed (apt-get install redis-server): the fleet scenario needs a real Redis")
	}
	tmp := t.TempDir()
	bin := rehearseBinary(t)
	scenario := filepath.Join(tmp, "fleet.yaml")
	if err := os.WriteFile(scenario, []byte(`
name: fleet-interrupted
gateway:
  builtin: {instances: 2, redis: auto}
replay: {rate: 20, duration: 1m}
faults:
  - {type: status, upstream: search, at: 1s, params: {code: 503}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	cmd := exec.Command(bin, "run", scenario, "--out", dir, "--quiet")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	// Wait until the replay is under way, then take note of the children.
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
		if bytes.Contains(data, []byte(`"kind":"client.request"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replay did not start; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	children := childPIDs(t, cmd.Process.Pid)
	if len(children) == 0 {
		t.Fatal("no redis-server child found")
	}
	stopExits130(t, cmd, syscall.SIGINT, stderr.String)
	if end := lastRunEnd(t, filepath.Join(dir, "journal.jsonl")); !end.Partial {
		t.Fatalf("run.end %#v, want partial", end)
	}
	for _, f := range []string{"report.html", "run.json", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("partial report: %v", err)
		}
	}
	for _, pid := range children {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("child process %d still alive after the run ended", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestSIGHUPStopsLikeSIGTERM: closing the terminal (SIGHUP) stops a
// command as Ctrl-C does: inject serve closes its journal with run.end
// interrupted and exits 130.
func TestSIGHUPStopsLikeSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	tmp := t.TempDir()
	bin := rehearseBinary(t)
	cfg := filepath.Join(tmp, "up.yaml")
	if err := os.WriteFile(cfg, []byte("upstreams:\n  - name: search\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jpath := filepath.Join(tmp, "journal.jsonl")
	cmd := exec.Command(bin, "inject", "serve", "--config", cfg, "--journal", jpath)
	var stdout, stderr testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stdout.String(), "control") {
		if time.Now().After(deadline) {
			t.Fatalf("inject serve did not start; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopExits130(t, cmd, syscall.SIGHUP, stderr.String)
	lastRunEnd(t, jpath)
}

// stopExits130 sends sig to the running command and checks that it stops
// within 30 s with exit code 130.
func stopExits130(t *testing.T, cmd *exec.Cmd, sig syscall.Signal, stderr func() string) {
	t.Helper()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after %v; stderr:\n%s", sig, stderr())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit after %v: %v, want 130; stderr:\n%s", sig, err, stderr())
	}
}

// lastRunEnd checks that the journal is whole and ends with run.end
// interrupted, and returns that event.
func lastRunEnd(t *testing.T, path string) *journal.RunEnd {
	t.Helper()
	events, torn, err := journal.ReadFile(path)
	if err != nil || torn || len(events) == 0 {
		t.Fatalf("journal: torn=%v err=%v", torn, err)
	}
	end, ok := events[len(events)-1].Payload.(*journal.RunEnd)
	if !ok || end.Reason != journal.EndInterrupted {
		t.Fatalf("last event %#v, want run.end interrupted", events[len(events)-1].Payload)
	}
	return end
}

// childPIDs lists the direct children of pid (Linux /proc; the test skips
// elsewhere).
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	// A Go process forks from any of its threads: read every task's list.
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	if err != nil || len(tasks) == 0 {
		t.Skipf("cannot list child processes here: %v", err)
	}
	var out []int
	for _, task := range tasks {
		data, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestKilledRunLeavesNoRedis runs the real binary on a fleet scenario
// with `redis: auto`, kills it with SIGKILL mid-replay (nothing of the
// harness runs after that: no deferred Stop, no signal handler) and
// checks that its redis-server is gone, by PID and by its port, which
// no longer accepts connections (issue 32: it was left listening).
func TestKilledRunLeavesNoRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed (apt-get install redis-server): the fleet scenario needs a real Redis")
	}
	tmp := t.TempDir()
	bin := rehearseBinary(t)
	scenario := filepath.Join(tmp, "fleet.yaml")
	if err := os.WriteFile(scenario, []byte(`
name: fleet-killed
gateway:
  builtin: {instances: 2, redis: auto}
replay: {rate: 20, duration: 1m}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	cmd := exec.Command(bin, "run", scenario, "--out", dir, "--quiet")
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
		if bytes.Contains(data, []byte(`"kind":"client.request"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replay did not start; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	redisPID, port := 0, ""
	for _, pid := range childPIDs(t, cmd.Process.Pid) {
		// redis-server rewrites its command line to its process title,
		// "/usr/bin/redis-server 127.0.0.1:PORT".
		args, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		f := strings.Fields(strings.ReplaceAll(string(args), "\x00", " "))
		for i := range f {
			if !strings.Contains(f[0], "redis-server") {
				break
			}
			if f[i] == "--port" && i+1 < len(f) {
				redisPID, port = pid, f[i+1]
			} else if _, p, err := net.SplitHostPort(f[i]); err == nil {
				redisPID, port = pid, p
			}
		}
	}
	if redisPID == 0 {
		t.Fatal("no redis-server child with a --port found")
	}
	defer syscall.Kill(redisPID, syscall.SIGKILL)
	addr := net.JoinHostPort("127.0.0.1", port)
	if c, err := net.DialTimeout("tcp", addr, time.Second); err != nil {
		t.Fatalf("redis-server does not listen on %s before the kill: %v", addr, err)
	} else {
		c.Close()
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline = time.Now().Add(10 * time.Second)
	for processRuns(redisPID) {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server %d still runs 10 s after the harness was killed", redisPID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after the harness was killed", addr)
	}
}

// processRuns reports whether pid runs: a zombie (killed, not yet reaped
// by the process that adopted it) does not.
func processRuns(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// TestSecondSignalEndsAtOnce: a command blocked where no context reaches
// (here inspect reading a standard input that never sends anything) took
// the first SIGTERM and then swallowed every further one; only SIGKILL
// ended it. The second signal now ends it at once with exit code 130.
func TestSecondSignalEndsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := rehearseBinary(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // open, silent: the read blocks
	cmd := exec.Command(bin, "inspect", "-")
	cmd.Stdin = r
	var stdout, stderr testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer cmd.Process.Kill()
	// The first signal is taken (the context is cancelled); give the
	// process time to install its handler and take it.
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	stopExits130(t, cmd, syscall.SIGTERM, stderr.String)
	if !strings.Contains(stderr.String(), "again: stopping now") {
		t.Errorf("stderr does not say why it stopped:\n%s", stderr.String())
	}
	if strings.Contains(stdout.String(), "outcome:") {
		t.Errorf("inspect's output got an outcome line:\n%s", stdout.String())
	}
}

// TestValidateFIFOCaptureEnds: a named pipe as capture hung validate for
// good (in open(2)); it is refused at once, at the replay.capture key.
func TestValidateFIFOCaptureEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := rehearseBinary(t)
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "live.pcap"), 0o600); err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte("version: 1\nreplay:\n  capture: live.pcap\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "validate", scenario)
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "s.yaml:3:12: replay.capture: capture live.pcap is a named pipe (FIFO)") {
			t.Fatalf("exit %v, stderr:\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("validate still running after 20 s on a FIFO capture")
	}
}

// TestClosedStdoutEndsQuietly: "inspect builtin:… | head -1" died of
// SIGPIPE (exit 141) at the first write after head left, and left its
// temporary copy of the capture behind. Now the write fails with EPIPE,
// the command returns, the copy is removed, and the exit is 0 with no
// error: the reader had what it wanted.
func TestClosedStdoutEndsQuietly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := rehearseBinary(t)
	tmp := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// No reader at all: the first write to stdout breaks the pipe.
	r.Close()
	cmd := exec.Command(bin, "inspect", "builtin:agent-gateway", "--format", "jsonl")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stdout = w
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	if err != nil {
		t.Fatalf("exit: %v, want 0; stderr:\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "rehearse:") {
		t.Errorf("an error was printed for a reader that left:\n%s", stderr.String())
	}
	left, _ := os.ReadDir(tmp)
	for _, e := range left {
		t.Errorf("temporary file left behind: %s", e.Name())
	}
}
