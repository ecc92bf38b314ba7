package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/halfopen/rehearse/reports/num"
)

// Failover as a figure: per fault episode of an upstream (the primary),
// whether the gateway moved the primary's client requests to another
// upstream (the fallback), when, how many, at what cost, and when it moved
// them back. Which upstream is whose fallback is read from the evidence,
// never from the gateway's configuration:
//
//   - same_requests: calls carry each client request's sequence number
//     (forwarded header or body stamp): a request that reached the primary
//     and then another upstream, or a request of the primary's routes that
//     went to another upstream while the primary was faulted;
//   - target_header: a response header the scenario keeps
//     (replay.keep_headers) names the upstream that answered;
//   - time: no request identity survives the gateway, and an upstream that
//     received no live call before the first fault received calls only
//     while the primary was faulted (a standby). Its calls are counted as
//     calls, not requests.
//
// A route is served by the upstreams its requests reached first before
// the first fault (a gateway's preference, or its balancing, shows when
// nothing fails); an episode covers the routes its upstream serves
// (failover_index.go).

// Failover is the failover figure of one fault episode of the primary
// upstream (docs/analysis.md, "Failover").
type Failover struct {
	// Fallback is the upstream that served most of the primary's
	// requests in its stead over the episode; "" when none did.
	Fallback string `json:"fallback"`
	// Evidence says how the requests were followed: "same_requests",
	// "target_header" or "time" (see above); "" when nothing could be.
	Evidence string `json:"evidence"`
	// Requests counts the primary's client requests the episode covers
	// (sent from its start to the next episode's, or in flight at its
	// start and answered by another upstream after it); 0 in time mode.
	Requests int64 `json:"requests"`
	// Served counts the requests the gateway handed to the fallback (its
	// last call for them went there), ServedOK those the client got an
	// ok answer to. In time mode both count the fallback's calls.
	Served   int64 `json:"requests_served"`
	ServedOK int64 `json:"requests_served_ok"`
	// AfterPrimary counts the served requests that reached the primary
	// first (the gateway tried it, then fell back); PrimarySkipped those
	// sent straight to the fallback (the primary was cooling down).
	AfterPrimary   int64 `json:"after_primary"`
	PrimarySkipped int64 `json:"primary_skipped"`
	// FallbackCalls and FallbackTokens are the work the fallback did for
	// the served requests (tokens null when no call to it reported
	// usage); PrimaryCalls the calls the primary received for them
	// before the gateway gave up on it.
	FallbackCalls  int64  `json:"fallback_calls"`
	FallbackTokens *int64 `json:"fallback_tokens"`
	PrimaryCalls   int64  `json:"primary_calls"`
	// FailedOverAtS is when the first served request's first call reached
	// the fallback, FailedOverAfterS that less the fault's start. With a
	// target header the call is not known: the bounds are the request's
	// send and answer (the estimate is the first call to the fallback
	// between them, else the send).
	FailedOverAtS          *float64 `json:"failed_over_at_s"`
	FailedOverAfterS       *float64 `json:"failed_over_after_s"`
	FailedOverAfterBoundsS *Bounds  `json:"failed_over_after_bounds_s,omitempty"`
	// LastFallbackAtS is the last served request's last call to the
	// fallback.
	LastFallbackAtS *float64 `json:"last_fallback_at_s"`
	// FailedBack reports that, after the fault ended, the primary served
	// a request of its own again: FailedBackAtS is that call's arrival,
	// FailedBackAfterS that less the fault's end (bounds as above).
	// FallbackAfterFailBack counts requests handed to the fallback that
	// were sent after it (the gateway went back and forth).
	FailedBack             bool     `json:"failed_back"`
	FailedBackAtS          *float64 `json:"failed_back_at_s"`
	FailedBackAfterS       *float64 `json:"failed_back_after_s"`
	FailedBackAfterBoundsS *Bounds  `json:"failed_back_after_bounds_s,omitempty"`
	FallbackAfterFailBack  int64    `json:"fallback_after_fail_back"`
	// FallbackShareBefore is the share of the primary's route requests
	// that went to the fallback first before the first fault (0: a
	// standby; null in time mode, or with no request before the first
	// fault). When it is above 0 the route is balanced over both, and
	// a request sent straight to the fallback may be balancing, not
	// failover: only requests that reached the primary first count as
	// served, the others are BalancedToFallback.
	FallbackShareBefore *float64 `json:"fallback_share_before"`
	BalancedToFallback  int64    `json:"balanced_to_fallback"`
	// Others counts the served requests handed to other upstreams than
	// Fallback (a chain of fallbacks), by upstream.
	Others map[string]int64 `json:"other_fallbacks,omitempty"`
	// Unseen says why no failover could be followed (no request of the
	// primary in the episode, no request identity and no standby); ""
	// when the figure was observed (a failover, or none although the
	// requests were followed).
	Unseen    string `json:"not_observable,omitempty"`
	Statement string `json:"statement"`
}

