package compare

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/halfopen/rehearse/reports/analysis"

	"github.com/halfopen/rehearse/reports/num"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/stats"
)

// CompareOptions say how two sets of runs are compared. The zero value
// compares with the defaults.
type CompareOptions struct {
	// Labels name the two sides; empty means the first directory's name.
	Labels [2]string
	// Scenario keeps only runs of this scenario (name, or a prefix of the
	// digest) when a directory is an archive of many runs.
	Scenario string
	// Force compares runs of different drills (scenario digests) instead
	// of refusing; the output then says so first.
	Force bool
	// Thresholds replace DefaultThresholds per figure key (FigureKeys).
	Thresholds map[string]stats.Threshold
	// Stats tunes the statistics: Level is the comparison's (shared among
	// its figures, Comparison.FigureLevel), Resamples and Seed the floor's
	// bootstrap (stats.CompareRuns).
	Stats stats.Options
	// Version is the harness version that compares. The figures are
	// computed anew from the journals by this build, so the documents'
	// links to the definitions (DocsURL) are for its version; "" links
	// main.
	Version string
}

// Comparison is two sets of runs of one drill, figure by figure.
type Comparison struct {
	// Version is the harness version that compared (CompareOptions.Version:
	// it computed every figure anew from the journals); each run's own is
	// in Runs.
	Version string `json:"harness_version"`

	Labels [2]string `json:"labels"`
	// Runs are each side's runs, oldest first.
	Runs [2][]CompareRun `json:"runs"`
	// Digest is the drill's digest when every run has the same one.
	Digest string `json:"scenario_digest,omitempty"`
	// Forced reports that different drills were compared with Force.
	Forced bool `json:"forced,omitempty"`
	// Level is the confidence level of the comparison: the chance that
	// two sets of runs of one configuration have no figure flagged.
	// FigureLevel is each figure's interval's, the level shared among
	// the Judgeable figures (Bonferroni: 1 − (1 − Level)/Judgeable).
	Level       float64 `json:"level"`
	FigureLevel float64 `json:"figure_level"`
	Judgeable   int     `json:"judgeable"`
	// Rows are the compared figures; Flagged counts the rows beyond noise
	// and beyond their threshold, Unjudged those with too few runs or
	// samples to tell (Undecided lists them).
	Rows     []CompareRow `json:"figures"`
	Flagged  int          `json:"flagged"`
	Unjudged int          `json:"unjudged"`
	// Platform are the machine's figures during the runs (timer lateness,
	// load), compared but never flagged.
	Platform []CompareRow `json:"platform_figures"`
	// Facts are the platform facts per side (distinct values joined).
	Facts []CompareFact `json:"platform_facts"`
	// Config are the configuration differences that remain between the
	// runs (within a side or across).
	Config []CompareFact `json:"config_differences"`
	// Expectations are each expectation's verdicts per side.
	Expectations []CompareExpectation `json:"expectations"`
	// Warnings say what weakens the comparison (a label contradicting the
	// platform, one run per side, partial runs, unknown digests).
	Warnings []string `json:"warnings"`
	// Undecided are the figures that cannot be judged, grouped by how
	// many runs a side would judge them.
	Undecided []CompareUndecided `json:"undecided"`
	// Why ties each flagged figure to the differences that may explain it.
	Why []CompareWhy `json:"why"`

	sides [2][]*SideRun
}

// CompareRun is one run of a side.
type CompareRun struct {
	Dir      string `json:"dir"`
	RunID    string `json:"run_id"`
	Scenario string `json:"scenario"`
	Digest   string `json:"scenario_digest,omitempty"`
	OS       string `json:"os,omitempty"`
	Arch     string `json:"arch,omitempty"`
	Partial  bool   `json:"partial,omitempty"`
	// Version is the harness version that recorded the run.
	Version string `json:"harness_version,omitempty"`
}

