package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/halfopen/rehearse/internal/stats"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/num"
)

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

func side(s stats.Summary) CompareSide {
	out := CompareSide{N: s.N, Runs: s.Runs}
	if s.N > 0 {
		out.Median, out.P10, out.P90 = analysis.Ptr(s.Median), analysis.Ptr(s.P10), analysis.Ptr(s.P90)
	}
	return out
}
