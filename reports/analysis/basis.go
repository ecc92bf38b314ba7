package analysis

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/halfopen/rehearse/reports/num"
)

// Which evidence bound each figure (docs/analysis.md "Exact, bounded or
// unknown"). An inferred figure is exact when every hypothesis the
// evidence leaves gives it one value; otherwise it is bounded, and the
// reader of a postmortem needs to know what set each end — which request,
// which answer — to judge the bound and to find it in the gateway's logs.
// Each basis is recorded where its bound is computed (closeOf's kind,
// openBounds' failures, the cooldowns, the probe spacing), so it can only
// name the observation the estimator actually used; nothing here walks
// the journal again.

// Basis says what set each end of a bounded figure (Min, Max), or why a
// figure the evidence leaves unknown is null (Why). An end with no
// latest (or earliest) moment has Evidence "none" and says why.
type Basis struct {
	Min *BasisEnd `json:"min,omitempty"`
	Max *BasisEnd `json:"max,omitempty"`
	Why string    `json:"why,omitempty"`
}

// BasisEnd is the observation that set one end of a bound: Evidence, a
// short machine-readable name (docs/contracts.md lists them); AtS, its
// moment in run seconds (absent for "none"); FromS, for a figure that is
// a span (a cooldown, a spacing), the moment it is measured from; Text,
// the same in words.
type BasisEnd struct {
	Evidence string   `json:"evidence"`
	AtS      *float64 `json:"at_s,omitempty"`
	FromS    *float64 `json:"from_s,omitempty"`
	Text     string   `json:"text"`
}

// Text is the basis in one line: "min: …; max: …", or why it is unknown.
func (b *Basis) Text() string {
	if b == nil {
		return ""
	}
	var parts []string
	if b.Min != nil {
		parts = append(parts, "min: "+b.Min.Text)
	}
	if b.Max != nil {
		parts = append(parts, "max: "+b.Max.Text)
	}
	if b.Why != "" {
		parts = append(parts, b.Why)
	}
	return strings.Join(parts, "; ")
}

// BasisLines are the bases of the figure key in the episode, in words:
// the key's own, then its indexed entries ("cooldowns_s[1]", each
// labelled by its position) in order.
func BasisLines(e *Episode, key string) []string {
	var out []string
	if b := e.Bases[key]; b != nil {
		out = append(out, b.Text())
	}
	var idx []string
	for k := range e.Bases {
		if strings.HasPrefix(k, key+"[") {
			idx = append(idx, k)
		}
	}
	slices.SortFunc(idx, func(a, b string) int { return len(a)*1000 - len(b)*1000 + strings.Compare(a, b) })
	for _, k := range idx {
		n := strings.TrimSuffix(strings.TrimPrefix(k, key+"["), "]")
		t := e.Bases[k].Text()
		if fp := e.Bases["first_probe_after_open_s"]; fp != nil && fp.Text() == t {
			// The first cooldown is the first probe after the open:
			// its row says it already.
			t = "as the first probe after open"
		}
		out = append(out, fmt.Sprintf("cooldown %s: %s", ordinal(n), t))
	}
	return out
}

// ordinal writes a 0-based index as a 1-based position.
func ordinal(n string) string {
	var i int
	if _, err := fmt.Sscan(n, &i); err != nil {
		return n
	}
	return fmt.Sprintf("#%d", i+1)
}

// atText is an observed moment as the basis writes it.
func atText(d time.Duration) string { return num.At(seconds(d)) }

// basisAt is a basis end at moment d.
func basisAt(evidence string, d time.Duration, text string) *BasisEnd {
	return &BasisEnd{Evidence: evidence, AtS: Ptr(seconds(d)), Text: text}
}

// basisSpan is a basis end for a figure measured from `from` to d.
func basisSpan(evidence string, d, from time.Duration, text string) *BasisEnd {
	return &BasisEnd{Evidence: evidence, AtS: Ptr(seconds(d)), FromS: Ptr(seconds(from)), Text: text}
}

// basisNone is an end no observation sets, and why.
func basisNone(why string) *BasisEnd { return &BasisEnd{Evidence: "none", Text: "none — " + why} }

// cooldownKey is the key of cooldown i's basis ("cooldowns_s[i]").
func cooldownKey(i int) string { return fmt.Sprintf("cooldowns_s[%d]", i) }