// CompareRow is one figure on both sides.
type CompareRow struct {
	// Key is the figure's key, Group where it belongs ("search episode
	// 1", "replay"), Label what it is, Unit its unit.
	Key   string `json:"key"`
	Group string `json:"group"`
	Label string `json:"label"`
	Unit  string `json:"unit"`
	// A and B summarise each side's samples.
	A CompareSide `json:"a"`
	B CompareSide `json:"b"`
	// Delta is B − A of the sides' run values (each run's median, averaged
	// over the side's runs); [Lo, Hi] its confidence interval when
	// HasCI.
	Delta *float64 `json:"difference"`
	Lo    *float64 `json:"ci_low"`
	Hi    *float64 `json:"ci_high"`
	// Clear: the interval excludes zero. Threshold: the practical
	// threshold that applied. Flag: clear and at least the threshold.
	Clear     bool    `json:"clear"`
	Judged    bool    `json:"judged"`
	Threshold float64 `json:"threshold"`
	Flag      bool    `json:"flagged"`
	// Note says what limits the row ("one sample per side: …").
	Note string `json:"note,omitempty"`
	// WithinBounds: the difference would be beyond noise, but the
	// figure is a range on some run (its *_bounds) and the sides' ranges
	// overlap: the evidence cannot tell the two apart, so it is not a
	// change (not flagged; Note gives the ranges).
	WithinBounds bool `json:"within_bounds,omitempty"`
	// RunsToJudge, for a figure that cannot be judged, is how many runs
	// a side would judge it; 0 when more runs cannot (one side never
	// observed it). RunsToTell, for a difference at least the threshold
	// but within noise, is how many runs a side would tell a difference
	// this size from noise this size.
	RunsToJudge int `json:"runs_to_judge,omitempty"`
	RunsToTell  int `json:"runs_to_tell,omitempty"`
	// Noise is the spread the interval used, with two runs or more in
	// all; nil with one run a side.
	Noise *CompareNoise `json:"noise,omitempty"`
	// AWords and BWords are a word figure's distinct values per side
	// (Unit "word"; no statistics).
	AWords []string `json:"a_values,omitempty"`
	BWords []string `json:"b_values,omitempty"`
}

// CompareNoise is the spread of a figure's run values: Between, their
// spread around each side's mean pooled over both sides; Floor, the least
// spread a run value has even between identical runs (its median's
// within-run noise and its resolution); the interval uses the larger,
// with DF degrees of freedom.
type CompareNoise struct {
	Between float64 `json:"between_runs_sd"`
	Floor   float64 `json:"floor_sd"`
	DF      int     `json:"df"`
}

// CompareSide summarises one side's samples of a figure.
type CompareSide struct {
	N      int      `json:"n"`
	Runs   int      `json:"runs"`
	Median *float64 `json:"median"`
	P10    *float64 `json:"p10"`
	P90    *float64 `json:"p90"`
}

// CompareFact is one fact or setting with its values on each side.
type CompareFact struct {
	Key string   `json:"key"`
	A   []string `json:"a"`
	B   []string `json:"b"`
}

// Differs reports whether the fact takes different values.
func (f CompareFact) Differs() bool {
	return !slices.Equal(f.A, f.B) || len(f.A) > 1 || len(f.B) > 1
}

// CompareExpectation is one expectation's verdicts: met in Met of Runs.
type CompareExpectation struct {
	Name string `json:"name"`
	Want string `json:"want"`
	A    [2]int `json:"a"` // met, runs
	B    [2]int `json:"b"`
	Flag bool   `json:"flagged"`
}

// CompareWhy lists, for one flagged figure, the differences that may
// explain it.
type CompareWhy struct {
	Figure  string   `json:"figure"`
	Reasons []string `json:"reasons"`
}

// ErrNotComparable is returned (wrapping rehearse.ErrInvalid) when the two
// sides ran different drills and Force is not set.
var ErrNotComparable = errors.New("runs of different drills")

// SideRun is one run with what the comparison needs beyond its analysis.
type SideRun struct {
	Dir      string
	A        *analysis.Analysis
	Digest   string
	Config   map[string]string
	Lateness []float64 // ms, every sent request
	TimerP50 []float64 // ms, each platform.sample burst
	TimerP99 []float64
	Load     []float64
}

