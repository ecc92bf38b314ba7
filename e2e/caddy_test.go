package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/analysis"
)

// caddyTiming is the breaker of the Caddy drills: reverse_proxy's passive
// health checks (a failure is remembered for fail_duration; the upstream
// is unhealthy while max_fails or more are remembered: no probes, the
// failures simply expire), optionally with active health checks (one
// failing check marks it unhealthy, one passing check healthy again, in
// Debian's 2.6.2).
type caddyTiming struct {
	MaxFails      int
	FailDuration  time.Duration
	HeaderTimeout time.Duration // transport response_header_timeout
	// HealthInterval > 0 turns active health checks on (GET /healthz).
	HealthInterval, HealthTimeout time.Duration
}

var caddyPassive = caddyTiming{MaxFails: 3, FailDuration: 2 * time.Second, HeaderTimeout: time.Second}

// caddyGW is one running Caddy.
type caddyGW struct {
	Front, Ready, Admin, Metrics string // URLs
	App                          string // host:port of the upstream
	Timing                       caddyTiming
	Config                       string
	p                            *proc

	mu    sync.Mutex
	polls []caddyPoll
	stop  chan struct{}
	done  chan struct{}
}

// caddyPoll is one read of the admin API's /reverse_proxy/upstreams.
type caddyPoll struct {
	At    time.Time // midpoint of the request
	Fails int
}

func caddyfile(tm caddyTiming, dir, front, admin, app string) string {
	var active string
	if tm.HealthInterval > 0 {
		active = fmt.Sprintf("\n\t\t\thealth_uri /healthz\n\t\t\thealth_interval %dms\n\t\t\thealth_timeout %dms", tm.HealthInterval.Milliseconds(), tm.HealthTimeout.Milliseconds())
	}
	return fmt.Sprintf(`{
	admin %[2]s
	auto_https off
	storage file_system %[1]s/data
	# Debug: reverse_proxy logs every upstream round trip ("upstream
	# roundtrip", with its end, status or error and the request's headers)
	# and the events app every health change: the white-box truth.
	log {
		output stderr
		format json
		level DEBUG
	}
}
http://%[3]s {
	reverse_proxy %[4]s {
		fail_duration %[5]dms
		max_fails %[6]d
		unhealthy_status 5xx 429%[7]s
		transport http {
			response_header_timeout %[8]dms
			dial_timeout 1s
		}
	}
	# Caddy's own 503 ("no upstreams available") becomes a recognisable
	# fast-fail; a 503 the upstream sent is passed on unchanged.
	handle_errors {
		@open expression {err.status_code} == 503
		header @open X-Breaker-State open
		respond @open `+"`"+`{"error":{"code":"dependency_unavailable","dependency":"app"}}`+"`"+` 503
		respond "{err.status_code} {err.message}" {err.status_code}
	}
}
`, dir, admin, front, app, tm.FailDuration.Milliseconds(), tm.MaxFails, active, tm.HeaderTimeout.Milliseconds())
}

// startCaddy starts `caddy run` in the foreground on free loopback ports
// with its data and config directories in the test's, and polls the admin
// API every 5 ms until the test ends.
func startCaddy(t *testing.T, tm caddyTiming) *caddyGW {
	t.Helper()
	bin := needBinary(t, "caddy", "caddy", "/usr/bin/caddy")
	dir := t.TempDir()
	front, admin := testutil.FreeAddr(t), testutil.FreeAddr(t)
	g := &caddyGW{Timing: tm, App: testutil.FreeAddr(t), Front: "http://" + front, Admin: "http://" + admin, stop: make(chan struct{}), done: make(chan struct{})}
	// The readiness URL goes through the proxy: with active checks, Caddy
	// answers it only once a check has passed.
	g.Ready, g.Metrics = g.Front+"/healthz", g.Admin+"/metrics"
	g.Config = caddyfile(tm, dir, front, admin, g.App)
	cfg := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfg, []byte(g.Config), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir, "XDG_DATA_HOME=" + dir, "XDG_CONFIG_HOME=" + dir}
	g.p = startProc(t, "caddy", bin, []string{"run", "--config", cfg, "--adapter", "caddyfile"}, env, func() string { return g.Config })
	waitHTTP(t, g.Admin+"/reverse_proxy/upstreams", 10*time.Second, g.p)
	go g.poll()
	t.Cleanup(func() { close(g.stop); <-g.done })
	return g
}

