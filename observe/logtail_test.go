package observe

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// The OpenClaw lines in testdata/openclaw-429.jsonl are written in the exact
// record shape of a real OpenClaw 2026.9.6 file log (envelope members "0",
// "1", "2", "_meta", "time", "hostname", "message" as in
// testdata/openclaw-startup.jsonl, three lines copied from a real gateway's
// log on this machine), with the messages and fields of its source for a
// 429 on the primary provider: a cooldown of 30 s, a failed probe and a
// second cooldown of 60 s, a fallback decision to backup, and a
// successful probe. They are not a recording of a faulted run (that is
// testdata/openclaw-real-429.jsonl, TestLogObserverRealOpenClaw), but they
// hold what the real run did not reach: a failed probe, a second window,
// an in-turn retry and a close.

// logBase is the time of testdata/openclaw-429.jsonl's run start.
var logBase = time.Date(2026, 12, 4, 22, 40, 0, 0, time.UTC)

// logRun runs a LogObserver on path, with polls driven by the test:
// step runs shell commands (a real writer process) and then one poll.
type logRun struct {
	t    *testing.T
	obs  *LogObserver
	mem  *journal.Memory
	tick *manualTicker
	done chan struct{}
	stop context.CancelFunc
}

func startLogRun(t *testing.T, cfg LogConfig) *logRun {
	t.Helper()
	return startLogRunAt(t, cfg, logBase.Add(time.Hour))
}

// startLogRunAt is startLogRun with the wall clock that ends open windows
// stopped at wall.
func startLogRunAt(t *testing.T, cfg LogConfig, wall time.Time) *logRun {
	t.Helper()
	clock := journal.NewClock(logBase)
	mem := journal.NewMemory(clock)
	tick := newManualTicker()
	now := func(o *options) { o.now = func() time.Time { return wall } }
	obs, err := NewLogObserver(cfg, WithRecorder(mem), WithClock(clock), WithUpstreams("primary", "backup"), tick.option(), now)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &logRun{t: t, obs: obs, mem: mem, tick: tick, done: make(chan struct{}), stop: cancel}
	go func() { defer close(r.done); _ = obs.Run(ctx) }()
	// Run has opened the file once it takes the first tick.
	tick.C <- time.Time{}
	return r
}

// sh runs a command in the test's directory and then polls twice (the
// second tick is taken only after the first poll is done).
func (r *logRun) sh(dir, script string) {
	r.t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("%s: %v: %s", script, err, out)
	}
	r.tick.C <- time.Time{}
	r.tick.C <- time.Time{}
}

func (r *logRun) finish() []journal.Event {
	r.stop()
	<-r.done
	var out []journal.Event
	for _, ev := range r.mem.Events() {
		if s, ok := ev.Payload.(*journal.MetricsSample); ok && s.Origin == journal.OriginLog {
			out = append(out, ev)
		}
	}
	return out
}

// stateLine is a recorded state change: "t=7.7s primary/primary open".
func stateLines(evs []journal.Event) []string {
	var out []string
	for _, ev := range evs {
		for _, s := range ev.Payload.(*journal.MetricsSample).States {
			out = append(out, fmt.Sprintf("t=%s %s/%s %s", ev.T, s.Dependency, s.Upstream, s.State))
		}
	}
	return out
}

func seriesLines(evs []journal.Event) []string {
	var out []string
	for _, ev := range evs {
		for _, s := range ev.Payload.(*journal.MetricsSample).Series {
			out = append(out, fmt.Sprintf("t=%s %s %s=%g", ev.T, s.Name, s.Labels["dependency"], s.Value))
		}
	}
	return out
}

