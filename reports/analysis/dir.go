package analysis

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// JournalFile is the file of a run directory the analysis reads
// (docs/contracts.md); the renderers name the files they write.
const JournalFile = "journal.jsonl"

// ReadDir analyses DIR/journal.jsonl, writing and judging nothing. A
// missing or corrupt journal wraps rehearse.ErrInvalid.
func ReadDir(dir string) (*Analysis, error) { return ReadDirWith(dir, nil) }

// ReadDirWith is ReadDir that also hands every event to also as the one
// pass over the journal reads it (see AnalyzeWith), so that a caller
// needing more than the analysis keeps does not read the journal twice.
func ReadDirWith(dir string, also func(journal.Event)) (*Analysis, error) {
	path := filepath.Join(dir, JournalFile)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: no journal (is %s a run directory?)", rehearse.ErrInvalid, path, dir)
		}
		return nil, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
	}
	defer f.Close()
	a, err := AnalyzeWith(f, also)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}
