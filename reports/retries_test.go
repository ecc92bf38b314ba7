package reports

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/verdict"

	"github.com/halfopen/rehearse/reports/expect"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// retrySim builds journals of a gateway retrying on a failing upstream:
// client requests every 100ms, each failing attempt answered at once with
// a 503, retried after wait(n) until attempts are spent.
type retrySim struct {
	events []journal.Event
	seq    uint64
	// tick, when set, makes the gateway hold every retry until the next
	// multiple of tick on its clock (retries released together), instead
	// of waiting wait(n).
	tick time.Duration
}

func (s *retrySim) request(sent time.Duration, method, path string, key string, attempts int, wait func(n int) time.Duration, final int) {
	s.seq++
	seq := s.seq
	sent += time.Millisecond // a send at t = 0 would read as "not sent"
	t := sent + time.Millisecond
	for n := 1; n <= attempts; n++ {
		status, out := 503, journal.OutcomeUpstreamComplete
		if n == attempts {
			status = final
		}
		sq := seq
		ev := &journal.UpstreamRequest{Upstream: "orders", Method: method, Path: path, Seq: &sq, Status: status,
			Outcome: out, Done: t + time.Millisecond, IdempotencyKey: key}
		if status == 200 && path == "/v1/chat/completions" {
			ev.PromptTokens, ev.CompletionTokens = 100, 20
		}
		s.events = append(s.events, journal.Event{T: t, Payload: ev})
		t += time.Millisecond
		switch {
		case n < attempts && s.tick > 0:
			t = (t/s.tick + 1) * s.tick
		case n < attempts:
			t += wait(n)
		}
	}
	out := journal.OutcomeOK
	if final >= 500 {
		out = journal.OutcomeHTTP5xx
	}
	s.events = append(s.events, journal.Event{T: sent, Payload: &journal.ClientRequest{Seq: seq, Method: method, Route: path,
		Upstream: "orders", Scheduled: sent, Sent: sent, HeadersAt: t, Done: t + time.Millisecond, Status: final, Outcome: out,
		IdempotencyKey: key != "", Deadline: 5 * time.Second}})
}

func (s *retrySim) fault(start, end time.Duration) {
	s.events = append(s.events,
		journal.Event{T: start, Payload: &journal.FaultStart{Name: "storm", Type: "status", Upstream: "orders"}},
		journal.Event{T: end, Payload: &journal.FaultEnd{Name: "storm", Upstream: "orders"}})
}

func (s *retrySim) analyse(t *testing.T) *analysis.Analysis {
	t.Helper()
	a, err := analysis.AnalyzeEvents(append([]journal.Event{{Payload: &journal.RunStart{RunID: "r", Upstreams: []string{"orders"}}}}, s.events...))
	if err != nil {
		t.Fatal(err)
	}
	if a.Resilience == nil || a.Resilience.Upstreams["orders"] == nil {
		t.Fatalf("no resilience figures: %+v", a.Resilience)
	}
	return a
}

// naiveRetries is a gateway retrying naively: POSTs without a key on a
// 100ms grid, 2 s healthy, then a 10 s storm during which each request is
// tried 4 times with fixed 200ms waits and one in ten succeeds at last.
func naiveRetries() *retrySim { return naiveRetriesTicked(0) }

// naiveRetriesTicked is naiveRetries with each retry held until the next
// multiple of tick (0: none): retries released together.
func naiveRetriesTicked(tick time.Duration) *retrySim {
	s := retrySim{tick: tick}
	for i := range 20 { // before: healthy
		s.request(time.Duration(i)*100*time.Millisecond, "POST", "/tools/orders", "", 1, nil, 200)
	}
	s.fault(2*time.Second, 12*time.Second)
	for i := range 100 {
		s.request(2*time.Second+time.Duration(i)*100*time.Millisecond, "POST", "/tools/orders", "", 4,
			func(int) time.Duration { return 200 * time.Millisecond }, map[bool]int{true: 200, false: 503}[i%10 == 0])
	}
	return &s
}

