package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The tests that run the real binary (signals, the terminal, the
// comparison drills) share one build of it, made on first use without the
// race detector (what they check is the binary a user runs) and removed by
// TestMain after the package's tests.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// rehearseBinary returns the path of the rehearse binary built from this
// package, building it on first use.
func rehearseBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "rehearse-bin-"); binErr != nil {
			return
		}
		if out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "rehearse"), ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "rehearse")
}