func (g *caddyGW) poll() {
	defer close(g.done)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-tick.C:
		}
		before := time.Now()
		resp, err := httpClient.Get(g.Admin + "/reverse_proxy/upstreams")
		if err != nil {
			continue
		}
		var ups []struct {
			Address string `json:"address"`
			Fails   int    `json:"fails"`
		}
		err = json.NewDecoder(resp.Body).Decode(&ups)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		after := time.Now()
		for _, u := range ups {
			if err == nil && u.Address == g.App {
				g.mu.Lock()
				g.polls = append(g.polls, caddyPoll{At: before.Add(after.Sub(before) / 2), Fails: u.Fails})
				g.mu.Unlock()
			}
		}
	}
}

// caddyRecord is what Caddy logged: its upstream round trips and its
// active health changes, in run time.
type caddyRecord struct {
	Trips  []caddyTrip
	Health []caddyHealth
	// Checks are the active checks Caddy logged: the failed ones (it
	// logs each) and the passing one that made the upstream healthy again.
	Checks []caddyHealth
	// Decisions are Caddy's own verdicts on each request it received:
	// forwarded ("selected upstream") or turned away ("no upstreams
	// available"), at the moment it decided, in order.
	Decisions []caddyDecision
}

// caddyDecision is one request Caddy forwarded or turned away.
type caddyDecision struct {
	At        float64
	Forwarded bool
}

type caddyTrip struct {
	End, Start float64
	Seq        string
	Status     int
	Err        string
}

type caddyHealth struct {
	At      float64
	Healthy bool
}

// Counted reports whether Caddy counted the round trip as a failure
// (unhealthy_status 5xx 429, or an error other than the client leaving).
func (c caddyTrip) Counted() bool {
	if c.Err != "" {
		return !strings.Contains(c.Err, "context canceled")
	}
	return c.Status >= 500 || c.Status == 429
}

func (g *caddyGW) record(t *testing.T, wallStart time.Time) caddyRecord {
	t.Helper()
	base := float64(wallStart.UnixNano()) / 1e9
	var rec caddyRecord
	for _, l := range g.p.Lines() {
		if !strings.HasPrefix(l.Text, "{") {
			continue
		}
		var e struct {
			TS       float64 `json:"ts"`
			Msg      string  `json:"msg"`
			Name     string  `json:"name"`
			Duration float64 `json:"duration"`
			Status   int     `json:"status"`
			Error    string  `json:"error"`
			Request  struct {
				Headers map[string][]string `json:"headers"`
			} `json:"request"`
		}
		if json.Unmarshal([]byte(l.Text), &e) != nil {
			continue
		}
		at := e.TS - base
		switch {
		case e.Msg == "upstream roundtrip":
			var seq string
			if v := e.Request.Headers["X-Rehearse-Seq"]; len(v) > 0 {
				seq = v[0]
			}
			rec.Trips = append(rec.Trips, caddyTrip{End: at, Start: at - e.Duration, Seq: seq, Status: e.Status, Err: e.Error})
		case e.Msg == "event" && (e.Name == "healthy" || e.Name == "unhealthy"):
			rec.Health = append(rec.Health, caddyHealth{At: at, Healthy: e.Name == "healthy"})
		case e.Msg == "HTTP request failed" || e.Msg == "unexpected status code" || e.Msg == "status code out of tolerances":
			rec.Checks = append(rec.Checks, caddyHealth{At: at})
		case e.Msg == "host is up":
			rec.Checks = append(rec.Checks, caddyHealth{At: at, Healthy: true})
		case e.Msg == "selected upstream":
			rec.Decisions = append(rec.Decisions, caddyDecision{At: at, Forwarded: true})
		case e.Msg == "no upstreams available":
			// Logged as the request ends; it was decided as it came in.
			rec.Decisions = append(rec.Decisions, caddyDecision{At: at - e.Duration})
		}
	}
	sort.SliceStable(rec.Trips, func(i, j int) bool { return rec.Trips[i].End < rec.Trips[j].End })
	sort.SliceStable(rec.Decisions, func(i, j int) bool { return rec.Decisions[i].At < rec.Decisions[j].At })
	return rec
}