// failovers sets each fault episode's failover figure, and on each
// fallback the primaries it stood in for.
func (c *collector) failovers(a *Analysis, wins map[string][]window, fr frame) {
	l := c.rl
	var all []span
	for _, ws := range wins {
		for _, w := range ws {
			all = append(all, span{int64(w.start), int64(w.end)})
		}
	}
	x := newFoIndex(l, &c.fo, all, int64(fr.faultStart))
	for _, name := range slices.Sorted(maps.Keys(wins)) {
		ua := a.Upstreams[name]
		if ua == nil {
			continue
		}
		p := l.ups.id(name)
		for j, w := range wins[name] {
			if j >= len(ua.Episodes) || ua.Episodes[j] == nil {
				continue
			}
			spanEnd := fr.end + 1
			if j+1 < len(wins[name]) {
				spanEnd = wins[name][j+1].start
			}
			f := x.episode(p, w, spanEnd, j == 0)
			ua.Episodes[j].Failover = f
			if fb := a.Upstreams[f.Fallback]; fb != nil && !slices.Contains(fb.FallbackFor, name) {
				fb.FallbackFor = append(fb.FallbackFor, name)
			}
		}
	}
}

// handed is a request of an episode (an index into retryLog.reqs), the
// upstream it was handed to last (0: unknown) and that call (-1: unknown,
// a request followed by its header alone).
type handed struct {
	ri   int
	up   uint16
	last int32
}

// episode is the failover figure of the primary p's fault window w, whose
// span runs to spanEnd; first says it is p's first episode (requests in
// flight at its start belong to it).
func (x *foIndex) episode(p uint16, w window, spanEnd time.Duration, first bool) *Failover {
	l := x.l
	f := &Failover{}
	start, end := int64(w.start), int64(spanEnd)
	var mine []handed
	identity := false
	// p's requests by send: those sent before the start are looked at
	// in p's first episode only (in flight at its start).
	own := x.byPrimary(p)
	from := 0
	if !first {
		from, _ = slices.BinarySearchFunc(own, start, func(ri int32, t int64) int { return cmp.Compare(l.reqs[ri].sent, t) })
	}
	for _, ri := range own[from:] {
		i := int(ri)
		r := &l.reqs[i]
		if r.sent >= end {
			break
		}
		up, last := x.handedTo(i)
		if r.sent < start {
			// In flight at the fault's start: the episode's when another
			// upstream took it after the start.
			if !first || up == p || up == 0 || last < 0 || l.calls[last].at < start {
				continue
			}
		}
		f.Requests++
		identity = identity || up != 0
		mine = append(mine, handed{i, up, last})
	}
	switch {
	case f.Requests == 0 && len(x.serves) > 0:
		// Requests are followed, but no route's go to p first: it serves
		// none of its own (a fallback, a route the capture rarely uses).
		f.Unseen = fmt.Sprintf("no route's requests went to %s first outside the faults: it has no requests of its own to move elsewhere", l.ups.names[p])
		return f
	case !identity:
		return x.byTime(f, p, w, spanEnd)
	}
	// The fallback: the upstream most of the others were handed to.
	by := map[uint16]int64{}
	for _, h := range mine {
		if h.up != p && h.up != 0 {
			by[h.up]++
		}
	}
	var fb uint16
	for _, up := range slices.Sorted(maps.Keys(by)) {
		if by[up] > by[fb] {
			fb = up
		}
	}
	f.Evidence = "target_header"
	for _, h := range mine {
		if x.reqs[h.ri].first >= 0 {
			f.Evidence = "same_requests"
			break
		}
	}
	if fb == 0 {
		f.Statement = fmt.Sprintf("No failover: none of the %s of %s's routes went to another upstream.", num.Plural(f.Requests, "client request"), l.ups.names[p])
		return f
	}
	f.Fallback = l.ups.names[fb]
	for up, n := range by {
		if up != fb {
			if f.Others == nil {
				f.Others = map[string]int64{}
			}
			f.Others[l.ups.names[up]] = n
		}
	}
	f.FallbackShareBefore = x.shareBefore(p, fb)
	x.follow(f, p, fb, w, mine)
	f.Statement = failoverStatement(f, l.ups.names[p], w)
	return f
}

