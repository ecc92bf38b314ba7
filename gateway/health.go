package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/halfopen/rehearse/internal/wait"
)

// canaryResult is the last synthetic check of one upstream.
type canaryResult struct {
	Checked time.Time
	Up      bool
	Status  int
	Error   string
	Latency time.Duration
}

// canaryOn reports whether the synthetic canary runs (an interval of 0
// turns it off).
func (g *Gateway) canaryOn() bool { return *g.cfg.Canary.Interval > 0 }

// canaryLoop checks every upstream at once, then every canary interval;
// in fleet mode it also pings the coordinator, so that
// openclaw_breaker_coord_up is current without traffic.
func (g *Gateway) canaryLoop(ctx context.Context) {
	every := (*g.cfg.Canary.Interval).D()
	if every <= 0 {
		every = DefaultCanaryInterval
	}
	for {
		if g.canaryOn() {
			g.checkAll(ctx)
		}
		if g.coord != nil {
			cctx, cancel := context.WithTimeout(ctx, g.cfg.CoordTimeout.D())
			err := g.coord.ping(cctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				g.coordFailed(err)
			} else {
				g.coordOK()
			}
		}
		if !wait.For(ctx, every) {
			return
		}
	}
}

func (g *Gateway) checkAll(ctx context.Context) {
	done := make(chan struct{}, len(g.deps))
	for _, d := range g.deps {
		go func() {
			defer func() { done <- struct{}{} }()
			res := g.check(ctx, d)
			if ctx.Err() != nil {
				return
			}
			up := 0.0
			if res.Up {
				up = 1
			}
			g.m.canaryUp.With(d.labels).Set(up)
			d.mu.Lock()
			d.canary = res
			d.disagreementLocked(res.Checked, d.breaker.State())
			d.mu.Unlock()
		}()
	}
	for range g.deps {
		<-done
	}
}

// check runs one canary: GET <upstream><canary.path> with
// X-Health-Check: canary. Any answer below 500 other than 429 is up: the
// upstream is there and serving (a 404 means it has no health route, not
// that it is down).
func (g *Gateway) check(ctx context.Context, d *dependency) canaryResult {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Canary.Timeout.D())
	defer cancel()
	target := *d.base
	target.Path = strings.TrimSuffix(d.base.Path, "/") + g.cfg.Canary.Path
	target.RawQuery = ""
	res := canaryResult{Checked: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	req.Header.Set(HeaderHealthCheck, "canary")
	req.Header.Set("User-Agent", CanaryUserAgent)
	req.Header.Set("Via", "1.1 "+g.opts.instance)
	if d.cred != "" {
		req.Header.Set("Authorization", "Bearer "+d.cred)
	}
	resp, err := g.canaryC.Do(req)
	res.Latency = time.Since(res.Checked)
	if err != nil {
		res.Error = string(classifyCanary(ctx, err))
		return res
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	res.Status = resp.StatusCode
	res.Up = resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests
	if !res.Up {
		res.Error = "status " + http.StatusText(resp.StatusCode)
	}
	return res
}

func classifyCanary(ctx context.Context, err error) Class {
	if ctx.Err() != nil {
		return ClassHeadersTimeout
	}
	return classifyErr(err)
}

// healthDep is one dependency in the /healthz body.
type healthDep struct {
	Canary       string  `json:"canary"` // "up", "down" or "unknown"
	Status       int     `json:"canary_status,omitempty"`
	Error        string  `json:"canary_error,omitempty"`
	LatencyMS    float64 `json:"canary_latency_ms,omitempty"`
	CheckedAt    string  `json:"checked_at,omitempty"`
	Breaker      string  `json:"breaker"`
	Disagree     bool    `json:"disagree"`
	DisagreeForS float64 `json:"disagree_for_s,omitempty"`
}

// serveHealth reports the canary and the breakers. 200 when every canary
// is up (or not yet run); 503 when any is down. With the canary disabled
// it answers 503 when any breaker is open. "disagree" flags a dependency
// whose canary and breaker tell different stories (canary up, breaker
// not closed; or canary down, breaker closed), with for how long: more
// than 3 minutes needs a human.
func (g *Gateway) serveHealth(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	out := struct {
		Status       string               `json:"status"`
		Instance     string               `json:"instance"`
		Coord        string               `json:"coord,omitempty"`
		Dependencies map[string]healthDep `json:"dependencies"`
	}{Status: "ok", Instance: g.opts.instance, Dependencies: map[string]healthDep{}}
	if g.coord != nil {
		g.coordMu.Lock()
		out.Coord = "up"
		if g.coordDown {
			out.Coord = "down (local probing fail-safe)"
		}
		g.coordMu.Unlock()
	}
	healthy := true
	for _, name := range g.names {
		d := g.deps[name]
		state := d.breaker.State()
		d.mu.Lock()
		c := d.canary
		hd := healthDep{Canary: "unknown", Breaker: state.String()}
		if !c.Checked.IsZero() {
			hd.Canary = "down"
			if c.Up {
				hd.Canary = "up"
			}
			hd.Status, hd.Error = c.Status, c.Error
			hd.LatencyMS = float64(c.Latency.Microseconds()) / 1000
			hd.CheckedAt = c.Checked.UTC().Format(time.RFC3339Nano)
		}
		if since, ok := d.disagreementLocked(now, state); ok {
			hd.Disagree = true
			hd.DisagreeForS = now.Sub(since).Seconds()
		}
		d.mu.Unlock()
		switch {
		case g.canaryOn() && hd.Canary == "down":
			healthy = false
		case !g.canaryOn() && state == Open:
			healthy = false
		}
		out.Dependencies[name] = hd
	}
	status := http.StatusOK
	if !healthy {
		out.Status = "degraded"
		status = http.StatusServiceUnavailable
	}
	body, _ := json.MarshalIndent(out, "", "  ")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// disagreementLocked updates and returns since when the canary and the
// breaker have disagreed (canary up but breaker not closed, or canary
// down but breaker closed); ok is false when they agree or the canary has
// not run. It is updated at every canary check and every /healthz
// request, so the duration is accurate to one canary interval.
func (d *dependency) disagreementLocked(now time.Time, state State) (since time.Time, ok bool) {
	c := d.canary
	if c.Checked.IsZero() || c.Up == (state == Closed) {
		d.disagreeFrom = time.Time{}
		return time.Time{}, false
	}
	if d.disagreeFrom.IsZero() {
		d.disagreeFrom = now
	}
	return d.disagreeFrom, true
}
