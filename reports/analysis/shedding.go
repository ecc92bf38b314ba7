package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/halfopen/rehearse/reports/num"
)

// Load shedding: a gateway that turns away a share of the requests that
// follows the failures (adaptive throttling, a probabilistic shedder) has
// no open, half-open or closed state, so it has no cycles, probes or
// cooldowns to report. It is told from a breaker by feasibility: the
// episode is read as shedding when every breaker hypothesis is ruled out
// by a witness in the journal and the shedder's one requirement holds (it
// turned nothing away before a failure):
//   - a breaker that opens on a failure, one whose failures expire, one
//     gated by health checks, and a half-open that limits the calls in
//     flight: shedNonRamp (a refusal with nothing to refuse on);
//   - a half-open that paces its probes: shedNoPacing;
//   - a ramp (a share growing over a recovery period): shedNotRamp and
//     shareShrank.
// Each witness allows for the timing uncertainty of what it compares (a
// loaded gateway forwards late, an upstream stamps ends late: the run's
// measured slacks, u.slack and u.slackLate); no threshold is tuned.
// docs/analysis.md states the rule.

// ShapeShedding: no breaker states; a share of the requests is turned
// away, growing with failures and shrinking with successes.
const ShapeShedding = "shedding"

// Shedding is what a load shedder did over a fault episode: the requests
// it turned away and the refused share over time. Times are seconds into
// the run (send times of the client requests).
type Shedding struct {
	// FirstRefusedAtS is the first request turned away in the episode;
	// BeganAtS the first of the first run of OpenRunMin or more in a row
	// (the first sustained refusal; FirstRefusedAtS when there is none);
	// EndedAtS the last one turned away.
	FirstRefusedAtS float64 `json:"first_refused_at_s"`
	BeganAtS        float64 `json:"began_at_s"`
	EndedAtS        float64 `json:"ended_at_s"`
	// FirstRefusedAfterS and BeganAfterS are the first and the first
	// sustained refusal counted from the fault's start, EndedAfterRecoveryS
	// the last from its end (negative: before it ended): the moments as
	// the report and compare give them (a drill's runs share the fault
	// windows, not their refusals).
	FirstRefusedAfterS  float64 `json:"first_refused_after_s"`
	BeganAfterS         float64 `json:"began_after_s"`
	EndedAfterRecoveryS float64 `json:"ended_after_recovery_s"`
	// TurnedAway counts the requests turned away over the episode's span,
	// FastFails those the gateway answered with its fast-fail, Forwarded
	// the requests forwarded from the first refusal to the last.
	TurnedAway int64 `json:"turned_away"`
	FastFails  int64 `json:"fast_fails"`
	Forwarded  int64 `json:"forwarded"`
	// PeakRefusedShare is the largest refused share of one window.
	PeakRefusedShare float64 `json:"peak_refused_share"`
	// WindowS is the width of the windows; Windows the refused share
	// over time, from the first refusal's window to the last's (at most
	// maxListed windows: the width grows with the span).
	WindowS float64      `json:"window_s"`
	Windows []ShedWindow `json:"windows"`
}

// ShedWindow is one window of the refused share: the client requests sent
// in [StartS, EndS), those turned away, and of those forwarded, the ones
// that failed (the failures the share follows).
type ShedWindow struct {
	StartS    float64 `json:"start_s"`
	EndS      float64 `json:"end_s"`
	Requests  int64   `json:"requests"`
	Refused   int64   `json:"refused"`
	Forwarded int64   `json:"forwarded"`
	Failed    int64   `json:"failed"`
}

// shedSpan is one episode's client requests (positions in u.sent) sent in
// [from, to), with their classes.
type shedSpan struct {
	u        *upstreamRun
	cls      []uint8
	match    []int32
	js       []int // positions in u.sent, in send order
	from, to time.Duration
	// back is the longest the gateway held any call of the upstream
	// before it certainly had the answer (held − arrival); unended the
	// calls with no recorded end.
	back    time.Duration
	unended []int32
}

