//go:build unix

package child

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// harnessEnv makes the test binary a harness that starts a child and
// waits to be killed (TestHelperHarness).
const harnessEnv = "REHEARSE_CHILD_TEST_HARNESS"

// TestHelperHarness is the harness of TestChildDiesWithHarness, run in a
// process of its own: it starts four `sleep 300` children, each in its
// own process group (as redis-server is started) and each from a
// goroutine that then exits locked to its thread, so that the runtime
// ends that thread (all but one at most: the main thread is never
// ended), prints the children's PIDs and sleeps until it is killed.
func TestHelperHarness(t *testing.T) {
	mode := os.Getenv(harnessEnv)
	if mode == "" {
		t.Skip("the helper process of TestChildDiesWithHarness")
	}
	var pids []string
	for range 4 {
		cmd := exec.Command("sleep", "300")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: this thread ends with the goroutine
			var err error
			switch mode {
			case "start":
				_, err = Start(cmd)
			case "watchdog":
				_, err = startWithWatchdog(cmd)
			}
			errc <- err
		}()
		if err := <-errc; err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		pids = append(pids, strconv.Itoa(cmd.Process.Pid))
	}
	fmt.Printf("children %s\n", strings.Join(pids, " "))
	time.Sleep(time.Hour)
}

// TestChildDiesWithHarness kills a harness with SIGKILL (nothing of it
// runs after that) and checks that its child is gone soon after, and
// that it was alive until then although the thread that asked for it had
// ended. On Linux both mechanisms are tried: the parent-death signal
// (what Start uses there) and the watchdog (what it uses on macOS).
func TestChildDiesWithHarness(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep(1) to run as a child")
	}
	modes := []string{"start"}
	if runtime.GOOS == "linux" {
		modes = append(modes, "watchdog")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			h := exec.Command(os.Args[0], "-test.run=^TestHelperHarness$")
			h.Env = append(os.Environ(), harnessEnv+"="+mode)
			out, err := h.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Start(); err != nil {
				t.Fatal(err)
			}
			defer h.Process.Kill()
			var pids []int
			sc := bufio.NewScanner(out)
			for len(pids) == 0 && sc.Scan() {
				if f := strings.Fields(sc.Text()); len(f) > 1 && f[0] == "children" {
					for _, p := range f[1:] {
						n, _ := strconv.Atoi(p)
						pids = append(pids, n)
						defer syscall.Kill(n, syscall.SIGKILL)
					}
				} else if strings.HasPrefix(sc.Text(), "error") {
					t.Fatal(sc.Text())
				}
			}
			if len(pids) == 0 {
				t.Fatal("the harness printed no child")
			}
			// The threads that started them have ended; the children
			// must not have died with them.
			time.Sleep(300 * time.Millisecond)
			for _, pid := range pids {
				if !alive(pid) {
					t.Fatalf("child %d died with the thread that started it, before the harness", pid)
				}
			}
			if err := h.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = h.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for _, pid := range pids {
				for alive(pid) {
					if time.Now().After(deadline) {
						t.Fatalf("child %d still alive 10 s after its harness was killed", pid)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
}

// TestReleaseKeepsChild: a released watchdog goes away without touching
// the child (the harness stopped it, or is about to).
func TestReleaseKeepsChild(t *testing.T) {
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	release, err := startWithWatchdog(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	done := make(chan struct{})
	go func() { release(); release(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("release did not end the watchdog")
	}
	time.Sleep(100 * time.Millisecond)
	if !alive(cmd.Process.Pid) {
		t.Fatal("releasing the watchdog killed the child")
	}
}

// alive reports whether pid runs (a zombie, killed but not yet reaped by
// its new parent, does not).
func alive(pid int) bool {
	if runtime.GOOS == "linux" {
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
	return syscall.Kill(pid, 0) == nil
}
