package runs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/reports/history"
)

// LatestName is the name of the symlink, in the archive, to the most recent
// run of any scenario that produced a report.
const LatestName = "latest"

// Archive is a directory of scheduled runs, one subdirectory per run named
// "<date>-<scenario>" (e.g. "2026-11-30T030000Z-weekly"), with a "latest"
// symlink and retention. Only directories with that name shape are ever
// pruned; anything else in the archive is left alone.
type Archive struct {
	// Dir is the archive directory; it is created when needed.
	Dir string
	// Keep is how many runs of each scenario to keep; 0 means no count
	// limit.
	Keep int
	// KeepFor keeps runs younger than this; 0 means no age limit. A run
	// survives if either limit keeps it; with both zero nothing is pruned.
	// The newest run of each scenario and the target of "latest" are
	// always kept.
	KeepFor time.Duration
}

// Run is one archived run.
type Run struct {
	// Dir is the run's directory, Name its base name.
	Dir, Name string
	// Scenario is the scenario's slug.
	Scenario string
	// Started is when the run directory was created (UTC, to the second).
	Started time.Time
	seq     int
}

func (a Archive) check() error {
	if a.Dir == "" {
		return fmt.Errorf("%w: archive directory not set", rehearse.ErrInvalid)
	}
	if a.Keep < 0 || a.KeepFor < 0 {
		return fmt.Errorf("%w: archive retention must not be negative (keep %d, keep-for %s)", rehearse.ErrInvalid, a.Keep, a.KeepFor)
	}
	return nil
}

// NewRunDir creates and returns the directory for a run of scenario (a path
// or a name) starting at now (see Create).
func (a Archive) NewRunDir(scenario string, now time.Time) (string, error) {
	if err := a.check(); err != nil {
		return "", err
	}
	return Create(a.Dir, scenario, now)
}

// Runs lists the archived runs, oldest first.
func (a Archive) Runs() ([]Run, error) {
	entries, err := os.ReadDir(a.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read archive: %w", rehearse.ErrEnvironment, err)
	}
	var runs []Run
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		r, ok := parseRunName(e.Name())
		if !ok {
			continue
		}
		r.Dir = filepath.Join(a.Dir, e.Name())
		runs = append(runs, r)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].before(runs[j]) })
	return runs, nil
}

func (r Run) before(o Run) bool {
	if !r.Started.Equal(o.Started) {
		return r.Started.Before(o.Started)
	}
	if r.seq != o.seq {
		return r.seq < o.seq
	}
	return r.Name < o.Name
}

func parseRunName(name string) (Run, bool) {
	m := nameRE.FindStringSubmatch(name)
	if m == nil {
		return Run{}, false
	}
	t, err := time.Parse(timeLayout, m[1])
	if err != nil {
		return Run{}, false
	}
	seq := 1
	if m[2] != "" {
		if seq, err = strconv.Atoi(m[2]); err != nil {
			return Run{}, false
		}
	}
	return Run{Name: name, Scenario: m[3], Started: t, seq: seq}, true
}

// Prune removes the runs that retention no longer keeps and returns their
// directories. Retention applies per scenario: the last Keep runs, or those
// younger than KeepFor at now; the newest run of each scenario and the target
// of "latest" always stay.
func (a Archive) Prune(now time.Time) ([]string, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	if a.Keep == 0 && a.KeepFor == 0 {
		return nil, nil
	}
	runs, err := a.Runs()
	if err != nil {
		return nil, err
	}
	latest, _ := a.Latest()
	byScenario := map[string][]Run{}
	for _, r := range runs {
		byScenario[r.Scenario] = append(byScenario[r.Scenario], r)
	}
	var removed []string
	var errs []error
	for _, group := range byScenario {
		// newest first
		for i := len(group) - 1; i >= 0; i-- {
			r := group[i]
			rank := len(group) - 1 - i
			keep := rank == 0 || r.Dir == latest ||
				(a.Keep > 0 && rank < a.Keep) ||
				(a.KeepFor > 0 && now.Sub(r.Started) < a.KeepFor)
			if keep {
				continue
			}
			if err := os.RemoveAll(r.Dir); err != nil {
				errs = append(errs, fmt.Errorf("%w: prune %s: %w", rehearse.ErrEnvironment, r.Name, err))
				continue
			}
			removed = append(removed, r.Dir)
		}
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

// Latest returns the run directory the "latest" link points to, or "" when
// there is none.
func (a Archive) Latest() (string, error) {
	link := filepath.Join(a.Dir, LatestName)
	target, err := os.Readlink(link)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: read %s: %w", rehearse.ErrEnvironment, link, err)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(a.Dir, target)
	}
	return filepath.Clean(target), nil
}

// UpdateLatest points the "latest" link at runDir, atomically: a new
// symlink is made under a temporary name and renamed over the old one, so a
// reader never sees the link missing. The link is relative when runDir is in
// the archive, so the archive can be copied or moved whole. A "latest" that
// is not a symlink is not replaced.
func (a Archive) UpdateLatest(runDir string) error {
	if err := a.check(); err != nil {
		return err
	}
	link := filepath.Join(a.Dir, LatestName)
	if fi, err := os.Lstat(link); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
		return fmt.Errorf("%w: %s exists and is not a symlink; not replacing it", rehearse.ErrEnvironment, link)
	}
	target := runDir
	if absDir, err := filepath.Abs(a.Dir); err == nil {
		if absRun, err := filepath.Abs(runDir); err == nil && filepath.Dir(absRun) == absDir {
			target = filepath.Base(absRun)
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(a.Dir, "."+LatestName+".tmp-"+hex.EncodeToString(rnd[:]))
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("%w: link latest run: %w", rehearse.ErrEnvironment, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("%w: link latest run: %w", rehearse.ErrEnvironment, err)
	}
	return nil
}

// Finish does the bookkeeping after a run into runDir: a run that
// produced a report becomes "latest"; one that produced nothing (it failed
// before it started) is removed, and "latest" stays where it was, on the
// last run someone can read. Then it prunes by retention and rebuilds the
// history index (index.html, index.md). It does all of it even when a step
// fails, and returns the pruned directories and the joined errors. A
// failed rehearsal that produced a report is archived like a passing one:
// those are the runs people come to read. A run that left nothing changes
// nothing else.
func (a Archive) Finish(runDir string, now time.Time) ([]string, error) {
	var errs []error
	if hasReport(runDir) {
		if err := a.UpdateLatest(runDir); err != nil {
			errs = append(errs, err)
		}
	} else {
		RemoveEmpty(runDir)
		if _, err := os.Stat(runDir); errors.Is(err, fs.ErrNotExist) {
			// Nothing was added to the archive: retention and the index
			// stand as they were (and an archive holding no run yet is
			// not an error to warn about).
			return nil, nil
		}
	}
	removed, err := a.Prune(now)
	if err != nil {
		errs = append(errs, err)
	}
	if err := a.WriteIndex(); err != nil {
		errs = append(errs, fmt.Errorf("refresh history index: %w", err))
	}
	return removed, errors.Join(errs...)
}

// hasReport reports whether a run directory holds a report.
func hasReport(runDir string) bool {
	_, err := os.Stat(filepath.Join(runDir, "run.json"))
	return err == nil
}

// WriteIndex rebuilds the archive's history index from its runs.
func (a Archive) WriteIndex() error {
	h, err := history.History(a.Dir)
	if err != nil {
		return err
	}
	return history.WriteHistory(a.Dir, h)
}
