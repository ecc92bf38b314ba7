package render

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"

	"github.com/halfopen/rehearse/internal/canvas"
	"github.com/halfopen/rehearse/internal/testutil"
)

// synthTimeline is a 120 s run with every kind of mark: a long fault, a
// one-second fault (too short for its name) right after it, client
// outcomes of every group, an open interval, probes, health checks,
// metrics states and the gateway's health.
func synthTimeline() *analysis.Analysis {
	n := 120
	ones := func(v int32) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = v
		}
		return s
	}
	a := &analysis.Analysis{Run: analysis.RunInfo{Scenario: "synth", RunID: "r1", DurationS: float64(n),
		WallStart: time.Date(2026, 3, 29, 0, 59, 0, 0, time.UTC), TimeZone: "Europe/Berlin"},
		Upstreams: map[string]*analysis.UpstreamAnalysis{"search": {Episodes: []*analysis.Episode{{RetryAfter: []analysis.RetryAfter{{AtS: 20, RetryAfterS: 5}}}}}}}
	ut := &analysis.UpstreamTimeline{OK: ones(5), Failed: ones(1), HealthOK: ones(1), HealthFailed: make([]int32, n),
		Open:    []analysis.StateInterval{{StartS: 30, EndS: 50, State: "open"}},
		Metrics: []analysis.StateInterval{{StartS: 0, EndS: 30, State: "closed"}, {StartS: 30, EndS: 50, State: "open"}, {StartS: 50, EndS: 52, State: "half_open"}, {StartS: 52, EndS: 120, State: "closed"}},
		Probes:  []analysis.Probe{{AtS: 35, Kind: "live", OK: false}, {AtS: 45, Kind: "live", OK: true}}}
	ut.HealthFailed[40] = 1
	a.Timeline = &analysis.Timeline{Seconds: n, Client: map[string][]int32{}, Upstreams: map[string]*analysis.UpstreamTimeline{"search": ut},
		Faults: []analysis.FaultWindow{{Name: "long-storm", Type: "status", Upstream: "search", StartS: 20, EndS: 60},
			{Name: "blip-with-a-long-name", Type: "reset", Upstream: "search", StartS: 60.5, EndS: 61.5},
			{Name: "tail", Type: "slow", Upstream: "search", StartS: 118.5, EndS: 119.5}},
		Health: []analysis.StateInterval{{StartS: 0, EndS: 40, State: "healthy"}, {StartS: 40, EndS: 45, State: "unhealthy"}, {StartS: 45, EndS: 120, State: "healthy"}}}
	for _, g := range analysis.ClientGroups {
		a.Timeline.Client[g] = ones(1)
	}
	return a
}

type svgShape struct {
	tag, class, fill, text string
	x, y, w, h             float64
	anchor                 string
}

func parseSVG(t *testing.T, b []byte) []svgShape {
	t.Helper()
	var out []svgShape
	var cur *svgShape
	for _, tok := range testutil.XMLTokens(t, "timeline SVG", b) {
		switch e := tok.(type) {
		case xml.StartElement:
			s := svgShape{tag: e.Name.Local}
			for _, at := range e.Attr {
				f := func() float64 {
					var v float64
					_, err := fmtSscan(at.Value, &v)
					if err != nil {
						t.Fatalf("%s=%q: %v", at.Name.Local, at.Value, err)
					}
					return v
				}
				switch at.Name.Local {
				case "class":
					s.class = at.Value
				case "fill":
					s.fill = at.Value
				case "x":
					s.x = f()
				case "y":
					s.y = f()
				case "width":
					s.w = f()
				case "height":
					s.h = f()
				case "text-anchor":
					s.anchor = at.Value
				}
			}
			if s.tag == "rect" || s.tag == "polygon" || s.tag == "text" {
				out = append(out, s)
				cur = &out[len(out)-1]
			}
		case xml.CharData:
			if cur != nil && cur.tag == "text" {
				cur.text += string(e)
			}
		case xml.EndElement:
			if e.Name.Local == "text" || e.Name.Local == "rect" || e.Name.Local == "polygon" {
				cur = nil
			}
		}
	}
	return out
}

