package launchd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/atomicfile"
)

// ErrUnreachable marks a scheduler that cannot be reached from here: no
// systemd user manager on the bus, no such launchd domain. It comes with
// rehearse.ErrEnvironment (exit code 3) and says what is missing and what
// to do.
var ErrUnreachable = errors.New("the scheduler cannot be reached")

// ErrNotStopped marks an uninstall that removed the job's files but could
// not reach the scheduler to stop and unload the job: the job will not
// come back, but a scheduler running elsewhere may still hold it until
// it reloads. Uninstall returns it with done = true.
var ErrNotStopped = errors.New("the job's files are removed, but the scheduler could not be told")

// txn records what an install changes on disk, so that an install that
// fails part way puts everything back: a scheduler is never left with a
// job the user was told was not installed (all or nothing).
type txn struct {
	files []before
	// dirs are the directories the install created, outermost first.
	dirs []string
}

// before is a file as it was before the install wrote it.
type before struct {
	path    string
	data    []byte
	perm    os.FileMode
	existed bool
}

// mkdirAll is os.MkdirAll that remembers which directories it created.
func (t *txn) mkdirAll(dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: create %s: %w", rehearse.ErrEnvironment, dir, err)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		t.dirs = append(t.dirs, missing[i])
	}
	return nil
}

// write replaces path with data atomically, keeping what was there.
func (t *txn) write(path string, data []byte, perm os.FileMode) error {
	b := before{path: path}
	old, err := os.ReadFile(path)
	switch {
	case err == nil:
		b.data, b.existed = old, true
		if fi, err := os.Stat(path); err == nil {
			b.perm = fi.Mode().Perm()
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: read %s: %w", rehearse.ErrEnvironment, path, err)
	}
	if err := t.mkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	t.files = append(t.files, b)
	return atomicfile.Write(path, data, perm)
}

// rollback puts every file back as it was (rewritten, or removed when the
// install created it), newest first, then removes the directories the
// install created if they are empty. It returns what it could not undo.
func (t *txn) rollback() error {
	var errs []error
	for i := len(t.files) - 1; i >= 0; i-- {
		b := t.files[i]
		var err error
		if b.existed {
			err = atomicfile.Write(b.path, b.data, b.perm)
		} else if err = os.Remove(b.path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("could not put %s back: %w", b.path, err))
		}
	}
	for i := len(t.dirs) - 1; i >= 0; i-- {
		// A directory something else wrote into since is not empty and
		// stays.
		_ = os.Remove(t.dirs[i])
	}
	t.files, t.dirs = nil, nil
	return errors.Join(errs...)
}

// failed rolls t back after err and returns err, with what could not be
// undone, or the assurance that nothing is left.
func (t *txn) failed(err error) error {
	state := "nothing was changed"
	for _, b := range t.files {
		state = "nothing was installed"
		if b.existed {
			state = "the previous files were put back"
			break
		}
	}
	if rerr := t.rollback(); rerr != nil {
		return fmt.Errorf("%w; and rolling the install back failed: %w", err, rerr)
	}
	return fmt.Errorf("%w (%s)", err, state)
}