// shareBefore is the share of the requests of p's routes, sent before the
// first fault, that went to fb first; nil when none was sent.
func (x *foIndex) shareBefore(p, fb uint16) *float64 {
	var n, all int
	for mp, ups := range x.serves {
		if slices.Contains(ups, p) {
			n += x.quiet[[2]uint16{mp, fb}]
			all += x.quiet[[2]uint16{mp, 0}]
		}
	}
	return ratio(int64(n), int64(all))
}

// follow counts the requests handed to the fallback fb and their work, and
// finds the failover and the fail-back.
func (x *foIndex) follow(f *Failover, p, fb uint16, w window, mine []handed) {
	l := x.l
	slices.SortStableFunc(mine, func(a, b handed) int { return cmp.Compare(l.reqs[a.ri].sent, l.reqs[b.ri].sent) })
	servedAt := map[int32]int{} // request -> position in mine, for the requests handed to fb
	for j, h := range mine {
		if h.up == fb {
			servedAt[int32(h.ri)] = j
		}
	}
	works := x.work(p, fb, mine, servedAt)
	// On a route balanced over both, a request sent straight to the
	// fallback may be balancing: only those that reached the primary
	// first are failover.
	peer := f.FallbackShareBefore != nil && *f.FallbackShareBefore > 0
	counted := map[int32]bool{} // the requests served as failover
	var tokens int64
	exact, hdr := int64(-1), -1 // the earliest call to fb; the earliest request followed by its header
	var last int64 = -1
	for j, h := range mine {
		if h.up != fb {
			continue
		}
		o := int32(h.ri)
		wk := works[o]
		if wk == nil {
			wk = &work{firstFB: -1, lastFB: -1}
		}
		if peer && !wk.triedP {
			f.BalancedToFallback++
			continue
		}
		counted[o] = true
		f.Served++
		if x.reqs[h.ri].ok {
			f.ServedOK++
		}
		f.PrimaryCalls += wk.pCalls
		f.FallbackCalls += wk.fbCalls
		tokens += wk.tokens
		if wk.triedP {
			f.AfterPrimary++
		} else {
			f.PrimarySkipped++
		}
		if wk.firstFB >= 0 && x.reqs[o].first >= 0 {
			if exact < 0 || wk.firstFB < exact {
				exact = wk.firstFB
			}
			last = max(last, wk.lastFB)
		} else if x.reqs[o].first < 0 && hdr < 0 {
			hdr = j
		}
	}
	if x.usage[fb] {
		f.FallbackTokens = Ptr(tokens)
	}
	moment := x.moment(fb, exact, mine, hdr)
	f.FailedOverAtS, f.FailedOverAfterS, f.FailedOverAfterBoundsS = moment.since(int64(w.start))
	if last >= 0 {
		f.LastFallbackAtS = Ptr(seconds(time.Duration(last)))
	}
	if !w.endedByRun {
		x.failBack(f, p, w, mine, counted)
	}
}

// timeMatched are the requests handed to the fallback that are followed
// by their header alone (no call carries their number), in send order:
// calls without a number are theirs when they arrived between a request's
// send and its answer (the earliest such request's), the way a request is
// matched to calls in time elsewhere (routing "time_match").
type timeMatched struct {
	ri      []int32
	longest int64 // the longest exchange among them, to bound the search
}

// headerOnly lists the requests of mine handed to fb with no call of their
// own.
func (x *foIndex) headerOnly(mine []handed, fb uint16) timeMatched {
	var tm timeMatched
	for _, h := range mine {
		if h.up == fb && x.reqs[h.ri].first < 0 {
			r := &x.l.reqs[h.ri]
			tm.ri = append(tm.ri, int32(h.ri))
			tm.longest = max(tm.longest, r.done-r.sent)
		}
	}
	return tm
}

// owner is the earliest-sent request whose exchange held t; -1 none.
func (tm timeMatched) owner(l *retryLog, t int64) int32 {
	j, _ := slices.BinarySearchFunc(tm.ri, t, func(ri int32, t int64) int { return cmp.Compare(l.reqs[ri].sent, t+1) })
	best := int32(-1)
	for j--; j >= 0 && l.reqs[tm.ri[j]].sent >= t-tm.longest; j-- {
		if r := &l.reqs[tm.ri[j]]; r.sent <= t && t <= r.done {
			best = tm.ri[j]
		}
	}
	return best
}

// work is what the calls of one request handed to the fallback did: its
// calls at each end, the fallback's tokens, its first and last call to
// the fallback (-1: none), and whether it reached the primary.
type work struct {
	pCalls, fbCalls int64
	tokens          int64
	firstFB, lastFB int64
	triedP          bool
}