// CompareSets compares two sets of run directories (a run directory, or an
// archive directory whose run subdirectories are all taken, filtered by
// opt.Scenario). Bad input (no runs, unreadable journals, different drills
// without Force) is an error wrapping rehearse.ErrInvalid.
func CompareSets(a, b []string, opt CompareOptions) (*Comparison, error) {
	var sides [2][]*SideRun
	for i, dirs := range [][]string{a, b} {
		runs, err := loadSide(dirs, opt.Scenario)
		if err != nil {
			return nil, err
		}
		if len(runs) == 0 {
			what := "no run directories"
			if opt.Scenario != "" {
				what = "no runs of scenario " + opt.Scenario
			}
			return nil, fmt.Errorf("%w: side %c (%s): %s", rehearse.ErrInvalid, 'A'+i, strings.Join(dirs, ", "), what)
		}
		sides[i] = runs
	}
	for i := range opt.Labels {
		if opt.Labels[i] == "" {
			d := a
			if i == 1 {
				d = b
			}
			opt.Labels[i] = filepath.Base(filepath.Clean(d[0]))
		}
	}
	return compareSides(sides, opt)
}

// CompareDirs compares one run directory with another.
func CompareDirs(dirA, dirB string, labels [2]string, opt CompareOptions) (*Comparison, error) {
	opt.Labels = labels
	return CompareSets([]string{dirA}, []string{dirB}, opt)
}

// compareSides builds the comparison of two loaded sides.
func compareSides(sides [2][]*SideRun, opt CompareOptions) (*Comparison, error) {
	c := &Comparison{Labels: opt.Labels, sides: sides, Version: opt.Version, Warnings: []string{}, Why: []CompareWhy{}}
	sopt := opt.Stats
	if sopt.Level <= 0 || sopt.Level >= 1 {
		sopt.Level = stats.DefaultLevel
	}
	c.Level = sopt.Level
	digests := map[string][]string{} // digest → "side: scenario"
	unknown := 0
	for i, runs := range sides {
		for _, r := range runs {
			ri := CompareRun{Dir: r.Dir, RunID: r.A.Run.RunID, Scenario: r.A.Run.Scenario, Digest: r.Digest, Partial: r.A.Run.Partial, Version: r.A.Run.Version}
			if p := r.A.Platform; p != nil {
				ri.OS, ri.Arch = p.OS, p.Arch
			}
			c.Runs[i] = append(c.Runs[i], ri)
			if r.Digest == "" {
				unknown++
				continue
			}
			d := fmt.Sprintf("%s: %s", c.Labels[i], r.A.Run.Scenario)
			if !slices.Contains(digests[r.Digest], d) {
				digests[r.Digest] = append(digests[r.Digest], d)
			}
		}
	}
	if len(digests) > 1 {
		var parts []string
		for _, d := range slices.Sorted(maps.Keys(digests)) {
			parts = append(parts, fmt.Sprintf("%s (%s)", ShortDigest(d), strings.Join(digests[d], ", ")))
		}
		msg := fmt.Sprintf("the runs rehearsed %d different drills: %s", len(digests), strings.Join(parts, "; "))
		if !opt.Force {
			return nil, fmt.Errorf("%w: %w: %s; compare runs of one scenario (--scenario to pick one from an archive), or --force", rehearse.ErrInvalid, ErrNotComparable, msg)
		}
		c.Forced = true
		c.Warnings = append(c.Warnings, "FORCED: "+msg+"; differences may come from the drills, not the platforms")
	} else {
		for d := range digests {
			c.Digest = d
		}
	}
	if unknown > 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%d run(s) carry no scenario digest (recorded by an older rehearse): whether they ran the same drill is not checked", unknown))
	}
	if len(sides[0]) == 1 && len(sides[1]) == 1 {
		c.Warnings = append(c.Warnings, "one run per side: run-to-run noise is not measured; figures with one value per run cannot be judged, and the others' intervals cover noise within each run only. "+RunsRule)
	} else if len(sides[0]) == 1 || len(sides[1]) == 1 {
		c.Warnings = append(c.Warnings, "one side has a single run: the run-to-run noise is measured on the other side's runs alone")
	}
	for i, runs := range sides {
		for _, r := range runs {
			if r.A.Run.Partial {
				c.Warnings = append(c.Warnings, fmt.Sprintf("%s: %s is a partial run (%s): its figures cover part of the drill", c.Labels[i], r.Dir, r.A.Run.EndReason))
			}
		}
	}
	c.labelWarnings()
	c.rows(opt.Thresholds, sopt)
	c.undecided()
	c.facts()
	c.config()
	c.expectations()
	c.explain()
	return c, nil
}

