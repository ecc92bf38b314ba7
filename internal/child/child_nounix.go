//go:build !unix

package child

import "os/exec"

// start starts cmd unguarded: neither a parent-death signal nor a POSIX
// shell for the watchdog. The harness stops its children itself on every
// exit it sees; a killed harness leaves them (see docs/failures.md).
func start(cmd *exec.Cmd) (func(), error) {
	return func() {}, cmd.Start()
}
