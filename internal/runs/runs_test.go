package runs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"weekly.yaml":                 "weekly",
		"/a/b/CI 503 storm.YML":       "ci-503-storm",
		"drills/429_retry-after.json": "429-retry-after",
		"__.yaml":                     "scenario",
		"Ünïcode.yaml":                "n-code",
		"My Gateway 503":              "my-gateway-503",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDirNameIsUTC(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	start := time.Date(2026, 11, 30, 4, 0, 0, 0, paris)
	if got := DirName("weekly.yaml", start, 1); got != "2026-11-30T030000Z-weekly" {
		t.Errorf("DirName = %s", got)
	}
	if got := DirName("weekly", start, 3); got != "2026-11-30T030000Z.3-weekly" {
		t.Errorf("DirName n=3 = %s", got)
	}
	r, ok := parseRunName(DirName("CI 503", start, 2))
	if !ok || r.Scenario != "ci-503" || !r.Started.Equal(start) || r.seq != 2 {
		t.Errorf("a name does not parse back: %+v %v", r, ok)
	}
}

func TestCreateAndAbandon(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "runs")
	start := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	a, err := Create(parent, Identity{Scenario: "weekly"}, start)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := Create(parent, Identity{Scenario: "weekly"}, start)
	if err != nil || a.Dir() == b.Dir() || filepath.Base(b.Dir()) != "2026-11-30T030000Z.2-weekly" {
		t.Fatalf("second run in the same second: %v %v", b, err)
	}
	defer b.Release()
	os.WriteFile(filepath.Join(b.Dir(), "journal.jsonl"), nil, 0o644)
	// A run that never started leaves nothing; one with a journal keeps
	// its directory.
	a.Abandon()
	b.Abandon()
	if _, err := os.Stat(a.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Dir(), "journal.jsonl")); err != nil {
		t.Fatal(err)
	}
}

func TestParseAge(t *testing.T) {
	day := 24 * time.Hour
	for in, want := range map[string]time.Duration{"": 0, "0": 0, "8w": 56 * day, "30d": 30 * day, "720h": 30 * day, "90m": 90 * time.Minute} {
		got, err := ParseAge(in)
		if err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"8 weeks", "w", "-1w", "-5m", "soon"} {
		if _, err := ParseAge(bad); err == nil || !errors.Is(err, rehearse.ErrInvalid) {
			t.Errorf("ParseAge(%q) = %v", bad, err)
		}
	}
	for d, want := range map[time.Duration]string{56 * day: "8w", 3 * day: "3d", 90 * time.Minute: "1h30m0s"} {
		if got := FormatAge(d); got != want {
			t.Errorf("FormatAge(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseAge(FormatAge(d)); err != nil || back != d {
			t.Errorf("FormatAge(%v) does not parse back", d)
		}
	}
}
