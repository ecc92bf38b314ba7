package reports

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"sort"
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

// lane colours, shared with the HTML legend.
var groupColour = map[string]string{
	"ok": "#4caf50", "fast_fail": "#ff9800", "http_4xx": "#fdd835", "http_5xx": "#e53935",
	"transport": "#8e24aa", "dropped": "#9e9e9e",
}

var stateColour = map[string]string{"closed": "#c8e6c9", "half_open": "#ffcc80", "open": "#ef9a9a",
	"healthy": "#c8e6c9", "unhealthy": "#ef9a9a"}

var faultColour = []string{"#e57373", "#ba68c8", "#64b5f6", "#ffb74d", "#4db6ac", "#a1887f"}

type svgW struct {
	b           bytes.Buffer
	left, plotW float64
	from, to    float64
	y           float64
	width       int
}

func (w *svgW) x(t float64) float64 {
	if w.to <= w.from {
		return w.left
	}
	return w.left + (math.Min(math.Max(t, w.from), w.to)-w.from)/(w.to-w.from)*w.plotW
}

func (w *svgW) f(format string, args ...any) { fmt.Fprintf(&w.b, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

func (w *svgW) label(text string, h float64) {
	w.f(`<text class="lane" x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", int(w.left)-6, w.y+h/2+4, esc(text))
}

// TimelineSVG renders the run's timeline: fault windows; client outcomes per
// second, stacked; per upstream the calls it received (ok/failed per
// second), probes, health checks and the black-box open intervals; the
// breaker state the gateway's metrics reported; the gateway's health. It is
// a pure function of the analysis (its Timeline) and escapes every name.
func TimelineSVG(a *Analysis, o SVGOptions) []byte {
	tl := a.Timeline
	if tl == nil {
		tl = &Timeline{Seconds: 1, Client: map[string][]int32{}, Upstreams: map[string]*UpstreamTimeline{}}
	}
	w := &svgW{width: o.Width, left: 150}
	if w.width <= 0 {
		w.width = 1200
	}
	w.plotW = float64(w.width) - w.left - 20
	w.from, w.to = o.From, o.To
	if w.to <= 0 {
		w.to = math.Max(a.Run.DurationS, 1)
	}
	ups := sortedKeys(tl.Upstreams)
	var faulted []string
	for _, u := range ups {
		for _, f := range tl.Faults {
			if f.Upstream == u {
				faulted = append(faulted, u)
				break
			}
		}
	}
	var body svgW
	body = *w
	w = &body
	title := o.Title
	if title == "" {
		title = fmt.Sprintf("%s — %s", a.Run.Scenario, a.Run.RunID)
	}
	w.y = 4
	w.f(`<text class="title" x="%d" y="%.1f">%s</text>`+"\n", int(w.left), w.y+14, esc(title))
	w.y += 26

	// Fault windows.
	fc := map[string]string{}
	for i, f := range tl.Faults {
		if _, ok := fc[f.Name]; !ok {
			fc[f.Name] = faultColour[i%len(faultColour)]
		}
	}
	for _, u := range faulted {
		w.label("fault · "+u, 14)
		for _, f := range tl.Faults {
			if f.Upstream != u || f.EndS < w.from || f.StartS > w.to {
				continue
			}
			x0, x1 := w.x(f.StartS), w.x(f.EndS)
			w.f(`<rect class="fault" x="%.1f" y="%.1f" width="%.1f" height="14" fill="%s"><title>%s (%s) %s–%s</title></rect>`+"\n",
				x0, w.y, math.Max(x1-x0, 1), fc[f.Name], esc(f.Name), esc(f.Type), fmtDur(f.StartS-o.Origin), fmtDur(f.EndS-o.Origin))
			if x1-x0 > float64(7*len(f.Name)) {
				w.f(`<text class="inbar" x="%.1f" y="%.1f">%s</text>`+"\n", x0+3, w.y+11, esc(f.Name))
			}
		}
		w.y += 18
	}
	w.y += 4

	// Bins: one per second, or several seconds per bin when narrow.
	bins := int(math.Min(math.Ceil(w.to-w.from), maxTimelineSeconds))
	per := max(1, int(math.Ceil(float64(bins)/(w.plotW/2))))
	nb := (bins + per - 1) / per
	binX := func(i int) (float64, float64) {
		t0 := w.from + float64(i*per)
		x0, x1 := w.x(t0), w.x(t0+float64(per))
		return x0, math.Max(x1-x0-0.3, 0.6)
	}
	sum := func(s []int32, i int) int32 {
		var n int32
		s0 := int(w.from) + i*per
		for k := max(s0, 0); k < min(s0+per, len(s)); k++ {
			n += s[k]
		}
		return n
	}

	// Client outcomes per second, stacked.
	const ch = 70.0
	var peak int32 = 1
	for i := 0; i < nb; i++ {
		var tot int32
		for _, g := range ClientGroups {
			tot += sum(tl.Client[g], i)
		}
		peak = max(peak, tot)
	}
	w.label(fmt.Sprintf("clients/%ds (max %d)", per, peak), ch)
	w.f(`<rect class="bg" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`+"\n", w.left, w.y, w.plotW, ch)
	for i := 0; i < nb; i++ {
		x, bw := binX(i)
		base := w.y + ch
		for _, g := range ClientGroups {
			n := sum(tl.Client[g], i)
			if n == 0 {
				continue
			}
			h := float64(n) / float64(peak) * ch
			base -= h
			w.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, base, bw, h, groupColour[g])
		}
	}
	w.y += ch + 8

	// Upstreams.
	const uh = 46.0
	for _, u := range ups {
		ut := tl.Upstreams[u]
		w.label(u, uh)
		w.f(`<rect class="bg" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`+"\n", w.left, w.y, w.plotW, uh)
		for _, op := range ut.Open {
			if op.EndS < w.from || op.StartS > w.to {
				continue
			}
			x0, x1 := w.x(op.StartS), w.x(op.EndS)
			w.f(`<rect class="open" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>black-box open %s–%s</title></rect>`+"\n",
				x0, w.y, math.Max(x1-x0, 1), uh, fmtDur(op.StartS-o.Origin), fmtDur(op.EndS-o.Origin))
		}
		// Retry-After pauses the upstream asked for, as a band under the
		// lane's top edge: calls inside one are violations.
		if ua := a.Upstreams[u]; ua != nil {
			for _, ep := range ua.Episodes {
				for _, ra := range ep.RetryAfter {
					if ra.AtS+ra.RetryAfterS < w.from || ra.AtS > w.to {
						continue
					}
					x0, x1 := w.x(ra.AtS), w.x(ra.AtS+ra.RetryAfterS)
					w.f(`<rect class="pause" x="%.1f" y="%.1f" width="%.1f" height="3"><title>Retry-After %s from %s</title></rect>`+"\n",
						x0, w.y+1, math.Max(x1-x0, 1), fmtDur(ra.RetryAfterS), fmtDur(ra.AtS-o.Origin))
				}
			}
		}
		var up int32 = 1
		for i := 0; i < nb; i++ {
			up = max(up, sum(ut.OK, i)+sum(ut.Failed, i))
		}
		barH := uh - 16
		for i := 0; i < nb; i++ {
			x, bw := binX(i)
			ok, bad := sum(ut.OK, i), sum(ut.Failed, i)
			base := w.y + 8 + barH
			for _, p := range []struct {
				n int32
				c string
			}{{ok, groupColour["ok"]}, {bad, groupColour["http_5xx"]}} {
				if p.n == 0 {
					continue
				}
				h := float64(p.n) / float64(up) * barH
				base -= h
				w.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, base, bw, h, p.c)
			}
			if hok, hbad := sum(ut.HealthOK, i), sum(ut.HealthFailed, i); hok+hbad > 0 {
				c := "#607d8b"
				if hbad > 0 {
					c = "#b71c1c"
				}
				w.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="4" fill="%s"/>`+"\n", x, w.y+uh-5, math.Max(bw, 1.5), c)
			}
		}
		for _, p := range ut.Probes {
			if p.AtS < w.from || p.AtS > w.to {
				continue
			}
			x := w.x(p.AtS)
			c := "#1565c0"
			if !p.OK {
				c = "#e65100"
			}
			w.f(`<path class="probe" d="M%.1f %.1f l4 5 l-4 5 l-4 -5 z" fill="%s"><title>%s probe at %s: %s</title></path>`+"\n",
				x, w.y-1, c, esc(p.Kind), fmtDur(p.AtS-o.Origin), okWord(p.OK))
		}
		w.y += uh + 2
		if len(ut.Metrics) > 0 {
			w.label("metrics · "+u, 8)
			for _, m := range ut.Metrics {
				if m.EndS < w.from || m.StartS > w.to {
					continue
				}
				x0, x1 := w.x(m.StartS), w.x(m.EndS)
				w.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="8" fill="%s"><title>metrics: %s</title></rect>`+"\n",
					x0, w.y, math.Max(x1-x0, 0.5), stateColour[m.State], esc(m.State))
			}
			w.y += 12
		}
		w.y += 6
	}
	if len(tl.Health) > 0 {
		w.label("gateway health", 10)
		for _, h := range tl.Health {
			if h.EndS < w.from || h.StartS > w.to {
				continue
			}
			x0, x1 := w.x(h.StartS), w.x(h.EndS)
			w.f(`<rect x="%.1f" y="%.1f" width="%.1f" height="10" fill="%s"><title>%s</title></rect>`+"\n",
				x0, w.y, math.Max(x1-x0, 0.5), stateColour[h.State], esc(h.State))
		}
		w.y += 16
	}

	// Axis.
	span := w.to - w.from
	step := niceStep(span / (w.plotW / 90))
	w.f(`<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", w.left, w.y, w.left+w.plotW, w.y)
	first := math.Ceil((w.from-o.Origin)/step) * step
	for v := first; v+o.Origin <= w.to+1e-9; v += step {
		x := w.x(v + o.Origin)
		w.f(`<line class="tick" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", x, 30.0, x, w.y+4)
		w.f(`<text class="tickl" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, w.y+16, axisLabel(v))
	}
	w.y += 24
	// Legend.
	lx := w.left
	for _, it := range []struct{ name, c string }{
		{"ok", groupColour["ok"]}, {"fast-fail", groupColour["fast_fail"]}, {"4xx", groupColour["http_4xx"]},
		{"5xx / failed call", groupColour["http_5xx"]}, {"transport error", groupColour["transport"]}, {"dropped", groupColour["dropped"]},
		{"black-box open", "#f8d7da"}, {"probe ok", "#1565c0"}, {"probe failed", "#e65100"}, {"health check", "#607d8b"},
		{"Retry-After pause", "#f9a825"},
	} {
		w.f(`<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text class="legend" x="%.1f" y="%.1f">%s</text>`+"\n", lx, w.y, it.c, lx+13, w.y+9, it.name)
		lx += 22 + float64(len(it.name))*6.2
	}
	w.y += 18

	var out bytes.Buffer
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 %d %.0f" width="%d" height="%.0f" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="11">`+"\n",
		w.width, w.y, w.width, w.y)
	out.WriteString(`<style>.title{font-size:13px;font-weight:600;fill:#222}.lane{fill:#333}.tickl,.legend{fill:#444}.inbar{fill:#fff;font-size:10px}` +
		`.bg{fill:#fafafa;stroke:#e0e0e0}.open{fill:#f8d7da}.axis{stroke:#555}.tick{stroke:#000;stroke-opacity:.08}.probe{stroke:#fff;stroke-width:.5}.pause{fill:#f9a825;fill-opacity:.55}</style>` + "\n")
	out.Write(w.b.Bytes())
	out.WriteString("</svg>\n")
	return out.Bytes()
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

func axisLabel(v float64) string {
	if v == 0 {
		return "0"
	}
	sign := ""
	if v < 0 {
		sign, v = "−", -v
	}
	if v >= 60 && math.Mod(v, 60) == 0 {
		return fmt.Sprintf("%s%.0fm", sign, v/60)
	}
	if v >= 60 {
		return fmt.Sprintf("%s%dm%02.0fs", sign, int(v)/60, math.Mod(v, 60))
	}
	return fmt.Sprintf("%s%.0fs", sign, v)
}
