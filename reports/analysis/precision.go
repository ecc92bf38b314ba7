package analysis

import "math"

// Precision tallies how precisely an analysis states the breaker figures
// of its episodes that opened: exact (one value every reading of the
// evidence gives), bounded (a range with both ends), unknown (null, or a
// range with an open end). It reads only run.json's fields, so a run.json
// read back gives the same tally; it is how the model's progress is
// measured (docs/analysis.md, "Measuring the model").
type Precision struct {
	Exact   int `json:"exact"`
	Bounded int `json:"bounded"`
	Unknown int `json:"unknown"`
	// OneSided counts the unknowns that have one end (at least, or at
	// most, so much).
	OneSided int `json:"one_sided"`
}

// Add sums two tallies.
func (p Precision) Add(q Precision) Precision {
	return Precision{p.Exact + q.Exact, p.Bounded + q.Bounded, p.Unknown + q.Unknown, p.OneSided + q.OneSided}
}

// Precision is the tally over every episode of every upstream.
func (a *Analysis) Precision() Precision {
	var p Precision
	for _, ua := range a.Upstreams {
		for _, ep := range ua.Episodes {
			p = p.Add(ep.Precision())
		}
	}
	return p
}

// Precision tallies one episode's breaker figures (none when it never
// opened: nothing to state). The figures counted are those a breaker
// that opened always has: when it opened and after how many failures,
// how often it probed, and, once it closed, when, after how many
// successes (not for shapes that count none) and how long it was open;
// and the first cooldown when it probed.
func (ep *Episode) Precision() Precision {
	var p Precision
	if !ep.Opened {
		return p
	}
	p.tally(ep.OpenedAfterS, ep.OpenedAfterBoundsS)
	p.tally(i64f(ep.FailuresBeforeOpen), ep.FailuresBeforeOpenBounds)
	p.tally(Ptr(float64(ep.Probes)), ep.probesBounds())
	if ep.Probes > 0 {
		p.tally(ep.FirstProbeAfterOpen, ep.FirstProbeAfterOpenBoundsS)
	}
	if !ep.Closed {
		return p
	}
	var closeB *Bounds
	if ep.ClosedAfterRecoveryS != nil && ep.CloseBoundsS != nil {
		closeB = ep.CloseBoundsS // moments, not offsets: only the ends' presence matters here
	}
	p.tally(ep.ClosedAfterRecoveryS, closeB)
	if s := lastShape(ep); s != ShapeExpiry && s != ShapeRamp {
		p.tally(intf(ep.SuccessesToClose), ep.SuccessesToCloseBounds)
	}
	p.tally(ep.OpenTimeS, ep.OpenTimeBoundsS)
	return p
}

// probesBounds is the probe count's range: open above when a cycle says
// more calls may have been probes (maybe_probe), else exact (nil).
func (ep *Episode) probesBounds() *Bounds {
	for _, cy := range ep.Cycles {
		if cy.MaybeProbe {
			return &Bounds{Min: Ptr(float64(ep.Probes))}
		}
	}
	return nil
}

func (p *Precision) tally(v *float64, b *Bounds) {
	switch {
	case v == nil && b == nil:
		p.Unknown++
	case v == nil && b.Min != nil && b.Max != nil:
		// No estimate, but a range (successes_to_close_bounds).
		p.Bounded++
	case v == nil:
		p.Unknown++
		p.OneSided++
	case b == nil:
		p.Exact++
	case b.Min == nil && b.Max == nil:
		p.Unknown++
	case b.Min == nil || b.Max == nil || math.IsInf(*b.Max, 0):
		p.Unknown++
		p.OneSided++
	case *b.Min == *b.Max:
		p.Exact++
	default:
		p.Bounded++
	}
}
