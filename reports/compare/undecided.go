package compare

import (
	"fmt"
	"strings"

	"github.com/halfopen/rehearse/reports/num"
)

// RunsRule says how many runs a side decide which figures; the warnings,
// docs/cross-platform.md and examples/ci follow it.
const RunsRule = "Two runs a side judge every figure (one run against two too): a run-to-run spread is then measured; more runs make smaller differences clear"

// CompareUndecided is a set of figures that could not be judged for one
// reason: Runs is how many runs a side would judge them, 0 when more runs
// of the same drill cannot (a side never observed them).
type CompareUndecided struct {
	Figures []string `json:"figures"`
	Runs    int      `json:"runs_to_judge"`
	Why     string   `json:"why"`
}

// undecided groups the figures that cannot be judged by what would judge
// them, and says so among the warnings.
func (c *Comparison) undecided() {
	c.Undecided = []CompareUndecided{}
	byRuns := map[int]int{} // runs to judge → index in c.Undecided
	for _, r := range c.Rows {
		if r.Judged || r.Unit == UnitWord {
			continue
		}
		i, ok := byRuns[r.RunsToJudge]
		if !ok {
			why := "observed on one side only: more runs of the same drill cannot judge them; the word figures and expectations say what differs"
			if r.RunsToJudge > 0 {
				why = fmt.Sprintf("one value a side and no run-to-run spread: %d runs a side would judge them", r.RunsToJudge)
			}
			i = len(c.Undecided)
			byRuns[r.RunsToJudge] = i
			c.Undecided = append(c.Undecided, CompareUndecided{Runs: r.RunsToJudge, Why: why})
		}
		c.Undecided[i].Figures = append(c.Undecided[i].Figures, r.Group+": "+r.Label)
	}
	for _, u := range c.Undecided {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%d %s cannot be judged, %s: %s",
			len(u.Figures), num.Pick(len(u.Figures), "figure", "figures"), u.Why, strings.Join(u.Figures, "; ")))
	}
}

// undecidedText says in a few words what would judge the figures that
// cannot be: "2 runs a side would judge them".
func (c *Comparison) undecidedText() string {
	var parts []string
	for _, u := range c.Undecided {
		if u.Runs > 0 {
			parts = append(parts, fmt.Sprintf("%d runs a side would judge %d", u.Runs, len(u.Figures)))
		} else {
			parts = append(parts, fmt.Sprintf("%d observed on one side only", len(u.Figures)))
		}
	}
	return strings.Join(parts, ", ")
}