// TestTimelineFaultLabels: every fault bar has its name drawn, inside the
// bar when it fits and beside it otherwise; no two labels overlap.
func TestTimelineFaultLabels(t *testing.T) {
	shapes := parseSVG(t, TimelineSVG(synthTimeline(), SVGOptions{}))
	var bars, labels []svgShape
	for _, s := range shapes {
		switch s.class {
		case "fault":
			bars = append(bars, s)
		case "fault-label":
			labels = append(labels, s)
		}
	}
	if len(bars) != 3 || len(labels) != 3 {
		t.Fatalf("%d fault bars, %d labels; want 3 and 3", len(bars), len(labels))
	}
	type span struct{ x0, x1, y float64 }
	var spans []span
	for _, name := range []string{"long-storm", "blip-with-a-long-name", "tail"} {
		var l *svgShape
		for i := range labels {
			if strings.HasPrefix(labels[i].text, name) {
				l = &labels[i]
			}
		}
		if l == nil {
			t.Fatalf("no label for %s", name)
		}
		tw := canvas.TextWidth(l.text, 11, false)
		x0 := l.x
		switch l.anchor {
		case "end":
			x0 -= tw
		case "middle":
			x0 -= tw / 2
		}
		if x0 < 150 || x0+tw > 1200 {
			t.Errorf("%s label [%.0f, %.0f] leaves the plot", name, x0, x0+tw)
		}
		spans = append(spans, span{x0, x0 + tw, l.y})
		var bar *svgShape
		for i := range bars {
			if bars[i].y <= l.y && l.y <= bars[i].y+bars[i].h && (bar == nil || math.Abs(bars[i].x-x0) < math.Abs(bar.x-x0)) {
				bar = &bars[i]
			}
		}
		if bar == nil {
			t.Fatalf("%s label at y %.0f is on no bar's row", name, l.y)
		}
		inside := x0 >= bar.x && x0+tw <= bar.x+bar.w
		if name == "long-storm" && (!inside || l.text != "long-storm (status)") {
			t.Errorf("long fault: label %q inside=%v, want name and type inside", l.text, inside)
		}
		if name != "long-storm" {
			if inside {
				t.Errorf("%s: label inside a 1 s bar", name)
			}
			if l.fill != canvas.HexOf(Hex(colText)) {
				t.Errorf("%s: outside label colour %s, want dark text", name, l.fill)
			}
		}
	}
	for i := range spans {
		for j := i + 1; j < len(spans); j++ {
			if spans[i].y == spans[j].y && spans[i].x0 < spans[j].x1 && spans[j].x0 < spans[i].x1 {
				t.Errorf("fault labels %d and %d overlap: %+v %+v", i, j, spans[i], spans[j])
			}
		}
	}
}

// TestTimelineLegendExplainsEveryMark: every colour a mark is drawn in
// (fault bars aside, which carry their names) has a legend swatch.
func TestTimelineLegendExplainsEveryMark(t *testing.T) {
	shapes := parseSVG(t, TimelineSVG(synthTimeline(), SVGOptions{}))
	plain := map[string]bool{"#ffffff": true, colLaneBG: true}
	legend := map[string]bool{}
	for i, s := range shapes {
		if s.tag == "text" && s.class == "legend" && i > 0 {
			legend[shapes[i-1].fill] = true
		}
	}
	for _, s := range shapes {
		if s.tag == "text" || s.class == "fault" || plain[s.fill] {
			continue
		}
		if !legend[s.fill] {
			t.Errorf("a %s drawn in %s has no legend entry", s.tag, s.fill)
		}
	}
	if len(legend) < 15 {
		t.Errorf("legend has %d entries for a drawing with every mark", len(legend))
	}
}

// TestTimelineWallClockAxis: the axis shows run time, UTC and the run's
// local zone, across a daylight-saving change (Berlin went from UTC+1 to
// UTC+2 at 01:00 UTC on 2026-03-29).
func TestTimelineWallClockAxis(t *testing.T) {
	svg := string(TimelineSVG(synthTimeline(), SVGOptions{}))
	for _, want := range []string{">run time<", ">UTC<", ">Europe/Berlin<", ">00:59:00<", ">01:59:00<", ">01:00:00<", ">03:00:00<", ">1 min<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline lacks %s", want)
		}
	}
	a := synthTimeline()
	a.Run.TimeZone = "UTC"
	if svg := string(TimelineSVG(a, SVGOptions{})); strings.Count(svg, ">00:59:00<") != 1 || strings.Contains(svg, ">Etc/UTC<") {
		t.Error("a run on a UTC machine shows a second zone row")
	}
	a.Run.WallStart = time.Time{}
	if svg := string(TimelineSVG(a, SVGOptions{})); strings.Contains(svg, ">UTC<") {
		t.Error("a run without a start time shows wall-clock rows")
	}
}

