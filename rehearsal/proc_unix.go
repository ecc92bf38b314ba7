//go:build unix

package rehearsal

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts a child in its own process group so that a Ctrl-C
// on the terminal reaches the conductor only; the conductor stops its
// children itself, in order, after recording the interruption.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
