package runs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/atomicfile"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/render"
)

// A run owns its directory from the moment it is created: it creates
// run.lock there exclusively (so no second run ever writes into it) and
// holds an exclusive lock on that file until it exits (so retention can
// tell a run that is recording from one that died: the kernel drops a
// dead process's lock). When every report file is written, the run writes
// run.complete, last; only then does the run count as complete for
// `latest`, the history index and retention.

// LockFile is the file in a run directory its run creates exclusively and
// holds locked while it records. It stays after the run: its presence says
// the directory belongs to a run, and it names the run's scenario.
const LockFile = "run.lock"

// CompleteFile marks a run complete: written after every report file, it
// lists them.
const CompleteFile = "run.complete"

// journalFile is the run's journal (analysis.JournalFile).
const journalFile = analysis.JournalFile

// ReportFiles is the whole set of report files a complete run holds
// besides its journal.
var ReportFiles = []string{
	render.RunFile, render.JUnitFile, render.TimelineFile,
	render.TimelinePNGFile, render.MarkdownFile, render.HTMLFile,
}

var (
	errLocked          = errors.New("locked by another process")
	errLockUnsupported = errors.New("file locks are not supported on this platform")
)

// Identity is what a run is a run of: retention keeps runs per identity,
// so that two scenarios never prune each other, whatever their names fold
// to in directory names. It is recorded in run.lock and in the journal's
// run.start.
type Identity struct {
	// Scenario is the scenario's name.
	Scenario string `json:"scenario"`
	// File is the scenario file's absolute path; "" for a built-in
	// drill. Two files named weekly.yaml in two directories are two
	// scenarios, though both are called "weekly".
	File string `json:"scenario_file,omitempty"`
}

func (id Identity) String() string {
	if id.File == "" {
		return id.Scenario
	}
	return id.Scenario + " (" + id.File + ")"
}

// owner is run.lock's content: the run's identity and who is running it,
// for messages ("in use by pid 4242 since …").
type owner struct {
	Identity
	PID     int       `json:"pid"`
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"`
}

// marker is run.complete's content.
type marker struct {
	Completed time.Time `json:"completed"`
	Files     []string  `json:"files"`
}

// Claim is a run's hold on its directory: run.lock, created by it and
// locked while the Claim is held.
type Claim struct {
	dir string
	id  Identity
	f   *os.File
	// created: the claim made the directory, so Abandon removes it.
	created bool
}

// Dir is the run directory.
func (c *Claim) Dir() string { return c.dir }

// ClaimDir claims dir (created when missing) for a run of id. A directory
// that already holds a run is refused: invalid input (exit 2) when that
// run is over ("choose another --out"), an environment failure (exit 3,
// like a port another process holds) when another run is recording into it
// or starting to. Nothing of the other run is touched.
func ClaimDir(dir string, id Identity) (*Claim, error) {
	_, statErr := os.Lstat(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: run directory: %w", rehearse.ErrEnvironment, err)
	}
	c, err := claim(dir, id)
	if err != nil {
		return nil, err
	}
	c.created = errors.Is(statErr, fs.ErrNotExist)
	return c, nil
}

// claim creates dir's run.lock exclusively and locks it.
func claim(dir string, id Identity) (*Claim, error) {
	// A run from before run.lock existed has only its journal.
	if _, err := os.Lstat(filepath.Join(dir, journalFile)); err == nil {
		if _, err := os.Lstat(filepath.Join(dir, LockFile)); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s already holds a run (%s); choose another --out", rehearse.ErrInvalid, dir, journalFile)
		}
	}
	path := filepath.Join(dir, LockFile)
	// O_EXCL: of two runs given one directory, exactly one creates the
	// file; a symlink planted at the name is not followed either.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, taken(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: claim run directory: %w", rehearse.ErrEnvironment, err)
	}
	c := &Claim{dir: dir, id: id, f: f}
	// A prober (the history index of another process) may hold the lock
	// for an instant; nobody else can, since only we created the file.
	deadline := time.Now().Add(2 * time.Second)
	for {
		err = tryLock(f)
		if !errors.Is(err, errLocked) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if errors.Is(err, errLocked) {
		c.Abandon()
		return nil, fmt.Errorf("%w: claim run directory %s: %s is held by another process", rehearse.ErrEnvironment, dir, LockFile)
	}
	// Any other error: this file system cannot lock. The run goes on;
	// the lock reads as unknown to retention, which then never deletes
	// this run unless it is marked complete.
	host, _ := os.Hostname()
	data, _ := json.Marshal(owner{Identity: id, PID: os.Getpid(), Host: host, Started: time.Now().UTC()})
	if _, err := f.Write(append(data, '\n')); err != nil {
		c.Abandon()
		return nil, fmt.Errorf("%w: claim run directory: %w", rehearse.ErrEnvironment, err)
	}
	return c, nil
}

