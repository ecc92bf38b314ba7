//go:build unix

package child

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// watchdogScript waits for a line on standard input. "release" means the
// harness stopped the child itself; end-of-file (the harness died and the
// kernel closed its end of the pipe) means kill the child's process group
// ($1 is -PGID, or the PID of a child in the harness's group). It ignores
// the terminal's and a service manager's signals: only the pipe decides.
const watchdogScript = `trap '' INT HUP TERM QUIT
IFS= read -r line
[ "$line" = release ] || kill -s KILL -- "$1" 2>/dev/null
exit 0
`

// startWithWatchdog starts cmd and a watchdog that kills it when this
// process dies.
func startWithWatchdog(cmd *exec.Cmd) (func(), error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	target := strconv.Itoa(cmd.Process.Pid)
	if a := cmd.SysProcAttr; a != nil && a.Setpgid && a.Pgid == 0 {
		target = "-" + target // its own group: the child and anything it forked
	}
	r, w, err := os.Pipe() // close-on-exec: no other child inherits w
	if err != nil {
		kill(cmd)
		return nil, fmt.Errorf("watchdog pipe: %w", err)
	}
	wd := exec.Command("/bin/sh", "-c", watchdogScript, "rehearse-watchdog", target)
	wd.Stdin = r
	// Its own group: a Ctrl-C on the terminal reaches the harness only,
	// which stops the child itself and then releases the watchdog.
	wd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := wd.Start(); err != nil {
		r.Close()
		w.Close()
		kill(cmd)
		return nil, fmt.Errorf("starting the watchdog of %s: %w", cmd.Path, err)
	}
	r.Close()
	var once sync.Once
	return func() {
		once.Do(func() {
			_, _ = io.WriteString(w, "release\n")
			w.Close()
			_ = wd.Wait()
		})
	}, nil
}

// kill stops a child whose guard could not be set up: a child nobody
// watches must not run.
func kill(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}
