//go:build !unix

package rehearsal

import "os/exec"

func setProcessGroup(cmd *exec.Cmd) {}
