package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// The other half of resilience, black-box: retries, deadlines and cost,
// from the calls the upstreams received and the client's own record. An
// attempt is one call an upstream received for one client request (the
// first call included), matched by the forwarded sequence header; health
// checks are not attempts. Every figure is null when the journal cannot
// fix it (no forwarded sequence header, no retry, no fault window).

// AttemptsDefinition is the definition of "attempts" stated in every
// report that shows them.
const AttemptsDefinition = "attempts = every call an upstream received for one client request, the first call included (1 = not retried)"

// Thresholds of the retry analysis, fixed so that runs compare.
const (
	// LockstepWindow is how close two retries of different requests must
	// start to count as coincident.
	LockstepWindow = 10 * time.Millisecond
	// LockstepMinRetries is the least number of retries at an upstream for
	// a lockstep verdict.
	LockstepMinRetries = 10
	// JitterMinWaits is the least number of waits before one retry
	// position for the full-jitter test of that position.
	JitterMinWaits = 10
	// JitterKSCritical is the Kolmogorov–Smirnov critical value at
	// α = 0.001 of the full-jitter test, in Stephens' form: a position is
	// rejected when D·(√m + 0.12 + 0.11/√m) exceeds it (m the waits
	// tested). A true full-jitter gateway is then rejected in about one
	// run in a thousand per position, while a fixed wait is rejected from
	// 10 waits on.
	JitterKSCritical = 1.949
	// OrphanTolerance is how long an upstream call may go on after the
	// client's exchange ended before it counts as orphaned: the time the
	// upstream needs to notice a hang-up.
	OrphanTolerance = 100 * time.Millisecond
	// retryExamples caps the write-retry statements per upstream.
	retryExamples = 5
)

// rCall is an upstream call, compacted for the retry analysis.
type rCall struct {
	at, end int64  // run time in ns
	seq     uint64 // valid with rcSeq
	tokens  uint32 // prompt + completion tokens charged
	key     uint32 // interned idempotency key fingerprint; 0 = none
	up      uint16
	mp      uint16 // interned "METHOD path"
	outcome uint16 // interned upstream outcome
	status  int16
	flags   uint8
}

const (
	rcSeq uint8 = 1 << iota
	rcHealth
	rcDone
	rcRetryAfter // the response announced a Retry-After
)

// rReq is a client request, compacted for the retry analysis.
type rReq struct {
	seq                 uint64
	sent, headers, done int64 // 0 = did not happen
	deadline            int64
	up, mp, outcome     uint16
	status              int16
	keyed               bool
	resent              bool // the client's own transport sent it again
}

// retryLog collects what the retry, deadline and cost analysis needs from
// the journal, in compact records.
type retryLog struct {
	calls    []rCall
	reqs     []rReq
	ups      *interner
	mps      *interner
	keys     map[string]uint32
	outcomes *interner
	owners   []int32   // callOwners, once computed
	bySeq    *seqIndex // seqs, once computed
}

func newRetryLog() *retryLog {
	return &retryLog{ups: newInterner(), mps: newInterner(), keys: map[string]uint32{}, outcomes: newInterner()}
}

func (l *retryLog) addCall(t time.Duration, p *journal.UpstreamRequest) {
	k := rCall{at: int64(t), up: l.ups.id(p.Upstream), mp: l.mps.pair(p.Method, p.Path),
		outcome: l.outcomes.id(string(callOutcome(p))), status: int16(min(max(p.Status, 0), 32767)),
		tokens: uint32(min(max(p.PromptTokens+p.CompletionTokens, 0), 1<<32-1))}
	k.end = k.at
	if p.Done > 0 && p.Done >= t {
		k.end = int64(p.Done)
		k.flags |= rcDone
	}
	if p.Seq != nil {
		k.seq = *p.Seq
		k.flags |= rcSeq
	}
	if p.HealthCheck {
		k.flags |= rcHealth
	}
	if p.RetryAfter > 0 {
		k.flags |= rcRetryAfter
	}
	if p.IdempotencyKey != "" {
		id, ok := l.keys[p.IdempotencyKey]
		if !ok {
			id = uint32(len(l.keys) + 1)
			l.keys[p.IdempotencyKey] = id
		}
		k.key = id
	}
	l.calls = append(l.calls, k)
}

