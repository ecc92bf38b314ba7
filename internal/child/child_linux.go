//go:build linux

package child

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// start sets the parent-death signal and forks cmd from the locked
// thread.
func start(cmd *exec.Cmd) (func(), error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return func() {}, forkFromLockedThread(cmd)
}

// The parent-death signal is sent when the forking *thread* exits, not
// the process: a child forked from an ordinary goroutine would be killed
// whenever the runtime retires that thread (a goroutine that exits while
// locked to its thread takes the thread with it). So every child is
// forked by one goroutine that locks its thread and never returns.
var forker struct {
	once sync.Once
	reqs chan forkReq
}

type forkReq struct {
	cmd  *exec.Cmd
	done chan error
}

func forkFromLockedThread(cmd *exec.Cmd) error {
	forker.once.Do(func() {
		forker.reqs = make(chan forkReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range forker.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	forker.reqs <- forkReq{cmd, done}
	return <-done
}