// taken is the error for a directory whose run.lock exists.
func taken(dir string) error {
	path := filepath.Join(dir, LockFile)
	o, _ := readOwner(path)
	who := ""
	if o.PID > 0 {
		who = fmt.Sprintf(" (pid %d", o.PID)
		if o.Host != "" {
			who += " on " + o.Host
		}
		who += ", started " + o.Started.Format(time.RFC3339) + ")"
	}
	held := true
	if f, err := os.Open(path); err == nil {
		if tryLock(f) == nil {
			held = false
		}
		f.Close()
	}
	_, jerr := os.Lstat(filepath.Join(dir, journalFile))
	// Unlocked with a journal: a run that is over. Locked, or without a
	// journal yet: a run recording or starting (it locks run.lock an
	// instant after creating it, and opens the journal later).
	if !held && jerr == nil {
		when := ""
		if !o.Started.IsZero() {
			when = " (started " + o.Started.Format(time.RFC3339) + ")"
		}
		return fmt.Errorf("%w: %s already holds a run%s; choose another --out", rehearse.ErrInvalid, dir, when)
	}
	return fmt.Errorf("%w: %s is in use: another rehearse run%s is recording into it; nothing of it was touched; choose another --out", rehearse.ErrEnvironment, dir, who)
}

// Complete marks the run complete: every report file is there. It is the
// run's last write; a run without it is never `latest`, never linked from
// the history index, and is kept by retention only as a killed run.
func (c *Claim) Complete() error {
	for _, name := range ReportFiles {
		fi, err := os.Lstat(filepath.Join(c.dir, name))
		if err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: run %s is not complete: %s missing", rehearse.ErrEnvironment, c.dir, name)
		}
	}
	data, _ := json.Marshal(marker{Completed: time.Now().UTC(), Files: ReportFiles})
	return atomicfile.Write(filepath.Join(c.dir, CompleteFile), append(data, '\n'), 0o644)
}

// Release lets go of the directory; the run in it is over (complete, or
// not). It is safe to call more than once.
func (c *Claim) Release() {
	if c == nil || c.f == nil {
		return
	}
	unlock(c.f)
	_ = c.f.Close()
	c.f = nil
}

// Abandon undoes the claim of a run that never started (nothing was
// recorded): run.lock goes, and the directory too when the claim made it
// and nothing else is in it.
func (c *Claim) Abandon() {
	if c == nil {
		return
	}
	if c.f != nil {
		_ = os.Remove(filepath.Join(c.dir, LockFile))
		c.Release()
	}
	if c.created {
		_ = os.Remove(c.dir)
	}
}

// State is how a run directory stands.
type State int

const (
	// Complete: its whole set of reports, marked complete (or, for a run
	// from before run.lock, a run.json).
	Complete State = iota
	// Recording: its run holds run.lock and has not completed.
	Recording
	// Killed: run.lock is free and the run never completed: it was
	// killed, or the harness failed while writing its reports. Its
	// journal is kept; `rehearse report render` rebuilds a report from it.
	Killed
	// Unknown: run.lock cannot be locked here (a platform or file system
	// without flock): recording or killed, nobody can tell.
	Unknown
	// Incomplete: a run from before run.lock with a journal and no
	// report: killed, or recording under an older rehearse.
	Incomplete
	// Empty: a run directory with nothing in it (a creation that never
	// finished).
	Empty
	// None: a directory that holds no run (no run.lock, journal or
	// report).
	None
)

func (s State) String() string {
	return [...]string{"complete", "recording", "killed", "unknown", "incomplete", "empty", "none"}[s]
}

