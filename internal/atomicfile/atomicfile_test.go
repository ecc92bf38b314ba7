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
