package runs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/halfopen/rehearse/internal/runs"
)

// The bookkeeping `rehearse run --archive` does around a run.
func ExampleArchive() {
	dir, _ := os.MkdirTemp("", "archive")
	defer os.RemoveAll(dir)
	a := runs.Archive{Dir: dir, Keep: 2}
	report, _ := os.ReadFile(filepath.Join("..", "..", "reports", "testdata", "golden", "clean.run.json.golden"))
	start := time.Date(2026, 11, 2, 3, 0, 0, 0, time.UTC)
	for week := range 3 {
		now := start.Add(time.Duration(week) * 7 * 24 * time.Hour)
		run, _ := a.NewRun(runs.Identity{Scenario: "weekly"}, now)
		// ... rehearsal.Run writes the journal and the reports into
		// run.Dir(), and marks the run complete ...
		for _, name := range runs.ReportFiles {
			os.WriteFile(filepath.Join(run.Dir(), name), report, 0o644)
		}
		run.Complete()
		removed, _ := a.Finish(run, now)
		for _, r := range removed {
			fmt.Println("pruned", filepath.Base(r))
		}
	}
	latest, _ := a.Latest()
	fmt.Println("latest", filepath.Base(latest))
	// Output:
	// pruned 2026-11-02T030000Z-weekly
	// latest 2026-11-16T030000Z-weekly
}