func (l *retryLog) addRequest(p *journal.ClientRequest) {
	if p.Sent == 0 {
		return // never sent: no attempt, no cost, no deadline
	}
	l.reqs = append(l.reqs, rReq{seq: p.Seq, sent: int64(p.Sent), headers: int64(p.HeadersAt), done: int64(p.Done),
		deadline: int64(p.Deadline), up: l.ups.id(p.Upstream), mp: l.mps.pair(p.Method, p.Route),
		outcome: l.outcomes.id(string(p.Outcome)), status: int16(min(max(p.Status, 0), 32767)), keyed: p.IdempotencyKey,
		resent: len(p.Resent) > 0})
}

// interner maps strings to small integers; index 0 is "". It keeps the
// retry records compact (a name is stored once).
type interner struct {
	ids   map[string]uint16
	names []string
	pairs map[[2]string]uint16 // pair's cache: no string built per lookup
	// recent answers most lookups of id and pair before their maps.
	recent     recent[uint16]
	recentPair recent[uint16]
}

func newInterner() *interner {
	return &interner{ids: map[string]uint16{"": 0}, names: []string{""}, pairs: map[[2]string]uint16{}}
}

// pair is id(a + " " + b) without building the string for a name already
// seen (a million events had been a million concatenations).
func (in *interner) pair(a, b string) uint16 {
	if id, ok := in.recentPair.get(a, b); ok {
		return id
	}
	k := [2]string{a, b}
	id, ok := in.pairs[k]
	if !ok {
		id = in.id(a + " " + b)
		if len(in.pairs) < 1<<16 {
			in.pairs[k] = id
		}
	}
	in.recentPair.put(a, b, id)
	return id
}

func (in *interner) id(s string) uint16 {
	if id, ok := in.recent.get(s, ""); ok {
		return id
	}
	id, ok := in.ids[s]
	if !ok {
		if len(in.names) >= 1<<16-1 {
			// Folding the rest into one bucket beats growing without bound.
			return uint16(len(in.names) - 1)
		}
		id = uint16(len(in.names))
		in.ids[s] = id
		in.names = append(in.names, s)
	}
	in.recent.put(s, "", id)
	return id
}

// span is a time interval [start, end) in run time (ns).
type span struct{ start, end int64 }

func inSpans(t int64, ss []span) bool {
	for _, s := range ss {
		if t >= s.start && t < s.end {
			return true
		}
	}
	return false
}

// resilience runs the retry analysis over the collector's fault windows:
// per upstream its own windows, gateway-wide the phases' "during" span; and
// per episode, over the requests sent during it.
func (c *collector) resilience(a *Analysis, wins map[string][]window, durStart, durEnd int64) *Resilience {
	per := map[string][]span{}
	for u, ws := range wins {
		for _, w := range ws {
			per[u] = append(per[u], span{int64(w.start), int64(w.end)})
		}
	}
	var during []span
	if durStart >= 0 {
		during = []span{{durStart, durEnd}}
	}
	res, ix := analyzeResilience(c.rl, per, during, durStart)
	for name, ua := range a.Upstreams {
		upID, ok := c.rl.ups.ids[name]
		for j, ep := range ua.Episodes {
			if ep == nil || j >= len(per[name]) {
				continue
			}
			w := per[name][j]
			if ok && ix.upSeq[upID] {
				ep.Retries = ix.figures(upID, per[name], &w)
			}
			cost := c.rl.cost([]span{w}, durStart)
			ep.Cost = &cost
		}
	}
	return res
}

func isPostPatch(m string) bool { return m == "POST" || m == "PATCH" }
func isPutDelete(m string) bool { return m == "PUT" || m == "DELETE" }

func methodOf(mp string) string { m, _, _ := strings.Cut(mp, " "); return m }

