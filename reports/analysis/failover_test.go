package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// within reports whether a figure in seconds (rounded to the ms) is the
// truth, to the millisecond.
func within(got *float64, want time.Duration) bool {
	return got != nil && math.Abs(*got-want.Seconds()) <= 0.0011
}

// TestFailoverHeldToTheGatewaysLog: a gateway that falls back from the
// primary to the backup during a fault and back after it; the failover
// figure of the primary's episode must say what the gateway's own log
// says, followed by the body stamp, by the gateway's chosen-target header
// (no stamp), and by time (neither).
func TestFailoverHeldToTheGatewaysLog(t *testing.T) {
	cases := []struct {
		name     string
		gw       fallbackGW
		evidence string
	}{
		{"503-stamp", fallbackGW{stamp: true}, "same_requests"},
		{"slow-stamp", fallbackGW{stamp: true, slow: true, timeout: 2 * time.Second}, "same_requests"},
		{"503-header", fallbackGW{header: "X-Chosen-Target"}, "target_header"},
		{"503-time", fallbackGW{}, "time"},
		// No cooldown: every turn tries the primary, then falls back.
		{"503-stamp-per-request", fallbackGW{stamp: true, cooldown: -1}, "same_requests"},
		// The fault lasts to the run's end: no fail-back to look for.
		{"503-stamp-to-the-end", fallbackGW{stamp: true, toTheEnd: true}, "same_requests"},
		// A route balanced over both: half the turns go straight to the
		// backup whatever happens; only the turns sent again after the
		// primary failed are failover.
		{"503-stamp-balanced", fallbackGW{stamp: true, balanced: true, cooldown: -1}, "same_requests"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.gw
			g.rate, g.dur, g.faultAt, g.faultFor = 4, 40*time.Second, 10*time.Second, 12*time.Second
			if g.cooldown == 0 {
				g.cooldown = 5 * time.Second
			}
			g.cooldown, g.lag, g.tokens = max(g.cooldown, 0), 150*time.Millisecond, 250
			a, err := AnalyzeEvents(g.build())
			if err != nil {
				t.Fatal(err)
			}
			truth := g.log
			ep := a.Upstreams["primary"].Episodes[0]
			f := ep.Failover
			if f == nil {
				t.Fatalf("no failover figure; gateway log: %v", truth)
			}
			t.Logf("figure: %s", f.Statement)
			t.Logf("gateway log: %v", truth)
			if f.Fallback != "backup" || f.Evidence != tc.evidence {
				t.Fatalf("fallback %q by %q, want backup by %s", f.Fallback, f.Evidence, tc.evidence)
			}
			if got := a.Upstreams["backup"].FallbackFor; len(got) != 1 || got[0] != "primary" {
				t.Errorf("backup's fallback_for %v, want [primary]", got)
			}
			overAfter := truth.firstFallback - g.faultAt
			backAfter := truth.failBack - (g.faultAt + g.faultFor)
			switch tc.evidence {
			case "target_header":
				// The call is not known: the bounds must hold the truth.
				b := f.FailedOverAfterBoundsS
				if b == nil || *b.Min > overAfter.Seconds() || *b.Max < overAfter.Seconds() {
					t.Errorf("failed over after %v %s, truth %v", fp(f.FailedOverAfterS), bounds(b), overAfter)
				}
				if bb := f.FailedBackAfterBoundsS; !within(f.FailedBackAfterS, backAfter) &&
					(bb == nil || *bb.Min > backAfter.Seconds() || *bb.Max < backAfter.Seconds()) {
					t.Errorf("failed back after %v %s, truth %v", fp(f.FailedBackAfterS), bounds(bb), backAfter)
				}
			case "same_requests", "time":
				if !within(f.FailedOverAfterS, overAfter) || f.FailedOverAfterBoundsS != nil {
					t.Errorf("failed over after %v %s, truth %v", fp(f.FailedOverAfterS), bounds(f.FailedOverAfterBoundsS), overAfter)
				}
				if g.toTheEnd {
					if f.FailedBack || !ep.EndedByRun || !strings.Contains(f.Statement, "lasted to the run's end") {
						t.Errorf("fault to the end: failed back %v, ended by run %v: %s", f.FailedBack, ep.EndedByRun, f.Statement)
					}
					break
				}
				if !f.FailedBack || !within(f.FailedBackAfterS, backAfter) {
					t.Errorf("failed back %v after %v, truth %v", f.FailedBack, fp(f.FailedBackAfterS), backAfter)
				}
			}
			if f.Served != truth.served || f.ServedOK != truth.ok || f.FallbackCalls != truth.fallbackCalls {
				t.Errorf("served %d (%d ok), %d fallback calls; truth %d (%d ok), %d calls", f.Served, f.ServedOK, f.FallbackCalls,
					truth.served, truth.ok, truth.fallbackCalls)
			}
			if want := g.balanced; (f.FallbackShareBefore != nil && *f.FallbackShareBefore > 0) != want || f.BalancedToFallback != truth.balanced {
				t.Errorf("fallback share before %v, balanced to it %d; truth balanced %v, %d turns", fp(f.FallbackShareBefore), f.BalancedToFallback, want, truth.balanced)
			}
			if f.FallbackTokens == nil || *f.FallbackTokens != truth.fallbackTokens {
				t.Errorf("fallback tokens %v, truth %d", f.FallbackTokens, truth.fallbackTokens)
			}
			if tc.evidence == "same_requests" && (f.AfterPrimary != truth.afterPrimary || f.PrimaryCalls != truth.primaryCalls ||
				f.PrimarySkipped != truth.served-truth.afterPrimary) {
				t.Errorf("after primary %d, skipped %d, primary calls %d; truth %d, %d, %d", f.AfterPrimary, f.PrimarySkipped, f.PrimaryCalls,
					truth.afterPrimary, truth.served-truth.afterPrimary, truth.primaryCalls)
			}
		})
	}
}

