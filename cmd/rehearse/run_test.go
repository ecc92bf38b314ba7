package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
)

func TestRunArchiveKeepsHistory(t *testing.T) {
	archive := t.TempDir()
	scenario := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(scenario, []byte("name: tiny\nreplay: {rate: 20, duration: 1s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		out, errOut, code := execute(t, "run", scenario, "--archive", archive, "--keep", "1", "--quiet")
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", i, code, out, errOut)
		}
		if !strings.Contains(out, "run complete") || !strings.Contains(out, "report: ") {
			t.Errorf("output:\n%s", out)
		}
	}
	entries, _ := os.ReadDir(archive)
	var runs []string
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), "-tiny") {
			runs = append(runs, e.Name())
		}
	}
	if len(runs) != 1 {
		t.Errorf("runs kept with --keep 1: %v", runs)
	}
	if _, err := os.Stat(filepath.Join(archive, "latest", "report.html")); err != nil {
		t.Errorf("latest link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(archive, "index.html")); err != nil {
		t.Errorf("history index: %v", err)
	}
}

func TestRunInvalidScenarioExits2(t *testing.T) {
	scenario := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(scenario, []byte("replay:\n  rat: 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, code := execute(t, "run", scenario)
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	out, _, code := execute(t, "validate", scenario)
	if code != 2 {
		t.Fatalf("validate: exit %d, want 2 (%s)", code, out)
	}
}

func TestRunBadOverrideExits2(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--rate", "0"},
		{"--duration", "0s"},
		{"--gateway", "127.0.0.1:8080"},
		{"--gateway-mode", "fancy"},
		{"--schedule", "bursty"},
		{"--gateway", "http://127.0.0.1:1", "--gateway-mode", "naive"},
	} {
		out := filepath.Join(dir, "run")
		root := newRootCmd(io.Discard, io.Discard)
		root.SetArgs(append([]string{"run", "weekly", "--out", out, "--quiet"}, args...))
		err := root.ExecuteContext(context.Background())
		if code := rehearse.ExitCode(err); code != 2 || !strings.Contains(fmt.Sprint(err), args[len(args)-2]) {
			t.Errorf("%v: exit %d (%v), want 2 naming the flag", args, code, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: a run directory was written for a refused override", args)
		}
	}
}

func TestScenariosCommands(t *testing.T) {
	out, _, code := execute(t, "scenarios", "list")
	if code != 0 || !strings.Contains(out, "weekly") || !strings.Contains(out, "503-storm") {
		t.Fatalf("list: %d\n%s", code, out)
	}
	out, _, code = execute(t, "scenarios", "show", "429-retry-after")
	if code != 0 || !strings.Contains(out, "retry_after") {
		t.Fatalf("show: %d\n%s", code, out)
	}
	dst := filepath.Join(t.TempDir(), "mine.yaml")
	if _, _, code = execute(t, "scenarios", "init", "503-storm", "--out", dst); code != 0 {
		t.Fatalf("init: exit %d", code)
	}
	if _, _, code = execute(t, "scenarios", "init", "503-storm", "--out", dst); code != 2 {
		t.Fatalf("init over an existing file: exit %d, want 2", code)
	}
	if out, _, code = execute(t, "validate", dst); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("validate init output: %d %s", code, out)
	}
	if out, _, code = execute(t, "scenarios", "schema"); code != 0 || !strings.Contains(out, `"$schema"`) {
		t.Fatalf("schema: %d", code)
	}
	if _, _, code = execute(t, "scenarios", "show", "nope"); code != 2 {
		t.Fatalf("show unknown drill: exit %d, want 2", code)
	}
}

// TestRunHarnessFailureOutput: a harness failure lists no expectation as
// FAIL, and the last stdout line says how every kind of run ended.
func TestRunHarnessFailureOutput(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "unreachable.yaml")
	src := "name: unreachable\ngateway: {url: \"http://127.0.0.1:1\", ready: {timeout: 1s}}\nupstreams: [{name: search, listen: \"" + testutil.FreeAddr(t) + "\"}]\nreplay: {duration: 2s}\nexpectations: {upstreams: [search], max_probes_in_flight: 1}\n"
	if err := os.WriteFile(scenario, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := execute(t, "run", scenario, "-o", filepath.Join(dir, "run"), "--quiet")
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("stdout lists expectation failures for a harness failure:\n%s", out)
	}
	if last := lastLine(out); !strings.HasPrefix(last, "outcome: harness failure: ") || !strings.Contains(last, "127.0.0.1:1") {
		t.Errorf("last stdout line %q, want the harness failure and its cause", last)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("replay:\n  rat: 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = execute(t, "run", bad)
	if last := lastLine(out); code != 2 || !strings.HasPrefix(last, "outcome: invalid input: ") {
		t.Errorf("invalid scenario: exit %d, last stdout line %q", code, last)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestBadCaptureRefusedBeforeAnything: validate and run read the capture
// the same way; run refuses a bad one before it makes a run directory or
// touches the archive (latest stays on the last good run).
func TestBadCaptureRefusedBeforeAnything(t *testing.T) {
	dir := t.TempDir()
	full, err := os.ReadFile("../../scenarios/captures/agent-gateway.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"empty.pcap":   {},
		"notes.pcap":   []byte("these are my notes, not a capture\n"),
		"cut.pcapng":   full[:3000], // head -c 3000
		"tls.pcap":     nil,
		"redis.pcap":   nil,
		"whole.pcapng": full,
	}
	for name, b := range files {
		if b == nil {
			src := map[string]string{"tls.pcap": "tls-only.pcap", "redis.pcap": "redis-only.pcap"}[name]
			if b, err = os.ReadFile(filepath.Join("../../rehearsal/testdata/captures", src)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// An archive whose latest run is a good one.
	archive := filepath.Join(dir, "archive")
	prev := filepath.Join(archive, "2026-11-30T030000Z-bad")
	if err := os.MkdirAll(prev, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prev, "run.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(prev), filepath.Join(archive, "latest")); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ capture, filter, want string }{
		{"empty.pcap", "", "not a pcap or pcapng file"},
		{"notes.pcap", "", "not a pcap or pcapng file"},
		{"cut.pcapng", "", "truncated at packet "},
		{"tls.pcap", "", "0 replayable requests: 3 TLS streams"},
		{"redis.pcap", "", "0 replayable requests: 3 TCP streams not HTTP/1.x (3 Redis)"},
		{"whole.pcapng", "  filter: {path: ^/nothing/}\n", "0 replayable requests: 200 requests filtered out by replay.filter (path ~ ^/nothing/)"},
	}
	for _, tc := range cases {
		t.Run(tc.capture, func(t *testing.T) {
			sc := filepath.Join(dir, tc.capture+".yaml")
			src := "version: 1\nname: bad\nreplay:\n  capture: " + tc.capture + "\n  duration: 1s\n" + tc.filter
			if err := os.WriteFile(sc, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := executeErr(t, "validate", sc)
			if rehearse.ExitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), sc+":") {
				t.Errorf("validate: exit %d, %v (want %q at %s:line:col)", rehearse.ExitCode(err), err, tc.want, sc)
			}
			if strings.Contains(out, "ok") {
				t.Errorf("validate said ok: %s", out)
			}
			runDir := filepath.Join(dir, "out-"+tc.capture)
			for _, args := range [][]string{{"--archive", archive}, {"--out", runDir}} {
				out, err = executeErr(t, append([]string{"run", sc, "--quiet"}, args...)...)
				if rehearse.ExitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("run %v: exit %d, %v", args, rehearse.ExitCode(err), err)
				}
				if strings.Contains(out, "complete") {
					t.Errorf("run %v printed %q", args, out)
				}
			}
			if _, err := os.Stat(runDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("run --out made %s: %v", runDir, err)
			}
			entries, _ := os.ReadDir(archive)
			if len(entries) != 2 {
				t.Errorf("archive holds %d entries, want the previous run and latest", len(entries))
			}
			if l, err := os.Readlink(filepath.Join(archive, "latest")); err != nil || l != filepath.Base(prev) {
				t.Errorf("latest moved: %q, %v", l, err)
			}
		})
	}
}

// TestRunDryRun: --dry-run prints the plan and exits 0 without sending a
// byte to the gateway or a real upstream and without writing a file; an
// invalid scenario exits 2 the same way.
func TestRunDryRun(t *testing.T) {
	var accepted atomic.Int64
	listen := func() string {
		return testutil.ServeTCP(t, func(net.Conn) { accepted.Add(1) })
	}
	gw, real := listen(), listen()
	// An external gateway calls upstreams on fixed ports.
	ups := []string{testutil.FreeAddr(t), testutil.FreeAddr(t)}
	work := t.TempDir()
	t.Chdir(work)
	src := `version: 1
name: dry
gateway:
  url: http://ci:s3cret@` + gw + `
  metrics: {url: http://` + gw + `/metrics, preset: reference}
replay: {rate: 20, duration: 90s, filter: {methods: [GET]}, keep_headers: [X-Chosen-Target]}
upstreams:
  - {name: search, mode: proxy, target: "http://` + real + `", listen: "` + ups[0] + `"}
  - {name: weather, listen: "` + ups[1] + `"}
faults:
  - {type: status, upstream: search, at: 10s, for: 30s, params: {code: 503}}
  - {type: retry_after, upstream: weather, at: 50s, params: {after: 5s}, probability: 0.5}
expectations: {upstreams: [search], opens_within: 20s}
`
	if err := os.WriteFile("dry.yaml", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := executeErr(t, "run", "dry.yaml", "--dry-run", "--out", "out", "--junit", "j/junit.xml",
		"--notify", "http://"+gw+"/hook")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, want := range []string{
		"plan: dry (dry.yaml)",
		"capture builtin:agent-gateway (pcapng): 20 replayable requests",
		"180 requests filtered out by replay.filter (methods GET)",
		"replay: 20 req/s for 1m30s",
		"  response headers kept in the journal: X-Chosen-Target\n",
		"gateway: http://ci:REDACTED@" + gw + " (under test)",
		"metrics: http://" + gw + "/metrics (preset reference)",
		"search   proxy  " + ups[0] + "  → http://" + real,
		"10s    40s         search    status       -     {\"code\":503}",
		"50s    end of run  weather   retry_after  -     {\"after\":\"5s\"} probability 0.5",
		"opens_within: 20s",
		"\noutcome: valid (dry run: nothing was sent and nothing was written)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("the gateway URL's password is in the plan:\n%s", out)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the dry run opened %d connections", n)
	}
	entries, _ := os.ReadDir(work)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the dry run wrote files: %v", names)
	}

	// Invalid: exit 2, nothing written.
	if err := os.WriteFile("bad.yaml", []byte("replay: {capture: dry.yaml}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = executeErr(t, "run", "bad.yaml", "--dry-run")
	if rehearse.ExitCode(err) != 2 || !strings.Contains(err.Error(), "not a pcap or pcapng file") || strings.Contains(out, "plan:") {
		t.Errorf("invalid dry run: exit %d, %v\n%s", rehearse.ExitCode(err), err, out)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 2 {
		t.Errorf("the invalid dry run wrote files: %d entries", len(entries))
	}
}

// TestValidateSaysWhatIsReplayed: validate's ok line counts the requests
// the run will replay and says what is left out and why.
func TestValidateSaysWhatIsReplayed(t *testing.T) {
	sc := filepath.Join(t.TempDir(), "gets.yaml")
	if err := os.WriteFile(sc, []byte("version: 1\nname: gets\nreplay: {duration: 5s, filter: {methods: [GET]}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := executeErr(t, "validate", sc)
	want := sc + ": ok (gets: 5 upstreams, 0 faults, 10 req/s for 5s; 20 replayable requests in the capture; " +
		"skipped: 180 requests filtered out by replay.filter (methods GET))\n"
	if err != nil || out != want {
		t.Errorf("validate: %v\n got %q\nwant %q", err, out, want)
	}
}

// TestRunOutcomeLineOnEveryPath: whatever refuses a run, cobra (a bad
// flag, a missing argument, a bad global flag) or the run itself, stdout
// ends with exactly one outcome line, with the class said once and a flag's
// value reported as the flag.
func TestRunOutcomeLineOnEveryPath(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(ok, []byte("version: 1\nreplay:\n  rate: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", ok, "--bogus"}, "outcome: invalid input: unknown flag: --bogus"},
		{[]string{"run"}, "outcome: invalid input: accepts 1 arg(s), received 0"},
		{[]string{"--log-level", "loud", "run", ok}, `outcome: invalid input: --log-level "loud": want debug, info, warn or error`},
		{[]string{"run", ok, "--rate", "0"}, `outcome: invalid input: invalid argument "0" for "--rate" flag: must be a positive number of requests per second, got 0`},
		{[]string{"run", ok, "--rate", "200000", "--dry-run"}, "outcome: invalid input: --rate: want a rate between 0 and 100000 requests per second, got 200000"},
		{[]string{"run", ok, "--out", filepath.Join(dir, "a"), "--archive", filepath.Join(dir, "b")}, "outcome: invalid input: --out and --archive are exclusive"},
		{[]string{"run", filepath.Join(dir, "nope.yaml")}, "outcome: invalid input: scenario " + filepath.Join(dir, "nope.yaml") + ": no such file (built-in drills: rehearse scenarios list)"},
	} {
		out, _, code := execute(t, tt.args...)
		if code != rehearse.ExitInvalid {
			t.Errorf("%v: exit %d, want 2", tt.args, code)
		}
		if n := strings.Count(out, "outcome:"); n != 1 {
			t.Errorf("%v: %d outcome lines in\n%s", tt.args, n, out)
		}
		if last := lastLine(out); last != tt.want {
			t.Errorf("%v: last stdout line\n got %q\nwant %q", tt.args, last, tt.want)
		}
	}
}

// TestRunRefusesRemoteListenWithoutFlag: a scenario upstream on 0.0.0.0
// needs --allow-remote in run and validate, as inject serve does; run
// bound every address without asking.
func TestRunRefusesRemoteListenWithoutFlag(t *testing.T) {
	scenario := filepath.Join(t.TempDir(), "remote.yaml")
	if err := os.WriteFile(scenario, []byte("version: 1\nupstreams:\n  - name: search\n    listen: 0.0.0.0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := scenario + ":4:13: upstreams[0].listen: 0.0.0.0:0 is not a loopback address"
	for _, args := range [][]string{{"run", scenario, "--dry-run"}, {"validate", scenario}} {
		_, err := executeErr(t, args...)
		if rehearse.ExitCode(err) != rehearse.ExitInvalid || !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("%v: %v, want exit 2 and %s", args, err, want)
		}
		if _, err := executeErr(t, append(args, "--allow-remote")...); err != nil {
			t.Errorf("%v --allow-remote: %v", args, err)
		}
	}
}

// TestRunRefusesJournalLink: a dangling journal.jsonl link in --out made
// the journal land outside the run directory. The run is refused (the
// directory reads as holding a run, exit 2; were it not, journal.Create
// refuses the link, exit 3) and nothing is written where the link points.
func TestRunRefusesJournalLink(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside.jsonl")
	if err := os.Symlink(outside, filepath.Join(out, "journal.jsonl")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte("version: 1\nreplay: {duration: 1s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, code := execute(t, "run", scenario, "--out", out, "--quiet")
	if code == rehearse.ExitOK || !strings.Contains(lastLine(stdout), "journal.jsonl") {
		t.Fatalf("exit %d, last line %q; want a refusal naming journal.jsonl", code, lastLine(stdout))
	}
	if _, err := os.Lstat(outside); !os.IsNotExist(err) {
		t.Fatalf("the journal was written outside the run directory: %v", err)
	}
}

// TestReplayRefusesJournalLink: replay --out writes its journal with
// journal.Create, which never follows a link: a dangling journal.jsonl
// link is a harness failure and its target is never created.
func TestReplayRefusesJournalLink(t *testing.T) {
	_, target := serveRecorder(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside.jsonl")
	if err := os.Symlink(outside, filepath.Join(out, "journal.jsonl")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	_, err := executeErr(t, "replay", secretsCapture, "--target", target, "--once", "--allow-writes", "--quiet", "--out", out)
	if rehearse.ExitCode(err) != rehearse.ExitEnvironment || !strings.Contains(fmt.Sprint(err), "is a symbolic link") {
		t.Fatalf("error %v, want exit 3 naming the link", err)
	}
	if _, err := os.Lstat(outside); !os.IsNotExist(err) {
		t.Fatalf("the journal was written through the link: %v", err)
	}
}

// The plan names a random schedule and its seed, given on the command line.
func TestRunDryRunSchedule(t *testing.T) {
	t.Chdir(t.TempDir())
	out, err := executeErr(t, "run", "weekly", "--dry-run", "--schedule", "poisson", "--seed", "7", "--rate", "5")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "replay: 5 req/s on a poisson schedule (seed 7) for ") {
		t.Errorf("plan lacks the schedule:\n%s", out)
	}
}