// failedCall reports an attempt that failed as the gateway saw it.
func (l *retryLog) failedCall(c *rCall) bool {
	if c.status >= 500 || c.status == 429 {
		return true
	}
	o := journal.Outcome(l.outcomes.names[c.outcome])
	return o != journal.OutcomeUpstreamComplete && o != ""
}

// retryIndex is the calls of the log grouped by upstream and client request.
type retryIndex struct {
	l *retryLog
	// byUp holds, per upstream, the client requests its figures look at,
	// in log order: those routed to it and those whose sequence number
	// its calls carried, each with those calls in time order. Built once,
	// so that the figures of every episode walk a slice instead of
	// looking every request up again (the analysis of a million events
	// spent most of its time in those lookups).
	byUp  map[uint16][]reqCalls
	upSeq map[uint16]bool
}

// reqCalls is one client request (an index into retryLog.reqs) and its
// calls at one upstream (indexes into retryLog.calls).
type reqCalls struct {
	ri  int32
	idx []int
}

func newRetryIndex(l *retryLog) *retryIndex {
	seqs := l.seqs()
	gc, start := groupCalls(l, seqs)
	flat := make([]int, len(gc))
	for j, g := range gc {
		flat[j] = int(g.i)
	}
	ix := &retryIndex{l: l, byUp: map[uint16][]reqCalls{}, upSeq: map[uint16]bool{}}
	// Sized first: each request is in its own upstream's list, and in
	// another's when that one's calls carried its number.
	lists := make([][]reqCalls, len(l.ups.names)) // by upstream id
	sizes := make([]int, len(l.ups.names))
	for ri := range l.reqs {
		sizes[l.reqs[ri].up]++
	}
	for j := range gc {
		if j == 0 || gc[j].up != gc[j-1].up || gc[j].head != gc[j-1].head {
			sizes[gc[j].up]++
		}
	}
	// Filled in request order, so that every list is in log order without
	// sorting it (a sort of each list had been a twentieth of the
	// analysis): a request's entries are its number's groups, one per
	// upstream whose calls carried the number, and its own upstream's
	// without calls when none of them is.
	for ri := range l.reqs {
		r := &l.reqs[ri]
		own := false
		if h, ok := seqs.first(r.seq); ok {
			for j, end := start[h], start[h+1]; j < end; {
				k := j
				for k < end && gc[k].up == gc[j].up {
					k++
				}
				up := gc[j].up
				if lists[up] == nil {
					lists[up] = make([]reqCalls, 0, sizes[up])
				}
				lists[up] = append(lists[up], reqCalls{int32(ri), flat[j:k:k]})
				ix.upSeq[up] = true
				own = own || up == r.up
				j = k
			}
		}
		if !own {
			if lists[r.up] == nil {
				lists[r.up] = make([]reqCalls, 0, sizes[r.up])
			}
			lists[r.up] = append(lists[r.up], reqCalls{int32(ri), nil})
		}
	}
	for up, rs := range lists {
		if rs != nil {
			ix.byUp[uint16(up)] = rs
		}
	}
	return ix
}

// groupedCall is a call of a replayed request: its arrival, the first
// request of its sequence number (head), its index and its upstream.
type groupedCall struct {
	at   int64
	head int32
	i    int32
	up   uint16
}

