package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/verdict"

	"github.com/halfopen/rehearse/reports/num"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/internal/stats"
	"github.com/halfopen/rehearse/journal"
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
	// Stats tunes the confidence interval (level, resamples, seed).
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
	// Level is the confidence level of the intervals.
	Level float64 `json:"level"`
	// Rows are the compared figures; Flagged counts the rows beyond noise
	// and beyond their threshold, Unjudged those with too few samples to
	// tell.
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
	// Delta is B's median − A's; [Lo, Hi] its confidence interval when
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
	// AWords and BWords are a word figure's distinct values per side
	// (Unit "word"; no statistics).
	AWords []string `json:"a_values,omitempty"`
	BWords []string `json:"b_values,omitempty"`
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

// loadSide expands directories into runs: a directory with a journal is a
// run; otherwise its subdirectories with journals are.
func loadSide(dirs []string, scenario string) ([]*SideRun, error) {
	var out []*SideRun
	for _, d := range dirs {
		paths, err := runDirs(d)
		if err != nil {
			return nil, err
		}
		archive := len(paths) != 1 || paths[0] != d
		for _, p := range paths {
			r, err := LoadRun(p)
			if err != nil {
				return nil, err
			}
			if scenario != "" && r.A.Run.Scenario != scenario && !(len(scenario) >= 8 && strings.HasPrefix(strings.TrimPrefix(r.Digest, "sha256:"), strings.TrimPrefix(scenario, "sha256:"))) {
				if !archive {
					return nil, fmt.Errorf("%w: %s is a run of %s, not of %s", rehearse.ErrInvalid, p, r.A.Run.Scenario, scenario)
				}
				continue
			}
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].A.Run.WallStart.Before(out[j].A.Run.WallStart) })
	return out, nil
}

// runDirs returns d itself when it holds a journal, else its
// subdirectories that do.
func runDirs(d string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(d, analysis.JournalFile)); err == nil {
		return []string{d}, nil
	}
	ents, err := os.ReadDir(d)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: no such directory", rehearse.ErrInvalid, d)
		}
		return nil, fmt.Errorf("%w: %s: %w", rehearse.ErrInvalid, d, err)
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join(d, e.Name())
		if st, err := os.Stat(p); err == nil && st.IsDir() && e.Name() != "latest" {
			if _, err := os.Stat(filepath.Join(p, analysis.JournalFile)); err == nil {
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s is neither a run directory (no %s) nor an archive of runs", rehearse.ErrInvalid, d, analysis.JournalFile)
	}
	return out, nil
}

// LoadRun analyses a run directory and judges it, and in the same pass
// over its journal reads what the analysis does not keep: the compiled
// scenario, the drill digest, every request's send lateness and the
// platform samples.
func LoadRun(dir string) (*SideRun, error) {
	r := &SideRun{Dir: dir, Config: map[string]string{}}
	a, err := analysis.ReadDirWith(dir, r.observe)
	if err != nil {
		if !errors.Is(err, rehearse.ErrInvalid) {
			err = fmt.Errorf("%w: %w", rehearse.ErrInvalid, err)
		}
		return nil, err
	}
	verdict.JudgeRun(a)
	r.A = a
	if a.Run.Version != "" {
		r.Config["harness version"] = a.Run.Version
	}
	return r, nil
}

// observe reads one journal event for the figures the analysis does not
// keep (the event is transient: only copies are kept).
func (r *SideRun) observe(e journal.Event) {
	switch p := e.Payload.(type) {
	case *journal.RunStart:
		r.Digest = p.ScenarioDigest
		if len(p.Config) > 0 {
			var v any
			if json.Unmarshal(p.Config, &v) == nil {
				flatten("", v, r.Config)
			}
		}
	case *journal.ClientRequest:
		if p.Sent > 0 {
			r.Lateness = append(r.Lateness, durMs(max(p.Sent-p.Scheduled, 0)))
		}
	case *journal.PlatformSample:
		if t := p.Timer; t != nil {
			r.TimerP50 = append(r.TimerP50, durMs(t.P50))
			r.TimerP99 = append(r.TimerP99, durMs(t.P99))
		}
		if p.Load1 != nil {
			r.Load = append(r.Load, *p.Load1)
		}
	}
}

