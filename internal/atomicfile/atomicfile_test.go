package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/halfopen/rehearse"
)

func TestWriteReplacesWholeFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "deeper", "junit.xml")
	if err := Write(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if err != nil || string(b) != "two" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%q %v %v", b, fi.Mode(), err)
	}
	// No temporary file is left beside it.
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
	if err := Copy(p, filepath.Join(dir, "copy.xml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "copy.xml")); string(b) != "two" {
		t.Fatalf("copy %q", b)
	}
}

func TestWriteErrorsAreEnvironment(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A file where the directory should be.
	if err := Write(filepath.Join(blocker, "x"), []byte("x"), 0o644); !errors.Is(err, rehearse.ErrEnvironment) {
		t.Fatalf("error %v", err)
	}
	if err := Copy(filepath.Join(dir, "missing"), filepath.Join(dir, "y"), 0o644); !errors.Is(err, rehearse.ErrEnvironment) {
		t.Fatalf("error %v", err)
	}
}

// TestWriteNeverFollowsALink: a report.html link in a run directory is
// replaced by the report (rename replaces the link itself), and what it
// pointed at is neither created nor changed; the temp file is created
// exclusively, so a planted link cannot catch it either.
func TestWriteNeverFollowsALink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.html")
	existing := filepath.Join(t.TempDir(), "kept.txt")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{outside, existing} {
		path := filepath.Join(dir, "report.html")
		os.Remove(path)
		if err := os.Symlink(target, path); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
		if err := Write(path, []byte("report"), 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			t.Fatalf("%s is still a link (%v)", path, err)
		}
	}
	if _, err := os.Stat(outside); !os.IsNotExist(err) {
		t.Errorf("the dangling link's target was created: %v", err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("the link's target was changed: %q", b)
	}
}
