package rehearsal

import (
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay"
)

// TestLiveBreakerStates walks one breaker through closed → open →
// half-open → closed as seen from outside, and checks that every event
// reaches the journal unchanged.
func TestLiveBreakerStates(t *testing.T) {
	sc := parse(t, `version: 1
name: live
faults: [{type: status, upstream: search, at: 1s, for: 5s, params: {code: 503}}]
expectations: {upstreams: [weather]}
`)
	clock := journal.NewClock(time.Now().Add(-time.Hour)) // "now" is an hour into the run
	mem := journal.NewMemory(clock)
	l := newLive(mem, clock, sc)
	if got := strings.Join(l.watched, ","); got != "weather,search" {
		t.Fatalf("watched %q: want the expectations' upstreams, then the faults'", got)
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	state := func(at float64) string { return l.ups["search"].state(sec(at)) }
	client := func(at float64, o journal.Outcome) {
		l.RecordAt(sec(at), &journal.ClientRequest{Upstream: "search", Outcome: o, Done: sec(at), FastFail: o == journal.OutcomeFastFail})
	}
	if s := state(0); s != "?" {
		t.Errorf("before any request: %s", s)
	}
	client(0.5, journal.OutcomeOK)
	l.RecordAt(sec(1), &journal.FaultStart{Name: "search-status", Upstream: "search", Type: "status"})
	client(1.2, journal.OutcomeHTTP5xx)
	if s := state(1.3); s != "closed" {
		t.Errorf("503s passed through: %s, want closed", s)
	}
	client(2, journal.OutcomeFastFail)
	l.RecordAt(sec(2.05), &journal.UpstreamRequest{Upstream: "search", HealthCheck: true})
	if s := state(2.1); s != "open" {
		t.Errorf("after a fast-fail (a health check reaching the upstream): %s, want open", s)
	}
	l.RecordAt(sec(4), &journal.UpstreamRequest{Upstream: "search", ProbeTag: "1"})
	client(4.1, journal.OutcomeFastFail)
	if s := state(4.5); s != "half-open" {
		t.Errorf("a call reached the upstream while others are turned away: %s, want half-open", s)
	}
	if s := state(6); s != "open" {
		t.Errorf("no call for 2s since: %s, want open", s)
	}
	l.RecordAt(sec(6), &journal.FaultEnd{Name: "search-status", Upstream: "search"})
	client(7, journal.OutcomeOK)
	if s := state(7.1); s != "closed" {
		t.Errorf("answered again: %s, want closed", s)
	}
	l.RecordAt(sec(7.2), &journal.MetricsSample{States: []journal.BreakerState{{Dependency: "search", Upstream: "search", State: journal.StateHalfOpen}}})
	l.setReplay(replay.Progress{Elapsed: sec(7.2), Planned: sec(30), Sent: 9, OK: 5, Failed: 4, FastFail: 2})
	line := l.Line()
	for _, want := range []string{"0:07/0:30 sent 9 ok 5 failed 4", "| no faults |", "weather=?", "search=", "(metrics half-open)", "| fast-fail 2"} {
		if !strings.Contains(line, want) {
			t.Errorf("status line %q lacks %q", line, want)
		}
	}
	if n := len(mem.Events()); n != 10 {
		t.Errorf("%d events reached the journal, want 10", n)
	}
}
