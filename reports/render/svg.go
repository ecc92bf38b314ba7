package render

import (
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/halfopen/rehearse/reports/analysis"

	"github.com/halfopen/rehearse/reports/num"

	"github.com/halfopen/rehearse/internal/canvas"
)

// SVGOptions shape the timeline. The zero value draws the whole run, 1200
// pixels wide, with times from the run's start.
type SVGOptions struct {
	// Width in pixels; 0 means 1200.
	Width int
	// From and To bound the drawn window in run seconds; To == 0 means
	// the run's end.
	From, To float64
	// Origin is subtracted from axis labels, so that two runs aligned at
	// their fault start read "0" at the same x (compare).
	Origin float64
	// Title is drawn above the lanes; empty means scenario and run id.
	Title string
}

// PNGScale is the timeline.png resolution: device pixels per drawing
// pixel. 2 keeps the text sharp when a postmortem document scales the
// picture down to its column width.
const PNGScale = 2

// Colours of the timeline's marks, shared with the HTML legend. Fault
// colours are dark hues kept apart from every outcome and state colour
// (TestTimelineColoursDistinct), so a fault bar is never read as an
// outcome; fault names are drawn in black or white, whichever reads better
// (WCAG AA, TestTimelineTextContrast).
var groupColour = map[string]string{
	"ok": "#4caf50", "fast_fail": "#ff9800", "http_4xx": "#fdd835", "http_5xx": "#e53935",
	"transport": "#8e24aa", "interrupted": "#00acc1", "dropped": "#9e9e9e",
}

var stateColour = map[string]string{"closed": "#c8e6c9", "half_open": "#ffcc80", "open": "#ef9a9a",
	"healthy": "#c8e6c9", "unhealthy": "#ef9a9a"}

// FaultColour is the faults' palette, one colour per fault in order of
// appearance (a screenshot test looks for them).
var FaultColour = []string{"#283593", "#00695c", "#6d4c41", "#827717", "#ad1457", "#37474f"}

const (
	colOpenBand   = "#f8d7da"
	colShed       = "#ffccbc" // a shedder's windows, as opaque as the share refused
	colProbeOK    = "#1565c0"
	colProbeFail  = "#e65100"
	colHealthOK   = "#607d8b"
	colHealthFail = "#b71c1c"
	colPause      = "#f9a825"
	colFailover   = "#0097a7"
	colGiveUp     = "#e040fb"
	colLaneBG     = "#fafafa"
	colLaneEdge   = "#e0e0e0"
	colText       = "#222222"
	colLabel      = "#333333"
	colTick       = "#444444"
	colGrid       = "#ebebeb"
	colAxis       = "#555555"
	// colWarmup greys the warm-up's span over every lane: a translucent
	// veil (alpha below), so that what it covers stays readable.
	colWarmup   = "#9e9e9e"
	warmupAlpha = 0x59
	// colGone marks the moment the gateway under test stopped answering
	// and colStall the harness's stall (translucent over the lanes, a hue
	// of its own: grey veils are the dropped requests' and a warm-up's);
	// the interruption's mark takes its cut requests' colour.
	colGone  = "#ff4081"
	colStall = "#bcaaa4"
)

// TimelineSVG renders the run's timeline as SVG; see timelineDrawing.
func TimelineSVG(a *analysis.Analysis, o SVGOptions) []byte {
	return TimelineDrawing(a, o).SVG("timeline")
}

// TimelinePNG renders the same drawing as TimelineSVG as a PNG at
// PNGScale, for documents that do not take SVG (Google Docs, Jira,
// Confluence uploads).
func TimelinePNG(a *analysis.Analysis, o SVGOptions) ([]byte, error) {
	return TimelineDrawing(a, o).PNG(PNGScale)
}

// tlw is the timeline's layout state: the drawing, the plot's horizontal
// mapping, the current y and the marks drawn (for the legend).
type tlw struct {
	d           *canvas.Drawing
	left, plotW float64
	from, to    float64
	y           float64
	used        map[string]bool
	// origin is the run time shown as t = 0 (SVGOptions.Origin).
	origin float64
}

