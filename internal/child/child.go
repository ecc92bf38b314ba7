// Package child starts the harness's long-lived child processes (the
// redis-server of a `redis: auto` fleet) so that they die with the
// harness however it dies: a clean exit, a panic, or SIGKILL from a
// scheduler, a CI runner's timeout or the out-of-memory killer, where no
// deferred Stop runs. A child that outlives its harness keeps its port
// and its memory, and the next weekly run on the Mac mini finds them.
//
// Linux has a kernel mechanism: the parent-death signal (PR_SET_PDEATHSIG,
// SysProcAttr.Pdeathsig), sent to the child when the thread that forked
// it exits. Go may end a thread, so children are forked from one
// goroutine that locks its thread and never ends. Elsewhere (macOS, the
// BSDs) there is none, so a watchdog is started beside each child: a
// /bin/sh whose standard input is a pipe only the harness holds open. The
// kernel closes the pipe when the harness dies, however it dies; the
// watchdog reads end-of-file and kills the child's process group.
package child

import "os/exec"

// Start starts cmd so that it is killed (SIGKILL, its whole process group
// when cmd.SysProcAttr.Setpgid is set) when this process dies. Call
// release once the child has exited: it disarms the guard, so that a
// later death of the harness cannot touch a process that reused the
// child's id. release is safe to call more than once.
func Start(cmd *exec.Cmd) (release func(), err error) {
	return start(cmd)
}
