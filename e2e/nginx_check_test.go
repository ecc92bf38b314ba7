package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/analysis"
)

// checkNginx holds the app episode to nginx's access log and logs the
// measured-vs-log table.
func checkNginx(t *testing.T, g *nginxGW, res *rehearsal.Result, lines []nginxLine, wantSuccesses *int) *analysis.Episode {
	t.Helper()
	ua := res.Analysis.Upstreams["app"]
	if ua == nil || len(ua.Episodes) != 1 {
		t.Fatalf("want one episode on app, analysis has %+v", ua)
	}
	ep := ua.Episodes[0]
	skipIfStalled(t, res.Analysis)
	truth := nginxTruth(lines, g.App, ep.StartS)
	c := &comparer{t: t}
	c.note("configuration", fmt.Sprintf("max_fails=%d fail_timeout=%s non_idempotent=%v proxy_read_timeout=%s", g.Timing.MaxFails, g.Timing.FailTimeout, g.Timing.NonIdempotent, g.Timing.ReadTimeout), "—")
	c.note("shape", "live-traffic probe, one per half-open", ep.Shape+": "+ep.ShapeEvidence)
	c.note("statement", "—", ep.Statement)
	compareCycles(c, ep, truth, wantSuccesses)
	if t.Failed() {
		t.Logf("nginx access log during the episode:\n%s", dumpNginx(lines, g.App, ep.StartS-0.2, ep.EndS+4))
	}
	if ep.Leaked != 0 {
		t.Errorf("leaked %d", ep.Leaked)
	}
	c.log(t.Name())
	return ep
}

// checkHangUps asserts that the upstream saw the gateway give up on every
// call the latency fault held, at the gateway's timeout, for requests with
// a body (POST) and without (GET).
func checkHangUps(t *testing.T, res *rehearsal.Result, timeout time.Duration) {
	t.Helper()
	events, _, err := journal.ReadFile(filepath.Join(res.Dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string][]float64{}
	for _, e := range events {
		p, ok := e.Payload.(*journal.UpstreamRequest)
		if !ok || p.FaultType != "latency" || p.HealthCheck {
			continue
		}
		held := (p.Done - e.T).Seconds()
		by[p.Method] = append(by[p.Method], held)
		if p.Outcome != journal.OutcomeUpstreamGone || held > timeout.Seconds()+0.3 || held < timeout.Seconds()-0.05 {
			t.Errorf("%s %s: outcome %s after %.3f s, want client_gone at the gateway's timeout %s", p.Method, p.Path, p.Outcome, held, timeout)
		}
	}
	if len(by["POST"]) == 0 || len(by["GET"]) == 0 {
		t.Errorf("held calls by method %v: want POSTs and GETs", by)
	}
	t.Logf("held calls ended by the gateway's hang-up: POST %s, GET %s", ms(by["POST"]), ms(by["GET"]))
}