// work reads every call of the requests handed to the fallback (servedAt),
// at the primary p and the fallback fb: their numbers name them, or, for
// a request followed by its header alone, their arrival in its exchange.
func (x *foIndex) work(p, fb uint16, mine []handed, servedAt map[int32]int) map[int32]*work {
	l := x.l
	works := map[int32]*work{}
	byHeader := x.headerOnly(mine, fb)
	for i := range l.calls {
		k := &l.calls[i]
		if k.flags&rcHealth != 0 || (k.up != p && k.up != fb) {
			continue
		}
		o := x.owner[i]
		if o < 0 {
			o = byHeader.owner(l, k.at)
		}
		if _, ok := servedAt[o]; !ok || o < 0 {
			continue
		}
		wk := works[o]
		if wk == nil {
			wk = &work{firstFB: -1, lastFB: -1}
			works[o] = wk
		}
		switch k.up {
		case p:
			wk.pCalls++
			wk.triedP = true
		case fb:
			wk.fbCalls++
			wk.tokens += int64(k.tokens)
			if wk.firstFB < 0 || k.at < wk.firstFB {
				wk.firstFB = k.at
			}
			wk.lastFB = max(wk.lastFB, k.at)
		}
	}
	return works
}

// seen is a moment in the run (ns): exact, or an estimate within [lo, hi]
// (a request followed by its header: the call is not known); at < 0: none.
type seen struct{ at, lo, hi int64 }

// since is the moment, the moment less ref in seconds, and the bounds of that.
func (m seen) since(ref int64) (*float64, *float64, *Bounds) {
	if m.at < 0 {
		return nil, nil, nil
	}
	sec := func(t int64) *float64 { return Ptr(seconds(time.Duration(t))) }
	var b *Bounds
	if m.lo < m.hi {
		b = &Bounds{Min: sec(m.lo - ref), Max: sec(m.hi - ref)}
	}
	return sec(m.at), sec(m.at - ref), b
}

// moment is the first call to up among the requests: the earliest exact
// one, or, when a request followed by its header alone (mine[hdr]) was
// sent before it, within that request's send and answer: the first call
// to up in between (any call: the header does not say which), else its
// send.
func (x *foIndex) moment(up uint16, exact int64, mine []handed, hdr int) seen {
	l := x.l
	if hdr < 0 || (exact >= 0 && l.reqs[mine[hdr].ri].sent >= exact) {
		return seen{exact, exact, exact}
	}
	r := &l.reqs[mine[hdr].ri]
	hi := r.done
	if hi <= 0 || (exact >= 0 && exact < hi) {
		hi = exact
	}
	if hi < 0 {
		hi = r.sent
	}
	est := r.sent
	for i := range l.calls {
		k := &l.calls[i]
		if k.up == up && k.flags&rcHealth == 0 && k.at >= r.sent && k.at <= hi && (est == r.sent || k.at < est) {
			est = k.at
		}
	}
	return seen{est, r.sent, hi}
}

// failBack finds the first request of the primary's own that it served
// again after the fault ended (a call arriving after the end, answered
// ok), and counts the requests served as failover (counted) after it.
func (x *foIndex) failBack(f *Failover, p uint16, w window, mine []handed, counted map[int32]bool) {
	l := x.l
	end := int64(w.end)
	back := seen{-1, -1, -1}
	backSent := int64(-1)
	for _, h := range mine {
		r := &l.reqs[h.ri]
		if h.up != p || !x.reqs[h.ri].ok {
			continue
		}
		switch {
		case h.last >= 0 && l.calls[h.last].at >= end:
			if t := l.calls[h.last].at; back.at < 0 || t < back.at {
				back, backSent = seen{t, t, t}, r.sent
			}
		case h.last < 0 && r.sent >= end && (back.at < 0 || r.sent < back.lo):
			m := x.moment(p, back.at, []handed{h}, 0)
			back, backSent = m, r.sent
		}
	}
	if back.at < 0 {
		return
	}
	f.FailedBack = true
	f.FailedBackAtS, f.FailedBackAfterS, f.FailedBackAfterBoundsS = back.since(end)
	for _, h := range mine {
		if counted[int32(h.ri)] && l.reqs[h.ri].sent > backSent {
			f.FallbackAfterFailBack++
		}
	}
}