// setBasis records the basis of figure key on a cycle.
func (out *Cycle) setBasis(key string, b *Basis) {
	if b == nil {
		return
	}
	if out.bases == nil {
		out.bases = map[string]*Basis{}
	}
	out.bases[key] = b
}

// openBasis says what bounded a cycle's open (OpenBoundsS, from
// openBounds): the first failure to end after the last call let through,
// and the last to end before the first refusal was answered — or the
// first refusal itself, when the gateway relayed the tripping failure
// late. at_s is the moment of the bound, from which opened_after_s counts
// the fault's start off.
func (u *upstreamRun) openBasis(cy *cyc, out *Cycle) *Basis {
	b := &Basis{Min: basisAt("failure_end", cy.openAt, "the first failed call to end after the last call let through, answered "+atText(cy.openAt))}
	if cy.openHi == out.refuseFrom {
		b.Max = basisAt("first_refused_sent", cy.openHi, "the first request turned away, sent "+atText(cy.openHi)+" (the gateway relayed the failure that tripped it late, so it may have tripped any time until then)")
	} else {
		b.Max = basisAt("failure_end", cy.openHi, "the last failed call to end before the first refusal was answered, answered "+atText(cy.openHi))
	}
	return b
}

// countBasis says what bounded a failure count before the open: the
// failed calls before the earliest open, and those let through before the
// latest.
// what names what is counted ("call", "client request").
func countBasis(cy *cyc, more int64, what string) *Basis {
	more1 := fmt.Sprintf("%d failed %s", more, what)
	if more != 1 {
		more1 += "s"
	}
	return &Basis{
		Min: basisAt("failed_before_open_min", cy.openAt, "the failed "+what+"s that arrived before the earliest open, "+atText(cy.openAt)),
		Max: basisAt("failed_before_open_max", cy.openHi, "with the "+more1+" let through (arrived, or sent by the client) before the latest open, "+atText(cy.openHi)+", which may have reached a breaker still closed"),
	}
}

// firstCooldownBasis says what bounded the first cooldown (the first
// probe after the open): as short as the earliest the gateway can have
// let probe p through less the latest open, as long as the latest it can
// have let it through less the earliest open.
func (u *upstreamRun) firstCooldownBasis(cy *cyc, out *Cycle, p int32) *Basis {
	from := u.letFrom(p)
	_, hi := u.letAt(p)
	return &Basis{Min: basisSpan("probe_let_from-open_max", from, out.openHi, u.letText(p, from, "earliest")+", less the latest open "+atText(out.openHi)),
		Max: basisSpan("probe_let_by-open_min", hi, cy.openAt, u.letText(p, hi, "latest")+", less the earliest open "+atText(cy.openAt))}
}

// laterCooldownBasis says what bounded a cooldown after a failed probe
// (ended `failEnd`): from the earliest the next probe was let through
// (let) less that failure's end, to the latest (nextHi) less the first
// failure in that half-open that may have reopened it (e).
func (u *upstreamRun) laterCooldownBasis(next int32, let, nextHi, failEnd, e time.Duration) *Basis {
	reopen := "that failed probe's end " + atText(e)
	if e < failEnd {
		reopen = "the first failure in that half-open to end, " + atText(e) + " (it may have reopened it)"
	}
	return &Basis{Min: basisSpan("probe_let_from-failure_end", let, failEnd, u.letText(next, let, "earliest")+", less the failed probe's end "+atText(failEnd)),
		Max: basisSpan("probe_let_by-failure_end", nextHi, e, u.letText(next, nextHi, "latest")+", less "+reopen)}
}

// letText names when call i was let through at t: its client's send, its
// arrival, or its arrival less the least forwarding lag measured.
func (u *upstreamRun) letText(i int32, t time.Duration, which string) string {
	k := &u.c.calls[i]
	if r, ok := u.reqOfCall(i); ok && u.c.reqs[r].sent == t && t != k.t {
		return "the probe's client send " + atText(t) + " (the " + which + " the gateway can have let it through)"
	}
	if t == k.t {
		return "the probe's arrival " + atText(t)
	}
	return fmt.Sprintf("the probe's arrival %s less the gateway's forwarding lag, %s", atText(k.t), atText(t))
}

