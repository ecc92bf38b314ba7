// Package gateway is rehearse's built-in reference gateway: a small HTTP
// gateway whose circuit breakers implement the field's practice (the
// reference values of docs/gateway.md) faithfully. It is the embedded default of a rehearsal (a
// newcomer needs no gateway of their own), the gateway the project's
// end-to-end tests measure, and the conformance reference users compare
// their own gateway with.
//
// Routes:
//
//   - /tools/{name}[/...]: any method, forwarded with the same method, path
//     and body to the upstream called name;
//   - POST /v1/chat/completions: to the primary model provider, with SSE
//     pass-through (flushed per event) and the fallback provider when the
//     primary's breaker is open;
//   - /metrics: Prometheus metrics (openclaw_breaker_*) of its own registry;
//   - /healthz: a synthetic canary of every upstream and the breaker states.
//
// One Breaker guards each dependency key (upstream name + region +
// credential fingerprint). Its clock and its jitter source are injectable,
// so every transition is tested without sleeping. In fleet mode several
// gateway processes serialise half-open probes through a Redis lease; when
// Redis is unreachable each process falls back to local probing at a longer
// spacing (see docs/gateway.md for why).
package gateway