// ShortDigest is a drill digest shortened for people.
func ShortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return d
}

// labelWords tie words in a label to the platform they name.
var labelWords = []struct {
	words []string
	field string // "os" or "arch"
	want  string
}{
	{[]string{"mac", "macos", "darwin", "osx", "mac mini", "macbook"}, "os", "darwin"},
	{[]string{"linux", "ubuntu", "debian", "fedora", "alpine"}, "os", "linux"},
	{[]string{"windows", "win"}, "os", "windows"},
	{[]string{"arm64", "aarch64", "m1", "m2", "m3", "m4", "graviton", "apple silicon"}, "arch", "arm64"},
	{[]string{"amd64", "x86", "x86_64", "intel"}, "arch", "amd64"},
}

// labelWarnings warns when a side's label names a platform its runs did
// not run on, or when a side mixes platforms.
func (c *Comparison) labelWarnings() {
	for i, runs := range c.Runs {
		oses, arches := map[string]bool{}, map[string]bool{}
		for _, r := range runs {
			if r.OS != "" {
				oses[r.OS] = true
			}
			if r.Arch != "" {
				arches[r.Arch] = true
			}
		}
		if len(oses) > 1 || len(arches) > 1 {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s mixes platforms (%s / %s): its spread includes platform differences", c.Labels[i], strings.Join(slices.Sorted(maps.Keys(oses)), ", "), strings.Join(slices.Sorted(maps.Keys(arches)), ", ")))
		}
		tokens := strings.FieldsFunc(strings.ToLower(c.Labels[i]), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
		})
		lower := strings.ToLower(c.Labels[i])
		for _, lw := range labelWords {
			hit := ""
			for _, w := range lw.words {
				if slices.Contains(tokens, w) || (strings.Contains(w, " ") && strings.Contains(lower, w)) {
					hit = w
					break
				}
			}
			have := oses
			if lw.field == "arch" {
				have = arches
			}
			if hit == "" || len(have) == 0 || have[lw.want] {
				continue
			}
			c.Warnings = append(c.Warnings, fmt.Sprintf("label %q says %s, but its runs ran on %s %s (platform facts)", c.Labels[i], hit, lw.field, strings.Join(slices.Sorted(maps.Keys(have)), ", ")))
		}
	}
}

// upstreamNames lists the upstreams of either side, sorted.
func (c *Comparison) upstreamNames() []string {
	set := map[string]bool{}
	for _, runs := range c.sides {
		for _, r := range runs {
			for n := range r.A.Upstreams {
				set[n] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// faultOf names the fault of upstream n's episode i in the first run that
// has it.
func (c *Comparison) faultOf(n string, i int) string {
	for _, runs := range c.sides {
		for _, r := range runs {
			if u := r.A.Upstreams[n]; u != nil && i < len(u.Episodes) {
				return u.Episodes[i].Fault
			}
		}
	}
	return ""
}

// FmtValue formats a value in its unit.
func FmtValue(v float64, unit string) string {
	switch unit {
	case UnitMs:
		return num.Ms(v)
	case UnitSeconds:
		return num.Sec(v)
	}
	return num.Num(v)
}

// FmtDelta formats a signed difference in its unit.
func FmtDelta(v float64, unit string) string {
	s := FmtValue(v, unit)
	if v >= 0 {
		s = "+" + s
	}
	return s
}

// CompareAnalyses compares two sets of analyses held in memory. Without
// their journals there are no per-request send lateness samples, platform
// samples, configuration or digests: those rows and checks are absent.
func CompareAnalyses(a, b []*analysis.Analysis, opt CompareOptions) (*Comparison, error) {
	var sides [2][]*SideRun
	for i, list := range [][]*analysis.Analysis{a, b} {
		if len(list) == 0 {
			return nil, fmt.Errorf("%w: side %c has no runs", rehearse.ErrInvalid, 'A'+i)
		}
		for _, x := range list {
			sides[i] = append(sides[i], &SideRun{Dir: x.Run.RunID, A: x, Config: map[string]string{}})
		}
	}
	for i := range opt.Labels {
		if opt.Labels[i] == "" {
			opt.Labels[i] = string(rune('A' + i))
		}
	}
	return compareSides(sides, opt)
}