// groupCalls groups the calls of replayed requests by the first request
// of their number; start[h] is where request h's calls begin in the
// result (start[h+1] where they end).
func groupCalls(l *retryLog, seqs *seqIndex) ([]groupedCall, []int32) {
	// The calls of replayed requests (a sequence number one of the
	// requests has; no health check), grouped by upstream and the first
	// request of their number, in time order within a group (ties in log
	// order).
	gc := make([]groupedCall, 0, len(l.calls))
	for i := range l.calls {
		c := &l.calls[i]
		if c.flags&rcHealth != 0 || c.flags&rcSeq == 0 {
			continue
		}
		if h, ok := seqs.first(c.seq); ok {
			gc = append(gc, groupedCall{c.at, h, int32(i), c.up})
		}
	}
	// A counting sort by request (linear: a comparison sort of every call
	// was a tenth of the analysis), then each request's few calls by
	// upstream and time; gc is in log order, so ties stay in log order.
	start := make([]int32, len(l.reqs)+1)
	for _, g := range gc {
		start[g.head+1]++
	}
	for h := 1; h < len(start); h++ {
		start[h] += start[h-1]
	}
	next := slices.Clone(start[:len(l.reqs)])
	byHead := make([]groupedCall, len(gc))
	for _, g := range gc {
		byHead[next[g.head]] = g
		next[g.head]++
	}
	gc = byHead
	byUpAt := func(a, b groupedCall) int { return cmp.Or(cmp.Compare(a.up, b.up), cmp.Compare(a.at, b.at)) }
	for h := 0; h+1 < len(start); h++ {
		run := gc[start[h]:start[h+1]]
		if len(run) > 16 { // many calls for one number (a gateway that forwards a constant): no quadratic sort
			slices.SortStableFunc(run, byUpAt)
			continue
		}
		for a := 1; a < len(run); a++ { // insertion sort: stable, and runs are short
			for b := a; b > 0 && byUpAt(run[b], run[b-1]) < 0; b-- {
				run[b], run[b-1] = run[b-1], run[b]
			}
		}
	}
	return gc, start
}

// analyzeResilience computes the figures. windows maps an upstream to its
// fault windows; all is their union (the gateway-wide "during"), firstFault
// the start of the first window (-1 when none).
func analyzeResilience(l *retryLog, windows map[string][]span, all []span, firstFault int64) (*Resilience, *retryIndex) {
	res := &Resilience{AttemptsDefinition: AttemptsDefinition, Upstreams: map[string]*RetryFigures{}, Statements: []string{}}
	ix := newRetryIndex(l)
	for upID := range ix.upSeq {
		name := l.ups.names[upID]
		res.Upstreams[name] = ix.figures(upID, windows[name], nil)
	}
	// Gateway-wide: the client's deadline against the gateway's answer.
	for ri := range l.reqs {
		r := &l.reqs[ri]
		out := journal.Outcome(l.outcomes.names[r.outcome])
		if out == journal.OutcomeHeadersTimeout {
			res.ClientDeadlineFirst++
		}
	}
	for _, f := range res.Upstreams {
		res.AtRisk += f.Deadlines.GaveUpFirst["gateway"] + f.Deadlines.GaveUpFirst["client"]
	}
	res.Cost = l.cost(all, firstFault)
	res.Statements = res.statements()
	return res, ix
}

