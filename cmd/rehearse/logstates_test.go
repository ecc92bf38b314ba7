package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/halfopen/rehearse"
)

const realOpenClawLog = "../../observe/testdata/openclaw-real-429.jsonl"

func TestLogStatesCmd(t *testing.T) {
	out, errOut, code := execute(t, "log-states", realOpenClawLog, "--map", "primary=search")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"2026-12-04T22:49:25.868Z  cooldown  primary     search    open    until 2026-12-04T22:49:55.863Z",
		"2026-12-04T22:49:27.416Z  fetch_ok  backup      -         closed  value 42",
		"openclaw-real-429.jsonl: 42 lines, 42 recognised\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "fetch_start") {
		t.Error("a line that sets no state printed without --all")
	}
	out, _, _ = execute(t, "log-states", realOpenClawLog, "--all")
	if !strings.Contains(out, "fetch_start") || !strings.Contains(out, "fallback ") {
		t.Errorf("--all lacks provider calls or fallbacks:\n%s", out)
	}
}

func TestLogStatesCmdScenarioPatterns(t *testing.T) {
	dir := t.TempDir()
	logf := filepath.Join(dir, "gw.log")
	os.WriteFile(logf, []byte("2026-12-04 22:40:01.5Z breaker search OPEN\nnot a line\n2026-12-04T22:40:09Z breaker search CLOSED\n"), 0o644)
	sc := filepath.Join(dir, "s.yaml")
	os.WriteFile(sc, []byte(`
gateway:
  url: http://127.0.0.1:8080
  log:
    path: gw.log
    format: text
    patterns:
      - {name: trip, match: 'breaker (?P<dependency>\S+) OPEN', state: open}
      - {name: reset, match: 'breaker (?P<dependency>\S+) CLOSED', state: closed}
upstreams: [{name: search, listen: "127.0.0.1:9101"}]
replay: {duration: 1m}
`), 0o644)
	out, errOut, code := execute(t, "log-states", "--scenario", sc)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"2026-12-04T22:40:01.500Z  trip     search      search    open", "2026-12-04T22:40:09.000Z  reset    search      search    closed", "3 lines, 2 recognised"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := executeErr(t, "log-states", filepath.Join(dir, "missing.log"), "--format", "xml"); rehearse.ExitCode(err) != 2 || !strings.Contains(err.Error(), `--format: unknown format "xml"`) {
		t.Errorf("bad --format (checked before the file is opened): %v", err)
	}
	if _, _, code := execute(t, "log-states", filepath.Join(dir, "missing.log")); code != 3 {
		t.Errorf("missing file: exit %d, want 3", code)
	}
}
