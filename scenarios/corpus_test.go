package scenarios

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/halfopen/rehearse"
)

// TestCorpus loads every testdata/valid-*.yaml (must load and pass the
// plan check) and invalid-*.yaml, whose first lines "# error: …" are the
// exact messages of loading it or, when it loads, of CheckObservable (what
// rehearse validate runs after loading), one line per error, in order.
func TestCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if len(files) < 10 {
		t.Fatalf("corpus has %d files", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			s, err := Load(f)
			if err == nil {
				// No capture facts: no corpus file replays once.
				err = s.CheckObservable(0, 0)
			}
			switch {
			case strings.HasPrefix(name, "valid-"):
				if err != nil {
					t.Fatalf("valid file: %v", err)
				}
			case strings.HasPrefix(name, "invalid-"):
				want := leadingComments(t, f, "# error: ")
				if err == nil {
					t.Fatal("invalid file loaded")
				}
				if !errors.Is(err, rehearse.ErrInvalid) {
					t.Errorf("error is not ErrInvalid (exit 2): %v", err)
				}
				got := strings.ReplaceAll(err.Error(), "testdata"+string(filepath.Separator), "")
				if got != want {
					t.Errorf("error:\n got %s\nwant %s", got, want)
				}
			default:
				t.Fatalf("corpus file %s is neither valid-* nor invalid-*", name)
			}
		})
	}
}

// leadingComments returns the file's first lines that start with prefix,
// without it, joined by newlines; at least one is required.
func leadingComments(t *testing.T, path, prefix string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lines []string
	for sc.Scan() && strings.HasPrefix(sc.Text(), prefix) {
		lines = append(lines, strings.TrimPrefix(sc.Text(), prefix))
	}
	if len(lines) == 0 {
		t.Fatalf("%s: first line must be %q…", path, prefix)
	}
	return strings.Join(lines, "\n")
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, d := range Drills() {
		b, _ := DrillSource(d.Name)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !errors.Is(err, rehearse.ErrInvalid) {
				t.Fatalf("error not ErrInvalid: %v", err)
			}
			return
		}
		if !(s.Replay.Rate > 0) && s.Replay.Timing == "rate" {
			t.Fatalf("accepted rate %g", s.Replay.Rate)
		}
		// What validates can be journaled: a NaN or an infinity that
		// passed made run fail with "json: unsupported value".
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("valid scenario cannot be written: %v", err)
		}
	})
}
