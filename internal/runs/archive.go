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
	"strings"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/reports/history"
)

// LatestName is the name of the symlink, in the archive, to the run of
// any scenario that most recently completed.
const LatestName = "latest"

// lockName is the archive's own lock file. Creating a run directory,
// retention, moving "latest" and writing the index all happen under it,
// so the bookkeeping of overlapping runs never interleaves, and retention
// never looks at a run directory half made.
const lockName = ".rehearse.lock"

// LockWait bounds how long NewRun and Finish wait for another run's
// bookkeeping (retention and the history index: seconds).
const LockWait = 2 * time.Minute

// pruningPrefix: a pruned run is first renamed to .pruning-<name>
// (atomic), then deleted, so nobody sees half a run under a run's name; a
// prune killed half-way is finished by the next one.
const pruningPrefix = ".pruning-"

// Archive is a directory of scheduled runs, one subdirectory per run named
// "<date>-<scenario>" (e.g. "2026-11-30T030000Z-weekly"), with a "latest"
// symlink and retention. Only directories with that name shape are ever
// pruned; anything else in the archive is left alone.
type Archive struct {
	// Dir is the archive directory; it is created when needed.
	Dir string
	// Keep is how many complete runs of each scenario to keep; 0 means
	// no count limit.
	Keep int
	// KeepFor keeps runs younger than this; 0 means no age limit. A run
	// survives if either limit keeps it; with both zero nothing is pruned.
	// The newest complete run of each scenario and the target of "latest"
	// are always kept.
	KeepFor time.Duration
}

// Run is one archived run.
type Run struct {
	// Dir is the run's directory, Name its base name.
	Dir, Name string
	// Scenario is the scenario's slug, from the directory name.
	Scenario string
	// Identity is the scenario the run recorded (run.lock, the journal's
	// run.start or run.json); known is false when none says. Retention
	// keeps runs per identity.
	Identity Identity
	known    bool
	// Started is when the run directory was created (UTC, to the second).
	Started time.Time
	// State is how the run stands; Held that its run still holds it
	// (recording, or complete and doing its bookkeeping): never deleted.
	State State
	Held  bool
	seq   int
}