// TestTimelinePNGPixels decodes timeline.png of a rendered run and looks at
// known pixels: the fault bar's colour where the fault is, white in its
// lane before the fault, ok-green in the client lane.
func TestTimelinePNGPixels(t *testing.T) {
	a := fixture(t, "clean")
	b, err := TimelinePNG(a, SVGOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	d := TimelineDrawing(a, SVGOptions{})
	if img.Bounds().Dx() != int(d.W*PNGScale) || img.Bounds().Dy() != int(d.H*PNGScale) {
		t.Fatalf("PNG %v, want %v×%v", img.Bounds(), d.W*PNGScale, d.H*PNGScale)
	}
	f := a.Timeline.Faults[0]
	x := func(s float64) float64 { return 150 + s/math.Max(a.Run.DurationS, 1)*1030 }
	at := func(x, y float64) string {
		return canvas.HexOf(color.NRGBAModel.Convert(img.At(int(x*PNGScale), int(y*PNGScale))).(color.NRGBA))
	}
	// The fault lane's bar is at y 30..46; sample below its label.
	if got := at(x((f.StartS+f.EndS)/2), 44); got != FaultColour[0] {
		t.Errorf("fault bar at its window's middle: %s, want %s", got, FaultColour[0])
	}
	if got := at(x(f.StartS/2), 38); got != "#ffffff" {
		t.Errorf("fault lane before the fault: %s, want white", got)
	}
	if got := at(x(f.EndS+5), 38); got != "#ffffff" {
		t.Errorf("fault lane after the fault: %s, want white", got)
	}
	// The client lane (below the fault lane) is ok-green before the fault.
	if got := at(x(f.StartS/2)+1, 60+60); got != groupColour["ok"] {
		t.Errorf("client lane before the fault: %s, want ok green %s", got, groupColour["ok"])
	}
	// The label inside the bar is drawn: white pixels within the bar.
	white := 0
	for px := x(f.StartS) + 4; px < x(f.StartS)+60; px += 0.5 {
		for py := 33.0; py < 43; py += 0.5 {
			if at(px, py) == "#ffffff" {
				white++
			}
		}
	}
	if white < 20 {
		t.Errorf("fault label inside the bar: %d white pixels, want its text", white)
	}
}

// lab converts to CIE L*a*b* (D65) for colour distances.
func lab(c color.NRGBA) [3]float64 {
	lin := func(v uint8) float64 {
		s := float64(v) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	r, g, b := lin(c.R), lin(c.G), lin(c.B)
	x := (0.4124*r + 0.3576*g + 0.1805*b) / 0.95047
	y := 0.2126*r + 0.7152*g + 0.0722*b
	z := (0.0193*r + 0.1192*g + 0.9505*b) / 1.08883
	f := func(t float64) float64 {
		if t > 0.008856 {
			return math.Cbrt(t)
		}
		return 7.787*t + 16.0/116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

func deltaE(a, b string) float64 {
	la, lb := lab(Hex(a)), lab(Hex(b))
	return math.Sqrt(math.Pow(la[0]-lb[0], 2) + math.Pow(la[1]-lb[1], 2) + math.Pow(la[2]-lb[2], 2))
}

// TestTimelineColoursDistinct: no fault colour can be mistaken for an
// outcome or state colour (CIE76 ΔE ≥ 20, clearly different at a glance),
// nor for another fault colour.
func TestTimelineColoursDistinct(t *testing.T) {
	var marks []string
	for _, it := range legendItems {
		if it.key != "fault" {
			marks = append(marks, it.colour)
		}
	}
	for i, f := range FaultColour {
		for _, m := range marks {
			if d := deltaE(f, m); d < 20 {
				t.Errorf("fault colour %s is close to mark colour %s (ΔE %.1f)", f, m, d)
			}
		}
		for _, g := range FaultColour[i+1:] {
			if d := deltaE(f, g); d < 20 {
				t.Errorf("fault colours %s and %s are close (ΔE %.1f)", f, g, d)
			}
		}
	}
}

// TestTimelineTextContrast: every text colour meets WCAG AA (4.5:1) on
// what it is drawn on.
func TestTimelineTextContrast(t *testing.T) {
	for _, f := range FaultColour {
		if c := canvas.Contrast(canvas.ReadableOn(Hex(f)), Hex(f)); c < 4.5 {
			t.Errorf("label on fault colour %s: contrast %.2f < 4.5", f, c)
		}
	}
	for _, c := range []string{colText, colLabel, colTick} {
		if r := canvas.Contrast(Hex(c), canvas.White); r < 4.5 {
			t.Errorf("text colour %s on white: %.2f < 4.5", c, r)
		}
	}
}

func fmtSscan(s string, v *float64) (int, error) { return fmt.Sscan(s, v) }

// fixture is the analysis of the facade's testdata/NAME.jsonl.
func fixture(t *testing.T, name string) *analysis.Analysis {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := analysis.Analyze(f)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestTimelineFailoverBand: the fallback's lane shows the span in which
// it served the faulted upstream's requests, from the failover to the
// fail-back, the faulted upstream's lane a mark at each give-up, and the
// legend explains both.
func TestTimelineFailoverBand(t *testing.T) {
	a := synthTimeline()
	n := a.Timeline.Seconds
	a.Timeline.Upstreams["backup"] = &analysis.UpstreamTimeline{OK: make([]int32, n), Failed: make([]int32, n),
		HealthOK: make([]int32, n), HealthFailed: make([]int32, n)}
	a.Upstreams["backup"] = &analysis.UpstreamAnalysis{Name: "backup"}
	a.Upstreams["search"].Episodes[0].Failover = &analysis.Failover{Fallback: "backup", Served: 70,
		FailedOverAtS: analysis.Ptr(20.5), LastFallbackAtS: analysis.Ptr(63.0), FailedBack: true, FailedBackAtS: analysis.Ptr(62.0)}
	a.Timeline.Upstreams["search"].GiveUps = []float64{21.0, 22.5}
	shapes := parseSVG(t, TimelineSVG(a, SVGOptions{}))
	var band *svgShape
	legend := false
	giveUps, giveUpLegend := 0, false
	for i, s := range shapes {
		if s.class == "give-up" {
			giveUps++
		}
		if s.tag == "text" && s.class == "legend" && i > 0 && shapes[i-1].fill == colGiveUp {
			giveUpLegend = true
		}
	}
	if giveUps != 2 || !giveUpLegend {
		t.Errorf("%d give-up marks (want 2), in the legend %v", giveUps, giveUpLegend)
	}
	for i, s := range shapes {
		if s.class == "failover" {
			band = &shapes[i]
		}
		if s.tag == "text" && s.class == "legend" && i > 0 && shapes[i-1].fill == colFailover {
			legend = true
		}
	}
	if band == nil || !legend {
		t.Fatalf("failover band %v, in the legend %v", band, legend)
	}
	w := &tlw{left: 150, plotW: 1200 - 150 - 20, to: float64(n)}
	if x0, x1 := w.x(20.5), w.x(62); math.Abs(band.x-x0) > 0.5 || math.Abs(band.x+band.w-x1) > 0.5 {
		t.Errorf("band from %.1f to %.1f, want %.1f to %.1f (failover to fail-back)", band.x, band.x+band.w, x0, x1)
	}
}

// TestOpenBandCloseText: an open band whose close the evidence only
// bounds says so in its title, in the close's one text, never the
// estimate alone as if it were the close.
func TestOpenBandCloseText(t *testing.T) {
	for _, c := range []struct {
		b    *analysis.Bounds
		want string
	}{
		{nil, "black-box open 30 s–50 s"},
		{&analysis.Bounds{Min: analysis.Ptr(48.0), Max: analysis.Ptr(50.0)}, "black-box open 30 s–closed between 48 s and 50 s"},
		{&analysis.Bounds{Min: analysis.Ptr(50.0)}, "black-box open 30 s–closed at 50 s or later"},
	} {
		a := synthTimeline()
		a.Timeline.Upstreams["search"].Open[0].EndBounds = c.b
		if svg := string(TimelineSVG(a, SVGOptions{})); !strings.Contains(svg, c.want) {
			t.Errorf("bounds %v: the timeline has no %q", c.b, c.want)
		}
	}
}
