package analysis

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/halfopen/rehearse"
)

// JournalFile is the file of a run directory the analysis reads
// (docs/contracts.md); the renderers name the files they write.
const JournalFile = "journal.jsonl"

// ReadDir analyses DIR/journal.jsonl, writing and judging nothing. A
// missing or corrupt journal wraps rehearse.ErrInvalid.
func ReadDir(dir string) (*Analysis, error) {
	path := filepath.Join(dir, JournalFile)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: no journal (is %s a run directory?)", rehearse.ErrInvalid, path, dir)
		}
		return nil, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
	}
	defer f.Close()
	a, err := Analyze(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}