// figures are one upstream's retry figures over the client requests sent
// in scope (every one when nil); wins are the upstream's fault windows,
// for "before" and "during".
func (ix *retryIndex) figures(upID uint16, wins []span, scope *span) *RetryFigures {
	l := ix.l
	name := l.ups.names[upID]
	f := &RetryFigures{Distribution: map[string]int64{}}
	f.Lockstep.WindowMs = float64(LockstepWindow) / float64(time.Millisecond)
	f.Deadlines.GaveUpFirst = map[string]int64{"upstream": 0, "gateway": 0, "client": 0}
	var before, during [2]int64 // requests, attempts
	firstWin := int64(-1)
	if len(wins) > 0 {
		firstWin = wins[0].start
		for _, w := range wins {
			firstWin = min(firstWin, w.start)
		}
	}
	var rw retryWaits
	var past []float64
	examples := map[string]int64{}
	var dist []int64 // requests by number of attempts
	for _, rc := range ix.byUp[upID] {
		r, idx := &l.reqs[rc.ri], rc.idx
		if scope != nil && (r.sent < scope.start || r.sent >= scope.end) {
			continue
		}
		if r.resent {
			// The client's own transport sent it again: its extra calls
			// are not the gateway's retries.
			f.ClientResent++
			continue
		}
		n := int64(len(idx))
		f.attemptSamples = append(f.attemptSamples, float64(n))
		f.Requests++
		f.Attempts += n
		for int64(len(dist)) <= n {
			dist = append(dist, 0)
		}
		dist[n]++
		f.MaxAttempts = max(f.MaxAttempts, n)
		switch {
		case inSpans(r.sent, wins):
			during[0]++
			during[1] += n
		case firstWin < 0 || r.sent < firstWin:
			before[0]++
			before[1] += n
		}
		rw.add(l, idx, r.seq)
		if n > 0 {
			l.writeFigures(f, r, idx, examples, name)
			past = append(past, l.deadlineFigures(f, r, idx)...)
		}
	}
	for n, c := range dist {
		if c > 0 {
			f.Distribution[strconv.Itoa(n)] = c
		}
	}
	reached := f.Requests - f.Distribution["0"]
	if reached > 0 {
		f.RetriedShare = Ptr(float64(reached-f.Distribution["1"]) / float64(reached))
	}
	if before[0] > 0 {
		f.AmplificationBefore = Ptr(float64(before[1]) / float64(before[0]))
	}
	if during[0] > 0 {
		f.AmplificationDuring = Ptr(float64(during[1]) / float64(during[0]))
	}
	f.Backoff = backoffFigures(rw.all, rw.waits)
	f.Backoff.Jitter = jitterFigures(rw.jwaits)
	f.waitSamples = rw.samples
	starts := make([]int64, len(rw.retries))
	seqs := make([]uint64, len(rw.retries))
	sort.Slice(rw.retries, func(a, b int) bool { return rw.retries[a].t < rw.retries[b].t })
	for i, r := range rw.retries {
		starts[i], seqs[i] = r.t, r.seq
	}
	f.Lockstep = lockstep(starts, seqs, LockstepWindow)
	l.scheduleLockstep(&f.Lockstep, rw.retries, int64(LockstepWindow))
	f.Deadlines.PastAnswerMs = msSummary(past)
	f.Writes.Examples = topExamples(examples, retryExamples)
	return f
}

// retryStart is when a retry began, and its client request.
type retryStart struct {
	t   int64
	seq uint64
}

// retryWaits are the waits before each retry of an upstream's requests:
// by retry index (waits), the same without the waits an upstream set
// with Retry-After (jwaits: the jitter test's), all of them in ms, in
// seconds (samples, for report compare), and when each retry began.
type retryWaits struct {
	waits, jwaits [][]float64
	all, samples  []float64
	retries       []retryStart
}

// add records the waits between the attempts idx of request seq.
func (w *retryWaits) add(l *retryLog, idx []int, seq uint64) {
	for j := 1; j < len(idx); j++ {
		prev, cur := &l.calls[idx[j-1]], &l.calls[idx[j]]
		wait := max(float64(cur.at-prev.end)/float64(time.Millisecond), 0) // overlapping attempts (hedging): no wait
		for len(w.waits) < j {
			w.waits = append(w.waits, nil)
		}
		w.waits[j-1] = append(w.waits[j-1], wait)
		if prev.flags&rcRetryAfter == 0 {
			for len(w.jwaits) < j {
				w.jwaits = append(w.jwaits, nil)
			}
			w.jwaits[j-1] = append(w.jwaits[j-1], wait)
		}
		w.all = append(w.all, wait)
		w.samples = append(w.samples, wait/1000)
		w.retries = append(w.retries, retryStart{cur.at, seq})
	}
}

// deadlineFigures counts the orphaned calls of request r (attempts idx)
// and who gave up first when it failed; it returns how long each orphan
// ran past the client's answer, in ms.
func (l *retryLog) deadlineFigures(f *RetryFigures, r *rReq, idx []int) []float64 {
	var past []float64
	// Orphans and who gave up first.
	end := r.done
	var last *rCall
	for _, ci := range idx {
		c := &l.calls[ci]
		if last == nil || c.end > last.end {
			last = c
		}
		if end > 0 && c.end > end+int64(OrphanTolerance) {
			f.Deadlines.OrphanedCalls++
			past = append(past, float64(c.end-end)/float64(time.Millisecond))
		}
	}
	out := journal.Outcome(l.outcomes.names[r.outcome])
	if out != journal.OutcomeOK {
		f.Deadlines.GaveUpFirst[l.gaveUpFirst(out, r, idx, last)]++
	}
	return past
}

