package rehearsal

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/scenarios"
)

// badCapture writes a scenario replaying capture (a file written next to
// it from data, or an existing path when data is nil) and returns the
// scenario, for the checks of what a capture holds.
func badCapture(t *testing.T, name string, data []byte, extra string) *scenarios.Scenario {
	t.Helper()
	dir := t.TempDir()
	path := name
	if data != nil {
		path = filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if abs, err := filepath.Abs(name); err == nil {
		path = abs
	}
	src := "version: 1\nname: bad\nreplay:\n  capture: " + path + "\n  duration: 2s\n" + extra
	sc, err := scenarios.Parse(filepath.Join(dir, "s.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// bundled returns the bytes of the bundled capture.
func bundled(t *testing.T) []byte {
	t.Helper()
	rc, err := scenarios.OpenBuiltinCapture("agent-gateway")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckRefusesBadCaptures(t *testing.T) {
	full := bundled(t)
	cases := []struct {
		name  string
		sc    *scenarios.Scenario
		want  []string
		place string
	}{
		{"empty file", badCapture(t, "empty.pcap", []byte{}, ""),
			[]string{"not a pcap or pcapng file", "empty"}, "s.yaml:4:12: replay.capture: "},
		{"text renamed .pcap", badCapture(t, "notes.pcap", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ""),
			[]string{"not a pcap or pcapng file"}, "replay.capture: "},
		// head -c 3000 of a real capture.
		{"truncated", badCapture(t, "cut.pcapng", full[:3000], ""),
			[]string{"truncated at packet ", "packets read before it"}, "replay.capture: "},
		{"TLS only", badCapture(t, "testdata/captures/tls-only.pcap", nil, ""),
			[]string{"0 replayable requests: 3 TLS streams"}, "replay.capture: "},
		{"Redis only", badCapture(t, "testdata/captures/redis-only.pcap", nil, ""),
			[]string{"0 replayable requests: 3 TCP streams not HTTP/1.x (3 Redis)"}, "replay.capture: "},
		{"filtered out", badCapture(t, "cut.pcapng", full, "  filter: {host: nowhere.example}\n"),
			[]string{"0 replayable requests: 200 requests filtered out by replay.filter (host nowhere.example)"}, "replay.filter: "},
		{"writes only, real upstream", badCapture(t, "full.pcapng", full,
			"  filter: {methods: [POST]}\nupstreams:\n  - {name: search, mode: proxy, target: 'http://127.0.0.1:9'}\n"),
			[]string{"write request(s)", "allow_writes"}, "replay"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Check(context.Background(), tc.sc)
			if err == nil {
				t.Fatalf("Check passed a bad capture: %d replayable", p.Replayable)
			}
			if !errors.Is(err, rehearse.ErrInvalid) || rehearse.ExitCode(err) != 2 {
				t.Errorf("error %v is not invalid input (exit %d)", err, rehearse.ExitCode(err))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), tc.place) {
				t.Errorf("error %q is not placed at %q", err, tc.place)
			}
		})
	}
}

func TestCheckSummarisesTheCapture(t *testing.T) {
	sc := parse(t, "version: 1\nname: ok\nreplay: {duration: 2s, filter: {methods: [GET]}}\n")
	p, err := Check(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if p.Replayable != int(p.Stats.Delivered) || p.Replayable == 0 || p.Writes != 0 {
		t.Errorf("replayable %d, delivered %d, writes %d", p.Replayable, p.Stats.Delivered, p.Writes)
	}
	if p.Stats.Filtered == 0 {
		t.Errorf("the GET filter set nothing aside: %s", p.Stats)
	}
	n := 0
	for _, c := range p.Hosts {
		n += c
	}
	if n != p.Replayable || p.Span <= 0 {
		t.Errorf("hosts %v (sum %d of %d), span %s", p.Hosts, n, p.Replayable, p.Span)
	}
}

// TestRunBadCaptureCreatesNothing: a capture Run cannot replay fails
// before the run directory exists.
func TestRunBadCaptureCreatesNothing(t *testing.T) {
	sc := badCapture(t, "testdata/captures/tls-only.pcap", nil, "")
	out := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), sc, Options{OutDir: out})
	if res != nil || rehearse.ExitCode(err) != 2 || !strings.Contains(err.Error(), "3 TLS streams") {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run directory made for a bad capture: %v", err)
	}
}

// TestPlanOfEveryDrill: every built-in drill checks and prints its plan,
// with each fault of its timeline.
func TestPlanOfEveryDrill(t *testing.T) {
	for _, d := range scenarios.Drills() {
		sc, err := scenarios.Builtin(d.Name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Check(context.Background(), sc)
		if err != nil {
			t.Errorf("%s: %v", d.Name, err)
			continue
		}
		var b strings.Builder
		if err := p.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.HasPrefix(out, "plan: "+sc.Name) || !strings.Contains(out, "replayable requests") || !strings.Contains(out, "upstreams:") {
			t.Errorf("%s: plan:\n%s", d.Name, out)
		}
		for _, f := range sc.Faults {
			if !strings.Contains(out, f.Upstream+" ") || !strings.Contains(out, f.Type) {
				t.Errorf("%s: the plan lacks fault %s on %s:\n%s", d.Name, f.Type, f.Upstream, out)
			}
		}
	}
}

// TestRunUnobservablePlanCreatesNothing: a plan that can only fail (here
// closes_within with a fault to the end of the run) is refused by Check,
// and Run refuses it before the run directory exists.
func TestRunUnobservablePlanCreatesNothing(t *testing.T) {
	sc, err := scenarios.Parse(filepath.Join(t.TempDir(), "s.yaml"), []byte(`name: late
replay: {duration: 2s}
faults: [{type: status, upstream: search, at: 1s}]
expectations: {closes_within: 5s}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(context.Background(), sc); rehearse.ExitCode(err) != 2 || !strings.Contains(err.Error(), "s.yaml:4:31: expectations.closes_within: cannot be observed") {
		t.Fatalf("Check: %v", err)
	}
	out := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), sc, Options{OutDir: out})
	if res != nil || rehearse.ExitCode(err) != 2 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run directory made for a plan that can only fail: %v", err)
	}
}

// The plan says that a warm-up comes first, at what rate and how long.
func TestPlanSaysWarmup(t *testing.T) {
	for src, want := range map[string]string{
		"replay: {rate: 5, duration: 10s, warmup: {duration: 20s, rate: 1}}": "warm-up first: 1 req/s for 20s before time zero",
		"replay: {rate: 5, duration: 10s, warmup: {duration: 3s}}":           "warm-up first: 5 req/s for 3s before time zero",
		"replay: {rate: 5, duration: 10s}":                                   "",
	} {
		p, err := Check(context.Background(), parse(t, "gateway: {builtin: {}}\n"+src+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := p.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); want == "" && strings.Contains(got, "warm-up") || want != "" && !strings.Contains(got, want) {
			t.Errorf("%s: plan:\n%s", src, got)
		}
	}
}
