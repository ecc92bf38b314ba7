package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

const bundled = "../../scenarios/captures/agent-gateway.pcapng"

// The JSON Lines contract of docs/contracts.md.
func TestInspectJSONL(t *testing.T) {
	out, errOut, code := execute(t, "inspect", bundled, "--format", "jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 200 {
		t.Fatalf("%d lines, want 200", len(lines))
	}
	flowRE := regexp.MustCompile(`^127\.0\.0\.1:\d+->127\.0\.0\.1:\d+$`)
	tsRE := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$`)
	var prev time.Time
	auth := 0
	for i, l := range lines {
		var rec struct {
			Index   *int                `json:"index"`
			TS      string              `json:"ts"`
			Flow    string              `json:"flow"`
			Method  string              `json:"method"`
			Target  string              `json:"target"`
			Proto   string              `json:"proto"`
			Host    string              `json:"host"`
			Headers map[string][]string `json:"headers"`
			BodyLen *int                `json:"body_len"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		ts, err := time.Parse(time.RFC3339Nano, rec.TS)
		if err != nil || !tsRE.MatchString(rec.TS) || ts.Before(prev) {
			t.Errorf("line %d: ts %q (%v), previous %v", i+1, rec.TS, err, prev)
		}
		prev = ts
		if rec.Index == nil || *rec.Index != i || !flowRE.MatchString(rec.Flow) || rec.Proto != "HTTP/1.1" || rec.Host == "" ||
			rec.BodyLen == nil || (rec.Method == "POST") != (*rec.BodyLen > 0) || !strings.HasPrefix(rec.Target, "/") {
			t.Errorf("line %d: %s", i+1, l)
		}
		for _, h := range []string{"Authorization", "X-Api-Key"} {
			if v, ok := rec.Headers[h]; ok {
				auth++
				if len(v) != 1 || v[0] != "REDACTED" {
					t.Errorf("line %d: %s not redacted: %v", i+1, h, v)
				}
			}
		}
	}
	if auth < 100 {
		t.Errorf("only %d requests carry credentials", auth)
	}
	if !strings.Contains(errOut, "packets → ") || !strings.Contains(errOut, "→ 4 streams → 200 requests (0 incomplete)") {
		t.Errorf("summary: %q", errOut)
	}
}

func TestInspectTableFiltersSecrets(t *testing.T) {
	out, errOut, code := execute(t, "inspect", bundled, "--method", "GET", "--path", "^/tools/weather$", "--show-secrets", "--stats")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "#") || strings.Count(out, "GET     /tools/weather?city=") != 20 {
		t.Errorf("table:\n%s", out)
	}
	if !strings.Contains(out, "filtered out") || !strings.Contains(out, "link type EN10MB") || !strings.Contains(out, "route GET /tools/weather") {
		t.Errorf("stats:\n%s", out)
	}
	if !strings.Contains(errOut, "180 filtered out") {
		t.Errorf("summary %q", errOut)
	}
	out, _, _ = execute(t, "inspect", bundled, "--format", "jsonl", "--show-secrets")
	if !strings.Contains(out, `"Bearer sk-fake-`) || strings.Contains(out, "REDACTED") {
		t.Error("--show-secrets still redacts")
	}
}

func TestInspectErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", "no-such.pcap"}, "no such file"},
		{[]string{"inspect", "inspect_test.go"}, "not a pcap or pcapng file"},
		{[]string{"inspect", bundled, "--path", "("}, "--path"},
		{[]string{"inspect", bundled, "--format", "xml"}, `format "xml"`},
		{[]string{"inspect"}, "accepts 1 arg"},
		// A directory read as an empty file: "file truncated: 0 bytes".
		{[]string{"inspect", "testdata"}, "testdata is a directory: want a regular pcap or pcapng file"},
	} {
		var out, errb bytes.Buffer
		root := newRootCmd(&out, &errb)
		root.SetArgs(tc.args)
		err := root.ExecuteContext(context.Background())
		if code := rehearse.ExitCode(err); code != 2 || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%v: exit %d, error %v; want 2 and %q", tc.args, code, err, tc.want)
		}
		if strings.Contains(errb.String(), "0 packets") {
			t.Errorf("%v: a summary of nothing: %q", tc.args, errb.String())
		}
		if tc.args[len(tc.args)-1] == "testdata" && out.Len() > 0 {
			t.Errorf("%v: output before the refusal: %q", tc.args, out.String())
		}
	}
}