// TestRetryFiguresNaive: fixed 200ms retries ×3 of POSTs without a key,
// requests on a 100ms grid: 4 attempts, waits not growing, retries in
// lockstep, writes retried blindly, cost amplified.
func TestRetryFiguresNaive(t *testing.T) {
	s := naiveRetries()
	a := s.analyse(t)
	f := a.Resilience.Upstreams["orders"]
	if f.MaxAttempts != 4 || f.Distribution["4"] != 100 || f.Distribution["1"] != 20 {
		t.Errorf("attempts max %d distribution %v", f.MaxAttempts, f.Distribution)
	}
	if *f.AmplificationBefore != 1 || *f.AmplificationDuring != 4 {
		t.Errorf("amplification %v before, %v during", *f.AmplificationBefore, *f.AmplificationDuring)
	}
	if b := f.Backoff; b.Retries != 300 || *b.MinMs < 199 || *b.MaxMs > 201 || b.Grows == nil || *b.Grows {
		t.Errorf("backoff %+v", b)
	}
	if j := f.Backoff.Jitter; j.Full == nil || *j.Full || len(j.Tests) != 3 || j.Tests[0].Full || j.Tests[0].Waits != 100 {
		t.Errorf("a fixed 200ms wait passed as full jitter: %+v", j)
	}
	// Fixed 200 ms waits on a 100 ms send grid: every retry meets other
	// requests' retries, as the grid alone makes them (TestLockstepGrid).
	if l := f.Lockstep; l.Lockstep == nil || *l.Lockstep || *l.CoincidentShare < 0.9 || l.Basis != "schedule" {
		t.Errorf("lockstep %+v, share %v vs %v", l, *l.CoincidentShare, *l.IndependentShare)
	}
	if w := f.Writes; w.PostPatch.WithoutKey != 100 || w.FailedWithoutKey != 100 || w.Writes != 120 {
		t.Errorf("writes %+v", w)
	}
	if len(f.Writes.Examples) == 0 || f.Writes.Examples[0] != "100 POST /tools/orders were sent 4 times to orders without an idempotency key" {
		t.Errorf("examples %q", f.Writes.Examples)
	}
	c := a.Resilience.Cost
	if c.CompletedBefore != 20 || c.CompletedDuring != 10 || *c.CallsPerCompletedBefore != 1 || *c.CallsPerCompletedDuring != 40 || *c.CallsAmplification != 40 {
		t.Errorf("cost %+v", c)
	}
	if c.TokensAmplification != nil {
		t.Errorf("tokens amplification without tokens: %v", *c.TokensAmplification)
	}
	joined := strings.Join(a.Resilience.Statements, "\n")
	for _, want := range []string{"not in lockstep: 99% of the retries", "not growing", "are not full jitter", "were sent 4 times to orders without an idempotency key", "(×40.00)"} {
		if !strings.Contains(joined, want) {
			t.Errorf("statements lack %q:\n%s", want, joined)
		}
	}
}

// TestRetryFiguresJittered: full-jitter exponential backoff on keyed
// writes: growing waits, no lockstep, retries with the same key.
func TestRetryFiguresJittered(t *testing.T) {
	var s retrySim
	rnd := rand.New(rand.NewPCG(1, 2))
	s.fault(0, 30*time.Second)
	for i := range 300 {
		key := "sha256:" + strings.Repeat("a", 11) + string(rune('a'+i%26))
		s.request(time.Duration(i)*100*time.Millisecond, "POST", "/tools/orders", key, 3, func(n int) time.Duration {
			return time.Duration(rnd.Int64N(int64(100*time.Millisecond) << (n - 1)))
		}, 503)
	}
	f := s.analyse(t).Resilience.Upstreams["orders"]
	if b := f.Backoff; b.Grows == nil || !*b.Grows || len(b.P50ByRetryMs) != 2 {
		t.Errorf("backoff %+v", b)
	}
	if j := f.Backoff.Jitter; j.Full == nil || !*j.Full || len(j.Tests) != 2 || j.Tests[1].Retry != 2 || j.Tests[1].Waits != 300 {
		t.Errorf("full jitter not recognised: %+v", j)
	}
	if l := f.Lockstep; l.Lockstep == nil || *l.Lockstep {
		t.Errorf("jittered retries judged in lockstep: %v vs %v", *l.CoincidentShare, *l.IndependentShare)
	}
	if w := f.Writes; w.PostPatch.SameKey != 300 || w.PostPatch.WithoutKey != 0 || w.FailedWithoutKey != 0 {
		t.Errorf("writes %+v", w)
	}
}