// TestFailoverOfAFallbackItself: a fault on the fallback, whose requests
// the stamp follows but no route reaches first, says it has no requests
// of its own to move, not that nothing could be followed.
func TestFailoverOfAFallbackItself(t *testing.T) {
	g := fallbackGW{stamp: true, rate: 4, dur: 40 * time.Second, faultAt: 10 * time.Second, faultFor: 12 * time.Second,
		cooldown: 5 * time.Second, lag: 150 * time.Millisecond, tokens: 250}
	evs := g.build()
	for _, ev := range evs {
		if fs, ok := ev.Payload.(*journal.FaultStart); ok {
			// The same run, the fault window named on the backup too.
			evs = append(evs, journal.Event{T: ev.T, Payload: &journal.FaultStart{Name: "backup-" + fs.Name, Type: fs.Type, Upstream: "backup", For: fs.For}})
			break
		}
	}
	a, err := AnalyzeEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	f := a.Upstreams["backup"].Episodes[0].Failover
	if f == nil || !strings.Contains(f.Unseen, "no route's requests went to backup first") {
		t.Fatalf("backup's own episode: %+v", f)
	}
	if p := a.Upstreams["primary"].Episodes[0].Failover; p.Fallback != "backup" {
		t.Errorf("primary's failover %+v", p)
	}
}

// FuzzNamedUpstream: a kept header's value names at most one upstream,
// and only as a whole word of it.
func FuzzNamedUpstream(f *testing.F) {
	for _, s := range []string{"backup", "openai-compat/backup", "primary, backup", "BACKUP", "back", "x.backup.y", "", "primary-2"} {
		f.Add(s)
	}
	ups := newInterner()
	for _, n := range []string{"primary", "backup", "primary-2"} {
		ups.id(n)
	}
	f.Fuzz(func(t *testing.T, text string) {
		id := namedUpstream(text, ups)
		if id == 0 {
			return
		}
		name := ups.names[id]
		words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
		})
		if !slices.Contains(words, strings.ToLower(name)) {
			t.Fatalf("%q names %q, not one of its words %q", text, name, words)
		}
	})
}
