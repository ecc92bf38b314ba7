package launchd

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), got, *update)
}

// weeklyJob is the job of the golden files: fixed, absolute paths so the
// output does not depend on the machine.
func weeklyJob() Job {
	return Job{
		Binary:   "/usr/local/bin/rehearse",
		Scenario: "/Users/ci/rehearsals/weekly.yaml",
		Archive:  "/Users/ci/rehearse/runs",
		Keep:     DefaultKeep,
		Schedule: []When{{Weekday: time.Monday, Hour: 3}},
	}
}

func fullJob() Job {
	return Job{
		Label:            "com.example.gateway.drill",
		Binary:           "/opt/rehearse 1.0/bin/rehearse",
		Scenario:         "/srv/drills/CI 503 storm.yml",
		Archive:          "~/archive",
		Keep:             4,
		KeepFor:          8 * 7 * 24 * time.Hour,
		Schedule:         []When{{Weekday: time.Sunday, Hour: 23, Minute: 30}, {Weekday: time.Wednesday, Hour: 4}, {Daily: true, Hour: 12, Minute: 15}},
		WorkingDirectory: "/srv/drills",
		Env:              map[string]string{"PATH": "/opt/homebrew/bin:/usr/bin:/bin", "GATEWAY_URL": "http://127.0.0.1:8080/?a=1&b=100%"},
		ProcessType:      "Interactive",
		Caffeinate:       true,
		RunArgs:          []string{"--log-format", "json"},
	}
}

func resolve(t *testing.T, j Job) Job {
	t.Helper()
	r, err := j.Resolve("/home/ci")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// goldenJob is a job whose renderings (plist, systemd units) are kept as
// golden files named after it.
type goldenJob struct {
	name string
	job  Job
}

func goldenJobs() []goldenJob {
	return []goldenJob{{"weekly", weeklyJob()}, {"full", fullJob()}}
}

func TestPlistGolden(t *testing.T) {
	for _, tc := range goldenJobs() {
		t.Run(tc.name, func(t *testing.T) {
			j := resolve(t, tc.job)
			p := j.Plist()
			data, err := p.Render()
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".plist.golden", data)

			// Round trip: what we write parses back equal.
			back, err := ParsePlist(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, p) {
				t.Errorf("round trip differs:\n got %+v\nwant %+v", back, p)
			}
			if got := back.Schedule(); !reflect.DeepEqual(got, j.Schedule) {
				t.Errorf("schedule round trip = %v, want %v", got, j.Schedule)
			}
			if back.ArchiveDir() != j.Archive {
				t.Errorf("ArchiveDir = %q, want %q", back.ArchiveDir(), j.Archive)
			}
			checkPlistXML(t, data)
		})
	}
}