// gaveUpFirst says who ended failed request r, whose calls are idx (last
// the one that ended last): "client" when its own deadline fired;
// "gateway" when the gateway hung up on any of its calls (a timeout:
// whatever came after followed from that give-up), or answered while a
// call still ran, or failed the request although every call answered
// (a stream it could not resume after a retry); "upstream" when the
// calls ended on their own and one failed (an error status, a reset, a
// cut: what the gateway passed on or gave up after).
func (l *retryLog) gaveUpFirst(out journal.Outcome, r *rReq, idx []int, last *rCall) string {
	if out == journal.OutcomeHeadersTimeout || out == journal.OutcomeDeadlineMidBody {
		return "client"
	}
	failed := false
	for _, ci := range idx {
		c := &l.calls[ci]
		if l.hungUp(c) {
			return "gateway"
		}
		failed = failed || l.failedCall(c) || c.status >= 400
	}
	if (r.done > 0 && last.end > r.done+int64(OrphanTolerance)) || !failed {
		return "gateway"
	}
	return "upstream"
}

// hungUp reports that the upstream saw the caller hang up on the call.
func (l *retryLog) hungUp(c *rCall) bool {
	if c == nil {
		return false
	}
	o := journal.Outcome(l.outcomes.names[c.outcome])
	return o == journal.OutcomeUpstreamGone || o == journal.OutcomeUpstreamStalled
}

// writeFigures counts one request's write retries at an upstream.
func (l *retryLog) writeFigures(f *RetryFigures, r *rReq, idx []int, examples map[string]int64, upstream string) {
	first := &l.calls[idx[0]]
	m := methodOf(l.mps.names[first.mp])
	if !isPostPatch(m) && !isPutDelete(m) {
		return
	}
	f.Writes.Writes++
	if first.key == 0 && l.failedCall(first) {
		f.Writes.FailedWithoutKey++
	}
	if len(idx) < 2 {
		return
	}
	split := &f.Writes.PostPatch
	if isPutDelete(m) {
		split = &f.Writes.PutDelete
	}
	same, none := true, true
	for _, ci := range idx {
		k := l.calls[ci].key
		if k != 0 {
			none = false
		}
		if k != first.key || k == 0 {
			same = false
		}
	}
	switch {
	case none:
		split.WithoutKey++
		examples[fmt.Sprintf("%s|%s|%d", l.mps.names[first.mp], upstream, len(idx))]++
	case same:
		split.SameKey++
	default:
		split.InconsistentKey++
	}
}

// topExamples turns the write-retry groups into statements, most
// frequent first: "12 POST /tools/search were sent 4 times to search
// without an Idempotency-Key".
func topExamples(ex map[string]int64, n int) []string {
	type g struct {
		k string
		c int64
	}
	var gs []g
	for k, c := range ex {
		gs = append(gs, g{k, c})
	}
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].c != gs[j].c {
			return gs[i].c > gs[j].c
		}
		return gs[i].k < gs[j].k
	})
	var out []string
	for i, x := range gs {
		if i == n {
			break
		}
		parts := strings.SplitN(x.k, "|", 3)
		times := map[string]string{"2": "twice", "3": "3 times"}[parts[2]]
		if times == "" {
			times = parts[2] + " times"
		}
		verb := "were"
		if x.c == 1 {
			verb = "was"
		}
		out = append(out, fmt.Sprintf("%d %s %s sent %s to %s without an idempotency key", x.c, parts[0], verb, times, parts[1]))
	}
	return out
}

// seqs returns the index of the requests by sequence number, built once.
func (l *retryLog) seqs() *seqIndex {
	if l.bySeq == nil {
		l.bySeq = newSeqIndex(len(l.reqs), func(i int) uint64 { return l.reqs[i].seq })
	}
	return l.bySeq
}

// median of a sorted slice, the upper one of an even count (as minP50Max).
