package analysis

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/observe"
)

// startOnly analyses a journal of a run.start (with config and resolved
// as given) and a run.end.
func startOnly(t *testing.T, config string, resolved *journal.Resolved) *Analysis {
	t.Helper()
	a, err := AnalyzeEvents([]journal.Event{
		{T: 0, Payload: &journal.RunStart{RunID: "r", Scenario: "s", Seed: 1, WallStart: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			Config: json.RawMessage(config), Resolved: resolved}},
		{T: 10 * time.Second, Payload: &journal.RunEnd{Reason: "completed"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

const builtinConfig = `{"gateway":{"builtin":{"instances":2,"config":{"breaker":{"failure_ratio":0.4}}}},
	"report":{"links":{"prometheus":"http://127.0.0.1:9090"}}}`

func setting(gs *GatewaySettings, key string) string {
	if gs == nil {
		return ""
	}
	for _, s := range gs.Breaker {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// TestResolvedRecordedWins: a journal that records what its build
// resolved renders those settings and series, whatever this build's
// defaults and presets are, and notes nothing.
func TestResolvedRecordedWins(t *testing.T) {
	rec := &journal.Resolved{
		Gateway:       &GatewaySettings{Instances: 2, Breaker: []Setting{{Key: "failure_ratio", Value: "0.4"}, {Key: "min_samples", Value: "999"}}},
		BreakerSeries: []string{"old_breaker_state"},
	}
	a := startOnly(t, builtinConfig, rec)
	if got := setting(a.BuiltinGateway, "min_samples"); got != "999" {
		t.Errorf("min_samples %q, want the recorded 999", got)
	}
	if !slices.ContainsFunc(a.Links, func(l Link) bool { return strings.Contains(l.URL, "old_breaker_state") }) {
		t.Errorf("links %v: want the recorded series old_breaker_state", a.Links)
	}
	if slices.Contains(a.Notes, NoteResolvedAssumed) {
		t.Errorf("notes %q: nothing was assumed", a.Notes)
	}
}

// TestResolvedAssumedForOldJournals: a journal from before the record
// still renders, with this build's defaults and preset, and says so.
func TestResolvedAssumedForOldJournals(t *testing.T) {
	a := startOnly(t, builtinConfig, nil)
	want := Resolve(json.RawMessage(builtinConfig))
	if a.BuiltinGateway == nil || setting(a.BuiltinGateway, "failure_ratio") != "0.4" ||
		setting(a.BuiltinGateway, "min_samples") != setting(want.Gateway, "min_samples") || setting(want.Gateway, "min_samples") == "" {
		t.Errorf("settings %+v, want this build's resolution %+v", a.BuiltinGateway, want.Gateway)
	}
	series := observe.PresetMetric(observe.DefaultPreset)
	if series == "" || !slices.ContainsFunc(a.Links, func(l Link) bool { return strings.Contains(l.URL, series) }) {
		t.Errorf("links %v: want this build's default preset series %q", a.Links, series)
	}
	if !slices.Contains(a.Notes, NoteResolvedAssumed) {
		t.Errorf("notes %q: want the assumption said", a.Notes)
	}
	// A URL gateway without report links assumed nothing worth a note.
	if a := startOnly(t, `{"gateway":{"url":"http://127.0.0.1:1"}}`, nil); slices.Contains(a.Notes, NoteResolvedAssumed) {
		t.Errorf("URL gateway: notes %q, want no assumption noted", a.Notes)
	}
}
