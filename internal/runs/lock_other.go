//go:build !unix

package runs

import "os"

// lockSupported is false: this platform has no flock. A run still owns
// its directory by creating run.lock exclusively (two runs never share
// one), but nothing can tell a recording run from a killed one, so
// retention deletes only runs marked complete and the archive's own lock
// is not held (overlapping runs' bookkeeping is not serialised).
const lockSupported = false

func tryLock(*os.File) error { return errLockUnsupported }

func unlock(*os.File) {}