// flatten writes v's leaves as dotted keys, redacting secrets.
func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, e, out)
		}
	case []any:
		for i, e := range x {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	case nil:
	default:
		s := fmt.Sprint(x)
		if f, ok := x.(float64); ok {
			s = fmt.Sprintf("%g", f)
		}
		last := prefix[strings.LastIndexAny(prefix, ".]")+1:]
		switch {
		case redact.IsSecretName(last):
			s = redact.Marker
		case strings.Contains(s, "://"):
			s = redact.URL(s)
		}
		out[prefix] = s
	}
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
		c.Warnings = append(c.Warnings, "one run per side: run-to-run noise is not measured, so a difference cannot be told from it; intervals cover cycle-to-cycle noise within each run only. Repeat each side (3 runs or more) to separate a platform difference from noise")
	} else if len(sides[0]) == 1 || len(sides[1]) == 1 {
		c.Warnings = append(c.Warnings, "one side has a single run: its run-to-run noise is not measured")
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

// rows computes every figure's row.
func (c *Comparison) rows(over map[string]stats.Threshold, sopt stats.Options) {
	rb := rowBuilder{c: c, over: over, sopt: sopt}
	for _, n := range c.upstreamNames() {
		eps := 0
		for _, runs := range c.sides {
			for _, r := range runs {
				if u := r.A.Upstreams[n]; u != nil {
					eps = max(eps, len(u.Episodes))
				}
			}
		}
		for i := range eps {
			group := fmt.Sprintf("%s episode %d", n, i+1)
			if f := c.faultOf(n, i); f != "" {
				group += " (" + f + ")"
			}
			for _, f := range wordFigures() {
				if row, ok := c.wordRow(n, i, group, f); ok {
					c.Rows = append(c.Rows, row)
				}
			}
			for _, f := range episodeFigures() {
				rb.episodeRow(n, i, group, f)
			}
		}
	}
	rb.perRun(&c.Rows, true, "replay and clients", RunFigures)
	rb.perRun(&c.Platform, false, "platform", platformFigures)
}

// wordRow compares a Word figure of episode i of upstream n: the values
// each side's runs show, flagged when each side is unanimous and they
// disagree (mixed values on a side are its noise); ok is false when no run
// has it.
func (c *Comparison) wordRow(n string, i int, group string, f analysis.Figure) (CompareRow, bool) {
	row := CompareRow{Key: f.Key, Group: group, Label: f.ComparedAs(), Unit: UnitWord, Judged: true}
	for k, runs := range c.sides {
		var vals []string
		for _, r := range runs {
			v := "—"
			if u := r.A.Upstreams[n]; u != nil && i < len(u.Episodes) {
				v = f.Word(u.Episodes[i])
			}
			if !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		if k == 0 {
			row.AWords = vals
		} else {
			row.BWords = vals
		}
	}
	if slices.Equal(row.AWords, []string{"—"}) && slices.Equal(row.BWords, []string{"—"}) {
		return row, false // not applicable to this episode anywhere
	}
	row.Flag = len(row.AWords) == 1 && len(row.BWords) == 1 && row.AWords[0] != row.BWords[0]
	if row.Flag {
		c.Flagged++
	}
	return row, true
}

// rowBuilder compares a figure's samples on the two sides into rows, with
// the thresholds (defaults, overridden by key) and the statistics'
// options.
type rowBuilder struct {
	c    *Comparison
	over map[string]stats.Threshold
	sopt stats.Options
}

func (rb rowBuilder) threshold(f compareFigure) stats.Threshold {
	if t, ok := rb.over[f.Key]; ok {
		return t
	}
	return DefaultThresholds[f.Unit]
}

// episodeRow compares a numeric figure of episode i of upstream n, each
// run's samples, and the figure's bounds where it has them.
func (rb rowBuilder) episodeRow(n string, i int, group string, f compareFigure) {
	var s [2][][]float64
	var rg *[2]sideRange
	if f.Range != nil {
		rg = &[2]sideRange{}
	}
	for k, runs := range rb.c.sides {
		for _, r := range runs {
			var v []float64
			if u := r.A.Upstreams[n]; u != nil && i < len(u.Episodes) {
				v = f.Episode(u.Episodes[i])
				if rg != nil {
					rg[k].add(f.Range(u.Episodes[i]))
				}
			}
			s[k] = append(s[k], v)
		}
	}
	rb.add(&rb.c.Rows, true, group, f, s[0], s[1], rg)
}

// perRun compares figures with one value per run into list.
func (rb rowBuilder) perRun(list *[]CompareRow, count bool, group string, figs []compareFigure) {
	for _, f := range figs {
		var s [2][][]float64
		for k, runs := range rb.c.sides {
			for _, r := range runs {
				s[k] = append(s[k], f.Run(r))
			}
		}
		rb.add(list, count, group, f, s[0], s[1], nil)
	}
}

// add compares samples a and b of f into a row of list (nothing when
// neither side observed it); count: the row counts towards Flagged and
// Unjudged. A difference beyond noise between estimates whose ranges
// reach each other is not a change.
func (rb rowBuilder) add(list *[]CompareRow, count bool, group string, f compareFigure, a, b [][]float64, ranges *[2]sideRange) {
	c := rb.c
	res := stats.Compare(a, b, rb.threshold(f), rb.sopt)
	if res.A.N == 0 && res.B.N == 0 {
		return // not observed anywhere: not a figure of this drill
	}
	row := CompareRow{Key: f.Key, Group: group, Label: f.Label, Unit: f.Unit,
		A: side(res.A), B: side(res.B), Threshold: res.Threshold, Note: res.Note}
	if res.Comparable() {
		row.Delta = analysis.Ptr(res.Delta)
	}
	if res.HasCI {
		row.Lo, row.Hi, row.Clear = analysis.Ptr(res.Lo), analysis.Ptr(res.Hi), res.Clear
	}
	row.Flag, row.Judged = res.Beyond, res.Judged
	if row.Flag && ranges != nil && ranges[0].overlaps(ranges[1]) {
		row.Flag, row.WithinBounds = false, true
		row.Note = fmt.Sprintf("within the figure's bounds: %s %s, %s %s (the evidence does not place it closer)",
			c.Labels[0], ranges[0].text(f.Unit), c.Labels[1], ranges[1].text(f.Unit))
	}
	if count {
		switch {
		case row.Flag:
			c.Flagged++
		case !res.Judged:
			c.Unjudged++
		}
	}
	*list = append(*list, row)
}

// sideRange is one side's range of a bounded figure over its runs: the
// median of the runs' least values to the median of their most (an exact
// run counts its value for both), so that one run's wide bounds do not
// stand for a side of many. bounded says some run's figure was a range.
type sideRange struct {
	lo, hi  []float64
	bounded bool
}

func (s *sideRange) add(lo, hi float64, ok bool) {
	if !ok {
		return
	}
	s.lo, s.hi = append(s.lo, lo), append(s.hi, hi)
	s.bounded = s.bounded || lo < hi
}

func (s sideRange) span() (lo, hi float64) {
	return num.Median(s.lo), num.Median(s.hi)
}

// overlaps reports whether two sides' ranges meet, one of them a range.
func (s sideRange) overlaps(o sideRange) bool {
	if len(s.lo) == 0 || len(o.lo) == 0 || !(s.bounded || o.bounded) {
		return false
	}
	alo, ahi := s.span()
	blo, bhi := o.span()
	return alo <= bhi && blo <= ahi
}

func (s sideRange) text(unit string) string {
	lo, hi := s.span()
	end := func(v float64) string {
		if math.IsInf(v, 0) {
			return "unknown"
		}
		return FmtValue(v, unit)
	}
	if lo == hi {
		return end(lo)
	}
	return end(lo) + " – " + end(hi)
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

func side(s stats.Summary) CompareSide {
	out := CompareSide{N: s.N, Runs: s.Runs}
	if s.N > 0 {
		out.Median, out.P10, out.P90 = analysis.Ptr(s.Median), analysis.Ptr(s.P10), analysis.Ptr(s.P90)
	}
	return out
}

// values collects a side's distinct values of a fact, in run order.
func values(runs []*SideRun, get func(r *SideRun) string) []string {
	var out []string
	for _, r := range runs {
		if v := get(r); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// gomaxprocsFact is the key of the platform fact of the harness's Go
// processors.
const gomaxprocsFact = "go processors (GOMAXPROCS)"

// facts lists the platform facts of each side.
func (c *Comparison) facts() {
	pf := func(f func(p *analysis.PlatformInfo) string) func(r *SideRun) string {
		return func(r *SideRun) string {
			if r.A.Platform == nil {
				return "—"
			}
			return num.OrDash(f(r.A.Platform))
		}
	}
	msP := func(p *float64) string {
		if p == nil {
			return ""
		}
		return num.Ms(*p)
	}
	defs := []struct {
		key string
		get func(r *SideRun) string
	}{
		{"os", pf(func(p *analysis.PlatformInfo) string { return p.OS })},
		{"arch", pf(func(p *analysis.PlatformInfo) string { return p.Arch })},
		{"kernel", pf(func(p *analysis.PlatformInfo) string { return p.Kernel })},
		{"cpu", pf(func(p *analysis.PlatformInfo) string { return p.CPU })},
		{"cpus", pf(func(p *analysis.PlatformInfo) string {
			if p.NumCPU == 0 {
				return ""
			}
			return fmt.Sprint(p.NumCPU)
		})},
		// The harness's own processors: its send lateness and timer
		// figures depend on them as much as on the machine's CPUs.
		{gomaxprocsFact, pf(func(p *analysis.PlatformInfo) string {
			if p.GOMAXPROCS == 0 {
				return ""
			}
			return fmt.Sprint(p.GOMAXPROCS)
		})},
		{"go version", pf(func(p *analysis.PlatformInfo) string { return p.GoVersion })},
		{"hostname", pf(func(p *analysis.PlatformInfo) string { return p.Hostname })},
		{"timer lateness before the run (p50 / p99)", pf(func(p *analysis.PlatformInfo) string {
			if p.TimerP50Ms == nil {
				return ""
			}
			return msP(p.TimerP50Ms) + " / " + msP(p.TimerP99Ms)
		})},
	}
	for _, d := range defs {
		f := CompareFact{Key: d.key, A: values(c.sides[0], d.get), B: values(c.sides[1], d.get)}
		// Listed only when some run recorded it: runs from before the
		// harness recorded its processors say nothing of them.
		if d.key == gomaxprocsFact && slices.Equal(f.A, []string{"—"}) && slices.Equal(f.B, []string{"—"}) {
			continue
		}
		c.Facts = append(c.Facts, f)
	}
	keys := map[string]bool{}
	for _, runs := range c.sides {
		for _, r := range runs {
			if r.A.Platform != nil {
				for k := range r.A.Platform.TCPKeepalive {
					keys[k] = true
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		get := pf(func(p *analysis.PlatformInfo) string { return p.TCPKeepalive[k] })
		c.Facts = append(c.Facts, CompareFact{Key: k, A: values(c.sides[0], get), B: values(c.sides[1], get)})
	}
}

// config lists every configuration setting whose values differ, within a
// side or across: the scenario name, seed, gateway configuration, rate,
// harness version.
func (c *Comparison) config() {
	keys := map[string]bool{}
	for _, runs := range c.sides {
		for _, r := range runs {
			for k := range r.Config {
				keys[k] = true
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		get := func(r *SideRun) string {
			if v, ok := r.Config[k]; ok {
				return v
			}
			return "—"
		}
		f := CompareFact{Key: k, A: values(c.sides[0], get), B: values(c.sides[1], get)}
		if f.Differs() {
			c.Config = append(c.Config, f)
		}
	}
	if c.Config == nil {
		c.Config = []CompareFact{}
	}
}

// expectations counts each expectation's verdicts per side; a row is
// flagged when one side met it in every run and the other in none.
func (c *Comparison) expectations() {
	type tally struct {
		want string
		n    [2][2]int
	}
	byName := map[string]*tally{}
	var order []string
	for i, runs := range c.sides {
		for _, r := range runs {
			for _, e := range r.A.Expectations {
				t := byName[e.Name]
				if t == nil {
					t = &tally{want: e.Want}
					byName[e.Name] = t
					order = append(order, e.Name)
				}
				t.n[i][1]++
				if e.Passed {
					t.n[i][0]++
				}
			}
		}
	}
	c.Expectations = []CompareExpectation{}
	for _, n := range order {
		t := byName[n]
		e := CompareExpectation{Name: n, Want: t.want, A: t.n[0], B: t.n[1]}
		all := func(x [2]int) bool { return x[1] > 0 && x[0] == x[1] }
		none := func(x [2]int) bool { return x[1] > 0 && x[0] == 0 }
		e.Flag = (all(e.A) && none(e.B)) || (none(e.A) && all(e.B))
		if e.Flag {
			c.Flagged++
		}
		c.Expectations = append(c.Expectations, e)
	}
}

// explainKeys ties figure keys to the configuration settings that drive
// them (substrings of the dotted keys).
var explainKeys = map[string][]string{
	"opened_after_s":           {"breaker.window", "min_samples", "failure_ratio", "consecutive_failures", "replay.rate", "faults"},
	"failures_before_open":     {"breaker.window", "min_samples", "failure_ratio", "consecutive_failures", "replay.rate", "retry."},
	"first_probe_after_open_s": {"cooldown", "retry_after"},
	"probe_interval_s.min":     {"probe_interval", "probe_jitter", "replay.rate"},
	"probe_interval_s.p50":     {"probe_interval", "probe_jitter", "replay.rate"},
	"max_probes_in_flight":     {"instances", "redis", "coord"},
	"probes":                   {"probe_interval", "cooldown", "successes_to_close", "faults"},
	"leaked":                   {"probe", "instances", "redis"},
	"closed_after_recovery_s":  {"successes_to_close", "probe_interval", "cooldown", "distinct_workers"},
	"successes_to_close":       {"successes_to_close", "distinct_workers"},
	"retry_after_honoured":     {"retry_after"},
	"metrics_open_lag_s":       {"metrics.interval"},
	"metrics_close_lag_s":      {"metrics.interval"},
	"amplification":            {"retry.", "fallback"},
	"send_lateness":            {"replay.rate", "max_in_flight"},
	"sent":                     {"replay.rate", "replay.duration"},
}

// explain ties each flagged figure to the configuration differences and
// platform facts that differ.
func (c *Comparison) explain() {
	var platform []string
	for _, r := range c.Platform {
		if r.Delta == nil || r.A.Median == nil || r.B.Median == nil {
			continue
		}
		if r.Clear || r.Note != "" {
			unit := " ms"
			if r.Unit != UnitMs {
				unit = ""
			}
			platform = append(platform, fmt.Sprintf("%s: %s%s vs %s%s (median)", r.Label, num.Num(*r.A.Median), unit, num.Num(*r.B.Median), unit))
		}
	}
	var facts []string
	for _, f := range c.Facts {
		// The hostname names the machine, not a property of it; the timers
		// measured before the run are compared as figures (c.Platform).
		if f.Key == "hostname" || strings.HasPrefix(f.Key, "timer lateness") || !f.Differs() {
			continue
		}
		facts = append(facts, fmt.Sprintf("%s: %s vs %s", f.Key, strings.Join(f.A, ", "), strings.Join(f.B, ", ")))
	}
	for _, r := range c.Rows {
		if !r.Flag {
			continue
		}
		what := "differs"
		if r.Delta != nil {
			what = FmtDelta(*r.Delta, r.Unit)
		}
		w := CompareWhy{Figure: fmt.Sprintf("%s: %s %s", r.Group, r.Label, what)}
		for _, cf := range c.Config {
			for _, sub := range explainKeys[r.Key] {
				if strings.Contains(cf.Key, sub) {
					w.Reasons = append(w.Reasons, fmt.Sprintf("configuration differs: %s is %s vs %s", cf.Key, strings.Join(cf.A, ", "), strings.Join(cf.B, ", ")))
					break
				}
			}
		}
		if r.Unit == UnitMs {
			for _, p := range platform {
				w.Reasons = append(w.Reasons, "the machine's timers differ: "+p)
			}
		}
		for _, f := range facts {
			w.Reasons = append(w.Reasons, "platform differs: "+f)
		}
		if len(w.Reasons) == 0 {
			w.Reasons = []string{"no configuration setting tied to this figure and no platform fact differs: look at the gateway itself (version, build) and at what the harness does not measure"}
		}
		c.Why = append(c.Why, w)
	}
	for _, e := range c.Expectations {
		if e.Flag {
			c.Why = append(c.Why, CompareWhy{Figure: "expectation " + e.Name, Reasons: []string{
				fmt.Sprintf("met in %d of %d runs vs %d of %d: see the flagged figures above", e.A[0], e.A[1], e.B[0], e.B[1])}})
		}
	}
}

// FmtValue formats a value in its unit.
func FmtValue(v float64, unit string) string {
	switch unit {
	case UnitMs:
		return num.Ms(v)
	case UnitSeconds:
		return num.Ms(v * 1000)
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
