package verdict

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
	"github.com/halfopen/rehearse/reports/num"
)

// observation is what one subject (an episode, an upstream, the run) shows
// for a check: a figure, a breach without a figure ("did not open"), or the
// reason the figure could not be observed.
type observation struct {
	subject string
	value   float64
	breach  string // non-empty: the requirement is broken, no figure
	missing string // non-empty: nothing to judge, and why
	// note, when set, says a figure outside the bound in words instead of
	// the bare figure.
	note string
	// within, when set, are the least and the most the figure can be
	// (value is the estimate, one of them): the evidence leaves it a
	// range. It keeps the bound only if the whole range does, breaks it
	// only if the whole range does, and is not observable otherwise.
	within *[2]float64
	// unplaced says why the figure is a range (for the not-observable
	// message).
	unplaced string
}

func seen(subject string, v float64) observation { return observation{subject: subject, value: v} }

func seenNote(subject string, v float64, note string) observation {
	return observation{subject: subject, value: v, note: note}
}

// seenBounded is seen for a figure with bounds (a *_bounds_s of run.json;
// nil: exact), unplaced in them for the reason given; a bound with an
// unknown end is unknown beyond it.
func seenBounded(subject string, v float64, b *analysis.Bounds, unplaced string) observation {
	o := seen(subject, v)
	o.unplaced = unplaced
	if lo, hi := analysis.BoundsSpan(v, b); lo < hi {
		o.within = &[2]float64{lo, hi}
	}
	return o
}

func breach(subject, why string) observation { return observation{subject: subject, breach: why} }

func unseen(subject, why string) observation { return observation{subject: subject, missing: why} }

// bound is a requirement on a figure: at most (upper) or at least limit.
type bound struct {
	limit  float64
	upper  bool
	format func(float64) string
	// want overrides the "<= limit" text (e.g. "p99 <= 10ms").
	want string
}

func atMost(limit float64, format func(float64) string) bound {
	return bound{limit: limit, upper: true, format: format}
}

func atLeast(limit float64, format func(float64) string) bound {
	return bound{limit: limit, format: format}
}

func (b bound) wantText() string {
	if b.want != "" {
		return b.want
	}
	if b.upper {
		return "<= " + b.format(b.limit)
	}
	return ">= " + b.format(b.limit)
}

func (b bound) keeps(v float64) bool {
	if b.upper {
		return v <= b.limit
	}
	return v >= b.limit
}

// rangeText says a bounded figure's range in the bound's unit; an end
// the evidence leaves open is "unknown".
func (b bound) rangeText(lo, hi float64) string {
	end := func(v float64) string {
		if math.IsInf(v, 0) {
			return "unknown"
		}
		return b.format(v)
	}
	return "between " + end(lo) + " and " + end(hi)
}

// worse reports whether v is further from passing than w.
func (b bound) worse(v, w float64) bool {
	if b.upper {
		return v > w
	}
	return v < w
}

// judge is the one verdict rule. obs are the observations of every subject
// the expectation covers; none says why there is no subject at all (then
// the expectation is not observable); noun names the subjects in the
// message ("episodes", "upstreams").
func judge(name string, b bound, obs []observation, none, noun string) expect.ExpectationResult {
	res := expect.ExpectationResult{Name: name, Want: b.wantText()}
	if len(obs) == 0 {
		res.Outcome, res.Observed, res.Message = expect.NotObservable, "not observed", "not observable: "+none
		return res.Settle()
	}
	var worst *float64
	var worstText string
	var breaches, missing []string
	for _, o := range obs {
		switch {
		case o.missing != "":
			missing = append(missing, o.subject+": "+o.missing)
		case o.breach != "":
			breaches = append(breaches, o.subject+": "+o.breach)
		case o.within != nil:
			lo, hi := o.within[0], o.within[1]
			text := b.rangeText(lo, hi)
			// The worst the figure can be decides which side it is on.
			w := hi
			if !b.upper {
				w = lo
			}
			if worst == nil || b.worse(w, *worst) {
				worst, worstText = analysis.Ptr(w), text
			}
			switch keepsLo, keepsHi := b.keeps(lo), b.keeps(hi); {
			case !keepsLo && !keepsHi:
				breaches = append(breaches, o.subject+": "+text)
			case !keepsLo || !keepsHi:
				missing = append(missing, fmt.Sprintf("%s: %s, so it may or may not keep %s (%s)", o.subject, text, b.wantText(), o.unplaced))
			}
		default:
			if worst == nil || b.worse(o.value, *worst) {
				worst, worstText = analysis.Ptr(o.value), ""
			}
			if !b.keeps(o.value) {
				text := b.format(o.value)
				if o.note != "" {
					text = o.note
				}
				breaches = append(breaches, o.subject+": "+text)
			}
		}
	}
	res.Observed = "not observed"
	switch {
	case worstText != "":
		res.Observed = worstText
	case worst != nil:
		res.Observed = b.format(*worst)
	}
	switch {
	case len(breaches) > 0:
		res.Outcome = expect.NotMet
		res.Message = fmt.Sprintf("%s: want %s; %s", name, res.Want, strings.Join(breaches, "; "))
		if len(missing) > 0 {
			res.Message += "; not observable: " + strings.Join(missing, "; ")
		}
	case len(missing) > 0:
		res.Outcome = expect.NotObservable
		res.Message = "not observable: " + strings.Join(missing, "; ")
	default:
		res.Outcome = expect.Met
		res.Message = fmt.Sprintf("worst %s, want %s, over %d %s", res.Observed, res.Want, len(obs), noun)
	}
	return res.Settle()
}

// durAtMost and durAtLeast build bounds on durations (figures in
// seconds); fmtCount writes a count bound.
func durAtMost(d time.Duration) bound  { return atMost(d.Seconds(), num.Sec) }
func durAtLeast(d time.Duration) bound { return atLeast(d.Seconds(), num.Sec) }
func fmtCount(v float64) string        { return fmt.Sprint(int64(v)) }