// shedding decides whether an episode's refusals were load shedding and,
// if so, returns the evidence in words.
func (u *upstreamRun) shedding(w window, spanEnd time.Duration) (bool, string) {
	if u.cls == nil || slices.Contains(w.types, "refuse") {
		// Without attribution there are no refusals to read; a refused
		// listener makes failures the upstream never records.
		return false, ""
	}
	if u.c.gatewayInstances() > 1 {
		// Every witness below rules a breaker out by assuming one breaker
		// decides every request. A fleet of N gateways, each with its own
		// breaker behind one address, refuses on one instance while
		// another's trial succeeds: the interleaving a shedder shows, from
		// N breakers.
		return false, ""
	}
	s := u.shedSpan(w.start, spanEnd)
	first := -1
	for _, j := range s.js {
		if s.cls[j] == clsBlocked {
			first = j
			break
		}
	}
	// A shedder turns nothing away before failures: the first refusal
	// follows a failed answer in the episode.
	if first < 0 {
		return false, ""
	}
	if fr := &u.c.reqs[u.sent[first]]; !u.failedKnownBy(w.start-time.Second, max(fr.done, fr.sent), max(fr.done, fr.sent)+u.slackLate) {
		return false, ""
	}
	a, whyA := s.shedNonRamp()
	if !a {
		return false, ""
	}
	b, whyB := s.shedNoPacing()
	if !b {
		return false, ""
	}
	r, whyR := s.shedNotRamp(s.stretches())
	if !r {
		return false, ""
	}
	return true, "requests were turned away interleaved with forwarded calls, a share that followed the failures; no breaker fits: " + whyA + "; " + whyB + "; " + whyR + ". So there are no cycles, probes or cooldowns to report"
}

// shedSpan is the span [from, to) of the upstream's sent requests, and
// what the scans of its calls need.
func (u *upstreamRun) shedSpan(from, to time.Duration) *shedSpan {
	s := &shedSpan{u: u, cls: u.cls, match: u.match, from: from, to: to}
	c := u.c
	for _, i := range u.calls {
		if !c.calls[i].hasEnd {
			s.unended = append(s.unended, i)
			continue
		}
		s.back = max(s.back, u.held(i)-c.calls[i].t)
	}
	lo := sort.Search(len(u.sent), func(j int) bool { return c.reqs[u.sent[j]].sent >= from })
	for j := lo; j < len(u.sent) && c.reqs[u.sent[j]].sent < to; j++ {
		s.js = append(s.js, j)
	}
	return s
}

// shedNonRamp looks for a refusal that only a share-admitting breaker (a
// ramp) or a shedder makes: two requests turned away with a call let
// through between them (after the first was turned away), every call
// answered successfully, no call of the upstream failing from the first
// refusal's send to the second's answer, and none in flight when the
// second was turned away. A breaker with an open state opens on a failed
// answer; one whose failures expire turns requests away again only after
// a new failure; a half-open turns requests away past its limit only
// while the calls it let through are unanswered. Any of them let the call
// through, so it was admitting, and had nothing to stop admitting on.
func (s *shedSpan) shedNonRamp() (bool, string) {
	u, c := s.u, s.u.c
	prev := -1 // the last refusal
	between := int32(-1)
	for _, j := range s.js {
		r := &c.reqs[u.sent[j]]
		switch s.cls[j] {
		case clsBlocked:
			if prev >= 0 && between >= 0 && r.done > 0 {
				p := &c.reqs[u.sent[prev]]
				k := &c.calls[between]
				if k.hasEnd && !k.failed && k.end+u.slack <= r.sent && !u.failedEndedIn(p.sent-u.slackLate, r.done+u.slackLate) && !s.inFlightAt(r.sent, r.done) {
					return true, fmt.Sprintf("at %s a request was turned away with nothing in flight and no failure since %s, when another was turned away and a call let through after it succeeded (no breaker state refuses then)", num.Sec(seconds(r.sent)), num.Sec(seconds(p.sent)))
				}
			}
			prev, between = j, -1
		default:
			if prev < 0 || s.match[j] < 0 {
				continue
			}
			p := &c.reqs[u.sent[prev]]
			if r.sent >= p.done && p.done > 0 {
				between = s.match[j]
			}
		}
	}
	return false, ""
}