// Describe says in words what a run in this state is, for the history
// index.
func (s State) Describe() string {
	switch s {
	case Recording:
		return "recording: the run is under way"
	case Killed:
		return "killed: no complete report (the run died, or its reports could not be written); its journal is kept — rehearse report render rebuilds a partial report"
	case Unknown:
		return "recording or killed (this platform cannot tell): no complete report"
	case Incomplete:
		return "incomplete: a journal and no report"
	case Empty:
		return "empty"
	case None:
		return "not a run"
	}
	return "complete"
}

// probe says how the run in dir stands. Held reports that the run holds
// its lock (recording, or completed and still doing its bookkeeping).
// With hold, a run found complete or killed and not held is returned with
// its lock taken, in lock: nobody can claim or probe it as free until
// lock is closed (retention holds it while it deletes the run).
func probe(dir string, hold bool) (st State, held bool, lock *os.File) {
	f, err := os.Open(filepath.Join(dir, LockFile))
	if errors.Is(err, fs.ErrNotExist) {
		done := completed(dir)
		// A run from before run.lock, or a directory no run made.
		has := func(name string) bool { _, err := os.Lstat(filepath.Join(dir, name)); return err == nil }
		switch {
		case done, has(render.RunFile): // run.json: the rule before run.complete
			return Complete, false, nil
		case has(journalFile):
			return Incomplete, false, nil
		}
		if ents, err := os.ReadDir(dir); err == nil && len(ents) == 0 {
			return Empty, false, nil
		}
		return None, false, nil
	}
	if err != nil {
		return Unknown, false, nil
	}
	// The marker is read after the lock is probed: a run that completes
	// and lets go in between is then seen complete, never killed.
	lerr := tryLock(f)
	done := completed(dir)
	switch {
	case lerr == nil:
		st = Killed
		if done {
			st = Complete
		}
		if hold {
			return st, false, f
		}
		unlock(f)
		f.Close()
		return st, false, nil
	case errors.Is(lerr, errLocked):
		f.Close()
		if done {
			return Complete, true, nil
		}
		return Recording, true, nil
	}
	f.Close()
	if done {
		return Complete, false, nil
	}
	return Unknown, false, nil
}

// completed reports whether dir's run.complete lists the whole set of
// report files and every one is there. Sizes are not compared: `rehearse
// report render` may write a complete run's reports again.
func completed(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, CompleteFile))
	if err != nil {
		return false
	}
	var m marker
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	listed := map[string]bool{}
	for _, f := range m.Files {
		listed[f] = true
	}
	for _, name := range ReportFiles {
		if !listed[name] {
			return false
		}
	}
	for _, name := range m.Files {
		if strings.ContainsAny(name, `/\`) {
			return false
		}
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// StateOf says how the run in dir stands (see State).
func StateOf(dir string) State {
	st, _, _ := probe(dir, false)
	return st
}

func readOwner(path string) (owner, error) {
	var o owner
	data, err := os.ReadFile(path)
	if err != nil {
		return o, err
	}
	return o, json.Unmarshal(bytes.TrimSpace(data), &o)
}

// maxStartLine bounds the read of a journal's first line (run.start with
// the compiled scenario: a few kilobytes).
const maxStartLine = 4 << 20

// identityOf is what the run in dir is a run of: from run.lock, else the
// journal's run.start, else run.json; ok is false when none says.
func identityOf(dir string) (Identity, bool) {
	if o, err := readOwner(filepath.Join(dir, LockFile)); err == nil && o.Scenario != "" {
		return o.Identity, true
	}
	if f, err := os.Open(filepath.Join(dir, journalFile)); err == nil {
		defer f.Close()
		line, err := bufio.NewReaderSize(io.LimitReader(f, maxStartLine), 64<<10).ReadBytes('\n')
		var start struct {
			Kind string `json:"kind"`
			Identity
		}
		if (err == nil || errors.Is(err, io.EOF)) && json.Unmarshal(line, &start) == nil && start.Kind == "run.start" && start.Scenario != "" {
			return start.Identity, true
		}
	}
	if f, err := os.Open(filepath.Join(dir, render.RunFile)); err == nil {
		defer f.Close()
		var r struct {
			Run Identity `json:"run"`
		}
		if json.NewDecoder(f).Decode(&r) == nil && r.Run.Scenario != "" {
			return r.Run, true
		}
	}
	return Identity{}, false
}
