package gateway

import (
	"net/http"
	"time"

	"github.com/halfopen/rehearse/internal/wait"
)

// serveNaive forwards a call the way the practice warns against, for
// drills that show the difference (mode: naive): every method is retried,
// non-idempotent writes without an Idempotency-Key included, NaiveRetries
// times after a fixed NaiveRetryDelay (no backoff, no jitter: every
// request failing at once retries in lockstep), on any 5xx, 429 or
// transport failure, Retry-After ignored. There is no deadline and no
// breaker: the upstream calls run on the gateway's own lifetime, not the
// client's, so that they go on after the client gave up (orphaned calls),
// and retries keep coming while the upstream is down.
func (g *Gateway) serveNaive(w http.ResponseWriter, r *http.Request, d *dependency, body []byte) {
	ctx := g.ctx
	for n := 0; ; n++ {
		a := g.try(ctx, d, &Ticket{}, r, body)
		if n < NaiveRetries && naiveRetryable(a) && ctx.Err() == nil {
			a.discard()
			if !wait.For(ctx, NaiveRetryDelay) {
				return
			}
			g.m.retries.With(d.labels).Inc()
			continue
		}
		g.deliver(w, d, &Ticket{}, a, func() {})
		return
	}
}

// naiveRetryable is the naive mode's retry rule: anything that is not a
// success, whatever the method and whatever the upstream said.
func naiveRetryable(a *attempt) bool {
	if a.resp == nil {
		return true
	}
	return a.resp.StatusCode >= 500 || a.resp.StatusCode == http.StatusTooManyRequests
}

// naiveTimeout is the naive mode's header wait: none of its own (the
// transport's dial timeout still applies).
const naiveTimeout = 365 * 24 * time.Hour