// inFlightAt reports whether a call of the upstream (any kind) may have
// been in flight while a request sent at sent was answered at done: let
// through by done and its answer not certainly with the gateway before
// sent (held), or with no recorded end.
func (s *shedSpan) inFlightAt(sent, done time.Duration) bool {
	c := s.u.c
	for _, i := range s.unended {
		if c.calls[i].t <= done {
			return true
		}
	}
	for _, i := range s.callsFrom(sent) {
		k := &c.calls[i]
		if k.t > done {
			break
		}
		if k.hasEnd && s.u.held(i) > sent {
			return true
		}
	}
	return false
}

// inFlightCount is how many calls of the upstream (any kind) may have
// been in flight while a request sent at sent was answered at done (as
// inFlightAt).
func (s *shedSpan) inFlightCount(sent, done time.Duration) int {
	c, n := s.u.c, 0
	for _, i := range s.unended {
		if c.calls[i].t <= done {
			n++
		}
	}
	for _, i := range s.callsFrom(sent) {
		k := &c.calls[i]
		if k.t > done {
			break
		}
		if k.hasEnd && s.u.held(i) > sent {
			n++
		}
	}
	return n
}

// held is by when the gateway certainly had call i's answer: answerHeld
// for a call a client request reached (its client's answer, which the
// gateway relayed), else slackLate after the upstream's end (a health
// check; a loaded upstream stamps ends late).
func (u *upstreamRun) held(i int32) time.Duration {
	if _, ok := u.reqOfCall(i); ok {
		return u.answerHeld(i)
	}
	return u.c.calls[i].end + u.slackLate
}

// callsFrom is the upstream's calls from the first that can still have
// been unanswered at t (arrived no earlier than the longest any call was
// held before t), in arrival order: the scans above stay near t.
func (s *shedSpan) callsFrom(t time.Duration) []int32 {
	c, ci := s.u.c, s.u.calls
	return ci[sort.Search(len(ci), func(i int) bool { return c.calls[ci[i]].t >= t-s.back }):]
}

// stretch is a failed call let through (x) followed by requests turned
// away and then the next call let through (next): under a ramp, the
// failure reopened it and the wait to next was its fallback and first
// share.
type stretch struct {
	x, next int32
	// epsLo and epsHi bound when the gateway acted on a failure after x
	// was let through: the earliest such failure's end, and the latest
	// moment it certainly held one (answerHeld), no later than the first
	// refusal's answer.
	epsLo, epsHi time.Duration
	// lastRefused is when the last request turned away before next was
	// sent, nextSent when next's was.
	lastRefused, nextSent time.Duration
}

// waitHi is the most the wait from the failure to next can be.
func (s *shedSpan) waitHi(st stretch) time.Duration { return s.u.c.calls[st.next].t - st.epsLo }

// rampLeast and rampMost bound a ramp's wait from a reopen to the first
// call it lets through, by one stretch: after its last refusal, before
// its next call, each widened by the spacing of the two requests.
func (s *shedSpan) rampLeast(st stretch) time.Duration {
	return st.lastRefused - st.epsHi - (st.nextSent - st.lastRefused)
}

func (s *shedSpan) rampMost(st stretch) time.Duration {
	return s.waitHi(st) + (st.nextSent - st.lastRefused)
}