// closeBasis says what bounded a cycle's close (out.CloseBoundsS, placed
// by closeOf, trialClose or the shape) and why successes_to_close is null
// when it is. trial: the first resumed call was a trial the breaker
// judged (cycleFigures).
func (u *upstreamRun) closeBasis(cy *cyc, out *Cycle, trial bool) {
	if out.ClosedAtS == nil {
		return
	}
	c := u.c
	if b := out.CloseBoundsS; b != nil && b.Min != nil {
		cands := u.closeCandidates(cy, out, trial)
		cb := &Basis{Min: pick(cands, *b.Min, "close_min")}
		if b.Max != nil {
			cb.Max = pick(cands, *b.Max, "close_max")
		} else {
			cb.Max = basisNone(u.noLatestClose(cy, out, trial))
		}
		out.setBasis("closed_after_recovery_s", cb)
	}
	if out.SuccessesToClose != nil {
		return
	}
	sb := &Basis{}
	lb, first := cy.lb, out.closeAt
	if cy.fr >= 0 {
		first = c.calls[cy.fr].t
	}
	switch {
	case out.SuccessesToCloseBounds != nil && trial:
		sb.Min = basisAt("trial_success", c.calls[cy.fr].end, "the trial's success, answered "+atText(c.calls[cy.fr].end))
		sb.Max = basisNone("a half-open letting several calls through may have closed on a later success, unseen")
	case out.Shape == ShapeRamp || out.Shape == ShapeExpiry:
		sb.Why = "closed on a timer (" + out.Shape + "): no success count"
	case cy.closeKind == closeOnOneOf:
		sb.Why = fmt.Sprintf("several successes ended in the close window (%s to %s): which one closed it is unseen", atText(cy.closeLo), atText(cy.closeAt))
	case cy.closeKind == closeOnPending:
		sb.Why = "a call let through beside the success was still in flight when traffic resumed: it may have closed on a later answer"
	default:
		sb.Why = fmt.Sprintf("no success the open breaker let through ended between the last refusal (%s) and the first resumed call (%s): a timer or an uncounted quick probe closed it", atText(lb), atText(first))
	}
	out.setBasis("successes_to_close", sb)
}

// closeCandidates are the observations a close's bounds are placed at
// (closeOf, trialClose, checksGate, an expiry's segments), each with its
// moment; closeBasis names an end by the one at its moment. The more
// specific come first: a trial's arrival is also the first resumed call's.
func (u *upstreamRun) closeCandidates(cy *cyc, out *Cycle, trial bool) []*BasisEnd {
	c := u.c
	var cands []*BasisEnd
	if cy.lb > 0 {
		cands = append(cands, basisAt("last_refused_sent", cy.lb, "the last request turned away, sent "+atText(cy.lb)))
	}
	if out.refuseUntil >= 0 {
		cands = append(cands, basisAt("last_refused_sent", out.refuseUntil, "the last request turned away, sent "+atText(out.refuseUntil)))
	}
	if cy.fr >= 0 {
		t := c.calls[cy.fr].t
		if trial {
			cands = append(cands, basisAt("trial_arrival", t, "the trial's arrival "+atText(t)+" (a breaker may judge its answer's head)"))
		}
		cands = append(cands, basisAt("first_resumed_arrival", t, "the first resumed call's arrival "+atText(t)))
	}
	if cy.closeBy >= 0 {
		e := c.calls[cy.closeBy].end
		word, txt := "success_end", "the end of the success that closed it, "+atText(e)
		switch {
		case cy.closeKind == closeOnOneOf:
			word, txt = "last_success_end", "the last success to end in the close window, "+atText(e)
		case c.calls[cy.closeBy].health:
			word, txt = "check_end", "the passing health check's end "+atText(e)
		}
		cands = append(cands, basisAt(word, e, txt))
	}
	if cy.closeKind == closeOnOneOf {
		cands = append(cands, basisAt("first_success_end", cy.closeLo, "the first success to end in the close window, "+atText(cy.closeLo)))
	}
	if (cy.closeKind == closeOnPending || cy.closeKind == closeOnOneOf) && cy.fr >= 0 {
		if b, ok := u.slotsClose(cy, c.calls[cy.fr].t); ok && b >= 0 {
			cands = append(cands, basisAt("permits_exceeded", b, "the first call to arrive with more calls in flight together than the half-open let through at once, "+atText(b)+" (one giving permits back as calls end had closed by then)"))
		}
	}
	if cy.closeKind == closeOnPending && cy.closeHi >= 0 {
		cands = append(cands, basisAt("pending_end", cy.closeHi, "the end of the last call let through beside it, still in flight when traffic resumed, "+atText(cy.closeHi)))
	}
	// A segment of a breaker whose failures expire closes by the first
	// call let through after its refusals, no earlier than its open.
	cands = append(cands, basisAt("first_resumed_arrival", out.closeAt, "the first call let through after the refusals, arrived "+atText(out.closeAt)),
		basisAt("open", cy.openAt, "the open itself, "+atText(cy.openAt)+" (no request was turned away before the next call was let through)"))
	return cands
}

