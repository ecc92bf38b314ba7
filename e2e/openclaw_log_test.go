package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/observe"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/replay/capture"
	"github.com/halfopen/rehearse/reports/analysis"
)

// TestOpenClawLogStates: a 429 with Retry-After on the primary provider of
// the real OpenClaw; the log observer (preset openclaw) tails OpenClaw's
// JSON log and must record primary's cooldown as an open state at the
// time OpenClaw's own line gives, each in-turn retry with its delayMs,
// and one fetch_start per provider call the fake upstream saw.
func TestOpenClawLogStates(t *testing.T) {
	t.Parallel() // its own namespace, ports and HOME; mostly waits on OpenClaw
	dir := openclawDir(t)
	if !inLoopbackNetns(t) {
		return
	}
	faults := []inject.FaultSpec{{Name: "quota", Type: "retry_after", Upstream: "primary",
		Params: &inject.RetryAfterParams{After: rehearse.Duration(120 * time.Second)}}}
	primary, backup, clock, mem := openclawProviders(t, faults)

	home := t.TempDir()
	logFile := filepath.Join(home, "openclaw.log")
	gwAddr := testutil.FreeAddr(t)
	_, port, _ := strings.Cut(gwAddr, ":")
	cfg := openclawLoggedConfig(openclawConfig(primary, backup, port), logFile)
	env := openclawHome(t, dir, home, cfg)
	openclawAuthProfiles(t, dir, env)
	startOpenClaw(t, dir, gwAddr, env, cfg)

	obs, err := observe.NewLogObserver(observe.LogConfig{Path: logFile, Preset: observe.PresetOpenClaw},
		observe.WithRecorder(mem), observe.WithClock(clock), observe.WithUpstreams("primary", "backup"))
	if err != nil {
		t.Fatal(err)
	}
	obsCtx, stopObs := context.WithCancel(context.Background())
	obsDone := make(chan struct{})
	go func() { defer close(obsDone); _ = obs.Run(obsCtx) }()

	var turns []*capture.Request
	for i := range 6 {
		turns = append(turns, chatTurn(i, false))
	}
	target, _ := url.Parse("http://" + gwAddr)
	r, err := replay.New(turns, replay.Options{Target: target, Once: true, Rate: 0.5, Deadline: 90 * time.Second, AllowWrites: true},
		replay.WithRecorder(mem), replay.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("client outcomes %v", sum.ByOutcome)
	time.Sleep(2 * time.Second) // OpenClaw queues its file writes
	stopObs()
	<-obsDone
	checkOpenClawLog(t, logFile, clock, mem, obs.Stats())
	// REHEARSE_OPENCLAW_KEEP_LOG=PATH keeps OpenClaw's log of this run,
	// the source of observe/testdata/openclaw-real-429.jsonl.
	if keep := os.Getenv("REHEARSE_OPENCLAW_KEEP_LOG"); keep != "" {
		if b, err := os.ReadFile(logFile); err == nil {
			_ = os.WriteFile(keep, b, 0o600)
		}
	}
}

// ocLine is what the test reads from OpenClaw's log itself, independently
// of the observer: the time and message of each line, and the fields the
// preset uses.
type ocLine struct {
	t   time.Duration
	at  time.Time // the line's own time (OpenClaw's wall clock)
	msg string
	obj map[string]any
}

func readOpenClawLog(t *testing.T, path string, clock *journal.Clock) []ocLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []ocLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var obj map[string]any
		if json.Unmarshal(sc.Bytes(), &obj) != nil {
			continue
		}
		ts, _ := obj["time"].(string)
		tm, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			t.Fatalf("OpenClaw log line without an RFC 3339 time: %s", sc.Text())
		}
		msg, _ := obj["message"].(string)
		out = append(out, ocLine{t: clock.At(tm), at: tm, msg: msg, obj: obj})
	}
	return out
}

// field finds a structured field the way OpenClaw writes them: in the
// object under a positional member.
func (l ocLine) field(name string) any {
	for _, k := range []string{"1", "2", "3"} {
		if m, ok := l.obj[k].(map[string]any); ok {
			if v, ok := m[name]; ok {
				return v
			}
		}
	}
	return nil
}