// stretches are the span's stretches in order.
func (s *shedSpan) stretches() []stretch {
	u, c := s.u, s.u.c
	var out []stretch
	for n := 0; n < len(s.js); n++ {
		j := s.js[n]
		if s.cls[j] == clsBlocked || s.match[j] < 0 {
			continue
		}
		x := s.match[j]
		kx := &c.calls[x]
		if !kx.failed || !kx.hasEnd {
			continue
		}
		m := n + 1
		if m >= len(s.js) || s.cls[s.js[m]] != clsBlocked {
			continue
		}
		firstRefused := &c.reqs[u.sent[s.js[m]]]
		for m < len(s.js) && s.cls[s.js[m]] == clsBlocked {
			m++
		}
		if m >= len(s.js) || s.match[s.js[m]] < 0 {
			continue
		}
		st := stretch{x: x, next: s.match[s.js[m]], epsLo: kx.end, epsHi: u.answerHeld(x),
			lastRefused: c.reqs[u.sent[s.js[m-1]]].sent, nextSent: c.reqs[u.sent[s.js[m]]].sent}
		for _, i := range s.callsFrom(u.letFrom(x)) {
			k := &c.calls[i]
			if k.t > firstRefused.done {
				break
			}
			if i != x && k.failed && k.hasEnd && k.end >= u.letFrom(x) && k.end <= firstRefused.done {
				st.epsLo = min(st.epsLo, k.end)
				st.epsHi = max(st.epsHi, min(u.answerHeld(i), firstRefused.done))
			}
		}
		st.epsHi = min(max(st.epsHi, st.epsLo), max(firstRefused.done, st.epsLo))
		out = append(out, st)
	}
	return out
}

// shedNotRamp looks for what a ramp cannot do. A ramp reopens on a
// failure, turns everything away for its fallback period, then lets a
// share through that grows from nothing over its recovery period, the
// same way every time: the first call it lets through after a reopen
// comes the same wait X after the failure, give or take the spacing of
// the requests around it (which request crosses the share depends on
// where the requests fall). Each stretch bounds X: longer than from the
// reopen to its last refusal, less that spacing; shorter than to the call
// let through next, plus it. Stretches whose bounds do not meet are no
// ramp.
func (s *shedSpan) shedNotRamp(sts []stretch) (bool, string) {
	// The stretch giving the greatest least and the one giving the
	// smallest most.
	a, b := -1, -1
	for i, st := range sts {
		if a < 0 || s.rampMost(st) < s.rampMost(sts[a]) {
			a = i
		}
		if b < 0 || s.rampLeast(st) > s.rampLeast(sts[b]) {
			b = i
		}
	}
	if a >= 0 && s.rampLeast(sts[b]) >= s.rampMost(sts[a]) {
		return true, fmt.Sprintf("after a failure at %s the next call was let through within %s, after one at %s requests were still turned away %s after it (a ramp waits the same after every failure, give or take the spacing of the requests around it)",
			num.Sec(seconds(sts[a].epsLo)), num.Sec(seconds(s.waitHi(sts[a]))), num.Sec(seconds(sts[b].epsLo)), num.Sec(seconds(sts[b].lastRefused-sts[b].epsHi)))
	}
	return s.shareShrank()
}

// shareShrank looks for a ramp's share shrinking. With no failure to
// reopen it, a ramp's share only grows, so the requests it turns away
// between two calls it lets through never grow in number by more than
// one (which request tips the share over depends on where the requests
// fall). A later run of refusals two or more longer than an earlier one
// with no failure anywhere since is a share that shrank: no ramp.
func (s *shedSpan) shareShrank() (bool, string) {
	u, c := s.u, s.u.c
	// The fewest refusals between two calls let through since the last
	// failure, and where.
	least, leastAt := -1, time.Duration(0)
	n, admitted, from := 0, false, time.Duration(-1)
	for _, j := range s.js {
		r := &c.reqs[u.sent[j]]
		if s.cls[j] == clsBlocked {
			n++
			if from < 0 {
				from = r.sent
			}
			continue
		}
		k := s.match[j]
		if k < 0 {
			continue
		}
		if c.calls[k].failed || !c.calls[k].hasEnd || (from >= 0 && u.failedEndedIn(from, r.sent)) {
			least, n, admitted, from = -1, 0, false, -1
			continue
		}
		// Counted once a refusal has shown the ramp not closed.
		if admitted && from >= 0 {
			if least >= 0 && n >= least+2 {
				return true, fmt.Sprintf("with no failure since, %s were turned away before the call let through at %s, after only %s before one at %s (a ramp's share only grows: its refusals between two calls never grow by more than one)",
					num.Plural(int64(n), "request"), num.Sec(seconds(r.sent)), num.Plural(int64(least), "request"), num.Sec(seconds(leastAt)))
			}
			if least < 0 || n < least {
				least, leastAt = n, r.sent
			}
		}
		admitted, n = true, 0
	}
	return false, ""
}