// noLatestClose says why a close has no latest moment.
func (u *upstreamRun) noLatestClose(cy *cyc, out *Cycle, trial bool) string {
	switch {
	case out.Shape == ShapeRamp:
		return "a ramp lets a growing share through and closes on its timer after the first resumed call, unseen"
	case trial && !u.trialQuick(cy):
		return "the trial's answer was still coming when the next call could be let through: a half-open letting several calls through may have closed on a later success, unseen"
	case trial:
		fr := &u.c.calls[cy.fr]
		return fmt.Sprintf("the trial answered in %s and traffic resumed at once: a half-open admitting several calls, closing on a later success, fits", num.Sec((fr.end - fr.t).Seconds()))
	case (cy.closeKind == closeOnPending || cy.closeKind == closeOnOneOf) && u.slotsOpen(cy):
		return "a half-open giving a permit back as each call ends lets the next call in on it and looks closed until its last success: the traffic never had more calls in flight together than it let through at once (or a failure may have cut that short), so its close is unseen"
	case cy.closeKind == closeOnPending:
		return "a call let through beside the success failed or never ended: the close may have waited for an answer that never came"
	default:
		return "the first resumed call was answered before the next came: a half-open admitting several quick calls, or a timer, fits"
	}
}

// pick is the candidate whose moment is v (the bound it set), or a
// "derived" end when none is (a bound the estimator moved: never a
// guess at which observation it was).
func pick(cands []*BasisEnd, v float64, what string) *BasisEnd {
	for _, e := range cands {
		if e.AtS != nil && *e.AtS == v {
			return e
		}
	}
	return &BasisEnd{Evidence: "derived", AtS: Ptr(v), Text: num.At(v) + ", derived from the other figures (" + what + ")"}
}

// episodeBases gathers an episode's bases from its cycles, as its flat
// figures are: the open's from the first cycle, the close's from the last,
// every cycle's cooldowns renumbered along cooldowns_s; and the bases of
// the figures the episode computes itself.
func episodeBases(ep *Episode) {
	n := len(ep.Cycles)
	if n == 0 {
		return
	}
	first, last := ep.Cycles[0], ep.Cycles[n-1]
	set := ep.setBasis
	for _, k := range []string{"opened_after_s", "failures_before_open", "failed_requests_before_open"} {
		set(k, first.bases[k])
	}
	if ep.FirstProbeAfterOpenBoundsS != nil {
		set("first_probe_after_open_s", first.bases["cooldowns_s[0]"])
	}
	off := 0
	for _, cy := range ep.Cycles {
		for i := range cy.CooldownsS {
			if i < len(cy.CooldownsBoundsS) && cy.CooldownsBoundsS[i] != nil {
				set(cooldownKey(off+i), cy.bases[cooldownKey(i)])
			}
		}
		off += len(cy.CooldownsS)
	}
	if ep.probesBounds() != nil {
		set("probes", probesBasis(ep))
	}
	if b := ep.OpenTimeBoundsS; b != nil {
		ob := &Basis{Min: &BasisEnd{Evidence: "open_max-close_min", Text: "each cycle from its latest open to its earliest close"}}
		if b.Max != nil {
			ob.Max = &BasisEnd{Evidence: "open_min-close_max", Text: "each cycle from its earliest open to its latest close"}
		} else {
			ob.Max = basisNone("a cycle's close has no latest moment")
		}
		set("open_time_s", ob)
	}
	if ep.Closed {
		set("closed_after_recovery_s", last.bases["closed_after_recovery_s"])
		set("successes_to_close", last.bases["successes_to_close"])
	} else if last.refuseUntil >= 0 {
		never := "never seen to close: the last request turned away was sent " + atText(last.refuseUntil) + ", and no live traffic resumed after it before the run ended"
		set("closed_after_recovery_s", &Basis{Why: never})
		set("open_time_s", &Basis{Why: never})
	}
}

