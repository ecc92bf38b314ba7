//go:build darwin

package launchd

import "os"

// launchctlPath is launchctl's fixed location on macOS; using it avoids
// depending on the PATH of whatever shell runs the install.
const launchctlPath = "/bin/launchctl"

// defaultLaunchctl returns the runner and user id used for launchctl when
// none are given: the real launchctl, for the current user.
func defaultLaunchctl() (Runner, int, error) {
	return ExecRunner, os.Getuid(), nil
}