// shedNoPacing looks for what a half-open that paces its probes cannot
// do. It lets a probe through, turns requests away until its interval
// (plus a jitter, which is less than the interval: a spacing that varies
// by more than itself is no pacing) has passed, or while as many probes
// are in flight as it lets through at once, and lets the next through:
// every spacing of two of its probes is at least the interval, and every
// request it turns away after a probe with fewer in flight than it ever
// let a probe through beside comes within twice the interval of it.
// Between two refusals with no failure anywhere, it is half-open
// throughout (closed, it would need a failure to refuse again; open, it
// would admit nothing), so every call let through was a probe. A refusal
// later after a probe than twice the closest spacing of two probes is no
// pacing.
func (s *shedSpan) shedNoPacing() (bool, string) {
	u, c := s.u, s.u.c
	type late struct {
		at, least time.Duration
		inFlight  int // calls that may have been in flight
	}
	var (
		admitted []int32 // calls let through since from, all successful
		lates    []late  // refusals since, and how long after a call
		from     = time.Duration(-1)
		beside   int // the most probes certainly in flight as one was let through
	)
	for _, j := range s.js {
		r := &c.reqs[u.sent[j]]
		if s.cls[j] != clsBlocked {
			k := s.match[j]
			switch {
			case from < 0 || k < 0:
			case c.calls[k].failed || !c.calls[k].hasEnd:
				admitted, lates, from, beside = admitted[:0], lates[:0], -1, 0
			default:
				n := 0
				for _, x := range admitted {
					if kx := &c.calls[x]; kx.t <= u.letFrom(k) && kx.end >= c.calls[k].t {
						n++
					}
				}
				admitted, beside = append(admitted, k), max(beside, n)
			}
			continue
		}
		if from < 0 {
			from = r.sent
			continue
		}
		if len(admitted) == 0 || r.done <= 0 || u.failedEndedIn(from, r.done+u.slackLate) {
			continue
		}
		lates = append(lates, late{r.sent, r.sent - c.calls[admitted[len(admitted)-1]].t, s.inFlightCount(r.sent, r.done)})
		if len(admitted) < 2 {
			continue
		}
		closest, at := time.Duration(-1), 0
		for n := 1; n < len(admitted); n++ {
			if g := c.calls[admitted[n]].t - u.letFrom(admitted[n-1]); closest < 0 || g < closest {
				closest, at = g, n
			}
		}
		for _, l := range lates {
			if l.inFlight <= beside && l.least > 2*closest {
				return true, fmt.Sprintf("calls let through at %s and %s were %s apart, yet at %s a request was turned away %s after the call before it, with no failure and no more calls in flight than it had let one through beside (%d) (a half-open pacing its probes turns requests away only within its interval and jitter, less than twice the spacing of two probes, or at its limit)",
					num.Sec(seconds(c.calls[admitted[at-1]].t)), num.Sec(seconds(c.calls[admitted[at]].t)), num.Sec(seconds(closest)), num.Sec(seconds(l.at)), num.Sec(seconds(l.least)), beside)
			}
		}
	}
	return false, ""
}

