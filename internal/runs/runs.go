// Package runs owns run directories: the one rule that names them
// (<UTC time>-<scenario slug>, e.g. 2026-11-30T030000Z-weekly), their
// exclusive creation and ownership (a run holds its directory locked while
// it records, and marks it complete last), and the archive of scheduled
// runs: the "latest" link, retention and the history index. `rehearse run` names its default
// run directory with it, `rehearse run --archive` keeps an archive with
// it, and the launchd package, which only schedules, points a job at an
// archive.
package runs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
)

// DefaultDir is where `rehearse run` puts a run given no --out.
const DefaultDir = "runs"

// timeLayout is the date part of a run directory's name: UTC, sortable,
// and free of ':' (which Finder shows as '/').
const timeLayout = "2006-01-02T150405Z"

// nameRE matches "<date>[.<n>]-<slug>"; the optional .n tells apart two
// runs started in the same second.
var nameRE = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}T\d{6}Z)(?:\.(\d+))?-([a-z0-9][a-z0-9-]*)$`)

var slugUnsafe = regexp.MustCompile(`[^a-z0-9]+`)

// Slug turns a scenario path or name into the lowercase [a-z0-9-] form used
// in labels and archive directory names: "CI 503 storm.yaml" → "ci-503-storm".
func Slug(scenario string) string {
	base := filepath.Base(scenario)
	for _, ext := range []string{".yaml", ".yml", ".json"} {
		if strings.HasSuffix(strings.ToLower(base), ext) {
			base = base[:len(base)-len(ext)]
			break
		}
	}
	s := strings.Trim(slugUnsafe.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if s == "" {
		s = "scenario"
	}
	return s
}

// DirName is the name of the directory of a run of scenario started at
// start: the one naming rule of run directories. n > 1 tells apart runs
// started in the same second ("2026-11-30T030000Z.2-weekly").
func DirName(scenario string, start time.Time, n int) string {
	stamp := start.UTC().Format(timeLayout)
	if n > 1 {
		stamp += "." + strconv.Itoa(n)
	}
	return stamp + "-" + Slug(scenario)
}

// Create makes a new run directory for a run of id in parent (created
// when missing), claimed for that run (ClaimDir), and returns the claim.
// Creation is exclusive: two runs started in the same second, even
// concurrently, get distinct directories.
func Create(parent string, id Identity, start time.Time) (*Claim, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("%w: create %s: %w", rehearse.ErrEnvironment, parent, err)
	}
	for n := 1; n < 1000; n++ {
		dir := filepath.Join(parent, DirName(id.Scenario, start, n))
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: create run directory: %w", rehearse.ErrEnvironment, err)
		}
		c, err := claim(dir, id)
		if err != nil {
			_ = os.Remove(dir)
			return nil, err
		}
		c.created = true
		return c, nil
	}
	return nil, fmt.Errorf("%w: too many runs of %s started at %s", rehearse.ErrEnvironment, Slug(id.Scenario), start.UTC().Format(timeLayout))
}

// ParseAge parses a retention age: a number of weeks ("8w") or days ("30d"),
// or a Go duration ("720h"). Zero means no age limit.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	bad := fmt.Errorf(`%w: age %q: want weeks or days such as "8w" or "30d", or a duration such as "720h"`, rehearse.ErrInvalid, s)
	if n := len(s); s[n-1] == 'w' || s[n-1] == 'd' {
		v, err := strconv.Atoi(s[:n-1])
		if err != nil || v < 0 {
			return 0, bad
		}
		day := 24 * time.Hour
		if s[n-1] == 'w' {
			return time.Duration(v) * 7 * day, nil
		}
		return time.Duration(v) * day, nil
	}
	d, err := rehearse.ParseDuration(s)
	if err != nil {
		return 0, bad
	}
	return d.D(), nil
}

// FormatAge formats a retention age the way ParseAge reads it, preferring
// whole weeks and days.
func FormatAge(d time.Duration) string {
	day := 24 * time.Hour
	switch {
	case d > 0 && d%(7*day) == 0:
		return fmt.Sprintf("%dw", d/(7*day))
	case d > 0 && d%day == 0:
		return fmt.Sprintf("%dd", d/day)
	}
	return d.String()
}