// resumeCooldownBasis says what bounded the wait that ended where traffic
// resumed (resumecooldown.go): as short as the last refusal's send less
// the latest (re)open, as long as the latest the resumed call was let
// through less the earliest; afterProbe: the (re)open was a failed
// probe's, else the open.
func resumeCooldownBasis(lastRefused, reHi, frHi, reLo time.Duration, afterProbe bool) *Basis {
	what := "open"
	if afterProbe {
		what = "reopen (the failed probe's end)"
	}
	return &Basis{
		Min: basisSpan("last_refused_sent-reopen_max", lastRefused, reHi, "the last request turned away, sent "+atText(lastRefused)+" (a half-open entered on a timer may have come right after it), less the latest "+what+" "+atText(reHi)),
		Max: basisSpan("resumed_let_by-reopen_min", frHi, reLo, "the latest the first resumed call can have been let through, "+atText(frHi)+" (a half-open entered as it asked), less the earliest "+what+" "+atText(reLo)),
	}
}

// setBasis records the basis of figure key on an episode.
func (ep *Episode) setBasis(key string, b *Basis) {
	if b == nil {
		return
	}
	if ep.Bases == nil {
		ep.Bases = map[string]*Basis{}
	}
	ep.Bases[key] = b
}

// spacingBasis says what bounded probe_interval_s.min when probes may
// have gone uncounted: the closest two live calls that may both have been
// probes (arrived from and to), and the spacing of the probes counted.
func spacingBasis(from, to time.Duration, measured float64) *Basis {
	return &Basis{
		Min: basisSpan("closest_possible_probes", to, from, "two live calls that may both have been probes (after the last probe counted, before the latest close), arrived "+atText(from)+" and "+atText(to)),
		Max: &BasisEnd{Evidence: "counted_probes", Text: "the least spacing of the probes counted, " + num.Sec(measured)},
	}
}

// inFlightBasis says what bounded max_probes_in_flight when probes may
// have gone uncounted: the probes counted, and every live call from the
// cycle's open (from) to the latest it can have closed (to).
func inFlightBasis(counted, most int, from, to time.Duration) *Basis {
	return &Basis{
		Min: &BasisEnd{Evidence: "counted_probes", Text: fmt.Sprintf("the probes counted, %d at once", counted)},
		Max: basisSpan("live_calls_while_maybe_open", to, from, fmt.Sprintf("%d live calls in flight at once between the open, %s, and the latest close, %s", most, atText(from), atText(to))),
	}
}

// metricsLagBasis says what bounded metrics_open_lag_s when the open is
// bounded: the first metrics sample showing it open (at) less the latest
// and the earliest open.
func metricsLagBasis(at, openAt, openHi time.Duration) *Basis {
	sample := "the first metrics sample showing it open, " + atText(at)
	return &Basis{
		Min: basisSpan("metrics_open_sample-open_max", at, openHi, sample+", less the latest open "+atText(openHi)),
		Max: basisSpan("metrics_open_sample-open_min", at, openAt, sample+", less the earliest open "+atText(openAt)),
	}
}

// probesBasis says why the probe count is only the least there were: the
// first call let through after a cycle's last refusal may have been one
// more probe (maybe_probe), or the first of several a half-open lets
// through.
func probesBasis(ep *Episode) *Basis {
	why := "a call let through after the refusals may have been one more probe, or the first of several a half-open lets through"
	for _, cy := range ep.Cycles {
		if cy.MaybeProbe && cy.refuseUntil >= 0 {
			why = "the calls let through after the last request turned away, sent " + atText(cy.refuseUntil) + ", may have been more probes (one that closed it, or several a half-open lets through), uncounted"
			break
		}
	}
	return &Basis{
		Min: &BasisEnd{Evidence: "counted_probes", Text: fmt.Sprintf("the %d calls counted as probes", ep.Probes)},
		Max: basisNone(why),
	}
}