// TestRetryFiguresEmpty: without a forwarded sequence number nothing is
// attributed; the figures are absent, not zero.
func TestRetryFiguresEmpty(t *testing.T) {
	a, err := analysis.AnalyzeEvents([]journal.Event{
		{Payload: &journal.RunStart{RunID: "r"}},
		{T: time.Second, Payload: &journal.ClientRequest{Seq: 1, Method: "GET", Route: "/x", Sent: time.Second, Done: 2 * time.Second, Status: 200, Outcome: journal.OutcomeOK}},
		{T: time.Second, Payload: &journal.UpstreamRequest{Upstream: "x", Method: "GET", Path: "/x", Status: 200, Outcome: journal.OutcomeUpstreamComplete}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := a.Resilience
	if len(r.Upstreams) != 0 || r.Cost.CallsAmplification != nil || r.Cost.CallsPerCompletedBefore == nil {
		t.Errorf("resilience %+v", r)
	}
}

// TestDeadlineOrder: a gateway that answers 504 while its call goes on
// (orphaned), one that hangs up on the call, and a client whose deadline
// fires first.
func TestDeadlineOrder(t *testing.T) {
	seq := func(n uint64) *uint64 { return &n }
	s := time.Second
	a, err := analysis.AnalyzeEvents([]journal.Event{
		{Payload: &journal.RunStart{RunID: "r"}},
		// 1: the gateway answered at 3s, its call ran to 5s.
		{T: s, Payload: &journal.ClientRequest{Seq: 1, Method: "GET", Route: "/a", Upstream: "llm", Sent: s, HeadersAt: 3 * s, Done: 3 * s, Status: 504, Outcome: journal.OutcomeHTTP5xx}},
		{T: s, Payload: &journal.UpstreamRequest{Upstream: "llm", Method: "GET", Path: "/a", Seq: seq(1), Status: 200, Outcome: journal.OutcomeUpstreamComplete, Done: 5 * s, PromptTokens: 10, CompletionTokens: 5}},
		// 2: the gateway hung up at 3s and answered.
		{T: s, Payload: &journal.ClientRequest{Seq: 2, Method: "GET", Route: "/a", Upstream: "llm", Sent: s, HeadersAt: 3 * s, Done: 3 * s, Status: 504, Outcome: journal.OutcomeHTTP5xx}},
		{T: s, Payload: &journal.UpstreamRequest{Upstream: "llm", Method: "GET", Path: "/a", Seq: seq(2), Outcome: journal.OutcomeUpstreamGone, Done: 3 * s}},
		// 3: the client gave up at 2s; the call went on to 6s.
		{T: s, Payload: &journal.ClientRequest{Seq: 3, Method: "GET", Route: "/a", Upstream: "llm", Sent: s, Done: 2 * s, Outcome: journal.OutcomeHeadersTimeout}},
		{T: s, Payload: &journal.UpstreamRequest{Upstream: "llm", Method: "GET", Path: "/a", Seq: seq(3), Status: 200, Outcome: journal.OutcomeUpstreamComplete, Done: 6 * s}},
		// 4: the upstream failed on its own.
		{T: s, Payload: &journal.ClientRequest{Seq: 4, Method: "GET", Route: "/a", Upstream: "llm", Sent: s, HeadersAt: s + 10*time.Millisecond, Done: s + 10*time.Millisecond, Status: 503, Outcome: journal.OutcomeHTTP5xx}},
		{T: s, Payload: &journal.UpstreamRequest{Upstream: "llm", Method: "GET", Path: "/a", Seq: seq(4), Status: 503, Outcome: journal.OutcomeUpstreamComplete, Done: s + 5*time.Millisecond}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := a.Resilience
	d := r.Upstreams["llm"].Deadlines
	if d.OrphanedCalls != 2 || *d.PastAnswerMs.Min != 2000 || *d.PastAnswerMs.Max != 4000 {
		t.Errorf("orphans %d, past %+v", d.OrphanedCalls, d.PastAnswerMs)
	}
	if g := d.GaveUpFirst; g["gateway"] != 2 || g["client"] != 1 || g["upstream"] != 1 {
		t.Errorf("gave up first %v", g)
	}
	if r.ClientDeadlineFirst != 1 || r.AtRisk != 3 {
		t.Errorf("client first %d, at risk %d", r.ClientDeadlineFirst, r.AtRisk)
	}
	if r.Cost.TokensBefore != 15 || r.Cost.CompletedBefore != 0 || r.Cost.TokensPerCompletedBefore != nil {
		t.Errorf("cost %+v", r.Cost)
	}
}

func resilienceExpectations() expect.Expectations {
	three, zero := 3, 0
	yes := true
	amp := 2.0
	backoff := rehearse.Duration(10 * time.Millisecond)
	full := expect.JitterFull
	return expect.Expectations{MaxAttempts: &three, NoWriteRetries: &yes, RetryBackoffMin: &backoff, RetryJitter: &full, NoLockstepRetries: &yes,
		OrphanedCallsMax: &zero, GatewayAnswersBeforeClientDeadline: &yes, CostAmplificationMax: &amp}
}

func verdicts(rs []expect.ExpectationResult) map[string]expect.ExpectationResult {
	out := map[string]expect.ExpectationResult{}
	for _, r := range rs {
		out[r.Name] = r
	}
	return out
}

// TestResilienceExpectations: the naive journal fails the retry
// expectations, the jittered one meets those it can observe, and a run
// with nothing to observe passes none of them.
func TestResilienceExpectations(t *testing.T) {
	naive := naiveRetriesTicked(500 * time.Millisecond) // retries released together
	v := verdicts(verdict.Evaluate(naive.analyse(t), resilienceExpectations()))
	for _, name := range []string{"max_attempts", "no_write_retries", "retry_jitter", "no_lockstep_retries", "cost_amplification_max"} {
		if v[name].Passed || v[name].Name == "" {
			t.Errorf("naive: %s %+v, want not met", name, v[name])
		}
	}
	if !v["retry_backoff_min"].Passed || !v["orphaned_calls_max"].Passed {
		t.Errorf("naive: fixed 200ms waits and no orphan: %+v %+v", v["retry_backoff_min"], v["orphaned_calls_max"])
	}
	if r := v["gateway_answers_before_client_deadline"]; r.Passed || r.Outcome != expect.NotObservable {
		t.Errorf("deadline order with nobody giving up: %+v", r)
	}

	var ref retrySim
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := range 20 {
		ref.request(time.Duration(i)*100*time.Millisecond, "POST", "/tools/orders", "k", 1, nil, 200)
	}
	ref.fault(2*time.Second, 32*time.Second)
	for i := range 300 {
		ref.request(2*time.Second+time.Duration(i)*100*time.Millisecond, "POST", "/tools/orders", "sha256:"+string(rune('a'+i%26)), 2,
			func(n int) time.Duration { return time.Duration(rnd.Int64N(int64(100 * time.Millisecond))) }, map[bool]int{true: 503, false: 200}[i%3 == 0])
	}
	// 2 calls for each request, a third of which fail: 3 calls per
	// completed request against 1 before.
	e := resilienceExpectations()
	amp := 3.0
	e.CostAmplificationMax = &amp
	v = verdicts(verdict.Evaluate(ref.analyse(t), e))
	for _, name := range []string{"max_attempts", "retry_backoff_min", "retry_jitter", "no_lockstep_retries", "orphaned_calls_max", "cost_amplification_max"} {
		if !v[name].Passed {
			t.Errorf("jittered: %s %+v, want met", name, v[name])
		}
	}
	if r := v["no_write_retries"]; r.Passed || r.Outcome != expect.NotObservable {
		t.Errorf("every write keyed: %+v, want not observable", r)
	}

	empty := &analysis.Analysis{Upstreams: map[string]*analysis.UpstreamAnalysis{}}
	for _, r := range verdict.Evaluate(empty, resilienceExpectations()) {
		if r.Passed || r.Outcome != expect.NotObservable {
			t.Errorf("empty analysis: %+v", r)
		}
	}
}

// TestJitterSkipsRetryAfter: waits after a response that announced a
// Retry-After are the upstream's, not the gateway's jitter: they are
// left out of the test (and kept in the backoff figures).
func TestJitterSkipsRetryAfter(t *testing.T) {
	var s retrySim
	s.fault(0, 30*time.Second)
	for i := range 40 {
		s.request(time.Duration(i)*100*time.Millisecond, "GET", "/tools/orders", "", 2,
			func(int) time.Duration { return time.Second }, 200)
	}
	for _, ev := range s.events {
		if u, ok := ev.Payload.(*journal.UpstreamRequest); ok && u.Status == 503 {
			u.RetryAfter = time.Second
		}
	}
	f := s.analyse(t).Resilience.Upstreams["orders"]
	if f.Backoff.Retries != 40 || f.Backoff.Jitter.Full != nil || len(f.Backoff.Jitter.Tests) != 0 {
		t.Errorf("backoff %+v, jitter %+v", f.Backoff, f.Backoff.Jitter)
	}
	full := expect.JitterFull
	if r := verdicts(verdict.Evaluate(s.analyse(t), expect.Expectations{RetryJitter: &full}))["retry_jitter"]; r.Outcome != expect.NotObservable {
		t.Errorf("retry_jitter with only Retry-After waits: %+v", r)
	}
}

// TestCostPerWindow: a costly window (every request sent 4 times) is not
// averaged away by a long cheap one: cost_amplification_max judges each
// covered episode as well as all the windows together.
func TestCostPerWindow(t *testing.T) {
	var s retrySim
	for i := range 20 {
		s.request(time.Duration(i)*100*time.Millisecond, "GET", "/tools/orders", "", 1, nil, 200)
	}
	s.fault(2*time.Second, 4*time.Second)
	for i := range 20 {
		s.request(2*time.Second+time.Duration(i)*100*time.Millisecond, "GET", "/tools/orders", "", 4,
			func(int) time.Duration { return 10 * time.Millisecond }, 200)
	}
	s.fault(5*time.Second, 25*time.Second)
	for i := range 200 {
		s.request(5*time.Second+time.Duration(i)*100*time.Millisecond, "GET", "/tools/orders", "", 1, nil, 200)
	}
	a := s.analyse(t)
	if c := a.Resilience.Cost; c.CallsAmplification == nil || *c.CallsAmplification > 1.5 {
		t.Fatalf("all windows together: %+v, want the cheap window to dilute the costly one", c)
	}
	amp := 2.0
	r := verdicts(verdict.Evaluate(a, expect.Expectations{CostAmplificationMax: &amp}))["cost_amplification_max"]
	if r.Outcome != expect.NotMet || !strings.Contains(r.Message, "orders episode 1 (storm) calls") || !strings.Contains(r.Message, "×4.00") {
		t.Errorf("cost_amplification_max %+v, want not met naming the first window", r)
	}
}
