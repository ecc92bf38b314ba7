package launchd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/halfopen/rehearse"
)

// LatestName is the name of the symlink, in the archive, to the most recent
// run of any scenario.
const LatestName = "latest"

// runTimeLayout is the date part of a run directory's name: UTC, sortable,
// and free of ':' (which Finder shows as '/').
const runTimeLayout = "2006-01-02T150405Z"

// runNameRE matches "<date>[.<n>]-<slug>"; the optional .n tells apart two
// runs started in the same second.
var runNameRE = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}T\d{6}Z)(?:\.(\d+))?-([a-z0-9][a-z0-9-]*)$`)

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
// or a name) starting at now. Two runs in the same second get distinct
// directories ("….2-weekly"); creation is exclusive, so concurrent runs never
// share one.
func (a Archive) NewRunDir(scenario string, now time.Time) (string, error) {
	if err := a.check(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(a.Dir, 0o755); err != nil {
		return "", fmt.Errorf("%w: create archive: %w", rehearse.ErrEnvironment, err)
	}
	stamp := now.UTC().Format(runTimeLayout)
	slug := Slug(scenario)
	for n := 1; n < 1000; n++ {
		name := stamp + "-" + slug
		if n > 1 {
			name = stamp + "." + strconv.Itoa(n) + "-" + slug
		}
		dir := filepath.Join(a.Dir, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%w: create run directory: %w", rehearse.ErrEnvironment, err)
		}
	}
	return "", fmt.Errorf("%w: too many runs of %s started at %s", rehearse.ErrEnvironment, slug, stamp)
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
	m := runNameRE.FindStringSubmatch(name)
	if m == nil {
		return Run{}, false
	}
	t, err := time.Parse(runTimeLayout, m[1])
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

// Finish does the bookkeeping after a run into runDir: point "latest" at
// it, prune by retention, and refresh the history index with refresh (nil
// means no index; `rehearse run --archive` passes the reports package's
// history writer). It does all three even when one fails and returns the
// pruned directories and the joined errors. A failed rehearsal is archived
// like a passing one: those are the runs people come to read.
func (a Archive) Finish(runDir string, now time.Time, refresh func(archiveDir string) error) ([]string, error) {
	var errs []error
	if err := a.UpdateLatest(runDir); err != nil {
		errs = append(errs, err)
	}
	removed, err := a.Prune(now)
	if err != nil {
		errs = append(errs, err)
	}
	if refresh != nil {
		if err := refresh(a.Dir); err != nil {
			errs = append(errs, fmt.Errorf("refresh history index: %w", err))
		}
	}
	return removed, errors.Join(errs...)
}