// checkPlistXML checks what plutil -lint checks that a Linux machine can:
// well-formed XML, Apple's DOCTYPE, a <plist version="1.0"> root holding one
// <dict> whose <key>s alternate with values.
func checkPlistXML(t *testing.T, data []byte) {
	t.Helper()
	if !bytes.HasPrefix(data, []byte(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">`)) {
		t.Errorf("missing XML header or Apple DTD:\n%s", data)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var stack []string
	var sawRoot bool
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 {
				if el.Name.Local != "plist" || len(el.Attr) != 1 || el.Attr[0].Value != "1.0" {
					t.Errorf("root element %v", el)
				}
				sawRoot = true
			}
			switch el.Name.Local {
			case "plist", "dict", "array", "key", "string", "integer", "true", "false", "real", "date", "data":
			default:
				t.Errorf("element <%s> is not in the plist DTD", el.Name.Local)
			}
			stack = append(stack, el.Name.Local)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if !sawRoot || len(stack) != 0 {
		t.Errorf("bad structure")
	}
}

func TestPlistContents(t *testing.T) {
	j := resolve(t, fullJob())
	p := j.Plist()
	wantArgs := []string{"/usr/bin/caffeinate", "-i", "/opt/rehearse 1.0/bin/rehearse", "run", "/srv/drills/CI 503 storm.yml",
		"--archive", "/home/ci/archive", "--keep", "4", "--keep-for", "1344h0m0s", "--log-format", "json"}
	if !reflect.DeepEqual(p.ProgramArguments, wantArgs) {
		t.Errorf("ProgramArguments = %q\nwant %q", p.ProgramArguments, wantArgs)
	}
	if p.Label != "com.example.gateway.drill" || p.RunAtLoad || p.ProcessType != "Interactive" {
		t.Errorf("plist %+v", p)
	}
	if p.StandardOutPath != "/home/ci/archive/logs/com.example.gateway.drill.out.log" || p.StandardErrorPath != "/home/ci/archive/logs/com.example.gateway.drill.err.log" {
		t.Errorf("log paths %q %q", p.StandardOutPath, p.StandardErrorPath)
	}
	if len(p.StartCalendarInterval) != 3 || *p.StartCalendarInterval[0].Weekday != 0 || p.StartCalendarInterval[2].Weekday != nil {
		t.Errorf("StartCalendarInterval %+v", p.StartCalendarInterval)
	}

	w := resolve(t, weeklyJob())
	if w.Label != "dev.rehearse.weekly" || w.WorkingDirectory != "/Users/ci/rehearsals" || w.ProcessType != "Standard" {
		t.Errorf("defaults: %+v", w)
	}
	if wp := w.Plist(); wp.EnvironmentVariables != nil {
		t.Errorf("environment without --env: %v", wp.EnvironmentVariables)
	}
	data, _ := w.Plist().Render()
	if !regexp.MustCompile(`<key>RunAtLoad</key>\s*<false/>`).Match(data) {
		t.Errorf("RunAtLoad false not written explicitly:\n%s", data)
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Job)
		wantErr string
	}{
		{"no scenario", func(j *Job) { j.Scenario = "" }, "no scenario"},
		{"no schedule", func(j *Job) { j.Schedule = nil }, "no schedule"},
		{"bad label", func(j *Job) { j.Label = "dev/rehearse" }, `label "dev/rehearse"`},
		{"dotdot label", func(j *Job) { j.Label = "dev..x" }, `label "dev..x"`},
		{"negative keep", func(j *Job) { j.Keep = -1 }, "keep -1"},
		{"negative keep-for", func(j *Job) { j.KeepFor = -time.Hour }, "must not be negative"},
		{"process type", func(j *Job) { j.ProcessType = "Fast" }, `process type "Fast"`},
		{"secret env", func(j *Job) { j.Env = map[string]string{"OPENAI_API_KEY": "sk-1"} }, "OPENAI_API_KEY would be stored in plain text"},
		{"token env", func(j *Job) { j.Env = map[string]string{"GITHUB_TOKEN": "x"} }, "GITHUB_TOKEN"},
		{"bad env name", func(j *Job) { j.Env = map[string]string{"1X": "x"} }, `name "1X"`},
		{"newline", func(j *Job) { j.Scenario = "/a/b\nc.yaml" }, "must not contain newlines"},
		{"range", func(j *Job) { j.Schedule = []When{{Hour: 24}} }, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := weeklyJob()
			tt.edit(&j)
			_, err := j.Resolve("/home/ci")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, rehearse.ErrInvalid) {
				t.Fatalf("error = %v, want containing %q and wrapping ErrInvalid", err, tt.wantErr)
			}
		})
	}
	j := weeklyJob()
	j.Env = map[string]string{"PATH": "/opt/homebrew/bin:/usr/bin:/bin", "PWD": "/srv", "LANG": "C"}
	if _, err := j.Resolve("/home/ci"); err != nil {
		t.Errorf("ordinary environment refused: %v", err)
	}
	j.Env = map[string]string{"OPENAI_API_KEY": "sk-1"}
	j.AllowSecretEnv = true
	if _, err := j.Resolve("/home/ci"); err != nil {
		t.Errorf("AllowSecretEnv: %v", err)
	}
	if filePerm(resolve(t, j)) != 0o600 {
		t.Error("a plist holding a secret must not be world-readable")
	}
	if filePerm(resolve(t, weeklyJob())) != 0o644 {
		t.Error("plain plist perm")
	}
}

func TestLabel(t *testing.T) {
	if LabelFor("weekly.yaml") != "dev.rehearse.weekly" {
		t.Error(LabelFor("weekly.yaml"))
	}
	if err := ValidateLabel(LabelFor("x y.yaml")); err != nil {
		t.Error(err)
	}
}

func TestParseEnv(t *testing.T) {
	env, err := ParseEnv([]string{"PATH=/usr/bin:/bin", "EMPTY=", "EQ=a=b"})
	if err != nil || env["PATH"] != "/usr/bin:/bin" || env["EMPTY"] != "" || env["EQ"] != "a=b" {
		t.Fatalf("ParseEnv = %v, %v", env, err)
	}
	for _, bad := range [][]string{{"NOVALUE"}, {"=x"}, {"A B=1"}, {"A=1", "A=2"}} {
		if _, err := ParseEnv(bad); err == nil || !errors.Is(err, rehearse.ErrInvalid) {
			t.Errorf("ParseEnv(%q) = %v", bad, err)
		}
	}
}

func FuzzParsePlist(f *testing.F) {
	j, _ := weeklyJob().Resolve("/home/ci")
	data, _ := j.Plist().Render()
	f.Add(data)
	f.Add([]byte("bplist00"))
	f.Add([]byte(`<plist version="1.0"><dict><key>StartCalendarInterval</key><array><dict><key>Weekday</key><integer>7</integer></dict></array></dict></plist>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePlist(data)
		if err != nil {
			if !errors.Is(err, rehearse.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		_ = p.Schedule()
		_ = p.ArchiveDir()
		_ = diffKeys(data, data)
	})
}
