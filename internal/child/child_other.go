//go:build unix && !linux

package child

import "os/exec"

// start starts cmd with a watchdog: no parent-death signal here.
func start(cmd *exec.Cmd) (func(), error) {
	return startWithWatchdog(cmd)
}