func checkOpenClawLog(t *testing.T, path string, clock *journal.Clock, mem *journal.Memory, st observe.LogStats) {
	t.Helper()
	lines := readOpenClawLog(t, path, clock)
	t.Logf("observer stats %+v; %d lines in OpenClaw's log", st, len(lines))
	var cooldowns, retries []ocLine
	fetchStarts := map[string]int{}
	for _, l := range lines {
		switch {
		case l.t < 0:
		case l.msg == "auth profile failure state updated" && l.field("provider") == "primary" && l.field("windowType") == "cooldown":
			cooldowns = append(cooldowns, l)
		case strings.HasPrefix(l.msg, "transient same-model retry "):
			retries = append(retries, l)
		case strings.HasPrefix(l.msg, "[model-fetch] start provider="):
			p, _, _ := strings.Cut(strings.TrimPrefix(l.msg, "[model-fetch] start provider="), " ")
			fetchStarts[p]++
		}
	}
	if len(cooldowns) == 0 {
		for _, l := range lines {
			if l.t >= 0 && (strings.Contains(l.msg, "model-fetch") || strings.Contains(l.msg, "auth") || strings.Contains(l.msg, "fallback")) {
				t.Logf("log: %.3fs %s", l.t.Seconds(), l.msg)
			}
		}
		t.Fatal("OpenClaw logged no cooldown for primary under a 429: are the keys auth profiles, is logging.level debug?")
	}

	var opens []time.Duration
	var retrySeries []journal.Series
	var retryT []time.Duration
	logStarts := map[string]int{}
	for _, ev := range mem.Events() {
		s, ok := ev.Payload.(*journal.MetricsSample)
		if !ok || s.Origin != journal.OriginLog {
			continue
		}
		for _, b := range s.States {
			t.Logf("log state %.3fs %s (%s) %s", ev.T.Seconds(), b.Dependency, b.Upstream, b.State)
			if b.Upstream == "primary" && b.State == journal.StateOpen {
				opens = append(opens, ev.T)
			}
		}
		for _, se := range s.Series {
			switch se.Name {
			case "log_retry":
				retrySeries = append(retrySeries, se)
				retryT = append(retryT, ev.T)
			case "log_fetch_start":
				logStarts[se.Labels["dependency"]]++
			}
		}
	}
	// The first open is OpenClaw's first cooldown line, at its time.
	if len(opens) == 0 {
		t.Fatal("no open state for primary recorded from the log")
	}
	if d := opens[0] - cooldowns[0].t; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("first open at %v, OpenClaw's cooldown line at %v", opens[0], cooldowns[0].t)
	}
	// The harness saw the 429 that caused it before OpenClaw logged it.
	var first429 time.Duration = -1
	calls := map[string]int{}
	for _, ev := range mem.Events() {
		e, ok := ev.Payload.(*journal.UpstreamRequest)
		if !ok || e.HealthCheck {
			continue
		}
		calls[e.Upstream]++
		if e.Upstream == "primary" && e.Status == 429 && (first429 < 0 || ev.T < first429) {
			first429 = ev.T // an upstream call is stamped with its arrival
		}
	}
	if first429 < 0 || opens[0] < first429 {
		t.Errorf("open at %v; the first 429 served to OpenClaw at %v", opens[0], first429)
	}
	// Every retry line is a series with its delayMs, at its time.
	if len(retrySeries) != len(retries) {
		t.Errorf("%d retry series, %d retry lines in OpenClaw's log", len(retrySeries), len(retries))
	}
	for i := range min(len(retries), len(retrySeries)) {
		_, d, _ := strings.Cut(retries[i].msg, "delayMs=")
		if want := strings.TrimSpace(d); fmt.Sprint(retrySeries[i].Value) != want || retryT[i] != max(retries[i].t, retryT[i]) {
			t.Errorf("retry %d: series %g at %v, line delayMs=%s at %v", i, retrySeries[i].Value, retryT[i], want, retries[i].t)
		}
	}
	// One fetch_start per provider call, as the fakes counted them.
	for _, p := range []string{"primary", "backup"} {
		if logStarts[p] != fetchStarts[p] {
			t.Errorf("%s: %d fetch_start series, %d [model-fetch] start lines", p, logStarts[p], fetchStarts[p])
		}
		if d := logStarts[p] - calls[p]; d < -1 || d > 1 {
			t.Errorf("%s: %d provider calls in the log, %d seen by the fake upstream", p, logStarts[p], calls[p])
		}
	}
	t.Logf("cooldown lines %d, opens %v, retries %d, calls %v, fetch starts %v", len(cooldowns), opens, len(retries), calls, logStarts)

	// The reports read the log's states as they read a scrape's: the
	// breaker lane of primary shows the open from OpenClaw's line.
	evs := append([]journal.Event{{Payload: &journal.RunStart{RunID: "openclaw-log", Scenario: "openclaw-429",
		WallStart: clock.Start(), Upstreams: []string{"primary", "backup"}}}}, mem.Events()...)
	evs = append(evs, journal.Event{T: clock.Now(), Payload: &journal.RunEnd{Reason: "completed"}})
	a, err := analysis.AnalyzeEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	lane := a.Timeline.Upstreams["primary"]
	if lane == nil || len(lane.Metrics) == 0 {
		t.Fatalf("the report has no state lane for primary: %+v", lane)
	}
	var laneOpen []float64
	for _, iv := range lane.Metrics {
		if iv.State == journal.StateOpen {
			laneOpen = append(laneOpen, iv.StartS)
		}
	}
	if len(laneOpen) == 0 || laneOpen[0] != float64(opens[0].Round(time.Millisecond))/float64(time.Second) {
		t.Errorf("report's state lane for primary %+v: want an open from %v", lane.Metrics, opens[0])
	}
	for _, ep := range a.Upstreams["primary"].Episodes {
		t.Logf("episode %s: opened %v, metrics open lag %v s", ep.Fault, ep.Opened, deref(ep.MetricsOpenLagS))
	}
}
