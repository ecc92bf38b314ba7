package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/halfopen/rehearse/reports/num"

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
		outcome: l.outcomes.id(string(p.Outcome)), status: int16(min(max(p.Status, 0), 32767)),
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

// Resilience is the retry, deadline and cost analysis of a run (run.json
// "resilience"; docs/analysis.md defines every figure).
type Resilience struct {
	// AttemptsDefinition says what an attempt is.
	AttemptsDefinition string `json:"attempts_definition"`
	// Upstreams holds the per-upstream figures, for upstreams whose calls
	// carried the client's sequence number.
	Upstreams map[string]*RetryFigures `json:"upstreams"`
	// ClientDeadlineFirst counts client requests whose own deadline fired
	// before the gateway had answered (headers timeout); AtRisk counts the
	// requests on which somebody gave up (the gateway on an upstream call,
	// or the client on the gateway): the requests that test the order.
	ClientDeadlineFirst int64 `json:"client_deadline_before_gateway_answer"`
	AtRisk              int64 `json:"deadline_requests_at_risk"`
	// Cost is upstream work per completed client request.
	Cost CostFigures `json:"cost"`
	// Statements say the findings in words.
	Statements []string `json:"statements"`
}

// RetryFigures are one upstream's retry, write-retry and deadline figures.
type RetryFigures struct {
	// Requests counts client requests that reached the upstream at least
	// once, or were routed to it; Attempts the calls matched to them.
	Requests int64 `json:"requests"`
	Attempts int64 `json:"attempts"`
	// ClientResent counts client requests left out because the client's
	// own HTTP transport sent them more than once (journal "resent"):
	// their extra calls are not the gateway's.
	ClientResent int64 `json:"client_resent"`
	// Distribution counts requests by their number of attempts ("0" for
	// requests routed here that never reached it, e.g. fast-failed).
	Distribution map[string]int64 `json:"attempts_distribution"`
	MaxAttempts  int64            `json:"max_attempts"`
	// RetriedShare is the share of requests that reached the upstream
	// with two attempts or more.
	RetriedShare *float64 `json:"retried_share"`
	// AmplificationBefore/During are attempts per client request among
	// requests sent before the upstream's first fault window and during
	// its windows.
	AmplificationBefore *float64 `json:"retry_amplification_before"`
	AmplificationDuring *float64 `json:"retry_amplification_during"`
	// Backoff summarises the waits before retries.
	Backoff BackoffFigures `json:"backoff"`
	// Lockstep says how clustered in time retries of different requests are.
	Lockstep LockstepFigures `json:"lockstep"`
	// Writes are non-idempotent requests that reached the upstream more
	// than once.
	Writes WriteRetryFigures `json:"write_retries"`
	// Deadlines are who gave up first and the orphaned calls.
	Deadlines DeadlineFigures `json:"deadlines"`

	// attemptSamples (attempts of each request) and waitSamples (each wait
	// before a retry, in seconds) are what report compare compares; they
	// are rebuilt from the journal, not written to run.json.
	attemptSamples, waitSamples []float64
}

// BackoffFigures summarise the wait between the end of one attempt and
// the start of the next, over every retry of the upstream.
type BackoffFigures struct {
	Retries int64    `json:"retries"`
	MinMs   *float64 `json:"min_ms"`
	P50Ms   *float64 `json:"p50_ms"`
	MaxMs   *float64 `json:"max_ms"`
	// P50ByRetryMs is the median wait before the 1st, 2nd, … retry.
	P50ByRetryMs []float64 `json:"p50_by_retry_ms"`
	// Grows reports whether the median wait grows from one retry to the
	// next (exponential backoff: by at least a half each time); null with
	// fewer than 5 waits at two retry positions.
	Grows *bool `json:"grows"`
	// Jitter tests the waits of each retry position for full jitter.
	Jitter JitterFigures `json:"jitter"`
}

