// Command figcount tallies how precisely run.json files state the breaker
// figures of their episodes that opened: exact, bounded (a range with both
// ends) or unknown (null, or a range with an open end). It is how the
// breaker model's progress is measured, before and after a change, on the
// same runs (docs/analysis.md, "Measuring the model").
//
//	go run ./scripts/figcount RUNDIR|run.json ...
//
// With -render it analyses each run directory's journal.jsonl with the
// code it was built from instead of reading its run.json: the "after" of
// runs recorded by an older version.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/halfopen/rehearse/reports"
	"github.com/halfopen/rehearse/reports/analysis"
)

func main() {
	render := flag.Bool("render", false, "analyse journal.jsonl with this build instead of reading run.json")
	flag.Parse()
	var total analysis.Precision
	args := flag.Args()
	sort.Strings(args)
	for _, p := range args {
		a, err := load(p, *render)
		if err != nil {
			fmt.Fprintf(os.Stderr, "figcount: %s: %v\n", p, err)
			os.Exit(2)
		}
		pr := a.Precision()
		total = total.Add(pr)
		fmt.Printf("%-60s exact %3d  bounded %3d  unknown %3d (one-sided %d)\n", filepath.Base(dirOf(p)), pr.Exact, pr.Bounded, pr.Unknown, pr.OneSided)
	}
	fmt.Printf("%-60s exact %3d  bounded %3d  unknown %3d (one-sided %d)\n", "TOTAL", total.Exact, total.Bounded, total.Unknown, total.OneSided)
}

func dirOf(p string) string {
	if filepath.Ext(p) == ".json" {
		return filepath.Dir(p)
	}
	return p
}

func load(p string, render bool) (*analysis.Analysis, error) {
	dir := dirOf(p)
	if render {
		return reports.AnalyzeDir(dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return nil, err
	}
	a := &analysis.Analysis{}
	return a, json.Unmarshal(b, a)
}
