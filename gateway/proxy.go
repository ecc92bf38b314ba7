package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/halfopen/rehearse/internal/wait"
)

// Error codes of the gateway's own error responses (docs/gateway.md has
// the table). Upstream responses, 5xx and 429 included, pass through
// unchanged; these are only for what the gateway itself decides.
const (
	// CodeDependencyUnavailable: the dependency's breaker refused the call
	// (503, with X-Breaker-State and Retry-After).
	CodeDependencyUnavailable = "dependency_unavailable"
	// CodeUpstreamTimeout: headers never arrived, or the deadline expired
	// (504).
	CodeUpstreamTimeout = "upstream_timeout"
	// CodeUpstreamError: connection refused or reset, or a malformed
	// response (502).
	CodeUpstreamError = "upstream_error"
	// CodeUnknownDependency: /tools/{name} names no upstream (404).
	CodeUnknownDependency = "unknown_dependency"
	// CodeNotFound: no such route (404).
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed: e.g. GET /v1/chat/completions (405).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeRequestTooLarge: the body exceeds retry.max_body (413).
	CodeRequestTooLarge = "request_too_large"
	// CodeBadRequest: the request body could not be read (400).
	CodeBadRequest = "bad_request"
)

// apiError is the body of the gateway's own errors:
// {"error":{"code":...,"dependency":...,"state":...,"retry_after_s":...,"message":...}}.
type apiError struct {
	Code        string   `json:"code"`
	Dependency  string   `json:"dependency,omitempty"`
	State       string   `json:"state,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	Class       string   `json:"class,omitempty"`
	RetryAfterS *float64 `json:"retry_after_s,omitempty"`
	Message     string   `json:"message"`
}

func writeError(w http.ResponseWriter, status int, e apiError) {
	body, _ := json.Marshal(struct {
		Error apiError `json:"error"`
	}{e})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// writeFastFail answers a call the breaker refused.
func (g *Gateway) writeFastFail(w http.ResponseWriter, d *dependency, rej *Rejection) {
	g.m.rejections.With(d.labels).Inc()
	secs := math.Ceil(rej.RetryAfter.Seconds()*10) / 10
	hdrSecs := max(int(math.Ceil(rej.RetryAfter.Seconds())), 1)
	w.Header().Set(HeaderBreakerState, rej.State.String())
	w.Header().Set("Retry-After", strconv.Itoa(hdrSecs))
	msg := fmt.Sprintf("%s is unavailable: its circuit breaker is %s (%s); retry in %.1fs",
		d.name, strings.ReplaceAll(rej.State.String(), "_", "-"), strings.ReplaceAll(rej.Reason, "_", " "), secs)
	writeError(w, http.StatusServiceUnavailable, apiError{
		Code: CodeDependencyUnavailable, Dependency: d.name, State: rej.State.String(),
		Reason: rej.Reason, RetryAfterS: &secs, Message: msg,
	})
}

// serveTool forwards /tools/{name}[/...] to upstream name, with the same
// method, path, query and body, retrying idempotent calls.
func (g *Gateway) serveTool(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	d := g.deps[name]
	if d == nil {
		writeError(w, http.StatusNotFound, apiError{Code: CodeUnknownDependency, Dependency: sanitizeName(name),
			Message: fmt.Sprintf("no upstream named %q", sanitizeName(name))})
		return
	}
	body, ok := g.readBody(w, r)
	if !ok {
		return
	}
	if g.cfg.Mode == ModeNaive {
		g.serveNaive(w, r, d, body)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.requestTimeout(r, d))
	defer cancel()
	attempts := 1
	if idempotent(r) {
		attempts = g.cfg.Retry.MaxAttempts
	}
	for n := 1; ; n++ {
		t, rej, rel := g.admit(ctx, d)
		if rej != nil {
			if rej.Reason == ReasonRetryAfter {
				g.m.skips.With(d.labels).Inc()
			}
			g.writeFastFail(w, d, rej)
			return
		}
		a := g.try(ctx, d, t, r, body)
		// A 429's Retry-After opens the breaker (retry_after_opens): the
		// client gets the 429 and the breaker keeps the pause.
		pause := a.class == ClassRateLimited && *g.cfg.Breaker.RetryAfterOpens
		if !t.Probe && n < attempts && a.retryable(true) && !pause {
			// Full jitter, never sooner than the upstream asked, and only
			// when the wait and a new call still fit in the deadline less
			// the reserve; otherwise the client gets this answer now.
			backoff := g.jitter(min(g.cfg.Retry.MaxDelay.D(), g.cfg.Retry.BaseDelay.D()<<(n-1)))
			backoff = max(backoff, a.retryAfter)
			if g.room(ctx) > backoff {
				a.discard()
				t.Done(a.result())
				rel()
				if wait.For(ctx, backoff) {
					g.m.retries.With(d.labels).Inc()
					continue
				}
				// The deadline fired or the client left while waiting.
				if r.Context().Err() == nil {
					g.writeAttemptError(w, d, a)
				}
				return
			}
		}
		g.deliver(w, d, t, a, rel)
		return
	}
}

// requestTimeout is the gateway's deadline for a request to d: the
// upstream's timeout, shortened to the client's announced budget (the
// deadline header) less the reserve, so that the gateway answers before
// the client gives up.
func (g *Gateway) requestTimeout(r *http.Request, d *dependency) time.Duration {
	t := d.cfg.Timeout.D()
	h := g.cfg.Deadline.Header
	if h == "" || h == "-" {
		return t
	}
	v := r.Header.Get(h)
	if v == "" {
		return t
	}
	ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(ms) || math.IsInf(ms, 0) || ms <= 0 || ms > 1e10 {
		return t
	}
	budget := time.Duration(ms*float64(time.Millisecond)) - g.cfg.Deadline.Reserve.D()
	return max(min(t, budget), 0)
}

// room is the time left for upstream calls: until the request's deadline
// less the reserve.
func (g *Gateway) room(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Duration(math.MaxInt64)
	}
	return time.Until(dl) - g.cfg.Deadline.Reserve.D()
}

// serveChat sends POST /v1/chat/completions to the primary provider, or to
// the fallback when the primary's breaker refuses (open: weight 0, no
// quota spent on it; half-open: only its probes go to it) or, with
// fallback_on_error, when the primary fails before any byte is delivered.
func (g *Gateway) serveChat(w http.ResponseWriter, r *http.Request) {
	if g.cfg.Primary == "" {
		writeError(w, http.StatusNotFound, apiError{Code: CodeNotFound, Message: "no model provider configured"})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, apiError{Code: CodeMethodNotAllowed, Message: "use POST"})
		return
	}
	body, ok := g.readBody(w, r)
	if !ok {
		return
	}
	plan := []*dependency{g.deps[g.cfg.Primary]}
	if g.cfg.Fallback != "" {
		plan = append(plan, g.deps[g.cfg.Fallback])
	}
	var firstRej *Rejection
	var firstDep *dependency
	var last *attempt
	var lastDep *dependency
	if g.cfg.Mode == ModeNaive {
		g.serveNaive(w, r, plan[0], body)
		return
	}
	for i, d := range plan {
		ctx, cancel := context.WithTimeout(r.Context(), g.requestTimeout(r, d))
		t, rej, rel := g.admit(ctx, d)
		if rej != nil {
			cancel()
			if rej.Reason == ReasonRetryAfter {
				g.m.skips.With(d.labels).Inc()
			}
			if firstRej == nil {
				firstRej, firstDep = rej, d
			}
			continue
		}
		if i > 0 {
			g.m.fallbacks.With(plan[i-1].labels).Inc()
		}
		a := g.try(ctx, d, t, r, body)
		if i+1 < len(plan) && *g.cfg.FallbackOnError && a.retryable(false) && !errors.Is(r.Context().Err(), context.Canceled) {
			a.discard()
			t.Done(a.result())
			rel()
			cancel()
			last, lastDep = a, d
			continue
		}
		defer cancel()
		g.deliver(w, d, t, a, rel)
		return
	}
	if last != nil {
		g.writeAttemptError(w, lastDep, last)
		return
	}
	g.writeFastFail(w, firstDep, firstRej)
}

func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.Retry.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, apiError{Code: CodeRequestTooLarge,
				Message: fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)})
		} else {
			writeError(w, http.StatusBadRequest, apiError{Code: CodeBadRequest, Message: "reading request body: " + err.Error()})
		}
		return nil, false
	}
	return body, true
}

func idempotent(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return r.Header.Get("Idempotency-Key") != ""
}

// attempt is one upstream call up to its response headers.
type attempt struct {
	resp       *http.Response
	class      Class // final for failures; provisional for responses
	err        error
	retryAfter time.Duration
	latency    time.Duration
	worker     string
}

func (a *attempt) result() Result {
	return Result{Class: a.class, RetryAfter: a.retryAfter, Latency: a.latency, Worker: a.worker}
}

// retryable reports a failure before anything reached the client that a
// retry (or the fallback) may cure: a transport failure, or 502/503/504
// without Retry-After; with afterWait, also a 503 or 429 with
// Retry-After, for a retry that waits at least that long.
func (a *attempt) retryable(afterWait bool) bool {
	if a.resp == nil {
		return a.class != ClassCanceled
	}
	switch a.resp.StatusCode {
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return a.retryAfter == 0
	case http.StatusServiceUnavailable:
		return a.retryAfter == 0 || afterWait
	case http.StatusTooManyRequests:
		return afterWait && a.retryAfter > 0
	}
	return false
}

func (a *attempt) discard() {
	if a.resp != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(a.resp.Body, 64<<10))
		a.resp.Body.Close()
	}
}

var errHeadersTimeout = errors.New("response headers timeout")

// bufPool holds the copy buffers of deliver: one per response in flight
// would otherwise be the gateway's largest allocation.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// hopHeaders are the hop-by-hop headers a proxy must not forward.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHop(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// try sends one attempt and waits for the response headers.
func (g *Gateway) try(ctx context.Context, d *dependency, t *Ticket, in *http.Request, body []byte) *attempt {
	g.m.calls.With(d.labels).Inc()
	// The call ends the reserve before the request's deadline, so that
	// the gateway can still answer in time: client > gateway > upstream.
	cctx, ccancel := ctx, context.CancelFunc(func() {})
	var callDeadline time.Time
	if dl, ok := ctx.Deadline(); ok {
		callDeadline = dl.Add(-g.cfg.Deadline.Reserve.D())
		cctx, ccancel = context.WithDeadline(ctx, callDeadline)
	}
	actx, acancelCause := context.WithCancelCause(cctx)
	acancel := func(cause error) {
		acancelCause(cause)
		if cause == nil {
			ccancel()
		}
	}
	target := *d.base
	target.Path = strings.TrimSuffix(d.base.Path, "/") + in.URL.Path
	target.RawPath = ""
	target.RawQuery = in.URL.RawQuery
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	out, err := http.NewRequestWithContext(actx, in.Method, target.String(), rd)
	if err != nil {
		acancel(nil)
		return &attempt{class: ClassMalformed, err: err}
	}
	out.Header = in.Header.Clone()
	noSilentResend(out)
	removeHop(out.Header)
	out.Header.Del(HeaderProbe) // only the gateway tags probes
	out.Host = ""
	if ip, _, err := net.SplitHostPort(in.RemoteAddr); err == nil {
		if prior := out.Header.Values("X-Forwarded-For"); len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		out.Header.Set("X-Forwarded-For", ip)
	}
	out.Header.Add("Via", "1.1 "+g.opts.instance)
	if d.cred != "" {
		out.Header.Set("Authorization", "Bearer "+d.cred)
	}
	if h := g.cfg.Deadline.Header; h != "" && h != "-" {
		out.Header.Del(h)
		if !callDeadline.IsZero() {
			out.Header.Set(h, strconv.FormatInt(max(time.Until(callDeadline).Milliseconds(), 0), 10))
		}
	}
	if _, ok := out.Header["User-Agent"]; !ok {
		out.Header.Set("User-Agent", "") // no Go default User-Agent
	}
	client := g.client
	headerTimeout := d.cfg.HeaderTimeout.D()
	if g.cfg.Mode == ModeNaive {
		headerTimeout = naiveTimeout
	}
	a := &attempt{}
	if t.Probe {
		client = g.probes
		out.Header.Set(HeaderProbe, ProbeTag)
		out.Header.Set("User-Agent", ProbeUserAgent)
		headerTimeout = min(headerTimeout, t.ProbeDeadline)
		trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
			a.worker = g.opts.instance + "/" + ci.Conn.LocalAddr().String()
		}}
		out = out.WithContext(httptrace.WithClientTrace(out.Context(), trace))
	}
	timer := time.AfterFunc(headerTimeout, func() { acancel(errHeadersTimeout) })
	start := time.Now()
	resp, err := client.Do(out)
	timer.Stop()
	a.latency = time.Since(start)
	if t.Probe {
		g.m.probeLatency.With(d.labels).Observe(float64(a.latency) / float64(time.Millisecond))
		g.m.probeSeconds.With(d.labels).Observe(a.latency.Seconds())
	}
	if err != nil {
		switch {
		case errors.Is(context.Cause(actx), errHeadersTimeout), errors.Is(cctx.Err(), context.DeadlineExceeded):
			a.class = ClassHeadersTimeout
		case in.Context().Err() != nil:
			a.class = ClassCanceled
		default:
			a.class = classifyErr(err)
		}
		acancel(nil)
		a.err = err
		if a.class != ClassCanceled {
			g.m.failures.With(failLabels(d, a.class)).Inc()
		}
		return a
	}
	// The attempt's context must live as long as the body is read.
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: func() { acancel(nil) }}
	a.resp = resp
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		a.class = ClassRateLimited
		a.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	case resp.StatusCode >= 500:
		a.class = ClassHTTP5xx
		if resp.StatusCode == http.StatusServiceUnavailable {
			a.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
	case resp.StatusCode >= 400:
		a.class = ClassHTTP4xx
	default:
		a.class = ClassOK
	}
	if a.class == ClassRateLimited || a.class == ClassHTTP5xx {
		g.m.failures.With(failLabels(d, a.class)).Inc()
	}
	return a
}

// noSilentResend makes net/http's Transport send the request once: it
// re-sends a "replayable" request (GET, HEAD, OPTIONS, TRACE, or one with an
// Idempotency-Key header, with no body or a GetBody) by itself when a
// reused connection fails before the response, an attempt the gateway
// would neither see nor bound. A request is not replayable when its body
// is set and cannot be rewound; a bodyless GET/HEAD/DELETE/OPTIONS gets an
// empty body the Transport probes and sends as none. Every attempt is then
// one of the retry loop's, counted against retry.max_attempts. (A request
// on a keep-alive connection the upstream closed while idle fails instead
// of being re-sent; the retry loop retries it where that is safe.)
func noSilentResend(out *http.Request) {
	out.GetBody = nil
	if out.Body == nil || out.Body == http.NoBody {
		switch out.Method {
		case http.MethodGet, http.MethodHead, http.MethodDelete, http.MethodOptions:
			out.Body, out.ContentLength = io.NopCloser(strings.NewReader("")), 0
		case http.MethodTrace:
			// Never replayed with a body: TRACE must not carry one, and
			// net/http would send this one as an empty chunked body.
		default:
			if out.Header.Get("Idempotency-Key") != "" || out.Header.Get("X-Idempotency-Key") != "" {
				out.Body, out.ContentLength = io.NopCloser(strings.NewReader("")), 0
			}
		}
	}
}

type cancelBody struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func failLabels(d *dependency, c Class) prometheus.Labels {
	return prometheus.Labels{"dependency": d.name, "region": d.region, "env": d.labels["env"], "class": string(c)}
}

// classifyErr tells a refused connection from a reset and from a response
// that was not HTTP.
func classifyErr(err error) Class {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return ClassRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return ClassReset
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ClassHeadersTimeout
	}
	if strings.Contains(err.Error(), "malformed") {
		return ClassMalformed
	}
	return ClassReset
}

// parseRetryAfter reads delay-seconds or an HTTP-date; zero when absent
// or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n <= 0 || math.IsNaN(n) || math.IsInf(n, 0) || n > 1e7 {
			return 0
		}
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// writeAttemptError answers with a failed attempt: its response when it
// has one (already drained: a bodyless copy of its status), or the
// gateway's error.
func (g *Gateway) writeAttemptError(w http.ResponseWriter, d *dependency, a *attempt) {
	if a.resp != nil {
		writeError(w, a.resp.StatusCode, apiError{Code: CodeUpstreamError, Dependency: d.name, Class: string(a.class),
			Message: fmt.Sprintf("%s answered %d", d.name, a.resp.StatusCode)})
		return
	}
	status, code := http.StatusBadGateway, CodeUpstreamError
	if a.class == ClassHeadersTimeout || a.class == ClassDeadline {
		status, code = http.StatusGatewayTimeout, CodeUpstreamTimeout
	}
	msg := fmt.Sprintf("%s: %s", d.name, strings.ReplaceAll(string(a.class), "_", " "))
	writeError(w, status, apiError{Code: code, Dependency: d.name, Class: string(a.class), Message: msg})
}

// deliver writes an attempt to the client, streaming the body and
// flushing after every read (one SSE event per flush in practice), and
// reports the outcome to the breaker when the exchange is over; release
// runs last (it ends the fleet probe lease).
func (g *Gateway) deliver(w http.ResponseWriter, d *dependency, t *Ticket, a *attempt, release func()) {
	defer release()
	if a.resp == nil {
		t.Done(a.result())
		g.probeMetric(d, t, a.class)
		if a.class == ClassCanceled {
			return
		}
		g.writeAttemptError(w, d, a)
		return
	}
	resp := a.resp
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = append([]string(nil), vs...)
	}
	removeHop(h)
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var n int64
	var bodyErr error
	clientGone := false
	for {
		k, err := resp.Body.Read(buf)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				clientGone = true
				break
			}
			_ = rc.Flush()
			n += int64(k)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			bodyErr = err
			break
		}
	}
	class := a.class
	switch {
	case clientGone:
		class = ClassCanceled
	case bodyErr != nil && (a.class == ClassOK || a.class == ClassHTTP4xx):
		switch {
		case errors.Is(bodyErr, context.DeadlineExceeded):
			class = ClassDeadline
		case n > 0:
			class = ClassCutMidBody
		default:
			class = ClassReset
		}
		g.m.failures.With(failLabels(d, class)).Inc()
	}
	r := a.result()
	r.Class = class
	t.Done(r)
	g.probeMetric(d, t, class)
	if bodyErr != nil || clientGone {
		// Pass the cut on: the client must see a broken body, not a
		// clean end of a short one.
		panic(http.ErrAbortHandler)
	}
}

func (g *Gateway) probeMetric(d *dependency, t *Ticket, c Class) {
	if !t.Probe {
		return
	}
	result := "failure"
	switch {
	case c == ClassOK || c == ClassHTTP4xx:
		result = "success"
	case c == ClassCanceled || (c == ClassCutMidBody && !g.cfg.Breaker.CountStreamCuts):
		result = "neutral"
	}
	g.m.probes.With(prometheus.Labels{"dependency": d.name, "region": d.region, "env": g.cfg.Env, "result": result}).Inc()
}