// JitterFigures test whether the waits before each retry position are
// drawn uniformly between zero and a cap ("full jitter", the backoff that
// keeps clients from retrying in lockstep). Waits after a response that
// announced a Retry-After are left out: those are the upstream's to set.
//
// The test: for waits uniform on [0, c], those below the k-th longest,
// divided by it, are independent and uniform on [0, 1] whatever c is, so
// the unknown cap costs nothing (k is a tenth of the waits, so that a few
// waits stretched by a loaded machine are not taken for the cap). A
// one-sample Kolmogorov–Smirnov test of those ratios against U(0, 1) at
// α = 0.001 (Stephens' critical value, JitterKSCritical) rejects a fixed
// wait (the ratios pile up near 1), a wait with a floor ("equal jitter":
// none below half the cap) and an immediate retry with a rare long one
// alike.
type JitterFigures struct {
	// Tests are the positions with at least JitterMinWaits waits.
	Tests []JitterTest `json:"tests"`
	// Full is true when every tested position passes, false when one is
	// rejected, null when no position has enough waits.
	Full *bool `json:"full"`
}

// JitterTest is the full-jitter test of one retry position.
type JitterTest struct {
	// Retry is the position: 1 for the wait before the first retry.
	Retry int `json:"retry"`
	// Waits counts the waits of the position; MaxMs is the longest and
	// CapMs the estimate of the cap the test scales by: the k-th longest,
	// k a tenth of the waits (at least 1).
	Waits int     `json:"waits"`
	MaxMs float64 `json:"max_ms"`
	CapMs float64 `json:"cap_ms"`
	// D is the Kolmogorov–Smirnov distance of wait/cap from U(0, 1);
	// Critical the largest D the test accepts for this many waits.
	D        float64 `json:"ks_d"`
	Critical float64 `json:"ks_critical"`
	Full     bool    `json:"full"`
}

// LockstepFigures compare how many retries start within LockstepWindow of
// another request's retry with what independent retries at the same local
// rate would give.
type LockstepFigures struct {
	Retries  int64   `json:"retries"`
	WindowMs float64 `json:"window_ms"`
	// CoincidentShare is the observed share; IndependentShare the share
	// expected of independent retries (Poisson at the rate of retries in
	// the second around each one).
	CoincidentShare  *float64 `json:"coincident_share"`
	IndependentShare *float64 `json:"independent_share"`
	// Lockstep is the verdict: the observed share exceeds the independent
	// one by three standard errors and by half again; null with fewer
	// than LockstepMinRetries retries.
	Lockstep *bool `json:"lockstep"`
}

// WriteRetryFigures count write requests that reached the upstream more
// than once. POST and PATCH are counted apart from PUT and DELETE (which
// HTTP defines as idempotent, though many APIs do not make them so).
type WriteRetryFigures struct {
	// Writes counts write requests that reached the upstream; Failed
	// those whose first attempt failed without a key (the opportunities
	// for a blind retry).
	Writes           int64    `json:"writes"`
	FailedWithoutKey int64    `json:"first_attempt_failed_without_key"`
	PostPatch        KeySplit `json:"post_patch"`
	PutDelete        KeySplit `json:"put_delete"`
	// Examples are the most frequent retried writes without a key.
	Examples []string `json:"examples,omitempty"`
}

// KeySplit splits retried writes by their idempotency key: none on any
// attempt, the same key on every attempt, or keys that differ between
// attempts (missing on some, or changed: no protection).
type KeySplit struct {
	WithoutKey      int64 `json:"without_key"`
	SameKey         int64 `json:"same_key"`
	InconsistentKey int64 `json:"inconsistent_key"`
}

// DeadlineFigures say, for the failed client requests that reached the
// upstream, who gave up first, and count the orphaned calls.
type DeadlineFigures struct {
	// GaveUpFirst counts failed requests by who ended them: "upstream"
	// (its last call ended on its own before the answer), "gateway" (it
	// hung up on the call, or answered while the call still ran),
	// "client" (its deadline fired before the gateway's answer was done).
	GaveUpFirst map[string]int64 `json:"gave_up_first"`
	// OrphanedCalls are calls still running OrphanTolerance after the
	// client's exchange ended (the gateway answered, or the client left);
	// PastAnswerMs is how long they ran past it.
	OrphanedCalls int64     `json:"orphaned_calls"`
	PastAnswerMs  MinP50Max `json:"orphaned_past_answer_ms"`
}

