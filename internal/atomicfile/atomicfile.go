// Package atomicfile is the harness's one way of writing a file that
// someone may be reading: a report being rendered again, a plist launchd
// reads at login, a unit systemd reloads, a copy of junit.xml a CI job
// picks up.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/halfopen/rehearse"
)

// Write replaces path with data so that a reader sees the old file or the
// new one, never a half-written one, and a crash leaves one of the two:
// temp file in the same directory → write → chmod perm → fsync → rename →
// fsync of the directory. The directory is created (0755) when missing.
// Errors wrap rehearse.ErrEnvironment.
func Write(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: create %s: %w", rehearse.ErrEnvironment, dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%w: write %s: %w", rehearse.ErrEnvironment, path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("%w: write %s: %w", rehearse.ErrEnvironment, path, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("%w: write %s: %w", rehearse.ErrEnvironment, path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("%w: sync %s: %w", rehearse.ErrEnvironment, path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("%w: write %s: %w", rehearse.ErrEnvironment, path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%w: replace %s: %w", rehearse.ErrEnvironment, path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // best effort: not every filesystem syncs directories
		_ = d.Close()
	}
	return nil
}

// Copy copies src to dst with Write.
func Copy(src, dst string, perm os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
	}
	return Write(dst, data, perm)
}
