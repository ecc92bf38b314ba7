//go:build !darwin

package launchd

// launchctlPath is where launchctl would be; only used in argv recorded by
// tests on systems without launchd.
const launchctlPath = "/bin/launchctl"

// defaultLaunchctl reports that there is no launchctl here: plists can be
// printed on any OS, but only a Mac can load them.
func defaultLaunchctl() (Runner, int, error) {
	return nil, -1, ErrUnsupported
}
