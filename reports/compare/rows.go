package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/halfopen/rehearse/internal/stats"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/num"
)

// rows computes every figure's row. The numeric figures are decided
// together: the comparison's level is shared among the figures it can
// judge (Bonferroni), so that two sets of runs of one configuration have
// no figure flagged at the comparison's level, not a level's worth of
// their figures. Which figures can be judged depends on how many runs and
// samples each has, never on their values.
func (c *Comparison) rows(over map[string]stats.Threshold, sopt stats.Options) {
	rb := rowBuilder{c: c, over: over, sopt: sopt}
	var todo []pendingRow
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
					todo = append(todo, pendingRow{word: &row})
				}
			}
			for _, f := range episodeFigures() {
				todo = append(todo, rb.episodeRow(n, i, group, f))
			}
		}
	}
	todo = append(todo, rb.perRun("replay and clients", RunFigures)...)
	k := 0
	for _, p := range todo {
		if p.word == nil && stats.Judgeable(p.a, p.b) {
			k++
		}
	}
	c.Judgeable = k
	c.FigureLevel = c.Level
	if k > 1 {
		c.FigureLevel = 1 - (1-c.Level)/float64(k)
	}
	fopt := sopt
	fopt.Level = c.FigureLevel
	for _, p := range todo {
		if p.word != nil {
			c.Rows = append(c.Rows, *p.word)
			continue
		}
		rb.add(&c.Rows, true, p, fopt)
	}
	// The platform's figures explain, never flag: each at the level.
	for _, p := range rb.perRun("platform", platformFigures) {
		rb.add(&c.Platform, false, p, sopt)
	}
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

// pendingRow is a row before its statistics: a word row, ready, or a
// numeric figure's runs on each side (and its bounds, when it has them).
type pendingRow struct {
	word   *CompareRow
	f      compareFigure
	group  string
	a, b   []stats.Run
	ranges *[2]sideRange
}

// episodeRow gathers a numeric figure of episode i of upstream n: each
// run's samples with its resolution, and the figure's bounds where it has
// them.
func (rb rowBuilder) episodeRow(n string, i int, group string, f compareFigure) pendingRow {
	p := pendingRow{f: f, group: group}
	if f.Range != nil {
		p.ranges = &[2]sideRange{}
	}
	for k, runs := range rb.c.sides {
		for _, r := range runs {
			var run stats.Run
			if u := r.A.Upstreams[n]; u != nil && i < len(u.Episodes) {
				ep := u.Episodes[i]
				run = stats.Run{Samples: f.Episode(ep), Grain: f.Grain(r, u, ep)}
				if p.ranges != nil {
					p.ranges[k].add(f.Range(ep))
				}
			}
			if k == 0 {
				p.a = append(p.a, run)
			} else {
				p.b = append(p.b, run)
			}
		}
	}
	return p
}

// perRun gathers figures with one value per run.
func (rb rowBuilder) perRun(group string, figs []compareFigure) []pendingRow {
	var out []pendingRow
	for _, f := range figs {
		p := pendingRow{f: f, group: group}
		for k, runs := range rb.c.sides {
			for _, r := range runs {
				run := stats.Run{Samples: f.Run(r)}
				if f.RunGrain != nil {
					run.Grain = f.RunGrain(r)
				}
				if k == 0 {
					p.a = append(p.a, run)
				} else {
					p.b = append(p.b, run)
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// add compares a pending row's runs into a row of list (nothing when
// neither side observed it), at sopt's level; count: the row counts
// towards Flagged and Unjudged. A difference beyond noise between
// estimates whose ranges reach each other is not a change.
func (rb rowBuilder) add(list *[]CompareRow, count bool, p pendingRow, sopt stats.Options) {
	c, f := rb.c, p.f
	res := stats.CompareRuns(p.a, p.b, rb.threshold(f), sopt)
	if res.A.N == 0 && res.B.N == 0 {
		return // not observed anywhere: not a figure of this drill
	}
	row := CompareRow{Key: f.Key, Group: p.group, Label: f.Label, Unit: f.Unit,
		A: side(res.A), B: side(res.B), Threshold: res.Threshold, Note: res.Note,
		RunsToJudge: res.RunsToJudge, RunsToTell: res.RunsToTell}
	if res.Comparable() {
		row.Delta = analysis.Ptr(res.Delta)
	}
	if res.HasCI {
		row.Lo, row.Hi, row.Clear = analysis.Ptr(res.Lo), analysis.Ptr(res.Hi), res.Clear
	}
	if res.DF > 0 {
		row.Noise = &CompareNoise{Between: res.Between, Floor: res.Floor, DF: res.DF}
	}
	row.Flag, row.Judged = res.Beyond, res.Judged
	if !res.Comparable() {
		row.Note = notObservedNote(c.Labels, res)
	}
	if row.Flag && p.ranges != nil && p.ranges[0].overlaps(p.ranges[1]) {
		row.Flag, row.WithinBounds = false, true
		row.Note = fmt.Sprintf("within the figure's bounds: %s %s, %s %s (the evidence does not place it closer)",
			c.Labels[0], p.ranges[0].text(f.Unit), c.Labels[1], p.ranges[1].text(f.Unit))
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

// notObservedNote names the side that never observed a figure the other
// did: more runs of the same drill cannot judge it.
func notObservedNote(labels [2]string, res stats.Result) string {
	missing := labels[0]
	if res.A.N > 0 {
		missing = labels[1]
	}
	return "not observed in any run of " + missing
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

func side(s stats.Summary) CompareSide {
	out := CompareSide{N: s.N, Runs: s.Runs}
	if s.N > 0 {
		out.Median, out.P10, out.P90 = analysis.Ptr(s.Median), analysis.Ptr(s.P10), analysis.Ptr(s.P90)
	}
	return out
}