// sheddingFigures sets a shedding episode's figures over its span.
func (u *upstreamRun) sheddingFigures(ep *Episode, w window, spanEnd time.Duration, why string) {
	c := u.c
	s := u.shedSpan(w.start, spanEnd)
	sd := &Shedding{Windows: []ShedWindow{}}
	first, last := time.Duration(-1), time.Duration(-1)
	began, run := time.Duration(-1), 0
	for n, j := range s.js {
		r := &c.reqs[u.sent[j]]
		if s.cls[j] != clsBlocked {
			run = 0
			continue
		}
		if first < 0 {
			first = r.sent
		}
		if run++; run == OpenRunMin && began < 0 {
			// The first run of OpenRunMin refusals in a row: its first.
			began = c.reqs[u.sent[s.js[n-OpenRunMin+1]]].sent
		}
		last = r.sent
		sd.TurnedAway++
		if r.fastFail {
			sd.FastFails++
		}
	}
	if began < 0 {
		began = first
	}
	sd.BeganAtS = seconds(began)
	if first < 0 {
		return
	}
	sd.FirstRefusedAtS, sd.EndedAtS = seconds(first), seconds(last)
	sd.FirstRefusedAfterS, sd.BeganAfterS = num.Round3(sd.FirstRefusedAtS-ep.StartS), num.Round3(sd.BeganAtS-ep.StartS)
	sd.EndedAfterRecoveryS = num.Round3(sd.EndedAtS - ep.EndS)
	// Windows of a whole number of seconds (the timeline's bins), as
	// many as fit in maxListed.
	width := time.Second
	if n := (last/time.Second - first/time.Second) + 1; n > maxListed {
		width = time.Second * ((n + maxListed - 1) / maxListed)
	}
	sd.WindowS = seconds(width)
	w0 := first / width * width
	for _, j := range s.js {
		r := &c.reqs[u.sent[j]]
		if r.sent < w0 || r.sent >= last/width*width+width {
			continue
		}
		k := int((r.sent - w0) / width)
		for len(sd.Windows) <= k {
			st := w0 + time.Duration(len(sd.Windows))*width
			sd.Windows = append(sd.Windows, ShedWindow{StartS: seconds(st), EndS: seconds(st + width)})
		}
		sw := &sd.Windows[k]
		sw.Requests++
		switch {
		case s.cls[j] == clsBlocked:
			sw.Refused++
		default:
			sw.Forwarded++
			if m := s.match[j]; m >= 0 && c.calls[m].failed {
				sw.Failed++
			}
			if r.sent > first && r.sent < last {
				sd.Forwarded++
			}
		}
	}
	for _, sw := range sd.Windows {
		if sw.Requests > 0 {
			sd.PeakRefusedShare = max(sd.PeakRefusedShare, num.Round3(float64(sw.Refused)/float64(sw.Requests)))
		}
	}
	ep.Shedding = sd
	ep.Shape, ep.ShapeEvidence = ShapeShedding, why
	ep.Statement = shedStatement(ep)
}

// shedStatement says what a shedder did in one plain sentence.
func shedStatement(ep *Episode) string {
	sd := ep.Shedding
	var b strings.Builder
	fmt.Fprintf(&b, "Shed load, no breaker: turned away %s from %s after the fault started", num.Plural(sd.TurnedAway, "request"), num.Sec(sd.FirstRefusedAfterS))
	if sd.BeganAtS != sd.FirstRefusedAtS {
		fmt.Fprintf(&b, " (sustained from %s)", num.Sec(sd.BeganAfterS))
	}
	fmt.Fprintf(&b, " to %s it ended, %s forwarded between; at most %.0f %% of a %s window refused.", endedWords(sd), num.Plural(sd.Forwarded, "request"), 100*sd.PeakRefusedShare, num.Sec(sd.WindowS))
	return b.String()
}

// gatewayInstances is how many gateway instances the run put behind its
// address, as run.start recorded it (or as this build resolves its
// scenario, for journals written before it was recorded); 1 when the run
// does not say (a gateway at a URL).
func (c *collector) gatewayInstances() int {
	if c.start == nil {
		return 1
	}
	r := c.start.Resolved
	if r == nil && len(c.start.Config) > 0 {
		r = Resolve(c.start.Config)
	}
	if r == nil || r.Gateway == nil {
		return 1
	}
	return max(r.Gateway.Instances, 1)
}
