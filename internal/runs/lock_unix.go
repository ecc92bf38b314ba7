//go:build unix

package runs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockSupported says whether this platform can lock files at all; where
// it cannot (lock_other.go), every run's lock is unknown and retention
// deletes only runs marked complete.
const lockSupported = true

// tryLock takes f's exclusive flock without waiting. It returns nil when
// taken, errLocked when another open file holds it (a process that is
// alive: the kernel drops a dead process's locks), and any other error
// when this file system cannot lock (some network mounts), which callers
// treat as "unknown", never as "free".
//
// flock, not fcntl: an fcntl lock belongs to the process and is dropped
// when any descriptor of the file is closed, so a probe of a run's own
// directory by its own process (Finish) would release the run's lock.
func tryLock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return errLocked
		}
		return err
	}
}

// unlock releases a lock tryLock took; closing f would too.
func unlock(f *os.File) { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN) }