// caddyState is Caddy's view of the upstream at one moment, by its
// documented rules: unhealthy while max_fails or more counted failures are
// remembered (each for fail_duration from when it was counted), or while
// the last active check failed.
type caddyState struct {
	tm  caddyTiming
	rec caddyRecord
}

func (s caddyState) fails(at float64) int {
	n := 0
	d := s.tm.FailDuration.Seconds()
	for _, tr := range s.rec.Trips {
		if tr.Counted() && tr.End <= at && at < tr.End+d {
			n++
		}
	}
	return n
}

func (s caddyState) healthy(at float64) bool {
	if s.fails(at) >= s.tm.MaxFails {
		return false
	}
	ok := true // Caddy starts an upstream healthy; the drills wait for a passing check
	for _, h := range s.rec.Health {
		if h.At <= at {
			ok = h.Healthy
		}
	}
	return ok
}

// transitions lists the moments the state may change: a counted failure,
// its expiry, an active health change.
func (s caddyState) transitions(from float64) []float64 {
	var ts []float64
	d := s.tm.FailDuration.Seconds()
	for _, tr := range s.rec.Trips {
		if tr.Counted() {
			ts = append(ts, tr.End, tr.End+d)
		}
	}
	for _, h := range s.rec.Health {
		ts = append(ts, h.At)
	}
	sort.Float64s(ts)
	out := ts[:0]
	for _, x := range ts {
		if x >= from {
			out = append(out, x)
		}
	}
	return out
}

// caddyTruth derives the breaker's cycles from Caddy's record. Caddy's
// own decisions say when it was open: it opened when it first turned a
// request away, and closed when it next forwarded one. The moments come
// from its state as its log fixes it (a counted failure, a failure's
// expiry, an active health change): the open is the last change to
// unhealthy before the request it turned away, the close the last change
// to healthy before the request it forwarded. A spell that no request
// fell into (healthy or unhealthy) changed nothing anyone saw, the black
// box included. Deciding "did a request see it" by Caddy's decisions,
// not by when the client sent, matters: a request sent a fraction of a
// millisecond before a failure expired reaches Caddy after it and is
// forwarded. With merge (the analysis read the calls let through while
// open as probes), a healthy spell that let fewer calls through than the
// analysis needs to call forwarding resumed (analysis.CloseRunMin), all
// failing, the last making the upstream unhealthy again, is not a close:
// those calls were, in effect, probes (as with nginx's; the black box
// cannot tell the two apart and neither can a client).
func caddyTruth(t *testing.T, s caddyState, from float64, merge bool) []truthCycle {
	t.Helper()
	var out []truthCycle
	// The replay's end: Caddy's checks fail once the harness has closed
	// its upstream, which is no part of the drill.
	to := math.Inf(-1)
	for _, tr := range s.rec.Trips {
		to = max(to, tr.End)
	}
	trans := s.transitions(0)
	// turn is the last change of the derived state to healthy (or to
	// unhealthy) at or before at (plus a millisecond: Caddy logs a round
	// trip a moment before it counts it), after lo.
	turn := func(at, lo float64, healthy bool) float64 {
		const skew = 0.001
		best := math.NaN()
		prev := !healthy
		for i, x := range trans {
			if x > at+skew {
				break
			}
			if i > 0 && x == trans[i-1] {
				continue
			}
			h := s.healthy(x)
			if h == healthy && prev != healthy && x > lo-skew {
				best = x
			}
			prev = h
		}
		if math.IsNaN(best) {
			t.Logf("Caddy %s a request at %.4f s that its logged state does not explain: the moment is that request's", map[bool]string{true: "forwarded", false: "turned away"}[healthy], at)
			return at
		}
		return best
	}
	open := false
	lastFwd, lastBlk := from-0.003, from-0.003
	for _, d := range s.rec.Decisions {
		if d.At < from-0.003 || d.At > to {
			continue
		}
		switch {
		case !open && !d.Forwarded:
			x := turn(d.At, lastFwd, false)
			open = true
			tc := truthCycle{OpenAt: x}
			prev := from - 0.003
			if n := len(out); n > 0 {
				prev = *out[n-1].CloseAt
			}
			// Failed calls before the open, as the analysis defines them:
			// counted failures of calls that began before it.
			for _, tr := range s.rec.Trips {
				if tr.Counted() && tr.End >= prev && tr.Start < x {
					tc.Failed++
				}
			}
			out = append(out, tc)
		case open && d.Forwarded:
			x := turn(d.At, lastBlk, true)
			open = false
			out[len(out)-1].CloseAt = &x
		}
		if d.Forwarded {
			lastFwd = d.At
		} else {
			lastBlk = d.At
		}
	}
	for i := range out {
		// With active checks, the failed checks while unhealthy and the
		// passing one that ended it are the probes.
		if len(s.rec.Checks) == 0 {
			break
		}
		end := math.Inf(1)
		if out[i].CloseAt != nil {
			end = *out[i].CloseAt + 0.002
		}
		for _, ch := range s.rec.Checks {
			if ch.At > out[i].OpenAt && ch.At <= end {
				out[i].Probes = append(out[i].Probes, truthProbe{At: ch.At, End: ch.At, OK: ch.Healthy})
			}
		}
	}
	if !merge {
		return out
	}
	// Merge healthy spells that let fewer than CloseRunMin calls through, all re-tripping.
	var merged []truthCycle
	for _, c := range out {
		n := len(merged)
		if n > 0 && merged[n-1].CloseAt != nil {
			prev := &merged[n-1]
			var in []caddyTrip
			for _, tr := range s.rec.Trips {
				if tr.Start >= *prev.CloseAt-0.001 && tr.Start < c.OpenAt {
					in = append(in, tr)
				}
			}
			counted := len(in) > 0
			for _, tr := range in {
				counted = counted && tr.Counted()
			}
			if counted && len(in) < analysis.CloseRunMin && math.Abs(in[len(in)-1].End-c.OpenAt) < 0.002 {
				for _, tr := range in {
					prev.Probes = append(prev.Probes, truthProbe{At: tr.Start, End: tr.End, OK: false})
				}
				prev.Probes = append(prev.Probes, c.Probes...)
				prev.CloseAt = c.CloseAt
				continue
			}
		}
		merged = append(merged, c)
	}
	return merged
}