func (w *tlw) x(t float64) float64 {
	if w.to <= w.from {
		return w.left
	}
	return w.left + (math.Min(math.Max(t, w.from), w.to)-w.from)/(w.to-w.from)*w.plotW
}

// Hex is a #rrggbb colour.
func Hex(s string) color.NRGBA { return canvas.Hex(s) }

// states draws a lane of state intervals h high at the current y, the
// ones in the window, coloured by state: each titled title+state, its
// legend entry source_state.
func (w *tlw) states(spans []analysis.StateInterval, h float64, source, title string) {
	for _, m := range spans {
		if m.EndS < w.from || m.StartS > w.to {
			continue
		}
		x0, x1 := w.x(m.StartS), w.x(m.EndS)
		w.rect(x0, w.y, math.Max(x1-x0, 0.5), h, stateColour[m.State], title+m.State)
		w.used[source+"_"+m.State] = true
	}
}

func (w *tlw) rect(x, y, wd, h float64, fill, title string) {
	w.d.Rect(x, y, wd, h, canvas.Style{Fill: Hex(fill), Title: title})
}

func (w *tlw) text(x, y float64, s string, size float64, fill string, anchor canvas.Anchor) {
	w.d.Text(x, y, s, canvas.TextStyle{Size: size, Fill: Hex(fill), Anchor: anchor})
}

// label draws a lane's name right-aligned before the plot, shortened
// with "…" to fit the label column.
func (w *tlw) label(text string, h float64) {
	w.text(w.left-6, w.y+h/2+4, fitText(text, 11, w.left-10), 11, colLabel, canvas.End)
}

