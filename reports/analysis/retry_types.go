package analysis

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
	// Lockstep is the verdict; null with fewer than LockstepMinRetries
	// retries. With Basis "schedule": the pairs of retries within the
	// window exceed what the replay's own send times give (SchedulePairs)
	// by four standard deviations and by half again (retry_grid.go).
	// With Basis "poisson" (the send times unknown): the observed share
	// exceeds the independent one by three standard errors and by half
	// again.
	Lockstep *bool `json:"lockstep"`
	// Basis is what the verdict compared with: "schedule" or "poisson".
	Basis string `json:"basis,omitempty"`
	// Pairs counts the pairs of retries that started within the window
	// of each other; SchedulePairs and ScheduleShare are the mean pairs
	// and coincident share when each request's retries keep their
	// offsets from its send but are moved onto another retried
	// request's send time: what the send schedule gives by itself (a
	// fixed grid whose spacing divides fixed waits makes them meet).
	Pairs         *int64   `json:"pairs,omitempty"`
	SchedulePairs *float64 `json:"schedule_pairs,omitempty"`
	ScheduleShare *float64 `json:"schedule_share,omitempty"`
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
	// GaveUpFirst counts failed requests by who ended them first:
	// "gateway" (it hung up on any of the request's calls, or answered
	// while a call still ran, or failed the request although every call
	// answered), "upstream" (the calls ended on their own and one
	// failed), "client" (its deadline fired before the gateway's answer
	// was done). retryLog.gaveUpFirst.
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
