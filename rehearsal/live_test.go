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
	// wantState checks search's state at a run time, as the status line
	// would show it.
	wantState := func(at float64, want, why string) {
		t.Helper()
		if got := l.ups["search"].state(sec(at)); got != want {
			t.Errorf("%s: %s, want %s", why, got, want)
		}
	}
	client := func(at float64, o journal.Outcome) {
		l.RecordAt(sec(at), &journal.ClientRequest{Upstream: "search", Outcome: o, Done: sec(at), FastFail: o == journal.OutcomeFastFail})
	}
	wantState(0, "?", "before any request")
	client(0.5, journal.OutcomeOK)
	l.RecordAt(sec(1), &journal.FaultStart{Name: "search-status", Upstream: "search", Type: "status"})
	client(1.2, journal.OutcomeHTTP5xx)
	wantState(1.3, "closed", "503s passed through")
	client(2, journal.OutcomeFastFail)
	l.RecordAt(sec(2.05), &journal.UpstreamRequest{Upstream: "search", HealthCheck: true})
	wantState(2.1, "open", "after a fast-fail (a health check reaching the upstream)")
	l.RecordAt(sec(4), &journal.UpstreamRequest{Upstream: "search", ProbeTag: "1"})
	client(4.1, journal.OutcomeFastFail)
	wantState(4.5, "half-open", "a call reached the upstream while others are turned away")
	wantState(6, "open", "no call for 2s since")
	l.RecordAt(sec(6), &journal.FaultEnd{Name: "search-status", Upstream: "search"})
	client(7, journal.OutcomeOK)
	wantState(7.1, "closed", "answered again")
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

// TestLiveStampedRejections: when the gateway forwards the sequence
// stamp, a request answered without reaching its upstream counts as
// turned away, though no fast-fail recogniser knows the answer (a bare
// 503), and an upstream's record written a moment after the client's
// answer still counts as forwarded.
func TestLiveStampedRejections(t *testing.T) {
	sc := parse(t, "version: 1\nname: live\nexpectations: {upstreams: [search]}\n")
	clock := journal.NewClock(time.Now().Add(-time.Hour))
	l := newLive(journal.Discard, clock, sc)
	u := l.ups["search"]
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	seq := func(n uint64) *uint64 { return &n }
	client := func(at int, n uint64, status int, o journal.Outcome) {
		l.RecordAt(ms(at), &journal.ClientRequest{Seq: n, Upstream: "search", Status: status, Outcome: o, Done: ms(at)})
	}
	// Forwarded: the upstream saw seq 1 (a 503 passed through).
	l.RecordAt(ms(100), &journal.UpstreamRequest{Upstream: "search", Seq: seq(1), Status: 503})
	client(110, 1, 503, journal.OutcomeHTTP5xx)
	if s := u.state(ms(120)); s != "closed" {
		t.Fatalf("a 503 from the upstream: %s, want closed", s)
	}
	// Turned away: seq 2 never reaches the upstream.
	client(1000, 2, 503, journal.OutcomeHTTP5xx)
	if s := u.state(ms(1100)); s != "closed" {
		t.Errorf("within the grace: %s, want closed still", s)
	}
	u.settle(ms(1300))
	if s := u.state(ms(1300)); s != "open" {
		t.Errorf("answered without reaching the upstream: %s, want open", s)
	}
	// The upstream's record after the client's answer: forwarded.
	client(2000, 3, 200, journal.OutcomeOK)
	l.RecordAt(ms(1990), &journal.UpstreamRequest{Upstream: "search", Seq: seq(3), Status: 200})
	u.settle(ms(2500))
	if s := u.state(ms(2500)); s != "closed" {
		t.Errorf("the upstream's record came late: %s, want closed", s)
	}
	// A reset without an answer that never reached the upstream says
	// nothing.
	client(3000, 4, 0, journal.OutcomeResetBeforeHdrs)
	u.settle(ms(3500))
	if s := u.state(ms(3500)); s != "closed" {
		t.Errorf("an unanswered request: %s, want closed", s)
	}
}

// The status line says when its counts are the warm-up's, and stops
// saying it once the replay's come.
func TestLiveWarmup(t *testing.T) {
	clock := journal.NewClock(time.Now())
	l := newLive(journal.NewMemory(clock), clock, parse(t, "version: 1\nname: w\n"))
	l.setWarmup(replay.Progress{Elapsed: 3 * time.Second, Planned: 20 * time.Second, Sent: 3, OK: 3})
	if line := l.Line(); !strings.HasPrefix(line, "warm-up 0:03/0:20 sent 3 ok 3") {
		t.Errorf("during the warm-up: %q", line)
	}
	l.setReplay(replay.Progress{Elapsed: time.Second, Planned: 30 * time.Second, Sent: 1, OK: 1})
	if line := l.Line(); !strings.HasPrefix(line, "0:01/0:30 sent 1") {
		t.Errorf("after it: %q", line)
	}
}