// fitText shortens s with "…" until it is at most width pixels wide.
func fitText(s string, size, width float64) string {
	if canvas.TextWidth(s, size, false) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 1 && canvas.TextWidth(string(r)+"…", size, false) > width {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

// faultBar is one fault window laid out: its bar, its label and where the
// label goes.
type faultBar struct {
	f              analysis.FaultWindow
	colour         string
	x0, x1         float64
	text           string
	inside         bool
	tx             float64 // label x (start-anchored unless anchor is End)
	anchor         canvas.Anchor
	extent0, extx1 float64 // horizontal space bar and label take
	row            int
}

// layoutFaults places the fault bars of one lane: each bar is labelled
// with the fault's name and type inside the bar when they fit, else beside
// it (right, or left near the plot's end); bars whose labels would collide
// go on separate rows, so that every label is drawn, readable in print and
// in a screenshot, never only in a hover tooltip.
func (w *tlw) layoutFaults(faults []analysis.FaultWindow, colours map[string]string) ([]faultBar, int) {
	const size, pad = 11.0, 4.0
	var bars []faultBar
	for _, f := range faults {
		if f.EndS < w.from || f.StartS > w.to {
			continue
		}
		b := faultBar{f: f, colour: colours[f.Name], x0: w.x(f.StartS), x1: w.x(f.EndS)}
		b.x1 = math.Max(b.x1, b.x0+2)
		full := f.Name
		if f.Type != "" {
			full = f.Name + " (" + f.Type + ")"
		}
		switch {
		case canvas.TextWidth(full, size, false)+2*pad <= b.x1-b.x0:
			b.text, b.inside = full, true
		case canvas.TextWidth(f.Name, size, false)+2*pad <= b.x1-b.x0:
			b.text, b.inside = f.Name, true
		default:
			b.text = full
		}
		tw := canvas.TextWidth(b.text, size, false)
		plotEnd := w.left + w.plotW
		switch {
		case b.inside:
			b.tx, b.extent0, b.extx1 = b.x0+pad, b.x0, b.x1
		case b.x1+pad+tw <= plotEnd:
			b.tx, b.extent0, b.extx1 = b.x1+pad, b.x0, b.x1+pad+tw
		case b.x0-pad-tw >= w.left:
			b.tx, b.anchor, b.extent0, b.extx1 = b.x0-pad, canvas.End, b.x0-pad-tw, b.x1
		default:
			// Neither side has room: right-align the label with the
			// plot's end on the bar's row.
			b.text = fitText(b.text, size, w.plotW)
			tw = canvas.TextWidth(b.text, size, false)
			b.tx, b.anchor, b.extent0, b.extx1 = plotEnd, canvas.End, math.Min(b.x0, plotEnd-tw), plotEnd
		}
		bars = append(bars, b)
	}
	sort.SliceStable(bars, func(i, j int) bool { return bars[i].extent0 < bars[j].extent0 })
	var rowEnd []float64
	for i := range bars {
		row := -1
		for r, end := range rowEnd {
			if bars[i].extent0 >= end+6 {
				row = r
				break
			}
		}
		if row < 0 {
			row = len(rowEnd)
			rowEnd = append(rowEnd, 0)
		}
		bars[i].row, rowEnd[row] = row, bars[i].extx1
	}
	return bars, max(len(rowEnd), 1)
}

// TimelineDrawing draws the run's timeline once, for both encoders: fault
// windows, labelled; client outcomes per second, stacked; per upstream the
// calls it received (ok/failed per second), probes, health checks and the
// black-box open intervals; the breaker state the gateway's metrics
// reported; the gateway's health; an axis in run time, UTC and the run's
// local zone; and a legend of every kind of mark drawn. It is a pure
// function of the analysis (its Timeline).
func TimelineDrawing(a *analysis.Analysis, o SVGOptions) *canvas.Drawing {
	tl := a.Timeline
	if tl == nil {
		tl = &analysis.Timeline{Seconds: 1, Client: map[string][]int32{}, Upstreams: map[string]*analysis.UpstreamTimeline{}}
	}
	width := float64(o.Width)
	if width <= 0 {
		width = 1200
	}
	w := &tlw{d: canvas.New(width, 0), left: 150, used: map[string]bool{}, origin: o.Origin}
	w.plotW = width - w.left - 20
	w.from, w.to = o.From, o.To
	if w.to <= 0 {
		w.to = math.Max(a.Run.DurationS, 1)
	}
	clock := a.Run.Clock()
	ups := slices.Sorted(maps.Keys(tl.Upstreams))
	title := o.Title
	if title == "" {
		title = fmt.Sprintf("%s — %s", a.Run.Scenario, a.Run.RunID)
	}
	w.y = 4
	w.d.Text(w.left, w.y+14, fitText(title, 13, w.plotW), canvas.TextStyle{Size: 13, Bold: true, Fill: Hex(colText)})
	w.y += 26
	gridTop, gridAt := w.y, w.d.Len()

	w.faultLanes(tl, ups)
	w.y += 4
	b := w.binning()
	w.clientLane(tl, b)
	for _, u := range ups {
		w.upstreamLane(a, u, tl.Upstreams[u], b)
	}
	if len(tl.Health) > 0 {
		w.label("gateway health", 10)
		w.states(tl.Health, 10, "gateway", "gateway ")
		w.y += 16
	}
	w.warmup(tl, gridTop)
	w.endMarks(a, gridTop)
	w.axis(clock, o.Origin, gridTop, gridAt)
	w.legend()
	w.d.H = math.Ceil(w.y)
	return w.d
}

// warmup greys the warm-up's span (before time zero, not scored) over
// every lane from top, labelled at its top.
func (w *tlw) warmup(tl *analysis.Timeline, top float64) {
	wu := tl.Warmup
	if wu == nil || wu.EndS <= w.from || wu.StartS >= w.to {
		return
	}
	x0, x1 := w.x(max(wu.StartS, w.from)), w.x(min(wu.EndS, w.to))
	c := Hex(colWarmup)
	c.A = warmupAlpha
	w.d.Rect(x0, top, x1-x0, w.y-top, canvas.Style{Fill: c, Class: "warmup",
		Title: fmt.Sprintf("warm-up %s–%s, not scored", num.Sec(wu.StartS-w.origin), num.Sec(wu.EndS-w.origin))})
	w.d.Text(x0+3, top+11, fitText("warm-up (not scored)", 10, x1-x0-6), canvas.TextStyle{Size: 10, Fill: Hex(colTick), Class: "warmup-label"})
	w.used["warmup"] = true
}

// faultLanes draws the fault windows: one lane per faulted upstream (in
// ups' order), labelled bars, a colour per fault.
func (w *tlw) faultLanes(tl *analysis.Timeline, ups []string) {
	fc := map[string]string{}
	for _, f := range tl.Faults {
		if _, ok := fc[f.Name]; !ok {
			fc[f.Name] = FaultColour[len(fc)%len(FaultColour)]
		}
	}
	const barH, rowH = 16.0, 19.0
	for _, u := range ups {
		var fs []analysis.FaultWindow
		for _, f := range tl.Faults {
			if f.Upstream == u {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			continue
		}
		bars, rows := w.layoutFaults(fs, fc)
		w.label("fault · "+u, float64(rows)*rowH-3)
		for _, b := range bars {
			y := w.y + float64(b.row)*rowH
			w.d.Rect(b.x0, y, b.x1-b.x0, barH, canvas.Style{Fill: Hex(b.colour), Class: "fault",
				Title: fmt.Sprintf("%s (%s) on %s, %s–%s", b.f.Name, b.f.Type, u, num.Sec(b.f.StartS-w.origin), num.Sec(b.f.EndS-w.origin))})
			fill := Hex(colText)
			if b.inside {
				fill = canvas.ReadableOn(Hex(b.colour))
			}
			w.d.Text(b.tx, y+12, b.text, canvas.TextStyle{Size: 11, Fill: fill, Anchor: b.anchor, Class: "fault-label"})
			w.used["fault"] = true
		}
		w.y += float64(rows)*rowH + 2
	}
}

// bins are the timeline's time bins: one per second, or per seconds per
// bin when the plot is narrow; n of them from w.from.
type bins struct {
	w      *tlw
	per, n int
}

func (w *tlw) binning() bins {
	secs := int(math.Min(math.Ceil(w.to-w.from), analysis.MaxTimelineSeconds))
	per := max(1, int(math.Ceil(float64(secs)/(w.plotW/2))))
	return bins{w: w, per: per, n: (secs + per - 1) / per}
}

// x is bin i's left edge and width.
func (b bins) x(i int) (float64, float64) {
	t0 := b.w.from + float64(i*b.per)
	x0, x1 := b.w.x(t0), b.w.x(t0+float64(b.per))
	return x0, math.Max(x1-x0-0.3, 0.6)
}

// sum is the per-second series s summed over bin i.
func (b bins) sum(s []int32, i int) int32 {
	var n int32
	s0 := int(b.w.from) + i*b.per
	for k := max(s0, 0); k < min(s0+b.per, len(s)); k++ {
		n += s[k]
	}
	return n
}

// lane draws a lane's background, h high.
func (w *tlw) lane(h float64) {
	w.d.Rect(w.left, w.y, w.plotW, h, canvas.Style{Fill: Hex(colLaneBG), Stroke: Hex(colLaneEdge), StrokeWidth: 1})
}

// clientLane draws the client outcomes per bin, stacked.
func (w *tlw) clientLane(tl *analysis.Timeline, b bins) {
	const ch = 70.0
	var peak int32 = 1
	for i := 0; i < b.n; i++ {
		var tot int32
		for _, g := range analysis.ClientGroups {
			tot += b.sum(tl.Client[g], i)
		}
		peak = max(peak, tot)
	}
	w.label(fmt.Sprintf("clients/%s (max %d)", num.Sec(float64(b.per)), peak), ch)
	w.lane(ch)
	for i := 0; i < b.n; i++ {
		x, bw := b.x(i)
		base := w.y + ch
		for _, g := range analysis.ClientGroups {
			n := b.sum(tl.Client[g], i)
			if n == 0 {
				continue
			}
			h := float64(n) / float64(peak) * ch
			base -= h
			w.rect(x, base, bw, h, groupColour[g], "")
			w.used[g] = true
		}
	}
	w.y += ch + 8
}

// shift is *p + d, nil for nil.
func shift(p *float64, d float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p + d
	return &v
}

// upstreamLane draws one upstream: its black-box open bands, the
// Retry-After pauses it asked for, its calls and health checks per bin,
// its probes, and the state its metrics reported.
func (w *tlw) upstreamLane(a *analysis.Analysis, u string, ut *analysis.UpstreamTimeline, b bins) {
	const uh = 46.0
	w.label(u, uh)
	w.lane(uh)
	for _, op := range ut.Open {
		if op.EndS < w.from || op.StartS > w.to {
			continue
		}
		x0, x1 := w.x(op.StartS), w.x(op.EndS)
		// The close in the one text the reports give it: its range when
		// the evidence only bounds it.
		end := num.Sec(op.EndS - w.origin)
		if eb := op.EndBounds; eb != nil && eb.Min != nil {
			end = "closed between " + num.Sec(*eb.Min-w.origin) + " and " + num.SecP(shift(eb.Max, -w.origin))
			if eb.Max == nil {
				end = "closed at " + num.Sec(*eb.Min-w.origin) + " or later"
			}
		}
		w.d.Rect(x0, w.y, math.Max(x1-x0, 1), uh, canvas.Style{Fill: Hex(colOpenBand), Class: "open",
			Title: fmt.Sprintf("black-box open %s–%s", num.Sec(op.StartS-w.origin), end)})
		w.used["open"] = true
	}
	w.shedding(a.Upstreams[u], uh)
	w.pauses(a.Upstreams[u])
	w.failovers(a, u)
	w.calls(ut, b, uh)
	for _, p := range ut.Probes {
		if p.AtS < w.from || p.AtS > w.to {
			continue
		}
		x := w.x(p.AtS)
		c, k := colProbeOK, "probe_ok"
		if !p.OK {
			c, k = colProbeFail, "probe_failed"
		}
		w.d.Polygon(diamond(x, w.y-1), canvas.Style{Fill: Hex(c), Stroke: canvas.White, StrokeWidth: 0.5, Class: "probe",
			Title: fmt.Sprintf("%s probe at %s: %s", p.Kind, num.Sec(p.AtS-w.origin), okWord(p.OK))})
		w.used[k] = true
	}
	w.giveUps(ut, uh)
	w.y += uh + 2
	if len(ut.Metrics) > 0 {
		w.label("metrics · "+u, 8)
		w.states(ut.Metrics, 8, "metrics", "metrics: ")
		w.y += 12
	}
	w.y += 6
}

// shedding shades, over an upstream's lane, each window of an episode
// read as load shedding in which requests were turned away, the more
// opaque the larger the refused share: a shedder has no open to band.
func (w *tlw) shedding(ua *analysis.UpstreamAnalysis, uh float64) {
	if ua == nil {
		return
	}
	for _, ep := range ua.Episodes {
		sd := ep.Shedding
		if sd == nil {
			continue
		}
		for _, sw := range sd.Windows {
			if sw.Refused == 0 || sw.Requests == 0 || sw.EndS < w.from || sw.StartS > w.to {
				continue
			}
			share := float64(sw.Refused) / float64(sw.Requests)
			x0, x1 := w.x(math.Max(sw.StartS, w.from)), w.x(math.Min(sw.EndS, w.to))
			c := Hex(colShed)
			c.A = uint8(0x40 + share*0xbf)
			w.d.Rect(x0, w.y, math.Max(x1-x0, 1), uh, canvas.Style{Fill: c, Class: "shed",
				Title: fmt.Sprintf("load shed %s–%s: %d of %s turned away (%.0f %%)", num.Sec(sw.StartS-w.origin), num.Sec(sw.EndS-w.origin),
					sw.Refused, num.Plural(sw.Requests, "request"), 100*share)})
			w.used["shed"] = true
		}
	}
}

// pauses draws the Retry-After pauses an upstream asked for, as a band
// under its lane's top edge: calls inside one are violations.
func (w *tlw) pauses(ua *analysis.UpstreamAnalysis) {
	if ua == nil {
		return
	}
	for _, ep := range ua.Episodes {
		for _, ra := range ep.RetryAfter {
			if ra.AtS+ra.RetryAfterS < w.from || ra.AtS > w.to {
				continue
			}
			x0, x1 := w.x(ra.AtS), w.x(ra.AtS+ra.RetryAfterS)
			w.d.Rect(x0, w.y+1, math.Max(x1-x0, 1), 3, canvas.Style{Fill: Hex(colPause + "8c"),
				Title: fmt.Sprintf("Retry-After %s from %s", num.Sec(ra.RetryAfterS), num.Sec(ra.AtS-w.origin))})
			w.used["pause"] = true
		}
	}
}

// failovers draws, under the top edge of a fallback upstream's lane, each
// span in which it served a faulted upstream's requests: from the
// failover to the fail-back (else its last call for them).
func (w *tlw) failovers(a *analysis.Analysis, u string) {
	for _, p := range slices.Sorted(maps.Keys(a.Upstreams)) {
		for _, ep := range a.Upstreams[p].Episodes {
			f := ep.Failover
			if f == nil || f.Fallback != u || f.FailedOverAtS == nil {
				continue
			}
			end := *f.FailedOverAtS
			if f.LastFallbackAtS != nil {
				end = *f.LastFallbackAtS
			}
			if f.FailedBackAtS != nil {
				end = *f.FailedBackAtS
			}
			if end < w.from || *f.FailedOverAtS > w.to {
				continue
			}
			x0, x1 := w.x(*f.FailedOverAtS), w.x(end)
			w.d.Rect(x0, w.y+5, math.Max(x1-x0, 1), 3, canvas.Style{Fill: Hex(colFailover), Class: "failover",
				Title: fmt.Sprintf("serving %s's requests %s–%s (%s)", p, num.Sec(*f.FailedOverAtS-w.origin), num.Sec(end-w.origin),
					num.Plural(f.Served, "request"))})
			w.used["failover"] = true
		}
	}
}

// giveUps marks, at the bottom edge of an upstream's lane, each moment
// the gateway was seen hanging up on a call to it.
func (w *tlw) giveUps(ut *analysis.UpstreamTimeline, uh float64) {
	for _, at := range ut.GiveUps {
		if at < w.from || at > w.to {
			continue
		}
		w.d.Polygon(triangle(w.x(at), w.y+uh+1), canvas.Style{Fill: Hex(colGiveUp), Class: "give-up",
			Title: fmt.Sprintf("the gateway gave up on a call at %s", num.Sec(at-w.origin))})
		w.used["give_up"] = true
	}
}

// triangle is a give-up mark pointing up at (x, y), its base below.
func triangle(x, y float64) []canvas.Point {
	return []canvas.Point{{X: x, Y: y - 5}, {X: x + 3.5, Y: y + 1}, {X: x - 3.5, Y: y + 1}}
}

// calls draws an upstream's calls per bin (ok and failed, stacked) and
// its health checks under them, in a lane uh high.
func (w *tlw) calls(ut *analysis.UpstreamTimeline, b bins, uh float64) {
	var up int32 = 1
	for i := 0; i < b.n; i++ {
		up = max(up, b.sum(ut.OK, i)+b.sum(ut.Failed, i))
	}
	callH := uh - 16
	for i := 0; i < b.n; i++ {
		x, bw := b.x(i)
		ok, bad := b.sum(ut.OK, i), b.sum(ut.Failed, i)
		base := w.y + 8 + callH
		for _, p := range []struct {
			n    int32
			c, k string
		}{{ok, groupColour["ok"], "ok"}, {bad, groupColour["http_5xx"], "http_5xx"}} {
			if p.n == 0 {
				continue
			}
			h := float64(p.n) / float64(up) * callH
			base -= h
			w.rect(x, base, bw, h, p.c, "")
			w.used[p.k] = true
		}
		if hok, hbad := b.sum(ut.HealthOK, i), b.sum(ut.HealthFailed, i); hok+hbad > 0 {
			c, k := colHealthOK, "health_ok"
			if hbad > 0 {
				c, k = colHealthFail, "health_failed"
			}
			w.rect(x, w.y+uh-5, math.Max(bw, 1.5), 4, c, "")
			w.used[k] = true
		}
	}
}

// axis draws the time axis: ticks in run time and, when the run's start is
// known, the same ticks in UTC and in the run's local zone.
func (w *tlw) axis(clock analysis.WallClock, origin, gridTop float64, gridAt int) {
	span := w.to - w.from
	step := niceStep(span / (w.plotW / 90))
	w.d.Line(w.left, w.y, w.left+w.plotW, w.y, 1, Hex(colAxis))
	type tick struct{ x, v float64 }
	var ticks []tick
	first := math.Ceil((w.from-origin)/step) * step
	for v := first; v+origin <= w.to+1e-9; v += step {
		ticks = append(ticks, tick{w.x(v + origin), v})
	}
	// The grid goes under the lanes, drawn now that their height is known.
	grid := canvas.New(0, 0)
	for _, t := range ticks {
		grid.Line(t.x, gridTop, t.x, w.y+4, 1, Hex(colGrid))
	}
	w.d.Insert(gridAt, grid)
	rows := []struct {
		name string
		f    func(v float64) string
	}{{"run time", axisLabel}}
	if clock.Known() {
		rows = append(rows, struct {
			name string
			f    func(v float64) string
		}{"UTC", func(v float64) string { return clock.UTC(v+origin, false) }})
		if clock.Local != nil {
			zone := clock.Local.String()
			if zone == "Local" || zone == "" {
				zone = clock.ZoneAbbrev(w.from)
			}
			rows = append(rows, struct {
				name string
				f    func(v float64) string
			}{zone, func(v float64) string { return clock.LocalTime(v+origin, false) }})
		}
	}
	for i, r := range rows {
		y := w.y + 15 + float64(i)*14
		w.text(w.left-6, y, fitText(r.name, 10, w.left-10), 10, colLabel, canvas.End)
		for _, t := range ticks {
			// Labels at the plot's edges are kept inside it, clear of
			// the row names.
			txt := r.f(t.v)
			half := canvas.TextWidth(txt, 10, false) / 2
			switch {
			case t.x-half < w.left:
				w.text(w.left, y, txt, 10, colTick, canvas.Start)
			case t.x+half > w.left+w.plotW+18:
				w.text(w.left+w.plotW+18, y, txt, 10, colTick, canvas.End)
			default:
				w.text(t.x, y, txt, 10, colTick, canvas.Middle)
			}
		}
	}
	w.y += 15 + float64(len(rows)-1)*14 + 12
}

// endMarks draws, across every lane, what ended the run's evidence early:
// the harness's longest stall (a band), the moment the gateway under test
// stopped answering and the moment the run was interrupted (lines), each
// with its sentence as a tooltip.
func (w *tlw) endMarks(a *analysis.Analysis, top float64) {
	h := w.y - top
	in := func(t float64) bool { return t >= w.from && t <= w.to }
	if st := a.Replay.Stall; st != nil && in(st.FromS) {
		x0, x1 := w.x(st.FromS), w.x(math.Min(st.ToS, w.to))
		w.d.Rect(x0, top, math.Max(x1-x0, 1), h, canvas.Style{Fill: Hex(colStall + "73"), Title: st.Text(), Class: "stall"})
		w.used["stall"] = true
	}
	line := func(t float64, colour, title, class, key string) {
		if !in(t) {
			return
		}
		w.d.Rect(w.x(t)-1, top, 2, h, canvas.Style{Fill: Hex(colour), Title: title, Class: class})
		w.used[key] = true
	}
	if g := a.Run.GatewayGone; g != nil {
		line(g.AtS, colGone, g.Text(), "gateway-gone", "gateway_gone")
	}
	if at := a.Run.InterruptedAtS; at != nil {
		line(*at, groupColour["interrupted"], a.Interrupted(), "interrupted-at", "interrupted_at")
	}
}

// legendItems are every kind of mark the timeline can draw, in legend
// order, keyed as timelineDrawing records them in used.
var legendItems = []struct {
	key, text, colour string
	shape             string // "box", "diamond", "band", "bar"
}{
	{"fault", "fault window (named on or beside the bar)", FaultColour[0], "box"},
	{"warmup", "warm-up before time zero (not scored)", colWarmup, "box"},
	{"ok", "ok / ok call", groupColour["ok"], "box"},
	{"fast_fail", "fast-fail", groupColour["fast_fail"], "box"},
	{"http_4xx", "4xx", groupColour["http_4xx"], "box"},
	{"http_5xx", "5xx / failed call", groupColour["http_5xx"], "box"},
	{"transport", "transport error", groupColour["transport"], "box"},
	{"interrupted", "cut by the interruption", groupColour["interrupted"], "box"},
	{"dropped", "dropped (not sent)", groupColour["dropped"], "box"},
	{"open", "breaker open (black box)", colOpenBand, "box"},
	{"shed", "load shed (darker: a larger share turned away)", colShed, "box"},
	{"probe_ok", "probe ok", colProbeOK, "diamond"},
	{"probe_failed", "probe failed", colProbeFail, "diamond"},
	{"health_ok", "health checks ok", colHealthOK, "bar"},
	{"health_failed", "health check failed", colHealthFail, "bar"},
	{"pause", "Retry-After pause", colPause, "band"},
	{"failover", "serving a faulted upstream's requests (failover)", colFailover, "band"},
	{"give_up", "the gateway gave up on a call", colGiveUp, "triangle"},
	{"metrics_closed", "metrics: closed", stateColour["closed"], "box"},
	{"metrics_half_open", "metrics: half-open", stateColour["half_open"], "box"},
	{"metrics_open", "metrics: open", stateColour["open"], "box"},
	{"gateway_healthy", "gateway healthy", stateColour["healthy"], "box"},
	{"gateway_unhealthy", "gateway unhealthy", stateColour["unhealthy"], "box"},
	{"stall", "the harness stalled (nothing sent)", colStall, "band"},
	{"gateway_gone", "the gateway stopped answering", colGone, "bar"},
	{"interrupted_at", "the run interrupted", groupColour["interrupted"], "bar"},
}

// legend explains every kind of mark the drawing holds, wrapping rows.
func (w *tlw) legend() {
	x, right := w.left, w.left+w.plotW
	for _, it := range legendItems {
		if !w.used[it.key] {
			continue
		}
		iw := 14 + canvas.TextWidth(it.text, 11, false) + 14
		if x+iw > right && x > w.left {
			x, w.y = w.left, w.y+16
		}
		c := Hex(it.colour)
		switch it.shape {
		case "diamond":
			w.d.Polygon(diamond(x+5, w.y), canvas.Style{Fill: c})
		case "triangle":
			w.d.Polygon(triangle(x+5, w.y+8), canvas.Style{Fill: c})
		case "band":
			w.d.Rect(x, w.y+3, 10, 4, canvas.Style{Fill: c})
		case "bar":
			w.d.Rect(x, w.y+6, 10, 4, canvas.Style{Fill: c})
		default:
			w.d.Rect(x, w.y, 10, 10, canvas.Style{Fill: c, Stroke: Hex(colLaneEdge), StrokeWidth: 0.5})
		}
		w.d.Text(x+14, w.y+9.5, it.text, canvas.TextStyle{Size: 11, Fill: Hex(colTick), Class: "legend"})
		x += iw
	}
	w.y += 20
}

// diamond is a probe mark with its top at (x, y).
func diamond(x, y float64) []canvas.Point {
	return []canvas.Point{{X: x, Y: y}, {X: x + 4, Y: y + 5}, {X: x, Y: y + 10}, {X: x - 4, Y: y + 5}}
}

func okWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "failed"
}

// niceStep rounds a raw tick step up to 1, 2, 5, 10, 15, 30 s, 1, 2, 5,
// 10, 15, 30 min...
func niceStep(raw float64) float64 {
	steps := []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200}
	i := sort.SearchFloat64s(steps, raw)
	if i >= len(steps) {
		return steps[len(steps)-1] * math.Ceil(raw/steps[len(steps)-1])
	}
	return steps[i]
}

// axisLabel is a tick's text: num.Sec, but the origin is a bare "0" (a
// zero needs no unit, and "0 ms" would read as the scale of a seconds
// axis).
func axisLabel(v float64) string {
	if v == 0 {
		return "0"
	}
	return num.Sec(v)
}
