package render

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
)

// TestTimelineShadesShedding: an episode read as load shedding has no
// open to band; the timeline shades each of its windows that turned
// requests away, more opaque for a larger refused share, with a legend
// entry, and none where nothing was turned away.
func TestTimelineShadesShedding(t *testing.T) {
	a := synthTimeline()
	a.Upstreams["search"].Episodes[0].Shedding = &analysis.Shedding{WindowS: 1, Windows: []analysis.ShedWindow{
		{StartS: 70, EndS: 71, Requests: 10, Refused: 2},
		{StartS: 71, EndS: 72, Requests: 10, Refused: 0},
		{StartS: 72, EndS: 73, Requests: 10, Refused: 9},
	}}
	svg := string(TimelineSVG(a, SVGOptions{}))
	var ops []float64
	for _, m := range regexp.MustCompile(`<rect[^>]*class="shed"[^>]*>`).FindAllString(svg, -1) {
		op := 1.0
		if o := regexp.MustCompile(`fill-opacity="([0-9.]+)"`).FindStringSubmatch(m); o != nil {
			op, _ = strconv.ParseFloat(o[1], 64)
		}
		ops = append(ops, op)
	}
	if len(ops) != 2 || ops[0] >= ops[1] {
		t.Fatalf("shedding bands with opacities %v, want two (the windows that refused), the 90 %% one darker", ops)
	}
	if !regexp.MustCompile(`>load shed \(darker: a larger share turned away\)<`).MatchString(svg) {
		t.Error("no legend entry for the shedding bands")
	}
	if !regexp.MustCompile(`load shed 1 min 12 s–1 min 13 s: 9 of 10 requests turned away \(90 %\)`).MatchString(svg) {
		t.Errorf("a band's tooltip does not say what was turned away: %v", regexp.MustCompile(`load shed [^<]*`).FindAllString(svg, -1))
	}
}
