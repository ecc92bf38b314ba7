package launchd

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/halfopen/rehearse"
)

// writeFileAtomic replaces path with data so that a reader (launchd at
// login, systemd on daemon-reload) sees the old file or the new one, never a
// half-written one: temp file in the same directory → write → fsync →
// rename → fsync of the directory.
func writeFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
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