func TestLogObserverOpenClawStates(t *testing.T) {
	dir := t.TempDir()
	// The file exists with lines from before the run: they are skipped.
	if err := exec.Command("cp", "testdata/openclaw-429.jsonl", filepath.Join(dir, "openclaw.log")).Run(); err != nil {
		t.Fatal(err)
	}
	r := startLogRun(t, LogConfig{Path: filepath.Join(dir, "openclaw.log"), Preset: PresetOpenClaw})
	r.sh(dir, "cat "+abs(t, "testdata/openclaw-startup.jsonl")+" >> openclaw.log")
	r.sh(dir, "cat "+abs(t, "testdata/openclaw-429.jsonl")+" >> openclaw.log")
	evs := r.finish()
	want := []string{
		"t=1.12s primary/primary closed",
		"t=7.7s primary/primary open",
		"t=8.01s backup/backup closed",
		"t=37.7s primary/primary half_open", // cooldownUntil of the first window
		"t=38.3s primary/primary open",      // the probe failed: a new, longer window
		"t=1m38.3s primary/primary half_open",
		"t=1m39.08s primary/primary closed", // the probe's 2xx
	}
	if got := stateLines(evs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("states:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	series := strings.Join(seriesLines(evs), "\n")
	for _, w := range []string{
		"t=5.06s log_retry primary=2500",         // delayMs from the retry line
		"t=5.05s log_fetch_response primary=429", // a failed call: status as the value
		"t=1s log_fetch_start primary=10000",     // timeoutMs
		"t=7.71s log_fallback primary=1",
		"t=38.4s log_fallback_stopped backup=1",
	} {
		if !strings.Contains(series, w) {
			t.Errorf("series lack %q:\n%s", w, series)
		}
	}
	// Journal order is time order, which the reports rely on.
	for i := 1; i < len(evs); i++ {
		if evs[i].T < evs[i-1].T {
			t.Errorf("event %d at %s before event %d at %s", i, evs[i].T, i-1, evs[i-1].T)
		}
	}
	if st := r.obs.Stats(); st.Lines != 20 || st.BadTime != 0 || st.Undecodable != 0 {
		t.Errorf("stats %+v: want 20 lines read (3 startup + 17), none bad", st)
	}
	var fb *journal.Series
	for _, ev := range evs {
		for i, s := range ev.Payload.(*journal.MetricsSample).Series {
			if s.Name == "log_fallback" {
				fb = &ev.Payload.(*journal.MetricsSample).Series[i]
			}
		}
	}
	if fb == nil || fb.Labels["decision"] != "candidate_failed" || fb.Labels["nextCandidateProvider"] != "backup" || fb.Labels["status"] != "429" {
		t.Errorf("fallback series %+v: want decision, next candidate and status from the line's fields", fb)
	}
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// textCfg is a custom text-format config: "<RFC 3339> <upstream> <state>".
func textCfg(path string) LogConfig {
	return LogConfig{Path: path, Format: LogFormatText, Patterns: []LogPattern{
		{Name: "state", Match: ` (?P<dependency>\w+) open$`, State: journal.StateOpen},
		{Name: "closed", Match: ` (?P<dependency>\w+) closed$`, State: journal.StateClosed},
	}}
}

func TestLogObserverFollowsCreateTruncateRotate(t *testing.T) {
	dir := t.TempDir()
	// The file does not exist when the run starts.
	r := startLogRun(t, textCfg(filepath.Join(dir, "gw.log")))
	r.sh(dir, `printf '2026-12-04T22:40:01Z primary open\n' >> gw.log`)
	// A line written in two parts is read once whole.
	r.sh(dir, `printf '2026-12-04T22:40:02.5+00:00 primary clo' >> gw.log`)
	r.sh(dir, `printf 'sed\n' >> gw.log`)
	// Truncated in place (copytruncate) and written again: read from 0.
	r.sh(dir, `: > gw.log; printf '2026-12-04T22:40:03Z backup open\n' >> gw.log`)
	// Rotated: the old file gets a last line after the rename, then a
	// new file appears at the path.
	r.sh(dir, `mv gw.log gw.log.1; printf '2026-12-04T22:40:04Z backup closed\n' >> gw.log.1; printf '2026-12-04 22:40:05.25Z primary open\n' > gw.log`)
	r.sh(dir, `printf '2026-12-04T22:40:06+01:00 primary closed\n' >> gw.log`) // 21:40:06Z: before the start
	evs := r.finish()
	want := []string{
		"t=1s primary/primary open",
		"t=2.5s primary/primary closed",
		"t=3s backup/backup open",
		"t=4s backup/backup closed",
		"t=5.25s primary/primary open",
	}
	if got := stateLines(evs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("states:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	st := r.obs.Stats()
	if st.Truncations != 1 || st.Rotations != 1 || st.BeforeStart != 1 {
		t.Errorf("stats %+v: want 1 truncation, 1 rotation, 1 line before the start", st)
	}
}

func TestLogObserverBoundsLongLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gw.log")
	r := startLogRun(t, textCfg(path))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	long := strings.Repeat("x", MaxLogLineBytes+10)
	fmt.Fprintf(f, "2026-12-04T22:40:01Z primary %s open\n", long)
	r.sh(dir, "true")
	fmt.Fprintf(f, "2026-12-04T22:40:02Z primary open\n")
	r.sh(dir, "true")
	evs := r.finish()
	if got := stateLines(evs); len(got) != 1 || got[0] != "t=2s primary/primary open" {
		t.Errorf("states %q: want only the short line", got)
	}
	if st := r.obs.Stats(); st.TooLong != 1 {
		t.Errorf("stats %+v: want 1 line too long", st)
	}
	if c := cap(r.obs.partial); c > 4*MaxLogLineBytes {
		t.Errorf("line buffer grew to %d bytes", c)
	}
}

func TestLogConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  LogConfig
		want string
	}{
		{"no path", LogConfig{Preset: PresetOpenClaw}, "path: required: the gateway's log file"},
		{"no preset", LogConfig{Path: "x"}, "preset: required: a preset (openclaw) or patterns"},
		{"unknown preset", LogConfig{Path: "x", Preset: "envoy"}, `preset: unknown log preset "envoy" (want openclaw, or patterns)`},
		{"format", LogConfig{Path: "x", Preset: PresetOpenClaw, Format: "xml"}, `format: unknown format "xml" (want json or text)`},
		{"openclaw text", LogConfig{Path: "x", Preset: PresetOpenClaw, Format: "text"}, `format: preset "openclaw" reads OpenClaw's JSON log; format must be json`},
		{"bad regexp", LogConfig{Path: "x", Patterns: []LogPattern{{Name: "a", Match: "("}}}, "patterns[0].match: invalid regular expression"},
		{"bad state", LogConfig{Path: "x", Patterns: []LogPattern{{Name: "a", Match: "a", State: "tripped"}}}, `patterns[0].state: unknown state "tripped"`},
		{"until needs open", LogConfig{Path: "x", Patterns: []LogPattern{{Name: "a", Match: "a", State: "closed", Until: "u"}}}, "patterns[0].until: only with state: open"},
		{"name", LogConfig{Path: "x", Patterns: []LogPattern{{Name: "A b", Match: "a"}}}, `patterns[0].name: "A b" is not a name`},
		{"time format", LogConfig{Path: "x", Preset: PresetOpenClaw, TimeFormat: "iso"}, `time_format: unknown time format "iso"`},
		{"zone", LogConfig{Path: "x", Preset: PresetOpenClaw, TimeZone: "Mars/Base"}, `time_zone: unknown zone "Mars/Base"`},
		{"poll", LogConfig{Path: "x", Preset: PresetOpenClaw, Poll: 1}, "poll: 1ns is too short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestLogTimeFormats(t *testing.T) {
	utc := func(s string) time.Time { tt, _ := time.Parse(time.RFC3339Nano, s); return tt }
	for _, tc := range []struct {
		format, zone, in string
		want             time.Time
	}{
		{TimeRFC3339, "", "2026-12-04T22:40:01Z", utc("2026-12-04T22:40:01Z")},
		{TimeRFC3339, "", "2026-12-04T22:40:01.123456789+02:00", utc("2026-12-04T20:40:01.123456789Z")},
		{TimeRFC3339, "", "2026-12-04 22:40:01.5-05:30", utc("2026-12-05T04:10:01.5Z")},
		{TimeUnix, "", "1796424001.25", utc("2026-12-04T22:40:01.25Z")},
		{TimeUnixMs, "", "1796424001250", utc("2026-12-04T22:40:01.25Z")},
		{"2006-01-02 15:04:05.000", "Europe/Berlin", "2026-12-04 23:40:01.250", utc("2026-12-04T22:40:01.25Z")},
	} {
		c, err := LogConfig{Path: "x", Preset: PresetOpenClaw, TimeFormat: tc.format, TimeZone: tc.zone}.compile()
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.parseTime(tc.in)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("%s %q: %v, %v; want %v", tc.format, tc.in, got, err, tc.want)
		}
	}
}

// TestLogObserverRealOpenClaw reads testdata/openclaw-real-429.jsonl: the
// 42 lines the openclaw preset knows, unchanged, from the log of a real
// OpenClaw 2026.9.6 run by e2e's TestOpenClawLogStates
// (REHEARSE_OPENCLAW_KEEP_LOG; 429 Retry-After 120 on primary, 6 turns
// at 0.5/s, keys as auth profiles, logging.level debug). OpenClaw opened
// one 30 s cooldown and extended nothing: the five later failures of
// turns admitted before the trip reuse the window (windowReused true,
// the same cooldownUntil).
func TestLogObserverRealOpenClaw(t *testing.T) {
	dir := t.TempDir()
	base := logBase
	logBase = time.Date(2026, 12, 4, 22, 49, 20, 0, time.UTC)
	defer func() { logBase = base }()
	r := startLogRun(t, LogConfig{Path: filepath.Join(dir, "openclaw.log"), Preset: PresetOpenClaw})
	r.sh(dir, "cat "+abs(t, "testdata/openclaw-real-429.jsonl")+" >> openclaw.log")
	evs := r.finish()
	want := []string{
		"t=5.868s primary/primary open",       // auth profile failure state updated, errorCount 1
		"t=7.416s backup/backup closed",       // the first 2xx from backup
		"t=35.863s primary/primary half_open", // cooldownUntil 1796424595863
	}
	if got := stateLines(evs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("states:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	count := map[string]int{}
	for _, l := range seriesLines(evs) {
		f := strings.Fields(l)
		name, dep, _ := strings.Cut(f[1]+" "+f[2], " ")
		dep, _, _ = strings.Cut(dep, "=")
		count[name+" "+dep]++
	}
	for k, n := range map[string]int{"log_fetch_start primary": 6, "log_fetch_start backup": 6, "log_fetch_response primary": 6,
		"log_fetch_ok backup": 6, "log_cooldown primary": 6, "log_fallback primary": 6, "log_fallback backup": 6} {
		if count[k] != n {
			t.Errorf("%s: %d series, want %d (all %v)", k, count[k], n, count)
		}
	}
}

// A cooldown that has not ended when the run does is still open: its
// half_open is not recorded ahead of time.
func TestLogObserverWindowOpenAtTheEnd(t *testing.T) {
	dir := t.TempDir()
	base := logBase
	logBase = time.Date(2026, 12, 4, 22, 49, 20, 0, time.UTC)
	defer func() { logBase = base }()
	r := startLogRunAt(t, LogConfig{Path: filepath.Join(dir, "openclaw.log"), Preset: PresetOpenClaw}, logBase.Add(20*time.Second))
	r.sh(dir, "cat "+abs(t, "testdata/openclaw-real-429.jsonl")+" >> openclaw.log")
	want := "t=5.868s primary/primary open\nt=7.416s backup/backup closed"
	if got := strings.Join(stateLines(r.finish()), "\n"); got != want {
		t.Errorf("states:\n%s\nwant:\n%s", got, want)
	}
}

// TestReadLog reads a whole text log once: a line over MaxLogLineBytes is
// skipped and counted, the lines around it are read.
func TestReadLog(t *testing.T) {
	in := "2026-12-04T22:40:01Z breaker primary open\n" + strings.Repeat("y", MaxLogLineBytes+5) + " primary open\n" +
		"2026-12-04T22:40:02Z primary closed"
	var got []string
	st, err := ReadLog(textCfg("unused"), strings.NewReader(in), []string{"primary"}, func(e LogEntry) {
		got = append(got, fmt.Sprintf("%s %s/%s %s", e.Time.Format(time.RFC3339), e.Dependency, e.Upstream, e.State))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "[2026-12-04T22:40:01Z primary/primary open 2026-12-04T22:40:02Z primary/primary closed]"
	if fmt.Sprint(got) != want || st.TooLong != 1 || st.Lines != 2 {
		t.Errorf("entries %v, stats %+v; want %s, 1 too long, 2 lines", got, st, want)
	}
}
