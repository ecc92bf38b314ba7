package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/compare"
	"github.com/halfopen/rehearse/reports/render"
	"github.com/halfopen/rehearse/reports/verdict"
)

// FuzzAnalyze feeds arbitrary journals to the analysis and every renderer:
// no input may panic, hang or make them allocate without bound.
func FuzzAnalyze(f *testing.F) {
	for _, name := range []string{"clean", "haproxy", "interrupted"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".jsonl"))
		if err != nil {
			f.Fatal(err)
		}
		// Seed with the first lines of each fixture: kinds in context.
		lines := bytes.SplitAfter(b, []byte("\n"))
		f.Add(bytes.Join(lines[:min(60, len(lines))], nil))
	}
	f.Add([]byte(`{"t":0,"kind":"run.start","run_id":"x","config":{"expectations":{"opens_within":"1s","leaked_max":0}}}` + "\n" +
		`{"t":5,"kind":"fault.start","name":"f","upstream":"u","for_ns":-5}` + "\n" +
		`{"t":-9,"kind":"upstream.request","upstream":"u","seq":3,"status":429,"retry_after_ns":-1,"in_flight":0,"outcome":"reset"}` + "\n" +
		`{"t":9000000000000000000,"kind":"client.request","seq":3,"route":"/r","scheduled":-4,"sent":2,"outcome":"ok"}` + "\n"))
	f.Add([]byte(`{"t":1,"kind":"metrics.sample","source":"s","states":[{"dependency":"u","state":"open"}]}` + "\n" +
		`{"t":2,"kind":"health.sample","url":"h","healthy":false}` + "\n" + `{"t":3,"kind":"run.end","reason":"failed","partial":true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := analysis.Analyze(bytes.NewReader(data))
		if err != nil {
			return
		}
		if a.Expected != nil {
			a.Expectations = append(a.Expectations, verdict.Evaluate(a, *a.Expected)...)
		}
		for _, r := range []func(*analysis.Analysis) ([]byte, error){render.RunJSON, render.JUnit, render.Markdown, render.HTML} {
			if _, err := r(a); err != nil {
				t.Fatalf("render: %v", err)
			}
		}
		render.TimelineSVG(a, render.SVGOptions{})
		c, err := compare.CompareAnalyses([]*analysis.Analysis{a}, []*analysis.Analysis{a}, compare.CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Flagged != 0 {
			t.Errorf("a run compared with itself has %d flagged figures", c.Flagged)
		}
		if _, err := compare.CompareHTML(c); err != nil {
			t.Fatal(err)
		}
	})
}