// key groups runs for retention: by recorded identity, or, when a run
// records none, by its directory's slug (apart from every identity).
func (r Run) key() string {
	if r.known {
		return "id\x00" + r.Identity.Scenario + "\x00" + r.Identity.File
	}
	return "dir\x00" + r.Scenario
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

// lock takes the archive's lock, waiting up to LockWait for another
// run's bookkeeping. Where files cannot be locked it returns at once,
// holding nothing (lock_other.go says what that costs).
func (a Archive) lock() (unlockFn func(), err error) {
	if err := os.MkdirAll(a.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: create archive %s: %w", rehearse.ErrEnvironment, a.Dir, err)
	}
	f, err := os.OpenFile(filepath.Join(a.Dir, lockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: lock archive %s: %w", rehearse.ErrEnvironment, a.Dir, err)
	}
	deadline := time.Now().Add(LockWait)
	for {
		err := tryLock(f)
		switch {
		case err == nil:
			return func() { unlock(f); f.Close() }, nil
		case !errors.Is(err, errLocked):
			return func() { f.Close() }, nil // cannot lock here: proceed
		case time.Now().After(deadline):
			f.Close()
			return nil, fmt.Errorf("%w: archive %s is busy: another rehearse has held its lock for %s", rehearse.ErrEnvironment, a.Dir, LockWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// NewRun creates and claims the directory for a run of id starting at now
// (see Create), under the archive's lock. The run holds the claim while it
// records, marks it complete when its reports are written, and gives it
// to Finish.
func (a Archive) NewRun(id Identity, now time.Time) (*Claim, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	unlock, err := a.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return Create(a.Dir, id, now)
}

// Runs lists the archived runs, oldest first, each with its state.
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
		r.State, r.Held, _ = probe(r.Dir, false)
		r.Identity, r.known = identityOf(r.Dir)
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

// Prune removes, from every scenario, the runs that retention no longer
// keeps (see retain) and returns their directories, under the archive's
// lock. A run that is recording, or that nothing can prove over, is never
// touched.
func (a Archive) Prune(now time.Time) ([]string, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	unlock, err := a.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return a.prune(now, nil)
}

// prune applies retention to the runs of only (every scenario when nil);
// the caller holds the archive's lock.
func (a Archive) prune(now time.Time, only *Run) ([]string, error) {
	a.sweep()
	if a.Keep == 0 && a.KeepFor == 0 {
		return nil, nil
	}
	runs, err := a.Runs()
	if err != nil {
		return nil, err
	}
	latest, _ := a.Latest()
	groups := map[string][]Run{}
	for _, r := range runs {
		groups[r.key()] = append(groups[r.key()], r)
	}
	var removed []string
	var errs []error
	for key, group := range groups {
		// A run's own scenario, and the runs of its directories' slug
		// that recorded no identity (killed before they recorded
		// anything): never another scenario's.
		if only != nil && key != only.key() && key != (Run{Scenario: only.Scenario}).key() {
			continue
		}
		for _, r := range a.retain(group, latest, now) {
			ok, err := a.remove(r)
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				removed = append(removed, r.Dir)
			}
		}
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

// retain returns the runs of one scenario (oldest first) that retention
// deletes. Complete runs: the last Keep, or those younger than KeepFor,
// stay; the newest and the target of latest always stay. Killed runs never
// count toward Keep and are never kept in place of a complete run: one
// stays only while it is newer than the oldest complete run kept, and
// only the newest Keep of them (or those younger than KeepFor). A run
// that is recording, held by its run, or whose state nobody can prove
// (Unknown, Incomplete) is never deleted.
func (a Archive) retain(group []Run, latest string, now time.Time) []Run {
	limit := func(rank int, r Run) bool {
		return (a.Keep > 0 && rank < a.Keep) || (a.KeepFor > 0 && now.Sub(r.Started) < a.KeepFor)
	}
	var complete, killed []Run
	for _, r := range group {
		switch {
		case r.Held:
		case r.State == Complete:
			complete = append(complete, r)
		case r.State == Killed:
			killed = append(killed, r)
		}
	}
	var doomed []Run
	var oldest *Run // the oldest complete run the limits keep
	for i := len(complete) - 1; i >= 0; i-- {
		r, rank := complete[i], len(complete)-1-i
		if rank == 0 || limit(rank, r) {
			oldest = &complete[i]
			continue
		}
		if r.Dir != latest {
			doomed = append(doomed, r)
		}
	}
	for i := len(killed) - 1; i >= 0; i-- {
		r, rank := killed[i], len(killed)-1-i
		if (oldest == nil || oldest.before(r)) && limit(rank, r) {
			continue
		}
		doomed = append(doomed, r)
	}
	return doomed
}

// remove deletes a run retention doomed, if it still stands as it did:
// its lock is taken first (a run that took it back is left alone), the
// directory is renamed out of the way, then deleted.
func (a Archive) remove(r Run) (bool, error) {
	st, held, lock := probe(r.Dir, true)
	if lock != nil {
		defer lock.Close()
	}
	if held || st != r.State || (st != Complete && st != Killed) {
		return false, nil
	}
	gone := filepath.Join(a.Dir, pruningPrefix+r.Name)
	if err := os.Rename(r.Dir, gone); err != nil {
		return false, fmt.Errorf("%w: prune %s: %w", rehearse.ErrEnvironment, r.Name, err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return true, fmt.Errorf("%w: prune %s: %w", rehearse.ErrEnvironment, r.Name, err)
	}
	return true, nil
}

// sweep removes what bookkeeping killed half-way left, under the
// archive's lock (so none of it is in progress): runs being pruned,
// temporary links and index files, and run directories left empty by a
// creation that never claimed them.
func (a Archive) sweep() {
	entries, _ := os.ReadDir(a.Dir)
	for _, e := range entries {
		p := filepath.Join(a.Dir, e.Name())
		switch n := e.Name(); {
		case strings.HasPrefix(n, pruningPrefix):
			_ = os.RemoveAll(p)
		case strings.HasPrefix(n, "."+LatestName+".tmp-"), strings.HasPrefix(n, ".index.html.tmp-"), strings.HasPrefix(n, ".index.md.tmp-"):
			_ = os.Remove(p)
		case e.IsDir():
			if _, ok := parseRunName(n); ok {
				_ = os.Remove(p) // only ever succeeds on an empty directory
			}
		}
	}
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

// UpdateLatest points the "latest" link at runDir, under the archive's
// lock (see updateLatest).
func (a Archive) UpdateLatest(runDir string) error {
	if err := a.check(); err != nil {
		return err
	}
	unlock, err := a.lock()
	if err != nil {
		return err
	}
	defer unlock()
	return a.updateLatest(runDir)
}

// updateLatest points the "latest" link at runDir, atomically: a new
// symlink is made under a temporary name and renamed over the old one, so
// a reader never sees the link missing. The link is relative when runDir
// is in the archive, so the archive can be copied or moved whole. A
// "latest" that is not a symlink is not replaced.
func (a Archive) updateLatest(runDir string) error {
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

// Finish does the bookkeeping after the run c claimed, under the
// archive's lock, and releases the claim. A complete run (its reports
// all written, marked complete) becomes "latest"; a run that is not (it
// failed while writing its reports) stays for its journal and leaves
// "latest" where it was, on the last complete run; a run that left
// nothing is gone already (its claim was abandoned). Then retention
// applies to the run's own scenario (never to another's: each run's
// --keep is its own scenario's), and the history index is rebuilt. It
// does all of it even when a step fails, and returns the pruned
// directories and the joined errors.
func (a Archive) Finish(c *Claim, now time.Time) ([]string, error) {
	if err := a.check(); err != nil {
		c.Release()
		return nil, err
	}
	unlock, err := a.lock()
	// Let go of the run only under the archive's lock: no other run's
	// retention can see it between the two.
	c.Release()
	if err != nil {
		return nil, err
	}
	defer unlock()
	runDir := c.Dir()
	if _, err := os.Stat(runDir); errors.Is(err, fs.ErrNotExist) {
		// Nothing was added to the archive: retention and the index
		// stand as they were (and an archive holding no run yet is not
		// an error to warn about).
		return nil, nil
	}
	var errs []error
	if StateOf(runDir) == Complete {
		if err := a.updateLatest(runDir); err != nil {
			errs = append(errs, err)
		}
	}
	self, _ := parseRunName(filepath.Base(runDir))
	self.Identity, self.known = c.id, c.id.Scenario != ""
	removed, err := a.prune(now, &self)
	if err != nil {
		errs = append(errs, err)
	}
	if err := a.writeIndex(); err != nil {
		errs = append(errs, fmt.Errorf("refresh history index: %w", err))
	}
	return removed, errors.Join(errs...)
}

// WriteIndex rebuilds the archive's history index from its runs, under
// the archive's lock.
func (a Archive) WriteIndex() error {
	unlock, err := a.lock()
	if err != nil {
		return err
	}
	defer unlock()
	return a.writeIndex()
}

func (a Archive) writeIndex() error {
	h, err := History(a.Dir)
	if err != nil {
		return err
	}
	return history.WriteHistory(a.Dir, h)
}

// History indexes the runs in dir (history.History) knowing their state:
// a run that is recording, was killed or is otherwise not complete is
// listed as such, never read as a report nor linked.
func History(dir string) (*history.HistoryIndex, error) {
	return history.HistoryWith(dir, history.HistoryOptions{State: func(name string) string {
		switch st := StateOf(filepath.Join(dir, name)); st {
		case Complete, Empty, None:
			return ""
		default:
			return st.Describe()
		}
	}})
}