// CostFigures are upstream work per completed client request (2xx with
// its whole body), before any fault window and during them, over every
// upstream: client requests by their send, and calls with the request
// they were made for (calls without a sequence number by their arrival). Tokens are those the upstreams reported charging (the fake
// model provider's usage); calls exclude health checks.
type CostFigures struct {
	CompletedBefore int64 `json:"completed_before"`
	CompletedDuring int64 `json:"completed_during"`
	CallsBefore     int64 `json:"calls_before"`
	CallsDuring     int64 `json:"calls_during"`
	TokensBefore    int64 `json:"tokens_before"`
	TokensDuring    int64 `json:"tokens_during"`
	// CallsPerCompleted… and TokensPerCompleted… are the ratios; null
	// when nothing completed in the phase (or no tokens were charged).
	CallsPerCompletedBefore  *float64 `json:"calls_per_completed_before"`
	CallsPerCompletedDuring  *float64 `json:"calls_per_completed_during"`
	TokensPerCompletedBefore *float64 `json:"tokens_per_completed_before"`
	TokensPerCompletedDuring *float64 `json:"tokens_per_completed_during"`
	// CallsAmplification and TokensAmplification are during / before;
	// null when either side is unknown. Infinite cost (work spent and
	// nothing completed) is reported by WorkWithoutCompletion.
	CallsAmplification    *float64 `json:"cost_amplification_calls"`
	TokensAmplification   *float64 `json:"cost_amplification_tokens"`
	WorkWithoutCompletion bool     `json:"work_without_completion"`
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

// retryKey names one client request's calls at one upstream.
type retryKey struct {
	up  uint16
	seq uint64
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
		switch {
		case out == journal.OutcomeHeadersTimeout || out == journal.OutcomeDeadlineMidBody:
			f.Deadlines.GaveUpFirst["client"]++
		case l.hungUp(last) || (r.done > 0 && last.end > r.done+int64(OrphanTolerance)):
			f.Deadlines.GaveUpFirst["gateway"]++
		default:
			f.Deadlines.GaveUpFirst["upstream"]++
		}
	}
	return past
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

// backoffFigures summarises waits before retries, overall and by retry.
func backoffFigures(all []float64, byRetry [][]float64) BackoffFigures {
	b := BackoffFigures{Retries: int64(len(all)), P50ByRetryMs: []float64{}}
	if len(all) == 0 {
		return b
	}
	s := sortedCopy(all)
	b.MinMs, b.P50Ms, b.MaxMs = Ptr(num.Round3(s[0])), Ptr(num.Round3(num.Median(s))), Ptr(num.Round3(s[len(s)-1]))
	var meds []float64
	for _, w := range byRetry {
		if len(w) < 5 {
			break
		}
		meds = append(meds, num.Median(w))
	}
	for _, w := range byRetry {
		if len(w) == 0 {
			break
		}
		b.P50ByRetryMs = append(b.P50ByRetryMs, num.Round3(num.Median(w)))
	}
	if len(meds) >= 2 {
		grows := true
		for i := 1; i < len(meds); i++ {
			if meds[i] < 1.5*meds[i-1] {
				grows = false
			}
		}
		b.Grows = &grows
	}
	return b
}

// jitterFigures runs the full-jitter test on each retry position with
// enough waits (see JitterFigures).
func jitterFigures(byRetry [][]float64) JitterFigures {
	j := JitterFigures{Tests: []JitterTest{}}
	for i, w := range byRetry {
		if len(w) < JitterMinWaits {
			continue
		}
		t := fullJitterTest(w)
		t.Retry = i + 1
		j.Tests = append(j.Tests, t)
	}
	if len(j.Tests) > 0 {
		full := true
		for _, t := range j.Tests {
			full = full && t.Full
		}
		j.Full = &full
	}
	return j
}

// fullJitterTest tests waits (ms, at least two) for a uniform draw on
// [0, cap]. For waits uniform on [0, c], those below the k-th longest,
// divided by it, are independent and uniform on [0, 1] whatever c is; k
// is a tenth of the waits (at least 1), so that a few waits stretched by
// a loaded machine (a late timer, a descheduled gateway) are not taken
// for the cap. Those ratios are compared with U(0, 1) by their
// Kolmogorov–Smirnov distance, against Stephens' α = 0.001 critical value.
func fullJitterTest(waits []float64) JitterTest {
	s := sortedCopy(waits)
	k := max(1, (len(s)+9)/10)
	top := s[len(s)-k]
	t := JitterTest{Waits: len(s), MaxMs: num.Round3(s[len(s)-1]), CapMs: num.Round3(top)}
	rest := s[:len(s)-k] // conditioned on the k-th longest
	m := float64(len(rest))
	var d float64
	for i, w := range rest {
		u := 1.0 // every wait equal to the cap: a fixed wait
		if top > 0 {
			u = w / top
		}
		d = max(d, float64(i+1)/m-u, u-float64(i)/m)
	}
	sm := math.Sqrt(m)
	t.D = num.Round3(d)
	t.Critical = num.Round3(JitterKSCritical / (sm + 0.12 + 0.11/sm))
	t.Full = d*(sm+0.12+0.11/sm) <= JitterKSCritical
	return t
}

// lockstep compares the share of retries starting within w of another
// request's retry with what independent retries would give at the local
// rate (Poisson: 1 - exp(-2 w λ), λ the other retries in the second
// around each one). starts is sorted.
func lockstep(starts []int64, seqs []uint64, w time.Duration) LockstepFigures {
	f := LockstepFigures{Retries: int64(len(starts)), WindowMs: float64(w) / float64(time.Millisecond)}
	n := len(starts)
	if n < 2 {
		return f
	}
	const half = int64(500 * time.Millisecond)
	var coincident int
	var expected float64
	lo, hi := 0, 0
	for i, t := range starts {
		near := false
		for j := i - 1; j >= 0 && t-starts[j] <= int64(w); j-- {
			if seqs[j] != seqs[i] {
				near = true
				break
			}
		}
		for j := i + 1; !near && j < n && starts[j]-t <= int64(w); j++ {
			if seqs[j] != seqs[i] {
				near = true
			}
		}
		if near {
			coincident++
		}
		for lo < n && starts[lo] < t-half {
			lo++
		}
		for hi < n && starts[hi] <= t+half {
			hi++
		}
		lambda := float64(hi-lo-1) / 1.0 // others per second
		expected += 1 - math.Exp(-2*w.Seconds()*lambda)
	}
	obs := float64(coincident) / float64(n)
	p0 := expected / float64(n)
	f.CoincidentShare, f.IndependentShare = Ptr(num.Round3(obs)), Ptr(num.Round3(p0))
	if n >= LockstepMinRetries {
		se := math.Sqrt(max(p0*(1-p0), 1e-4) / float64(n))
		v := obs > p0+3*se && obs > 1.5*p0
		f.Lockstep = &v
	}
	return f
}

// cost sums upstream work per completed request before and during the
// fault windows.
func (l *retryLog) cost(during []span, firstFault int64) CostFigures {
	var c CostFigures
	phase := func(t int64) int { // 0 before, 1 during, -1 other
		switch {
		case inSpans(t, during):
			return 1
		case firstFault < 0 || t < firstFault:
			return 0
		}
		return -1
	}
	owners := l.callOwners()
	reqPhase := make([]int8, len(l.reqs))
	for i := range l.reqs {
		r := &l.reqs[i]
		reqPhase[i] = int8(phase(r.sent))
		if journal.Outcome(l.outcomes.names[r.outcome]) != journal.OutcomeOK || r.status < 200 || r.status > 299 {
			continue
		}
		switch phase(r.sent) {
		case 0:
			c.CompletedBefore++
		case 1:
			c.CompletedDuring++
		}
	}
	for i := range l.calls {
		k := &l.calls[i]
		if k.flags&rcHealth != 0 {
			continue
		}
		// A call belongs to its client request's phase (its retries may
		// come after the window closed); a call without one, to its own.
		var ph int
		if o := owners[i]; o >= 0 {
			ph = int(reqPhase[o])
		} else {
			ph = phase(k.at)
		}
		switch ph {
		case 0:
			c.CallsBefore++
			c.TokensBefore += int64(k.tokens)
		case 1:
			c.CallsDuring++
			c.TokensDuring += int64(k.tokens)
		}
	}
	per := func(work, done int64) *float64 {
		if done == 0 {
			return nil
		}
		return Ptr(num.Round3(float64(work) / float64(done)))
	}
	c.CallsPerCompletedBefore, c.CallsPerCompletedDuring = per(c.CallsBefore, c.CompletedBefore), per(c.CallsDuring, c.CompletedDuring)
	if c.TokensBefore > 0 || c.TokensDuring > 0 {
		c.TokensPerCompletedBefore, c.TokensPerCompletedDuring = per(c.TokensBefore, c.CompletedBefore), per(c.TokensDuring, c.CompletedDuring)
	}
	ratio := func(a, b *float64) *float64 {
		if a == nil || b == nil || *b == 0 {
			return nil
		}
		return Ptr(num.Round3(*a / *b))
	}
	c.CallsAmplification = ratio(c.CallsPerCompletedDuring, c.CallsPerCompletedBefore)
	c.TokensAmplification = ratio(c.TokensPerCompletedDuring, c.TokensPerCompletedBefore)
	c.WorkWithoutCompletion = c.CompletedDuring == 0 && c.CallsDuring > 0
	return c
}

// callOwners returns, for each call, the client request whose phase the
// cost figures count it in: the last request of the log with the call's
// sequence number, or -1 (no sequence number, or none of the replayed
// requests). Computed once: cost runs for the run and for each episode.
func (l *retryLog) callOwners() []int32 {
	if l.owners != nil {
		return l.owners
	}
	seqs := l.seqs()
	l.owners = make([]int32, len(l.calls))
	for i := range l.calls {
		l.owners[i] = -1
		if k := &l.calls[i]; k.flags&rcSeq != 0 {
			if o, ok := seqs.last(k.seq); ok {
				l.owners[i] = o
			}
		}
	}
	return l.owners
}

// seqs returns the index of the requests by sequence number, built once.
func (l *retryLog) seqs() *seqIndex {
	if l.bySeq == nil {
		l.bySeq = newSeqIndex(len(l.reqs), func(i int) uint64 { return l.reqs[i].seq })
	}
	return l.bySeq
}

// statements says the findings in words a postmortem reader gets.
func (r *Resilience) statements() []string {
	out := []string{}
	for _, name := range slices.Sorted(maps.Keys(r.Upstreams)) {
		f := r.Upstreams[name]
		if f.RetriedShare != nil && *f.RetriedShare > 0 {
			s := fmt.Sprintf("%s: %.0f%% of the %d client requests that reached it were retried, up to %d attempts each (%s)",
				name, *f.RetriedShare*100, f.Requests-f.Distribution["0"], f.MaxAttempts, "first call included")
			if f.AmplificationDuring != nil && f.AmplificationBefore != nil {
				s += fmt.Sprintf("; %.2f attempts per request during the fault against %.2f before", *f.AmplificationDuring, *f.AmplificationBefore)
			}
			out = append(out, s+".")
		}
		if b := f.Backoff; b.Retries > 0 {
			s := fmt.Sprintf("%s: waits before retries %s / %s / %s (min / median / max)", name, num.Ms(*b.MinMs), num.Ms(*b.P50Ms), num.Ms(*b.MaxMs))
			switch {
			case b.Grows == nil:
			case *b.Grows:
				s += ", growing from one retry to the next (exponential backoff)"
			default:
				s += ", not growing (no exponential backoff)"
			}
			if j := b.Jitter; j.Full != nil && *j.Full {
				s += fmt.Sprintf("; random between zero and a cap before each of %d retry positions tested (full jitter)", len(j.Tests))
			}
			out = append(out, s+".")
		}
		if j := f.Backoff.Jitter; j.Full != nil && !*j.Full {
			for _, t := range j.Tests {
				if !t.Full {
					out = append(out, fmt.Sprintf("%s: the waits before retry %d are not full jitter (random between zero and a cap): %d waits up to %s, Kolmogorov–Smirnov distance %.2f from uniform where %.2f is the most the test accepts.",
						name, t.Retry, t.Waits, num.Ms(t.MaxMs), t.D, t.Critical))
					break
				}
			}
		}
		if l := f.Lockstep; l.Lockstep != nil && *l.Lockstep {
			out = append(out, fmt.Sprintf("%s: retries in lockstep: %.0f%% of %d retries started within %g ms of another request's retry, where independent jittered retries would give %.0f%%.",
				name, *l.CoincidentShare*100, l.Retries, l.WindowMs, *l.IndependentShare*100))
		}
		out = append(out, PrefixAll(name+": ", f.Writes.Examples)...)
		if n := f.Writes.PutDelete.WithoutKey; n > 0 {
			out = append(out, fmt.Sprintf("%s: %d PUT/DELETE requests reached it more than once without an idempotency key.", name, n))
		}
		if n := f.Writes.PostPatch.InconsistentKey + f.Writes.PutDelete.InconsistentKey; n > 0 {
			out = append(out, fmt.Sprintf("%s: %d write requests were retried with a different or missing idempotency key on some attempt.", name, n))
		}
		if d := f.Deadlines; d.OrphanedCalls > 0 {
			out = append(out, fmt.Sprintf("%s: %d calls were still running after the client's exchange had ended (orphaned), up to %s past it.",
				name, d.OrphanedCalls, num.Ms(*d.PastAnswerMs.Max)))
		}
	}
	if r.ClientDeadlineFirst > 0 {
		out = append(out, fmt.Sprintf("%d client requests gave up at their own deadline before the gateway answered: the gateway's deadline is longer than the client's.", r.ClientDeadlineFirst))
	}
	c := r.Cost
	if c.CallsAmplification != nil {
		s := fmt.Sprintf("Cost per completed request: %.2f upstream calls during faults against %.2f before (×%.2f)",
			*c.CallsPerCompletedDuring, *c.CallsPerCompletedBefore, *c.CallsAmplification)
		if c.TokensAmplification != nil {
			s += fmt.Sprintf("; %.0f tokens against %.0f (×%.2f)", *c.TokensPerCompletedDuring, *c.TokensPerCompletedBefore, *c.TokensAmplification)
		}
		out = append(out, s+".")
	} else if c.WorkWithoutCompletion {
		out = append(out, fmt.Sprintf("During faults the upstreams received %d calls (%d tokens) and no client request completed.", c.CallsDuring, c.TokensDuring))
	}
	return out
}

// PrefixAll prefixes every string of ss with p.
func PrefixAll(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s + "."
	}
	return out
}

// msSummary is min/p50/max of figures in milliseconds (p50 the upper
// median, as minP50Max).
func msSummary(v []float64) MinP50Max {
	if len(v) == 0 {
		return MinP50Max{}
	}
	s := sortedCopy(v)
	return MinP50Max{Min: Ptr(num.Round3(s[0])), P50: Ptr(num.Round3(num.Median(s))), Max: Ptr(num.Round3(s[len(s)-1]))}
}

// median of a sorted slice, the upper one of an even count (as minP50Max).

func sortedCopy(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s
}