// checkPolls holds the derived state to the admin API's fails counter: a
// poll more than 15 ms from any transition must agree.
func (g *caddyGW) checkPolls(t *testing.T, s caddyState, wallStart time.Time) int {
	t.Helper()
	g.mu.Lock()
	polls := append([]caddyPoll(nil), g.polls...)
	g.mu.Unlock()
	trans := s.transitions(0)
	near := func(x float64) bool {
		i := sort.SearchFloat64s(trans, x)
		for _, j := range []int{i - 1, i} {
			if j >= 0 && j < len(trans) && math.Abs(trans[j]-x) < 0.015 {
				return true
			}
		}
		return false
	}
	checked, bad := 0, 0
	for _, p := range polls {
		at := p.At.Sub(wallStart).Seconds()
		if at < 0 || near(at) {
			continue
		}
		checked++
		if want := s.fails(at); want != p.Fails {
			bad++
			if bad <= 5 {
				t.Logf("admin API at %.3f s: fails %d, Caddy's log says %d", at, p.Fails, want)
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d admin API polls to check the log against", checked)
	}
	// A poll can land between Caddy counting a failure and logging its
	// round trip: allow 1 % of them to disagree.
	if bad*100 > checked {
		t.Errorf("%d of %d admin API polls disagree with Caddy's log", bad, checked)
	}
	return checked
}

// caddyDrill rehearses one drill against a fresh Caddy.
func caddyDrill(t *testing.T, tm caddyTiming, d singleDrill) (*caddyGW, *rehearsal.Result, caddyState) {
	t.Helper()
	g := startCaddy(t, tm)
	d.Gateway = fmt.Sprintf("  metrics: {url: %s, preset: caddy, interval: 250ms, dependency_map: {%q: app}}\n", g.Metrics, g.App)
	src := singleScenario("caddy", g.Front, g.Ready, g.App, d)
	res, _ := runScenario(t, "caddy-"+d.Name, src, d.Duration, g.p)
	s := caddyState{tm: tm, rec: g.record(t, res.Analysis.Run.WallStart)}
	if len(s.rec.Trips) == 0 {
		t.Fatalf("Caddy logged no upstream round trip:\n%s", g.p.Log())
	}
	return g, res, s
}
