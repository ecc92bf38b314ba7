package reports

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/render"
)

// TestBasisBoundedOpen: four slow failures end between the last request
// forwarded (10.5 s) and the first turned away (10.6 s): the open's
// bounds are the first and the last of them, and every figure measured
// from it says so — in run.json (episodes[].bases, read back whole) and
// as a numbered why line under the report's episode table.
func TestBasisBoundedOpen(t *testing.T) {
	a, ep := boundedOpen(t)
	b := ep.Bases["opened_after_s"]
	if b == nil || b.Min.Evidence != "failure_end" || *b.Min.AtS != 10.52 || b.Max.Evidence != "failure_end" || *b.Max.AtS != 10.58 {
		t.Fatalf("opened_after_s basis %+v, want the failures ending 10.52 s and 10.58 s", b)
	}
	if fb := ep.Bases["failures_before_open"]; fb == nil || *fb.Min.AtS != 10.52 || *fb.Max.AtS != 10.58 || !strings.Contains(fb.Max.Text, "1 failed call let through") {
		t.Errorf("failures_before_open basis %+v, want counted to 10.52 s and, with one more call, to 10.58 s", fb)
	}
	// The first probe at 12.6 s: 2.02 s after the latest open, 2.08 s
	// after the earliest.
	if pb := ep.Bases["first_probe_after_open_s"]; pb == nil || *pb.Min.FromS != 10.58 || *pb.Max.FromS != 10.52 || *pb.Min.AtS != 12.6 {
		t.Errorf("first_probe_after_open_s basis %+v", pb)
	}
	if mb := ep.Bases["metrics_open_lag_s"]; mb == nil || *mb.Min.AtS != 11 || *mb.Min.FromS != 10.58 || *mb.Max.FromS != 10.52 {
		t.Errorf("metrics_open_lag_s basis %+v", mb)
	}
	// The tagged probe at 16.6 s closed it, exactly: no basis.
	if ep.CloseBoundsS == nil && ep.Bases["closed_after_recovery_s"] != nil {
		t.Errorf("an exact close carries a basis: %s", ep.Bases["closed_after_recovery_s"].Text())
	}

	raw, err := json.Marshal(ep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"bases":{`) || !strings.Contains(string(raw), `"evidence":"failure_end","at_s":10.58`) {
		t.Errorf("run.json episode lacks its bases:\n%s", raw)
	}
	var back analysis.Episode
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Bases["opened_after_s"].Text() != b.Text() {
		t.Errorf("read back: %q, want %q", back.Bases["opened_after_s"].Text(), b.Text())
	}

	md, err := render.Markdown(a)
	if err != nil {
		t.Fatal(err)
	}
	h, err := render.HTML(a)
	if err != nil {
		t.Fatal(err)
	}
	why := "why opened after fault start: min: the first failed call to end after the last call let through, answered 10.520 s; max: the last failed call to end before the first refusal was answered, answered 10.580 s"
	for _, w := range []string{"| opened after fault start | 520 ms (520 ms – 580 ms) [1] |", "- [1] " + why,
		// The first cooldown is the first probe: it says so.
		"| first probe after open | 2.08 s (2.02 s – 2.08 s) [4] |", "- [5] why cooldown progression: cooldown #1: as the first probe after open"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	for _, w := range []string{`<sup class="why">1</sup>`, `<li value="1">` + why, `title="min: the first failed call`} {
		if !strings.Contains(string(h), w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
}