// byTime is the figure of an episode whose requests carry no identity: an
// upstream that had no live call before the run's first fault (a standby,
// while the primary had some) and received calls during the primary's
// episode took over from it. Its calls are counted, not requests.
func (x *foIndex) byTime(f *Failover, p uint16, w window, spanEnd time.Duration) *Failover {
	l := x.l
	name := l.ups.names[p]
	start, end := int64(w.start), int64(spanEnd)
	if !x.liveBefore[p] {
		f.Unseen = fmt.Sprintf("no client request could be followed (no sequence number or kept target header), and %s received no call before the first fault to tell a standby upstream by", name)
		return f
	}
	calls := map[uint16]int64{}
	for i := range l.calls {
		k := &l.calls[i]
		if k.flags&rcHealth == 0 && k.up != p && !x.liveBefore[k.up] && k.at >= start && k.at < end {
			calls[k.up]++
		}
	}
	var fb uint16
	for _, up := range slices.Sorted(maps.Keys(calls)) {
		if calls[up] > calls[fb] {
			fb = up
		}
	}
	if fb == 0 {
		f.Unseen = fmt.Sprintf("no client request could be followed (no sequence number or kept target header), and no upstream received calls only while %s was faulted", name)
		return f
	}
	f.Fallback, f.Evidence = l.ups.names[fb], "time"
	first, last, back := int64(-1), int64(-1), int64(-1)
	var tokens int64
	for i := range l.calls {
		k := &l.calls[i]
		if k.flags&rcHealth != 0 || k.at < start || k.at >= end {
			continue
		}
		switch {
		case k.up == fb:
			f.Served++
			f.FallbackCalls++
			tokens += int64(k.tokens)
			if !l.failedCall(k) {
				f.ServedOK++
			}
			if first < 0 || k.at < first {
				first = k.at
			}
			last = max(last, k.at)
		case k.up == p && !w.endedByRun && k.at >= int64(w.end) && !l.failedCall(k) && (back < 0 || k.at < back):
			back = k.at
		}
	}
	if x.usage[fb] {
		f.FallbackTokens = Ptr(tokens)
	}
	f.FailedOverAtS, f.FailedOverAfterS, _ = seen{first, first, first}.since(start)
	f.LastFallbackAtS = Ptr(seconds(time.Duration(last)))
	if back >= 0 {
		f.FailedBack = true
		f.FailedBackAtS, f.FailedBackAfterS, _ = seen{back, back, back}.since(int64(w.end))
		for i := range l.calls {
			if k := &l.calls[i]; k.up == fb && k.flags&rcHealth == 0 && k.at > back && k.at < end {
				f.FallbackAfterFailBack++
			}
		}
	}
	f.Statement = failoverStatement(f, name, w)
	return f
}

// failoverStatement says the figure in one sentence.
func failoverStatement(f *Failover, primary string, w window) string {
	what := fmt.Sprintf("%s of %s's %s", num.Plural(f.Served, "request"), primary, num.Plural(f.Requests, "request"))
	how := fmt.Sprintf("%d ok; %d after %s failed them, %d sent straight to it", f.ServedOK, f.AfterPrimary, primary, f.PrimarySkipped)
	if f.Evidence == "time" {
		what, how = num.Plural(f.Served, "call"), fmt.Sprintf("%d ok; matched in time: no request identity survived the gateway", f.ServedOK)
	}
	cost := num.Plural(f.FallbackCalls, "call")
	if f.FallbackTokens != nil {
		cost += " and " + num.Plural(*f.FallbackTokens, "token")
	}
	s := fmt.Sprintf("Failed over to %s %s after the fault began: it served %s (%s), %s.", f.Fallback, after(f.FailedOverAfterS, f.FailedOverAfterBoundsS),
		what, how, cost)
	if f.BalancedToFallback > 0 {
		s += fmt.Sprintf(" %s went straight to %s, as %s of the route's did before the fault (balancing): not counted.",
			num.Plural(f.BalancedToFallback, "more request"), f.Fallback, num.PctP(f.FallbackShareBefore))
	}
	switch {
	case w.endedByRun:
		s += " The fault lasted to the run's end."
	case f.FailedBack:
		s += fmt.Sprintf(" Failed back to %s %s after the fault ended.", primary, after(f.FailedBackAfterS, f.FailedBackAfterBoundsS))
		if f.FallbackAfterFailBack > 0 {
			s += fmt.Sprintf(" %s sent later still went to %s.", num.Plural(f.FallbackAfterFailBack, "request"), f.Fallback)
		}
	default:
		s += fmt.Sprintf(" It had not failed back to %s when the run ended.", primary)
	}
	return s
}

// after is a figure in seconds for a sentence, with its bounds.
func after(v *float64, b *Bounds) string {
	if b == nil {
		return num.SecP(v)
	}
	return fmt.Sprintf("%s (between %s and %s)", num.SecP(v), num.SecP(b.Min), num.SecP(b.Max))
}
